#pragma once
/// \file Node shapes shared by the operators and functions.

#include "vari.hpp"

namespace maprect::detail {

/// A node with one operand.
class unary_vari : public vari {
 public:
  unary_vari(double v, vari* a) : vari(v), a_(a) {}

 protected:
  vari* a_;
};

/// A node with two operands.
class binary_vari : public vari {
 public:
  binary_vari(double v, vari* a, vari* b) : vari(v), a_(a), b_(b) {}

 protected:
  vari* a_;
  vari* b_;
};

/// f(a) whose derivative was computed with the value: adds adj * d into a.
class unary_partial_vari final : public unary_vari {
 public:
  unary_partial_vari(double v, vari* a, double d) : unary_vari(v, a), d_(d) {}
  void chain() override { a_->adj_ += adj_ * d_; }

 private:
  double d_;
};

/// f(a, b) whose two partials were computed with the value.
class binary_partial_vari final : public binary_vari {
 public:
  binary_partial_vari(double v, vari* a, vari* b, double da, double db) : binary_vari(v, a, b), da_(da), db_(db) {}
  void chain() override {
    a_->adj_ += adj_ * da_;
    b_->adj_ += adj_ * db_;
  }

 private:
  double da_;
  double db_;
};

}  // namespace maprect::detail
