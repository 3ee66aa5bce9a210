#pragma once
/// \file gradient() and jacobian() of functions of a var vector.

#include <Eigen/Dense>

#include "eigen.hpp"
#include "nested_tape.hpp"

namespace maprect {

/// Value fx = f(x) and gradient grad_fx of a scalar function f(vector_v) -> var, on a nested region
/// (the caller's tape is left as it was).
template <class F>
void gradient(const F& f, const Eigen::VectorXd& x, double& fx, Eigen::VectorXd& grad_fx) {
  nested_tape region;
  vector_v x_v = to_var(x);
  var y = f(x_v);
  fx = y.val();
  grad(y);
  grad_fx = adjoint_of(x_v);
}

/// Values fx = f(x) and Jacobian J (J(i, j) = d f_i / d x_j) of f(vector_v) -> vector_v, one reverse
/// sweep per output, on a nested region (the caller's tape is left as it was).
template <class F>
void jacobian(const F& f, const Eigen::VectorXd& x, Eigen::VectorXd& fx, Eigen::MatrixXd& J) {
  nested_tape region;
  vector_v x_v = to_var(x);
  vector_v y = f(x_v);
  fx = value_of(y);
  J.resize(y.size(), x.size());
  for (Eigen::Index i = 0; i < y.size(); ++i) {
    if (i > 0) set_zero_nested_adjoints();
    grad(y(i));
    J.row(i) = adjoint_of(x_v).transpose();
  }
}

}  // namespace maprect
