#pragma once
// Helpers of the AD tests: finite differences with an error bound, AD derivatives taken on a nested
// region, and a guard that leaves every test case with an empty tape.
#include <maprect/ad.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <functional>

namespace maprect::test {

/// Starts a test case on an empty tape and leaves it empty, so that node counts and byte counts
/// measured inside one case do not depend on the cases that ran before.
struct clean_tape {
  clean_tape() { recover_memory(); }
  ~clean_tape() { recover_memory(); }
  clean_tape(const clean_tape&) = delete;
  clean_tape& operator=(const clean_tape&) = delete;
};

/// A five-point central difference of f at x with step h, and a bound on its rounding error.
struct finite_difference {
  double derivative;
  double rounding_bound;  ///< absolute: a few ulps of the largest sampled value, divided by h
};

inline finite_difference central_difference(const std::function<double(double)>& f, double x, double h) {
  const double f_m2 = f(x - 2 * h), f_m1 = f(x - h), f_p1 = f(x + h), f_p2 = f(x + 2 * h);
  const double largest = std::max({std::fabs(f_m2), std::fabs(f_m1), std::fabs(f_p1), std::fabs(f_p2)});
  // The stencil weights sum to 18/12 in absolute value; 8 ulps leaves room for the error of f itself.
  return {(f_m2 - 8 * f_m1 + 8 * f_p1 - f_p2) / (12 * h), 8 * DBL_EPSILON * largest / h};
}

/// Step for functions whose features have size 1 (exp, sin, the logistic family): 1e-3, smaller near 0
/// only so that the stencil never crosses zero for functions with a kink there.
inline double absolute_step(double x) { return x == 0 ? 1e-3 : 1e-3 * std::min(1.0, std::fabs(x)); }
/// Step for scale-free functions (log, sqrt, powers): a thousandth of |x|.
inline double relative_step(double x) { return x == 0 ? 1e-3 : 1e-3 * std::fabs(x); }

/// d f / d x at x by reverse mode, on a nested region so the caller's tape is untouched.
inline double ad_derivative(const std::function<var(const var&)>& f, double x) {
  nested_tape region;
  var xv = x;
  var y = f(xv);
  grad(y);
  return xv.adj();
}

/// Value and both partials of f(a, b) by reverse mode, on a nested region.
struct value_and_partials {
  double value, d_a, d_b;
};
inline value_and_partials ad_partials(const std::function<var(const var&, const var&)>& f, double a, double b) {
  nested_tape region;
  var av = a, bv = b;
  var y = f(av, bv);
  grad(y);
  return {y.val(), av.adj(), bv.adj()};
}

}  // namespace maprect::test
