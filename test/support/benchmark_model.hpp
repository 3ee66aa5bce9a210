#pragma once
// The standard benchmark model (docs/benchmark-model.md) with its closed-form gradient, for tests.
#include <maprect/map_rect.hpp>

#include <cmath>
#include <vector>

namespace maprect::test {

/// Job functor of the standard model, scalar kernel (four nodes per point): one output, the job's log
/// likelihood.
struct logistic_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i, std::ostream*) const {
    return_type_t<T1, T2> lp = 0;
    const auto intercept = phi(0) + theta(0);
    const auto slope = phi(1) + theta(1);
    for (std::size_t i = 0; i < x_r.size(); ++i) {
      const auto eta = intercept + slope * x_r[i];
      lp += x_i[i] ? log_inv_logit(eta) : log1m_inv_logit(eta);
    }
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
    out(0) = lp;
    return out;
  }
};

/// Data and parameters of the standard model at J jobs of N points.
struct benchmark_data {
  std::vector<std::vector<double>> x_r;
  std::vector<std::vector<int>> x_i;
  Eigen::VectorXd phi;
  std::vector<Eigen::VectorXd> theta;

  benchmark_data(int J, int N) : x_r(J, std::vector<double>(N)), x_i(J, std::vector<int>(N)), phi(2), theta(J) {
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

  /// Closed-form log density and gradient in the order (alpha, beta, u_0, v_0, u_1, v_1, ...).
  double closed_form(Eigen::VectorXd& gradient) const {
    const int J = static_cast<int>(theta.size());
    gradient = Eigen::VectorXd::Zero(2 + 2 * J);
    double lp = 0;
    for (int j = 0; j < J; ++j)
      for (std::size_t i = 0; i < x_r[j].size(); ++i) {
        const double x = x_r[j][i];
        const double eta = phi(0) + theta[j](0) + (phi(1) + theta[j](1)) * x;
        lp += x_i[j][i] ? log_inv_logit(eta) : log1m_inv_logit(eta);
        const double r = x_i[j][i] - inv_logit(eta);
        gradient(0) += r;
        gradient(1) += r * x;
        gradient(2 + 2 * j) += r;
        gradient(3 + 2 * j) += r * x;
      }
    return lp;
  }
};

}  // namespace maprect::test
