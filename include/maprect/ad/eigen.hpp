#pragma once
/// \file Eigen support: var as a scalar type, and var/double mixed expressions.

#include <Eigen/Dense>
#include <limits>

#include "functions.hpp"

namespace Eigen {

/// var as an Eigen scalar.
template <>
struct NumTraits<maprect::var> : GenericNumTraits<maprect::var> {
  using Real = maprect::var;
  using NonInteger = maprect::var;
  using Nested = maprect::var;
  using Literal = maprect::var;
  enum {
    IsComplex = 0,
    IsInteger = 0,
    IsSigned = 1,
    RequireInitialization = 1,
    ReadCost = 1,
    AddCost = 2,
    MulCost = 2
  };
  static inline maprect::var epsilon() { return std::numeric_limits<double>::epsilon(); }
  static inline maprect::var dummy_precision() { return NumTraits<double>::dummy_precision(); }
  static inline maprect::var highest() { return std::numeric_limits<double>::max(); }
  static inline maprect::var lowest() { return std::numeric_limits<double>::lowest(); }
  static inline int digits10() { return std::numeric_limits<double>::digits10; }
};

/// var op double is var.
template <typename BinaryOp>
struct ScalarBinaryOpTraits<maprect::var, double, BinaryOp> {
  using ReturnType = maprect::var;
};
/// double op var is var.
template <typename BinaryOp>
struct ScalarBinaryOpTraits<double, maprect::var, BinaryOp> {
  using ReturnType = maprect::var;
};

}  // namespace Eigen

namespace maprect {

/// Column vector of var.
using vector_v = Eigen::Matrix<var, Eigen::Dynamic, 1>;
/// Matrix of var.
using matrix_v = Eigen::Matrix<var, Eigen::Dynamic, Eigen::Dynamic>;

/// Values of a var (or double) matrix.
template <class Derived>
Eigen::Matrix<double, Derived::RowsAtCompileTime, Derived::ColsAtCompileTime> value_of(
    const Eigen::MatrixBase<Derived>& m) {
  return m.unaryExpr([](const auto& x) { return value_of(x); });
}

/// Adjoints of a var matrix.
template <class Derived>
Eigen::Matrix<double, Derived::RowsAtCompileTime, Derived::ColsAtCompileTime> adjoint_of(
    const Eigen::MatrixBase<Derived>& m) {
  return m.unaryExpr([](const var& x) { return x.adj(); });
}

/// Leaves for the values of a double matrix.
template <class Derived>
Eigen::Matrix<var, Derived::RowsAtCompileTime, Derived::ColsAtCompileTime> to_var(
    const Eigen::MatrixBase<Derived>& m) {
  return m.unaryExpr([](double x) { return var(x); });
}

}  // namespace maprect

namespace Eigen::internal {

// Products of a var matrix with a double matrix (either side) are evaluated coefficient by coefficient:
// Eigen's blocked kernels cannot mix the two scalar types, and converting their scale factor to double
// would drop its derivative. Other expressions mixing var and double can be multiplied after .eval(), or
// with lazyProduct().
#define MAPRECT_COEFFWISE_PRODUCT(LHS_SCALAR, RHS_SCALAR, TAG)                                                   \
  template <int R1, int C1, int O1, int MR1, int MC1, int R2, int C2, int O2, int MR2, int MC2>                  \
  struct generic_product_impl<Matrix<LHS_SCALAR, R1, C1, O1, MR1, MC1>, Matrix<RHS_SCALAR, R2, C2, O2, MR2, MC2>, \
                              DenseShape, DenseShape, TAG>                                                       \
      : generic_product_impl<Matrix<LHS_SCALAR, R1, C1, O1, MR1, MC1>, Matrix<RHS_SCALAR, R2, C2, O2, MR2, MC2>,  \
                             DenseShape, DenseShape, CoeffBasedProductMode> {};
MAPRECT_COEFFWISE_PRODUCT(maprect::var, double, GemvProduct)
MAPRECT_COEFFWISE_PRODUCT(maprect::var, double, GemmProduct)
MAPRECT_COEFFWISE_PRODUCT(double, maprect::var, GemvProduct)
MAPRECT_COEFFWISE_PRODUCT(double, maprect::var, GemmProduct)
#undef MAPRECT_COEFFWISE_PRODUCT

}  // namespace Eigen::internal
