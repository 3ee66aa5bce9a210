#pragma once
/// \file reduce_sum's argument layer: the vars of an argument as a flat buffer of values, and the argument
/// rebuilt from such a buffer with fresh leaves. A slice's work then depends on the packed values, the
/// data arguments and the arguments' shapes only, which is what a rank or a thread needs to run it.
///
/// Supported: double, int, var, Eigen::Matrix of double or var (any shape), std::vector of any of these,
/// nested. Every var is visited in one fixed order: a vector's elements in order, a matrix's coefficients in
/// storage order (column-major by default).

#include <Eigen/Dense>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "../ad.hpp"

namespace maprect::detail {

template <class T>
inline constexpr bool always_false_v = false;

/// The flatten/rebuild traits of an argument type; specialised for every supported type.
template <class T>
struct flat {
  static_assert(always_false_v<T>,
                "reduce_sum: unsupported argument type; use double, int, var, Eigen::Matrix<double|var, ...>, or "
                "std::vector of these (nested)");
};

/// Arithmetic data: no var, copied as it is.
template <class T>
struct flat_data_scalar {
  static constexpr bool has_var = false;  ///< whether the type can hold a var
  using value_type = T;                   ///< the type with every var replaced by double
  template <class Shape>
  static std::size_t count(const Shape&) {
    return 0;
  }
  static void values(const T&, double*&) {}
  static void nodes(const T&, vari**&) {}
  template <class Shape>
  static void rebuild(T& dst, const Shape& shape, const double*&) {
    dst = shape;
  }
  static value_type skeleton(const T& x) { return x; }
};

template <>
struct flat<double> : flat_data_scalar<double> {};
template <>
struct flat<int> : flat_data_scalar<int> {};

template <>
struct flat<var> {
  static constexpr bool has_var = true;
  using value_type = double;
  /// How many vars an argument of this type with the shape of `shape` (a T or its skeleton) holds.
  template <class Shape>
  static std::size_t count(const Shape&) {
    return 1;
  }
  /// Appends the values of x's vars at `out`.
  static void values(const var& x, double*& out) { *out++ = x.val(); }
  /// Appends the nodes of x's vars at `out`.
  static void nodes(const var& x, vari**& out) { *out++ = x.vi_; }
  /// Makes dst take the shape of `shape` (an argument of this type or its value_type), its vars fresh leaves
  /// on the current tape with values read from `in`, one leaf per var in the traversal order.
  template <class Shape>
  static void rebuild(var& dst, const Shape&, const double*& in) {
    dst = var(*in++);
  }
  /// The argument with its vars replaced by their values: the shape a rank needs to rebuild it.
  static value_type skeleton(const var& x) { return x.val(); }
};

template <class S, int R, int C, int O, int MR, int MC>
struct flat<Eigen::Matrix<S, R, C, O, MR, MC>> {
  static_assert(std::is_same_v<S, double> || std::is_same_v<S, var>,
                "reduce_sum: Eigen matrices must hold double or var");
  using M = Eigen::Matrix<S, R, C, O, MR, MC>;
  static constexpr bool has_var = is_var_v<S>;
  using value_type = Eigen::Matrix<double, R, C, O, MR, MC>;
  template <class Shape>
  static std::size_t count(const Shape& x) {
    return has_var ? static_cast<std::size_t>(x.size()) : 0;
  }
  static void values(const M& x, double*& out) {
    if constexpr (has_var)
      for (Eigen::Index i = 0; i < x.size(); ++i) *out++ = x.data()[i].val();
  }
  static void nodes(const M& x, vari**& out) {
    if constexpr (has_var)
      for (Eigen::Index i = 0; i < x.size(); ++i) *out++ = x.data()[i].vi_;
  }
  template <class Shape>
  static void rebuild(M& dst, const Shape& shape, const double*& in) {
    if constexpr (has_var) {
      if (dst.rows() != shape.rows() || dst.cols() != shape.cols()) dst.resize(shape.rows(), shape.cols());
      for (Eigen::Index i = 0; i < dst.size(); ++i) dst.data()[i] = var(*in++);
    } else {
      dst = shape;
    }
  }
  static value_type skeleton(const M& x) {
    if constexpr (has_var) return value_of(x);
    else return x;
  }
};

template <class T>
struct flat<std::vector<T>> {
  using E = flat<T>;
  static constexpr bool has_var = E::has_var;
  using value_type = std::vector<typename E::value_type>;
  template <class Shape>
  static std::size_t count(const Shape& x) {
    std::size_t n = 0;
    if constexpr (has_var)
      for (const auto& e : x) n += E::count(e);
    return n;
  }
  static void values(const std::vector<T>& x, double*& out) {
    if constexpr (has_var)
      for (const T& e : x) E::values(e, out);
  }
  static void nodes(const std::vector<T>& x, vari**& out) {
    if constexpr (has_var)
      for (const T& e : x) E::nodes(e, out);
  }
  template <class Shape>
  static void rebuild(std::vector<T>& dst, const Shape& shape, const double*& in) {
    if constexpr (has_var) {
      dst.resize(shape.size());
      for (std::size_t i = 0; i < shape.size(); ++i) E::rebuild(dst[i], shape[i], in);
    } else {
      dst = shape;
    }
  }
  static value_type skeleton(const std::vector<T>& x) {
    if constexpr (has_var) {
      value_type out;
      out.reserve(x.size());
      for (const T& e : x) out.push_back(E::skeleton(e));
      return out;
    } else {
      return x;
    }
  }
};

/// Whether an argument of type T can hold a var (then it is a parameter; otherwise data).
template <class T>
inline constexpr bool holds_var_v = flat<T>::has_var;

/// How many vars x holds.
template <class T>
std::size_t count_vars(const T& x) {
  return flat<T>::count(x);
}

/// How many vars an argument of type T with the shape of `shape` (a T or its skeleton) holds.
template <class T, class Shape>
std::size_t count_vars_as(const Shape& shape) {
  return flat<T>::count(shape);
}

/// Appends the values of x's vars at `out`, advancing it.
template <class T>
void pack_values(const T& x, double*& out) {
  flat<T>::values(x, out);
}

/// Appends the nodes of x's vars at `out`, advancing it.
template <class T>
void pack_nodes(const T& x, vari**& out) {
  flat<T>::nodes(x, out);
}

/// dst with the shape of `shape` (a T or its skeleton), its vars fresh leaves on the current tape whose values
/// are read from `in` (advanced); data is copied from `shape`.
template <class T, class Shape>
void rebuild(T& dst, const Shape& shape, const double*& in) {
  flat<T>::rebuild(dst, shape, in);
}

/// The skeleton of an argument: its vars replaced by their values (data unchanged).
template <class T>
typename flat<T>::value_type skeleton_of(const T& x) {
  return flat<T>::skeleton(x);
}

}  // namespace maprect::detail
