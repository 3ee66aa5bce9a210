#pragma once
/// \file log_sum_exp of a whole vector: one node, gradient softmax.

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "eigen.hpp"

namespace maprect {

namespace detail {
/// log(sum(exp(x))) as one node over n operands, with partials softmax(x) = exp(x_i - max) / sum.
class log_sum_exp_vari final : public vari {
 public:
  log_sum_exp_vari(double v, vari** operands, int n, double max, double sum)
      : vari(v), operands_(operands), n_(n), max_(max), sum_(sum) {}
  void chain() override {
    if (std::isinf(val_) && val_ < 0) return;
    // From the max and the sum, not exp(x_i - val_): val_ carries a rounding error of |val_| 2^-53,
    // which exp turns into a relative error of every partial (1e-13 at |val_| = 700).
    const double scale = adj_ / sum_;
    for (int i = 0; i < n_; ++i) operands_[i]->adj_ += scale * std::exp(operands_[i]->val_ - max_);
  }

 private:
  vari** operands_;
  int n_;
  double max_;
  double sum_;
};

/// log(sum(exp(x))) of n values, with the max of the values and sum(exp(x - max)).
struct log_sum_exp_terms {
  double value;
  double max;
  double sum;
};

/// The terms of log_sum_exp for the values value_at(0), ..., value_at(n - 1).
template <class ValueAt>
log_sum_exp_terms log_sum_exp_of(Eigen::Index n, const ValueAt& value_at) {
  constexpr double neg_inf = -std::numeric_limits<double>::infinity();
  if (n == 0) return {neg_inf, neg_inf, 0.0};
  double m = neg_inf;
  for (Eigen::Index i = 0; i < n; ++i) {
    const double xi = value_at(i);
    if (std::isnan(xi)) return {xi, xi, xi};
    m = std::max(m, xi);
  }
  if (std::isinf(m)) return {m, m, 1.0};  // all -inf gives -inf; any +inf gives +inf
  double s = 0;
  for (Eigen::Index i = 0; i < n; ++i) s += std::exp(value_at(i) - m);
  return {m + std::log(s), m, s};
}
}  // namespace detail

/// log(sum(exp(x))) of a double vector, without overflow; -inf for an empty vector.
template <class Derived, std::enable_if_t<std::is_same_v<typename Derived::Scalar, double>, int> = 0>
double log_sum_exp(const Eigen::MatrixBase<Derived>& x) {
  return detail::log_sum_exp_of(x.size(), [&](Eigen::Index i) { return static_cast<double>(x(i)); }).value;
}

/// log(sum(exp(x))) of a var vector, as one node whose partials are softmax(x).
template <class Derived, std::enable_if_t<std::is_same_v<typename Derived::Scalar, var>, int> = 0>
var log_sum_exp(const Eigen::MatrixBase<Derived>& x) {
  const int n = static_cast<int>(x.size());
  vari** operands = tape::current().memory.allocate_array<vari*>(n);
  // Each coefficient is read once: for an expression (x * 2.0) every read would make a new node.
  for (int i = 0; i < n; ++i) operands[i] = x(i).vi_;
  const detail::log_sum_exp_terms t = detail::log_sum_exp_of(n, [&](Eigen::Index i) { return operands[i]->val_; });
  return var(new detail::log_sum_exp_vari(t.value, operands, n, t.max, t.sum));
}

}  // namespace maprect
