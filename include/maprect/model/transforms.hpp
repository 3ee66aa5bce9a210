#pragma once
/// \file Stan's transforms of bounded parameters: a constrained value from an unconstrained one, its
/// log-Jacobian, and the inverse. The sampler moves on the unconstrained scale; the density there is the
/// model's density at the constrained value plus the log-Jacobian, exactly as Stan adds it.

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

#include "../ad.hpp"

namespace maprect {

/// A parameter's bounds: Stan's <lower=L>, <upper=U> or <lower=L, upper=U>; infinite means absent.
struct bounds {
  double lower = -std::numeric_limits<double>::infinity();  ///< lower bound, -inf when none
  double upper = std::numeric_limits<double>::infinity();   ///< upper bound, +inf when none

  /// True when a finite lower bound is set.
  bool has_lower() const { return std::isfinite(lower); }
  /// True when a finite upper bound is set.
  bool has_upper() const { return std::isfinite(upper); }
  /// True when neither bound is set: the transform is the identity.
  bool unbounded() const { return !has_lower() && !has_upper(); }
  /// "<lower=0, upper=1>" as Stan writes it, or "" when unbounded.
  std::string to_string() const {
    if (unbounded()) return "";
    std::ostringstream out;
    out.precision(17);
    out << '<';
    if (has_lower()) out << "lower=" << lower;
    if (has_lower() && has_upper()) out << ", ";
    if (has_upper()) out << "upper=" << upper;
    out << '>';
    return out.str();
  }
};

/// Throws std::invalid_argument naming `what` unless the bounds are NaN-free with lower < upper.
inline void check_bounds(const bounds& b, const std::string& what) {
  if (std::isnan(b.lower) || std::isnan(b.upper) || !(b.lower < b.upper) || b.lower == HUGE_VAL ||
      b.upper == -HUGE_VAL) {
    std::ostringstream out;
    out.precision(17);
    out << what << ": bounds need lower < upper, got lower=" << b.lower << ", upper=" << b.upper;
    throw std::invalid_argument(out.str());
  }
}

/// The constrained value of unconstrained u under `b` (double or var), adding the transform's log-Jacobian
/// to `log_jacobian`: lower bound L: L + exp(u), log J = u; upper bound U: U - exp(u), log J = u; both:
/// L + (U - L) inv_logit(u), log J = log(U - L) + log inv_logit(u) + log(1 - inv_logit(u)). Unbounded: u,
/// nothing added (no tape node either).
template <class T>
T constrain(const T& u, const bounds& b, T& log_jacobian) {
  using std::exp;
  using std::log;
  if (b.has_lower() && b.has_upper()) {
    const double width = b.upper - b.lower;
    log_jacobian += log(width) + log_inv_logit(u) + log1m_inv_logit(u);
    return b.lower + width * inv_logit(u);
  }
  if (b.has_lower()) {
    log_jacobian += u;
    return b.lower + exp(u);
  }
  if (b.has_upper()) {
    log_jacobian += u;
    return b.upper - exp(u);
  }
  return u;
}

/// The constrained value alone (no Jacobian): for outputs, generated quantities and MAP fits.
template <class T>
T constrain(const T& u, const bounds& b) {
  T ignored = 0;
  return constrain(u, b, ignored);
}

/// The unconstrained value of a constrained x: log(x - L), log(U - x) or logit((x - L) / (U - L)). Throws
/// std::domain_error naming `what` when x is not strictly inside the bounds (the transforms reach a bound
/// only at infinity) or is NaN.
inline double unconstrain(double x, const bounds& b, const std::string& what) {
  const bool inside = !std::isnan(x) && (!b.has_lower() || x > b.lower) && (!b.has_upper() || x < b.upper);
  if (!inside || (b.unbounded() && !std::isfinite(x))) {
    std::ostringstream out;
    out.precision(17);
    out << what << " = " << x << " is outside its bounds " << (b.unbounded() ? "(must be finite)" : b.to_string());
    throw std::domain_error(out.str());
  }
  if (b.has_lower() && b.has_upper()) {
    const double p = (x - b.lower) / (b.upper - b.lower);
    return std::log(p / (1 - p));
  }
  if (b.has_lower()) return std::log(x - b.lower);
  if (b.has_upper()) return std::log(b.upper - x);
  return x;
}

}  // namespace maprect
