#pragma once
/// \file The reverse-mode scalar.

#include <ostream>
#include <type_traits>

#include "vari.hpp"

namespace maprect {

/// Reverse-mode scalar: a handle to a node on the thread's tape. Copying a var copies the handle.
class var {
 public:
  vari* vi_;  ///< the node; null for a default-constructed var

  /// An unset var (as Eigen needs); assign before use.
  var() : vi_(nullptr) {}
  /// A leaf with value `x`.
  var(double x) : vi_(new (leaf) vari(x)) {}  // NOLINT: implicit by design
  /// A leaf from any arithmetic value.
  template <class T, std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, double>, int> = 0>
  var(T x) : vi_(new (leaf) vari(static_cast<double>(x))) {}  // NOLINT
  /// Wraps an existing node.
  explicit var(vari* vi) : vi_(vi) {}

  /// Value.
  double val() const { return vi_->val_; }
  /// Adjoint (after grad(): d y / d this).
  double adj() const { return vi_->adj_; }

  inline var& operator+=(const var& b);
  inline var& operator+=(double b);
  inline var& operator-=(const var& b);
  inline var& operator-=(double b);
  inline var& operator*=(const var& b);
  inline var& operator*=(double b);
  inline var& operator/=(const var& b);
  inline var& operator/=(double b);
};

/// Prints the value.
inline std::ostream& operator<<(std::ostream& os, const var& v) {
  if (v.vi_ == nullptr) return os << "uninitialized";
  return os << v.val();
}

/// Value of a var.
inline double value_of(const var& v) { return v.val(); }
/// Value of a double (itself).
inline double value_of(double x) { return x; }

/// True for var.
template <class T>
struct is_var : std::is_same<std::decay_t<T>, var> {};
/// True for var.
template <class T>
inline constexpr bool is_var_v = is_var<T>::value;

/// var if any of Ts is var, else double.
template <class... Ts>
using return_type_t = std::conditional_t<(is_var_v<Ts> || ...), var, double>;

}  // namespace maprect
