#pragma once
/// \file Arithmetic and comparison on var.

#include "var.hpp"
#include "vari_kinds.hpp"

namespace maprect {

namespace detail {
class add_vv_vari final : public binary_vari {
 public:
  add_vv_vari(vari* a, vari* b) : binary_vari(a->val_ + b->val_, a, b) {}
  void chain() override {
    a_->adj_ += adj_;
    b_->adj_ += adj_;
  }
};
class sub_vv_vari final : public binary_vari {
 public:
  sub_vv_vari(vari* a, vari* b) : binary_vari(a->val_ - b->val_, a, b) {}
  void chain() override {
    a_->adj_ += adj_;
    b_->adj_ -= adj_;
  }
};
class mul_vv_vari final : public binary_vari {
 public:
  mul_vv_vari(vari* a, vari* b) : binary_vari(a->val_ * b->val_, a, b) {}
  void chain() override {
    a_->adj_ += adj_ * b_->val_;
    b_->adj_ += adj_ * a_->val_;
  }
};
class div_vv_vari final : public binary_vari {
 public:
  div_vv_vari(vari* a, vari* b) : binary_vari(a->val_ / b->val_, a, b) {}
  void chain() override {
    a_->adj_ += adj_ / b_->val_;
    b_->adj_ -= adj_ * val_ / b_->val_;
  }
};
/// d/da of (a + c) and (a - c) is 1.
class add_vd_vari final : public unary_vari {
 public:
  add_vd_vari(vari* a, double c) : unary_vari(a->val_ + c, a) {}
  void chain() override { a_->adj_ += adj_; }
};
class neg_vari final : public unary_vari {
 public:
  explicit neg_vari(vari* a) : unary_vari(-a->val_, a) {}
  void chain() override { a_->adj_ -= adj_; }
};
/// c - a
class sub_dv_vari final : public unary_vari {
 public:
  sub_dv_vari(double c, vari* a) : unary_vari(c - a->val_, a) {}
  void chain() override { a_->adj_ -= adj_; }
};
class mul_vd_vari final : public unary_vari {
 public:
  mul_vd_vari(vari* a, double c) : unary_vari(a->val_ * c, a), c_(c) {}
  void chain() override { a_->adj_ += adj_ * c_; }

 private:
  double c_;
};
/// a / c (its own node so the value is exactly a / c)
class div_vd_vari final : public unary_vari {
 public:
  div_vd_vari(vari* a, double c) : unary_vari(a->val_ / c, a), c_(c) {}
  void chain() override { a_->adj_ += adj_ / c_; }

 private:
  double c_;
};
/// c / a
class div_dv_vari final : public unary_vari {
 public:
  div_dv_vari(double c, vari* a) : unary_vari(c / a->val_, a) {}
  void chain() override { a_->adj_ -= adj_ * val_ / a_->val_; }
};
}  // namespace detail

/// a + b
MAPRECT_ALWAYS_INLINE var operator+(const var& a, const var& b) { return var(new detail::add_vv_vari(a.vi_, b.vi_)); }
/// a + c
MAPRECT_ALWAYS_INLINE var operator+(const var& a, double c) { return var(new detail::add_vd_vari(a.vi_, c)); }
/// c + a
MAPRECT_ALWAYS_INLINE var operator+(double c, const var& a) { return var(new detail::add_vd_vari(a.vi_, c)); }
/// a - b
MAPRECT_ALWAYS_INLINE var operator-(const var& a, const var& b) { return var(new detail::sub_vv_vari(a.vi_, b.vi_)); }
/// a - c
MAPRECT_ALWAYS_INLINE var operator-(const var& a, double c) { return var(new detail::add_vd_vari(a.vi_, -c)); }
/// c - a
MAPRECT_ALWAYS_INLINE var operator-(double c, const var& a) { return var(new detail::sub_dv_vari(c, a.vi_)); }
/// a * b
MAPRECT_ALWAYS_INLINE var operator*(const var& a, const var& b) { return var(new detail::mul_vv_vari(a.vi_, b.vi_)); }
/// a * c
MAPRECT_ALWAYS_INLINE var operator*(const var& a, double c) { return var(new detail::mul_vd_vari(a.vi_, c)); }
/// c * a
MAPRECT_ALWAYS_INLINE var operator*(double c, const var& a) { return var(new detail::mul_vd_vari(a.vi_, c)); }
/// a / b
MAPRECT_ALWAYS_INLINE var operator/(const var& a, const var& b) { return var(new detail::div_vv_vari(a.vi_, b.vi_)); }
/// a / c
MAPRECT_ALWAYS_INLINE var operator/(const var& a, double c) { return var(new detail::div_vd_vari(a.vi_, c)); }
/// c / a
MAPRECT_ALWAYS_INLINE var operator/(double c, const var& a) { return var(new detail::div_dv_vari(c, a.vi_)); }
/// -a
MAPRECT_ALWAYS_INLINE var operator-(const var& a) { return var(new detail::neg_vari(a.vi_)); }
/// +a (the same node)
MAPRECT_ALWAYS_INLINE var operator+(const var& a) { return a; }

// Integer operands (as in `2 * x` or `x + 1`) go through double.
#define MAPRECT_INT_OVERLOADS(OP)                                                          \
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>                    \
  inline var operator OP(const var& a, I c) { return a OP static_cast<double>(c); }       \
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>                    \
  inline var operator OP(I c, const var& a) { return static_cast<double>(c) OP a; }
MAPRECT_INT_OVERLOADS(+)
MAPRECT_INT_OVERLOADS(-)
MAPRECT_INT_OVERLOADS(*)
MAPRECT_INT_OVERLOADS(/)
#undef MAPRECT_INT_OVERLOADS

inline var& var::operator+=(const var& b) { return *this = *this + b; }
inline var& var::operator+=(double b) { return *this = *this + b; }
inline var& var::operator-=(const var& b) { return *this = *this - b; }
inline var& var::operator-=(double b) { return *this = *this - b; }
inline var& var::operator*=(const var& b) { return *this = *this * b; }
inline var& var::operator*=(double b) { return *this = *this * b; }
inline var& var::operator/=(const var& b) { return *this = *this / b; }
inline var& var::operator/=(double b) { return *this = *this / b; }

// Comparisons look at values only.
#define MAPRECT_COMPARISON(OP)                                                          \
  inline bool operator OP(const var& a, const var& b) { return a.val() OP b.val(); }   \
  inline bool operator OP(const var& a, double b) { return a.val() OP b; }             \
  inline bool operator OP(double a, const var& b) { return a OP b.val(); }
MAPRECT_COMPARISON(==)
MAPRECT_COMPARISON(!=)
MAPRECT_COMPARISON(<)
MAPRECT_COMPARISON(>)
MAPRECT_COMPARISON(<=)
MAPRECT_COMPARISON(>=)
#undef MAPRECT_COMPARISON

}  // namespace maprect
