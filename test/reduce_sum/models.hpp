#pragma once
// The models and checks the reduce_sum tests share: a logistic regression sliced over observations and a
// hierarchical model sliced over groups with their closed forms, ragged nested arguments, and central
// finite differences of any call. They call reduce_sum as a program does, so they check it in process and,
// on the root of a cluster, over the ranks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>

#include "reduce_sum/functors.hpp"

namespace maprect::test {

/// Uniform draws in [lo, hi) from a fixed-seed engine (mt19937's output is fixed by the standard).
struct draws {
  std::mt19937 engine{20240611};
  double operator()(double lo, double hi) { return lo + (hi - lo) * (engine() / 4294967296.0); }
};

/// Whether a is b within a relative tolerance (absolute below 1).
inline bool close(double a, double b, double tol) { return std::fabs(a - b) <= tol * std::max(1.0, std::fabs(b)); }

/// Central finite differences of reduce_sum<Id, F> w.r.t. every var (operand order), checked against the
/// gradient of one reverse sweep. The arguments are rebuilt from perturbed values by the flatten layer.
template <int Id, class F, class T_slice, class... Args>
void check_finite_differences(int G, const std::vector<T_slice>& sliced, const Args&... args) {
  const std::vector<vari*> ops = operands_of(sliced, args...);
  const value_and_gradient exact = gradient_of(reduce_sum<Id, F>(sliced, G, nullptr, args...), ops);
  std::vector<double> x(ops.size());
  for (std::size_t k = 0; k < ops.size(); ++k) x[k] = ops[k]->val_;
  auto value_at = [&](const std::vector<double>& xs) {
    nested_tape region;
    const double* in = xs.data();
    auto remake = [&](const auto& a) {
      std::decay_t<decltype(a)> copy;
      detail::rebuild(copy, a, in);
      return copy;
    };
    const std::tuple<Args...> shared{remake(args)...};  // braced: rebuilt in argument order
    const std::vector<T_slice> own = remake(sliced);
    return std::apply([&](const auto&... a) { return reduce_sum<Id, F>(own, G, nullptr, a...).val(); }, shared);
  };
  REQUIRE(close(value_at(x), exact.value, 1e-15));
  for (std::size_t k = 0; k < x.size(); ++k) {
    const double h = 1e-6 * std::max(1.0, std::fabs(x[k]));
    std::vector<double> up = x, down = x;
    up[k] += h;
    down[k] -= h;
    const double fd = (value_at(up) - value_at(down)) / (2 * h);
    INFO("var " << k << " of " << x.size() << ": exact " << exact.gradient[k] << ", finite difference " << fd);
    CHECK(close(exact.gradient[k], fd, 1e-6));
  }
}

/// The logistic regression's data: N observations, K covariates.
struct logistic_data {
  Eigen::MatrixXd X;
  std::vector<int> y;
  Eigen::VectorXd beta;
  double alpha = 0.3;
  logistic_data(int N, int K) : X(N, K), y(N), beta(K) {
    draws u;
    for (int i = 0; i < N; ++i)
      for (int k = 0; k < K; ++k) X(i, k) = u(-2, 2);
    for (int k = 0; k < K; ++k) beta(k) = u(-1, 1);
    for (int i = 0; i < N; ++i) y[i] = u(0, 1) < 0.4 ? 1 : 0;
  }
  /// Closed form: the log likelihood, then d/d beta, d/d alpha.
  value_and_gradient exact() const {
    value_and_gradient out;
    out.gradient.assign(beta.size() + 1, 0.0);
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
      const double eta = alpha + X.row(i).dot(beta);
      const double p = 1 / (1 + std::exp(-eta));
      out.value += y[i] ? std::log(p) : std::log1p(-p);
      for (Eigen::Index k = 0; k < beta.size(); ++k) out.gradient[k] += (y[i] - p) * X(i, k);
      out.gradient[beta.size()] += y[i] - p;
    }
    return out;
  }
};

template <int Id, class T_beta, class T_alpha>
void check_logistic(const logistic_data& d, int G) {
  recover_memory();
  const Eigen::Matrix<T_beta, -1, 1> beta = d.beta.cast<T_beta>();
  const T_alpha alpha = d.alpha;
  const auto lp = reduce_sum<Id, logistic_partial>(d.y, G, nullptr, d.X, beta, alpha);
  const value_and_gradient got = gradient_of(lp, operands_of(d.y, d.X, beta, alpha));
  const value_and_gradient want = d.exact();
  CHECK(close(got.value, want.value, 1e-13));
  std::size_t k = 0;
  if constexpr (is_var_v<T_beta>)
    for (Eigen::Index b = 0; b < beta.size(); ++b) CHECK(close(got.gradient[k++], want.gradient[b], 1e-12));
  if constexpr (is_var_v<T_alpha>) CHECK(close(got.gradient[k++], want.gradient[beta.size()], 1e-12));
  CHECK(k == got.gradient.size());
  recover_memory();
}

/// The hierarchical model's data: J groups of 0 to 6 observations.
struct hierarchical_data {
  std::vector<Eigen::VectorXd> groups;  // (u_j, log_s_j)
  std::vector<std::vector<double>> y;
  double mu = 0.4, log_tau = -0.2;
  explicit hierarchical_data(int J) : groups(J, Eigen::VectorXd::Zero(2)), y(J) {
    draws u;
    for (int j = 0; j < J; ++j) {
      groups[j] << u(-1, 1), u(-0.5, 0.5);
      y[j].resize(static_cast<std::size_t>(j % 7));
      for (double& v : y[j]) v = u(-2, 2);
    }
  }
  /// Closed form: the log density, then d/d (u_j, log_s_j) for each group, d/d mu, d/d log_tau.
  value_and_gradient exact() const {
    value_and_gradient out;
    const std::size_t J = groups.size();
    out.gradient.assign(2 * J + 2, 0.0);
    const double tau = std::exp(log_tau);
    for (std::size_t j = 0; j < J; ++j) {
      const double u = groups[j](0), ls = groups[j](1), s = std::exp(ls), z = (u - mu) / tau;
      out.value += -0.5 * z * z - log_tau - 0.5 * ls * ls;
      out.gradient[2 * j] = -z / tau;
      out.gradient[2 * j + 1] = -ls;
      out.gradient[2 * J] += z / tau;
      out.gradient[2 * J + 1] += z * z - 1;
      for (double v : y[j]) {
        const double r = (v - u) / s;
        out.value += -0.5 * r * r - ls;
        out.gradient[2 * j] += r / s;
        out.gradient[2 * j + 1] += r * r - 1;
      }
    }
    return out;
  }
};

template <int Id, class T_group, class T_mu, class T_tau>
void check_hierarchical(const hierarchical_data& d, int G) {
  recover_memory();
  std::vector<Eigen::Matrix<T_group, -1, 1>> groups;
  for (const auto& g : d.groups) groups.push_back(g.cast<T_group>());
  const T_mu mu = d.mu;
  const T_tau log_tau = d.log_tau;
  const auto lp = reduce_sum<Id, hierarchical_partial>(groups, G, nullptr, d.y, mu, log_tau);
  static_assert(is_var_v<decltype(lp)> == (is_var_v<T_group> || is_var_v<T_mu> || is_var_v<T_tau>));
  const value_and_gradient got = gradient_of(lp, operands_of(groups, d.y, mu, log_tau));
  const value_and_gradient want = d.exact();
  const std::size_t J = d.groups.size();
  CHECK(close(got.value, want.value, 1e-13));
  // Operands: mu, log_tau (when var), then the groups' (u_j, log_s_j).
  std::size_t k = 0;
  if constexpr (is_var_v<T_mu>) CHECK(close(got.gradient[k++], want.gradient[2 * J], 1e-12));
  if constexpr (is_var_v<T_tau>) CHECK(close(got.gradient[k++], want.gradient[2 * J + 1], 1e-12));
  if constexpr (is_var_v<T_group>)
    for (std::size_t i = 0; i < 2 * J; ++i) CHECK(close(got.gradient[k++], want.gradient[i], 1e-12));
  CHECK(k == got.gradient.size());
  recover_memory();
}

/// Ragged nested arguments: the sliced argument (one vector of vars per term) and shared ones of each kind.
struct nested_arguments {
  std::vector<vector_v> sliced;
  matrix_v m;
  std::vector<var> scalars;
  double x = 0.75;
  int k = 3;
  std::vector<Eigen::VectorXd> data;
  explicit nested_arguments(int N) : m(2, 3), scalars(4), data(2, Eigen::VectorXd::LinSpaced(3, -1, 1)) {
    draws u;
    for (int t = 0; t < N; ++t) {
      vector_v v(1 + t % 3);
      for (var& e : v) e = u(-1, 1);
      sliced.push_back(v);
    }
    for (Eigen::Index i = 0; i < m.size(); ++i) m(i) = u(-1, 1);
    for (var& s : scalars) s = u(-1, 1);
  }
};

}  // namespace maprect::test
