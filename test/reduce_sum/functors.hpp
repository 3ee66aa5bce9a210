#pragma once
// Partial-sum functors of the reduce_sum tests, and test-side references: the same functor run slice by
// slice (or term by term) on plain nested tapes, folded in order.
#include <maprect/reduce_sum.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace maprect::test {

using detail::reduce_return_t;

/// Logistic regression, sliced over observations y (0/1) with the covariates X (one row per observation)
/// and the coefficients beta and intercept alpha shared.
struct logistic_partial {
  template <class T_beta, class T_alpha>
  return_type_t<T_beta, T_alpha> operator()(const std::vector<int>& y, int start, int end, std::ostream*,
                                            const Eigen::MatrixXd& X, const Eigen::Matrix<T_beta, -1, 1>& beta,
                                            const T_alpha& alpha) const {
    return_type_t<T_beta, T_alpha> lp = 0;
    for (int i = start; i <= end; ++i) {
      return_type_t<T_beta, T_alpha> eta = alpha;
      for (Eigen::Index k = 0; k < beta.size(); ++k) eta += X(i, k) * beta(k);
      lp += y[i - start] ? log_inv_logit(eta) : log1m_inv_logit(eta);
    }
    return lp;
  }
};

/// A hierarchical model sliced over groups: group j's parameters (u_j, log_s_j) are the sliced argument,
/// y[j] its observations (a shared, ragged data argument), mu and log_tau shared:
/// u_j ~ normal(mu, exp(log_tau)), log_s_j ~ normal(0, 1), y_ji ~ normal(u_j, exp(log_s_j)) (constants dropped).
struct hierarchical_partial {
  template <class T_group, class T_mu, class T_tau>
  reduce_return_t<Eigen::Matrix<T_group, -1, 1>, T_mu, T_tau> operator()(
      const std::vector<Eigen::Matrix<T_group, -1, 1>>& groups, int start, int end, std::ostream*,
      const std::vector<std::vector<double>>& y, const T_mu& mu, const T_tau& log_tau) const {
    using std::exp;
    reduce_return_t<Eigen::Matrix<T_group, -1, 1>, T_mu, T_tau> lp = 0;
    const auto tau = exp(log_tau);
    for (int j = start; j <= end; ++j) {
      const auto& g = groups[static_cast<std::size_t>(j - start)];
      const auto s = exp(g(1));
      lp += -0.5 * square((g(0) - mu) / tau) - log_tau - 0.5 * square(g(1));
      for (double y_ji : y[static_cast<std::size_t>(j)]) lp += -0.5 * square((y_ji - g(0)) / s) - g(1);
    }
    return lp;
  }
};

/// The standard benchmark model as a partial sum over groups: group j's (u_j, v_j) sliced, (alpha, beta) and
/// the groups' data shared. Each group's sum is computed as map_rect's logistic_job computes its output.
struct standard_partial {
  template <class T_group, class T_shared>
  reduce_return_t<Eigen::Matrix<T_group, -1, 1>, Eigen::Matrix<T_shared, -1, 1>> operator()(
      const std::vector<Eigen::Matrix<T_group, -1, 1>>& groups, int start, int end, std::ostream*,
      const Eigen::Matrix<T_shared, -1, 1>& phi, const std::vector<std::vector<double>>& x_r,
      const std::vector<std::vector<int>>& x_i) const {
    reduce_return_t<Eigen::Matrix<T_group, -1, 1>, Eigen::Matrix<T_shared, -1, 1>> lp = 0;
    for (int j = start; j <= end; ++j) {
      const auto& theta = groups[static_cast<std::size_t>(j - start)];
      return_type_t<T_shared, T_group> group_lp = 0;
      const auto intercept = phi(0) + theta(0);
      const auto slope = phi(1) + theta(1);
      const std::vector<double>& x = x_r[static_cast<std::size_t>(j)];
      const std::vector<int>& y = x_i[static_cast<std::size_t>(j)];
      for (std::size_t i = 0; i < x.size(); ++i) {
        const auto eta = intercept + slope * x[i];
        group_lp += y[i] ? log_inv_logit(eta) : log1m_inv_logit(eta);
      }
      lp += group_lp;
    }
    return lp;
  }
};

// walk(x, w): a smooth function of every scalar of x, each with its own weight (w grows as x is walked),
// so that every var of every argument gets a distinct partial.
inline double walk(double x, double& w) {
  w += 0.125;
  return std::sin(w * x);
}
inline double walk(int x, double& w) {
  w += 0.125;
  return w * x;
}
inline var walk(const var& x, double& w) {
  w += 0.125;
  return sin(w * x);
}
template <class S, int R, int C>
reduce_return_t<S> walk(const Eigen::Matrix<S, R, C>& m, double& w) {
  reduce_return_t<S> sum = 0;
  for (Eigen::Index i = 0; i < m.size(); ++i) sum += walk(m(i), w);
  return sum;
}
template <class T>
reduce_return_t<T> walk(const std::vector<T>& v, double& w) {
  reduce_return_t<T> sum = 0;
  for (const T& e : v) sum += walk(e, w);
  return sum;
}

/// Any argument types, Stan's convention to the letter: term t contributes walk(slice term) * (1 + walk of
/// every shared argument), summed in term order from 0.
struct walking_partial {
  template <class T_slice, class... Args>
  reduce_return_t<T_slice, Args...> operator()(const std::vector<T_slice>& slice, int start, int end,
                                               std::ostream* msgs, const Args&... args) const {
    reduce_return_t<T_slice, Args...> total = 0;
    for (int t = start; t <= end; ++t) {
      double w = 0.5 + 0.01 * t;
      const reduce_return_t<T_slice> term = walk(slice[static_cast<std::size_t>(t - start)], w);
      reduce_return_t<Args...> shared = 1;
      ((shared += walk(args, w)), ...);
      total += term * shared;
    }
    if (msgs) *msgs << "[" << start << "," << end << "]";
    return total;
  }
};

/// Terms are integers: term value 1, 2 or 3 throws domain_error, invalid_argument or a non-standard type
/// with message "bad term <t>"; any other term adds scale * term.
struct throwing_partial {
  struct not_a_std_exception {};
  template <class T>
  T operator()(const std::vector<int>& slice, int start, int end, std::ostream*, const T& scale) const {
    T sum = 0;
    for (int t = start; t <= end; ++t) {
      const int term = slice[static_cast<std::size_t>(t - start)];
      const std::string message = "bad term " + std::to_string(t);
      if (term == 1) throw std::domain_error(message);
      if (term == 2) throw std::invalid_argument(message);
      if (term == 3) throw not_a_std_exception{};
      sum += scale * term;
    }
    return sum;
  }
};
/// Bit patterns, so that comparisons see -0.0 and NaN payloads too.
inline std::uint64_t bits(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

/// A value and its partials w.r.t. a list of vars.
struct value_and_gradient {
  double value = 0;
  std::vector<double> gradient;
  bool operator==(const value_and_gradient& o) const {
    if (bits(value) != bits(o.value) || gradient.size() != o.gradient.size()) return false;
    for (std::size_t k = 0; k < gradient.size(); ++k)
      if (bits(gradient[k]) != bits(o.gradient[k])) return false;
    return true;
  }
};

/// Every var of the arguments, shared ones first (in argument order), then the sliced ones: the operand
/// order of reduce_sum's node.
template <class T_slice, class... Args>
std::vector<vari*> operands_of(const std::vector<T_slice>& sliced, const Args&... args) {
  std::vector<vari*> out((std::size_t{0} + ... + detail::count_vars(args)) + detail::count_vars(sliced));
  vari** next = out.data();
  (detail::pack_nodes(args, next), ...);
  detail::pack_nodes(sliced, next);
  return out;
}

/// The value of a result, and the gradient of a var result w.r.t. `operands` (one reverse sweep).
template <class R>
value_and_gradient gradient_of(const R& result, const std::vector<vari*>& operands) {
  value_and_gradient out;
  if constexpr (is_var_v<R>) {
    out.value = result.val();
    set_zero_all_adjoints();
    grad(result);
    for (vari* v : operands) out.gradient.push_back(v->adj_);
  } else {
    out.value = result;
  }
  return out;
}

/// The test-side reference: F on each slice of grainsize G, in slice order, each on its own nested tape
/// with the caller's own vars, its value and partials folded in slice order from 0 (shared partials summed,
/// each term's own partials taken as they are).
template <class F, class T_slice, class... Args>
value_and_gradient fold_over_slices(int G, const std::vector<T_slice>& sliced, const Args&... args) {
  const std::vector<vari*> ops = operands_of(sliced, args...);
  const std::size_t S = ops.size() - detail::count_vars(sliced);
  value_and_gradient out;
  out.gradient.assign(ops.size(), 0.0);
  const int N = static_cast<int>(sliced.size());
  for (int b = 0; b < N; b += G) {
    const int e = std::min(N, b + G);
    const std::vector<T_slice> slice(sliced.begin() + b, sliced.begin() + e);
    std::vector<double> partials(ops.size(), 0.0);
    set_zero_all_adjoints();
    double value;
    {
      nested_tape region;
      const auto y = F{}(slice, b, e - 1, nullptr, args...);
      value = detail::double_of(y);
      if constexpr (is_var_v<decltype(y)>) grad(y);
      for (std::size_t k = 0; k < ops.size(); ++k) partials[k] = ops[k]->adj_;
    }
    out.value += value;
    for (std::size_t k = 0; k < S; ++k) out.gradient[k] += partials[k];
    const std::size_t own_begin = S + detail::count_vars(std::vector<T_slice>(sliced.begin(), sliced.begin() + b));
    const std::size_t own_end = S + detail::count_vars(std::vector<T_slice>(sliced.begin(), sliced.begin() + e));
    for (std::size_t k = own_begin; k < own_end; ++k) out.gradient[k] = partials[k];
  }
  return out;
}

/// 40 terms of which 5, 9, 17 and 30 fail (invalid_argument, domain_error, a non-standard type, domain_error).
inline std::vector<int> failing_terms() {
  std::vector<int> terms(40, 4);
  terms[5] = 2;
  terms[9] = 1;
  terms[17] = 3;
  terms[30] = 1;
  return terms;
}

}  // namespace maprect::test
