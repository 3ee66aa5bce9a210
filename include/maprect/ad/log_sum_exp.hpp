#pragma once
/// \file log_sum_exp of a whole vector: one node, gradient softmax.

#include <Eigen/Dense>
#include <cmath>
#include <limits>

#include "eigen.hpp"

namespace maprect {

namespace detail {
/// log(sum(exp(x))) as one node over n operands.
class log_sum_exp_vari final : public vari {
 public:
  log_sum_exp_vari(double v, vari** operands, int n) : vari(v), operands_(operands), n_(n) {}
  void chain() override {
    if (std::isinf(val_) && val_ < 0) return;
    for (int i = 0; i < n_; ++i) operands_[i]->adj_ += adj_ * std::exp(operands_[i]->val_ - val_);
  }

 private:
  vari** operands_;
  int n_;
};

template <class Derived>
double log_sum_exp_values(const Eigen::MatrixBase<Derived>& x) {
  constexpr double neg_inf = -std::numeric_limits<double>::infinity();
  if (x.size() == 0) return neg_inf;
  double m = neg_inf;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const double xi = value_of(x(i));
    if (std::isnan(xi)) return xi;
    m = std::max(m, xi);
  }
  if (std::isinf(m)) return m;  // all -inf gives -inf; any +inf gives +inf
  double s = 0;
  for (Eigen::Index i = 0; i < x.size(); ++i) s += std::exp(value_of(x(i)) - m);
  return m + std::log(s);
}
}  // namespace detail

/// log(sum(exp(x))) of a double vector, without overflow; -inf for an empty vector.
template <class Derived, std::enable_if_t<std::is_same_v<typename Derived::Scalar, double>, int> = 0>
double log_sum_exp(const Eigen::MatrixBase<Derived>& x) {
  return detail::log_sum_exp_values(x);
}

/// log(sum(exp(x))) of a var vector, as one node whose partials are softmax(x).
template <class Derived, std::enable_if_t<std::is_same_v<typename Derived::Scalar, var>, int> = 0>
var log_sum_exp(const Eigen::MatrixBase<Derived>& x) {
  const double v = detail::log_sum_exp_values(x);
  const int n = static_cast<int>(x.size());
  vari** operands = tape::current().memory.allocate_array<vari*>(n);
  for (int i = 0; i < n; ++i) operands[i] = x(i).vi_;
  return var(new detail::log_sum_exp_vari(v, operands, n));
}

}  // namespace maprect
