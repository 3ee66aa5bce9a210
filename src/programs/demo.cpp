// maprect-demo: the standard benchmark model (J=64 jobs x N=100 points, var/var) through map_rect over the
// cluster's ranks. Prints the log density, the gradient's largest difference from the closed form and the
// median time per gradient; exits non-zero if the difference exceeds 1e-9.
#include <maprect/maprect.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

namespace {

constexpr int kJobs = 64;
constexpr int kPoints = 100;
constexpr int kRepeats = 200;
constexpr double kTolerance = 1e-9;

/// Job functor of the standard model, scalar kernel: one output, the job's log likelihood.
struct logistic_job {
  template <class T1, class T2>
  Eigen::Matrix<maprect::return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(
      const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi, const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
      const std::vector<double>& x_r, const std::vector<int>& x_i, std::ostream*) const {
    using maprect::log1m_inv_logit;
    using maprect::log_inv_logit;
    maprect::return_type_t<T1, T2> lp = 0;
    for (std::size_t i = 0; i < x_r.size(); ++i) {
      const auto eta = phi(0) + theta(0) + (phi(1) + theta(1)) * x_r[i];
      lp += x_i[i] ? log_inv_logit(eta) : log1m_inv_logit(eta);
    }
    Eigen::Matrix<maprect::return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
    out(0) = lp;
    return out;
  }
};

/// Data and parameter values of the standard model (closed formulas, no random numbers).
struct model_data {
  std::vector<std::vector<double>> x_r;
  std::vector<std::vector<int>> x_i;
  Eigen::VectorXd phi;
  std::vector<Eigen::VectorXd> theta;

  model_data(int J, int N) : x_r(J, std::vector<double>(N)), x_i(J, std::vector<int>(N)), phi(2), theta(J) {
    for (int j = 0; j < J; ++j)
      for (int i = 0; i < N; ++i) {
        x_r[j][i] = std::sin(0.37 * i + j);
        x_i[j][i] = (7 * i + 3 * j) % 2;
      }
    phi << 0.3, -0.5;
    for (int j = 0; j < J; ++j) {
      theta[j].resize(2);
      theta[j] << 0.1 * std::sin(j + 1.0), 0.05 * std::cos(j + 1.0);
    }
  }

  /// Closed-form log density; fills the gradient in the order (alpha, beta, u_0, v_0, u_1, v_1, ...).
  double closed_form(Eigen::VectorXd& gradient) const {
    const int J = static_cast<int>(theta.size());
    gradient = Eigen::VectorXd::Zero(2 + 2 * J);
    double lp = 0;
    for (int j = 0; j < J; ++j)
      for (std::size_t i = 0; i < x_r[j].size(); ++i) {
        const double x = x_r[j][i];
        const double eta = phi(0) + theta[j](0) + (phi(1) + theta[j](1)) * x;
        lp += x_i[j][i] ? maprect::log_inv_logit(eta) : maprect::log1m_inv_logit(eta);
        const double r = x_i[j][i] - maprect::inv_logit(eta);
        gradient(0) += r;
        gradient(1) += r * x;
        gradient(2 + 2 * j) += r;
        gradient(3 + 2 * j) += r * x;
      }
    return lp;
  }
};

}  // namespace

MAPRECT_REGISTER(1, logistic_job);

namespace {

/// One evaluate-grad cycle on a fresh tape: returns the log density and fills the gradient.
double log_density_gradient(const model_data& d, Eigen::VectorXd& gradient) {
  const maprect::vector_v phi = maprect::to_var(d.phi);
  std::vector<maprect::vector_v> theta;
  theta.reserve(d.theta.size());
  for (const auto& t : d.theta) theta.push_back(maprect::to_var(t));
  const maprect::var lp = maprect::map_rect<1, logistic_job>(phi, theta, d.x_r, d.x_i).sum();
  maprect::grad(lp);
  gradient.resize(2 + 2 * static_cast<Eigen::Index>(theta.size()));
  gradient(0) = phi(0).adj();
  gradient(1) = phi(1).adj();
  for (std::size_t j = 0; j < theta.size(); ++j) {
    gradient(2 + 2 * j) = theta[j](0).adj();
    gradient(3 + 2 * j) = theta[j](1).adj();
  }
  const double value = lp.val();
  maprect::recover_memory();
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  maprect::cluster c(argc, argv);
  if (!c.is_root()) {
    c.serve();
    return 0;
  }

  const model_data d(kJobs, kPoints);
  Eigen::VectorXd expected;
  const double expected_lp = d.closed_form(expected);

  Eigen::VectorXd gradient;
  const double lp = log_density_gradient(d, gradient);
  const double grad_diff = (gradient - expected).cwiseAbs().maxCoeff();
  const double lp_diff = std::abs(lp - expected_lp);

  std::vector<double> seconds(kRepeats);
  for (double& s : seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    log_density_gradient(d, gradient);
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  std::nth_element(seconds.begin(), seconds.begin() + kRepeats / 2, seconds.end());
  const double median_us = seconds[kRepeats / 2] * 1e6;
  c.stop();

  std::printf("maprect-demo: standard model, J=%d x N=%d, var/var, %d rank(s)\n", kJobs, kPoints, c.size());
  std::printf("log density          %.15g (closed form %.15g, |diff| %.3g)\n", lp, expected_lp, lp_diff);
  std::printf("gradient max |diff|  %.3g over %d entries (tolerance %g)\n", grad_diff,
              static_cast<int>(gradient.size()), kTolerance);
  std::printf("time per gradient    %.1f us (median of %d)\n", median_us, kRepeats);
  const bool ok = grad_diff <= kTolerance && lp_diff <= kTolerance * std::max(1.0, std::abs(expected_lp));
  std::printf("%s\n", ok ? "OK" : "FAILED: gradient differs from the closed form");
  return ok ? 0 : 1;
}
