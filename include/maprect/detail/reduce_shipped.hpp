#pragma once
/// \file The root's copy of what a reduce_sum call site last put in its payload: the data arguments as they
/// were, the parameters as their skeletons. A call compares its arguments with it in one pass, without
/// allocating (data bit for bit, parameters by shape), and writes a new payload only when they differ.

#include <Eigen/Dense>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "reduce_flatten.hpp"

namespace maprect::detail {

/// Equality of an argument of type T with a kept copy: data(a, b) bit for bit (data types), shape(x, s) of a
/// parameter and a skeleton, values ignored (types that hold vars).
template <class T>
struct same_as;

template <>
struct same_as<double> {
  static bool data(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
};

template <>
struct same_as<int> {
  static bool data(int a, int b) { return a == b; }
};

template <>
struct same_as<var> {
  static bool shape(const var&, double) { return true; }
};

template <class S, int R, int C, int O, int MR, int MC>
struct same_as<Eigen::Matrix<S, R, C, O, MR, MC>> {
  template <class M>
  static bool data(const Eigen::Matrix<S, R, C, O, MR, MC>& a, const M& b) {
    return shape(a, b) && std::memcmp(a.data(), b.data(), sizeof(double) * static_cast<std::size_t>(a.size())) == 0;
  }
  template <class M>
  static bool shape(const Eigen::Matrix<S, R, C, O, MR, MC>& a, const M& b) {
    return a.rows() == b.rows() && a.cols() == b.cols();
  }
};

template <class T>
struct same_as<std::vector<T>> {
  template <class V>
  static bool data(const std::vector<T>& a, const V& b) {
    if (a.size() != b.size()) return false;
    // Long rows of doubles or ints in one memcmp (a call compares all its data, on the root's path); short
    // ones element by element, where a call of memcmp would cost more than the comparisons.
    if constexpr (std::is_arithmetic_v<T>)
      if (a.size() > 16) return std::memcmp(a.data(), b.data(), sizeof(T) * a.size()) == 0;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same_as<T>::data(a[i], b[i])) return false;
    return true;
  }
  template <class V>
  static bool shape(const std::vector<T>& a, const V& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same_as<T>::shape(a[i], b[i])) return false;
    return true;
  }
};

/// One argument as last written into a payload: a copy of data, the skeleton of a parameter.
template <class T>
class kept_argument {
 public:
  /// Whether x would be written into a payload as the kept argument was.
  bool same(const T& x) const {
    if constexpr (holds_var_v<T>) return same_as<T>::shape(x, copy_);
    else return same_as<T>::data(x, copy_);
  }
  /// Keeps x as written now.
  void keep(const T& x) {
    if constexpr (holds_var_v<T>) copy_ = skeleton_of(x);
    else copy_ = x;
  }

 private:
  typename flat<T>::value_type copy_;
};

/// A call site's arguments as its last payload holds them.
template <class T_slice, class... Args>
class kept_payload {
 public:
  /// Whether a payload written for these arguments would equal the last one written (false before any).
  bool same(const std::vector<T_slice>& sliced, const Args&... args) const {
    return held_ && sliced_.same(sliced) && same_args(std::index_sequence_for<Args...>{}, args...);
  }
  /// Keeps these arguments as the last payload's.
  void keep(const std::vector<T_slice>& sliced, const Args&... args) {
    held_ = false;  // until every argument is kept
    sliced_.keep(sliced);
    keep_args(std::index_sequence_for<Args...>{}, args...);
    held_ = true;
  }

 private:
  template <std::size_t... I>
  bool same_args(std::index_sequence<I...>, const Args&... args) const {
    return (std::get<I>(args_).same(args) && ...);
  }
  template <std::size_t... I>
  void keep_args(std::index_sequence<I...>, const Args&... args) {
    (std::get<I>(args_).keep(args), ...);
  }

  bool held_ = false;
  kept_argument<std::vector<T_slice>> sliced_;
  std::tuple<kept_argument<Args>...> args_;
};

}  // namespace maprect::detail
