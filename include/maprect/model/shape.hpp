#pragma once
/// \file The shapes of a model's variables as Stan has them (real, vector, row_vector, matrix, arrays of
/// them), how their values lie in a flat vector, and their CSV column names.
///
/// Storage order (the unconstrained vector, the values a log density sees): arrays in row-major order of
/// their elements, each vector or matrix element in column-major order, as Stan reads its parameters.
/// CSV order: every index column-major, the first index fastest (theta.1.1, theta.2.1, ...), as Stan writes.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace maprect {

/// What a variable is, Stan's basic types.
enum class variable_kind {
  real,        ///< real x
  vector,      ///< vector[n] x
  row_vector,  ///< row_vector[n] x
  matrix,      ///< matrix[r, c] x
};

/// A variable's shape: an array (possibly of no dimensions) of a real, vector, row_vector or matrix.
struct variable_shape {
  variable_kind kind = variable_kind::real;  ///< the element type
  std::vector<int> array_dims;               ///< array[d1, d2, ...] dimensions; empty: not an array
  int rows = 1;                              ///< vector/row_vector length, matrix rows; 1 for a real
  int cols = 1;                              ///< matrix columns; 1 otherwise

  /// Values in one element.
  std::size_t element_size() const { return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols); }
  /// Values in the variable.
  std::size_t size() const {
    std::size_t n = element_size();
    for (int d : array_dims) n *= static_cast<std::size_t>(d);
    return n;
  }
  /// Every dimension, arrays first: the shape of its CmdStan JSON value ({} for a real).
  std::vector<int> dims() const {
    std::vector<int> d = array_dims;
    if (kind == variable_kind::vector || kind == variable_kind::row_vector) d.push_back(rows);
    if (kind == variable_kind::matrix) d.insert(d.end(), {rows, cols});
    return d;
  }
};

/// "[8]", "[2,3]" or "[]" (a scalar): a shape as error messages print it.
inline std::string dims_text(const std::vector<int>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

/// Throws std::invalid_argument naming `what` for a negative dimension.
inline void check_dims(const variable_shape& s, const std::string& what) {
  for (int d : s.dims())
    if (d < 0) throw std::invalid_argument(what + ": dimension " + std::to_string(d) + " in " + dims_text(s.dims()) + " is negative");
}

/// For each CSV position (column-major over dims()), the value's index in storage order.
inline std::vector<std::size_t> csv_to_storage(const variable_shape& s) {
  const std::vector<int> dims = s.dims();
  const std::size_t n = s.size(), arrays = s.array_dims.size();
  std::vector<std::size_t> order(n);
  std::vector<int> index(dims.size(), 0);
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t array_flat = 0;  // row-major over the array dimensions
    for (std::size_t d = 0; d < arrays; ++d) array_flat = array_flat * static_cast<std::size_t>(dims[d]) + index[d];
    std::size_t element = 0;  // column-major inside the element
    if (dims.size() > arrays) element = static_cast<std::size_t>(index[arrays]);
    if (dims.size() > arrays + 1) element += static_cast<std::size_t>(index[arrays + 1]) * static_cast<std::size_t>(s.rows);
    order[k] = array_flat * s.element_size() + element;
    for (std::size_t d = 0; d < dims.size(); ++d) {  // first index fastest
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
  return order;
}

/// For each value in JSON order (CmdStan's nesting: row-major over dims()), its index in storage order.
inline std::vector<std::size_t> json_to_storage(const variable_shape& s) {
  const std::vector<int> dims = s.dims();
  const std::size_t n = s.size(), arrays = s.array_dims.size();
  std::vector<std::size_t> order(n);
  std::vector<int> index(dims.size(), 0);
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t array_flat = 0;
    for (std::size_t d = 0; d < arrays; ++d) array_flat = array_flat * static_cast<std::size_t>(dims[d]) + index[d];
    std::size_t element = 0;
    if (dims.size() > arrays) element = static_cast<std::size_t>(index[arrays]);
    if (dims.size() > arrays + 1) element += static_cast<std::size_t>(index[arrays + 1]) * static_cast<std::size_t>(s.rows);
    order[k] = array_flat * s.element_size() + element;
    for (std::size_t d = dims.size(); d-- > 0;) {  // last index fastest
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
  return order;
}

/// The CSV column names of a variable in CSV order: "mu", or "theta.1", "Sigma.1.2", ... (1-based).
inline std::vector<std::string> csv_names(const std::string& name, const variable_shape& s) {
  const std::vector<int> dims = s.dims();
  if (dims.empty()) return {name};
  std::vector<std::string> names;
  names.reserve(s.size());
  std::vector<int> index(dims.size(), 0);
  for (std::size_t k = 0; k < s.size(); ++k) {
    std::string column = name;
    for (int i : index) column += "." + std::to_string(i + 1);
    names.push_back(std::move(column));
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
  return names;
}

}  // namespace maprect
