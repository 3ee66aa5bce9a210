#pragma once
/// \file Scalar functions of var (found by ADL) and double overloads of the ones std lacks.

#include <math.h>  // lgamma_r

#include <cmath>
#include <limits>

#include "operators.hpp"
#include "vari_kinds.hpp"

namespace maprect {

// The std functions, so that unqualified calls on double inside maprect (or after `using namespace
// maprect`) pick them rather than converting to var.
using std::abs;
using std::cos;
using std::erf;
using std::exp;
using std::expm1;
using std::fabs;
using std::log;
using std::log1p;
using std::pow;
using std::sin;
using std::sqrt;
using std::tan;
using std::tanh;

namespace detail {
inline var unary(double value, const var& a, double derivative) {
  return var(new unary_partial_vari(value, a.vi_, derivative));
}
inline var binary(double value, const var& a, const var& b, double da, double db) {
  return var(new binary_partial_vari(value, a.vi_, b.vi_, da, db));
}
constexpr double pi = 3.14159265358979323846;
}  // namespace detail

// ---- double versions of the functions std does not have ----

/// x * x
inline double square(double x) { return x * x; }
/// log |Gamma(x)|. std::lgamma writes the sign of Gamma(x) to the global `signgam`, a data race when jobs
/// run on several threads; lgamma_r returns it in a local instead.
inline double lgamma(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}
/// 1 / (1 + exp(-x)), without overflow for any x.
inline double inv_logit(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}
/// log(1 + exp(x)), exact for large |x|.
inline double log1p_exp(double x) {
  if (x > 0) return x + std::log1p(std::exp(-x));
  return std::log1p(std::exp(x));
}
/// log(inv_logit(x)) = -log1p_exp(-x).
inline double log_inv_logit(double x) { return -log1p_exp(-x); }
/// log(1 - inv_logit(x)) = -log1p_exp(x).
inline double log1m_inv_logit(double x) { return -log1p_exp(x); }
/// log(exp(a) + exp(b)), without overflow.
inline double log_sum_exp(double a, double b) {
  if (a == -std::numeric_limits<double>::infinity()) return b;
  if (b == -std::numeric_limits<double>::infinity()) return a;
  if (a == std::numeric_limits<double>::infinity() && b == a) return a;  // a - b below would be NaN
  const double m = a > b ? a : b;
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}
/// Digamma function psi(x) = d/dx lgamma(x), accurate to a few 1e-15 relative.
inline double digamma(double x) {
  if (std::isnan(x)) return x;
  if (x <= 0 && std::floor(x) == x) return std::numeric_limits<double>::quiet_NaN();
  double shift = 0;
  if (x < 0) {  // reflection: psi(1 - x) - psi(x) = pi cot(pi x)
    shift = -detail::pi / std::tan(detail::pi * x);
    x = 1 - x;
  }
  while (x < 10) {
    shift -= 1 / x;
    x += 1;
  }
  const double r = 1 / (x * x);
  // Asymptotic series with Bernoulli numbers B_2k / (2k).
  const double series =
      r * (1.0 / 12 - r * (1.0 / 120 - r * (1.0 / 252 - r * (1.0 / 240 - r * (1.0 / 132 - r * (691.0 / 32760))))));
  return shift + std::log(x) - 0.5 / x - series;
}
/// d/dx inv_logit(x) = inv_logit(x) (1 - inv_logit(x)), without cancellation.
inline double inv_logit_derivative(double x) {
  const double e = std::exp(-std::fabs(x));
  return e / ((1 + e) * (1 + e));
}

// ---- var versions ----

/// exp(a)
inline var exp(const var& a) {
  const double v = std::exp(a.val());
  return detail::unary(v, a, v);
}
/// log(a)
inline var log(const var& a) { return detail::unary(std::log(a.val()), a, 1.0 / a.val()); }
/// log(1 + a)
inline var log1p(const var& a) { return detail::unary(std::log1p(a.val()), a, 1.0 / (1.0 + a.val())); }
/// exp(a) - 1
inline var expm1(const var& a) { return detail::unary(std::expm1(a.val()), a, std::exp(a.val())); }
/// sqrt(a)
inline var sqrt(const var& a) {
  const double v = std::sqrt(a.val());
  return detail::unary(v, a, 0.5 / v);
}
/// a * a
inline var square(const var& a) { return detail::unary(a.val() * a.val(), a, 2.0 * a.val()); }
/// a ^ b
inline var pow(const var& a, const var& b) {
  const double v = std::pow(a.val(), b.val());
  const double da = b.val() == 0 ? 0.0 : b.val() * std::pow(a.val(), b.val() - 1);
  const double db = a.val() == 0 ? 0.0 : v * std::log(a.val());
  return detail::binary(v, a, b, da, db);
}
/// a ^ c
inline var pow(const var& a, double c) {
  return detail::unary(std::pow(a.val(), c), a, c == 0 ? 0.0 : c * std::pow(a.val(), c - 1));
}
/// c ^ b
inline var pow(double c, const var& b) {
  const double v = std::pow(c, b.val());
  return detail::unary(v, b, c == 0 ? 0.0 : v * std::log(c));
}
/// sin(a)
inline var sin(const var& a) { return detail::unary(std::sin(a.val()), a, std::cos(a.val())); }
/// cos(a)
inline var cos(const var& a) { return detail::unary(std::cos(a.val()), a, -std::sin(a.val())); }
/// tan(a)
inline var tan(const var& a) {
  const double v = std::tan(a.val());
  return detail::unary(v, a, 1.0 + v * v);
}
/// tanh(a)
inline var tanh(const var& a) {
  // 1 - tanh(a)^2 cancels to 0 for |a| > 19; with e = exp(-2|a|) the same value is 4e / (1 + e)^2,
  // accurate to a few ulps for every a.
  const double e = std::exp(-2 * std::fabs(a.val()));
  return detail::unary(std::tanh(a.val()), a, 4 * e / ((1 + e) * (1 + e)));
}
/// |a|; the derivative at 0 is taken as 0.
inline var fabs(const var& a) {
  const double x = a.val();
  if (std::isnan(x)) return detail::unary(x, a, x);
  return detail::unary(std::fabs(x), a, x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0));
}
/// |a|
inline var abs(const var& a) { return fabs(a); }
/// log |Gamma(a)|
inline var lgamma(const var& a) { return detail::unary(lgamma(a.val()), a, digamma(a.val())); }
/// Error function.
inline var erf(const var& a) {
  const double x = a.val();
  return detail::unary(std::erf(x), a, 2.0 / std::sqrt(detail::pi) * std::exp(-x * x));
}
/// 1 / (1 + exp(-a))
inline var inv_logit(const var& a) {
  return detail::unary(inv_logit(a.val()), a, inv_logit_derivative(a.val()));
}
/// log(1 + exp(a))
inline var log1p_exp(const var& a) { return detail::unary(log1p_exp(a.val()), a, inv_logit(a.val())); }
/// log(inv_logit(a))
inline var log_inv_logit(const var& a) {
  return detail::unary(log_inv_logit(a.val()), a, inv_logit(-a.val()));
}
/// log(1 - inv_logit(a))
inline var log1m_inv_logit(const var& a) {
  return detail::unary(log1m_inv_logit(a.val()), a, -inv_logit(a.val()));
}
/// log(exp(a) + exp(b))
inline var log_sum_exp(const var& a, const var& b) {
  const double v = log_sum_exp(a.val(), b.val());
  if (std::isinf(v) && v < 0) return detail::binary(v, a, b, 0.0, 0.0);
  // The partials exp(a - v), exp(b - v) would inherit v's rounding error, |v| 2^-53 in absolute terms
  // (1e-13 relative at |v| = 700, 1e-6 at 1e10); inv_logit of the exact difference does not.
  const double d = a.val() - b.val();
  return detail::binary(v, a, b, inv_logit(d), inv_logit(-d));
}
/// log(exp(a) + exp(c))
inline var log_sum_exp(const var& a, double c) {
  const double v = log_sum_exp(a.val(), c);
  return detail::unary(v, a, std::isinf(v) && v < 0 ? 0.0 : inv_logit(a.val() - c));
}
/// log(exp(c) + exp(b))
inline var log_sum_exp(double c, const var& b) { return log_sum_exp(b, c); }

}  // namespace maprect
