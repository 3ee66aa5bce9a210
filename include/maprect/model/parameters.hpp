#pragma once
/// \file A model's parameters block: declarations with names, shapes and bounds (parameter_list), the
/// constrained values a log density reads by name (parameter_values<T>), and generated quantities written
/// by name (quantity_writer).

#include <Eigen/Dense>

#include <deque>
#include <string>
#include <vector>

#include "shape.hpp"
#include "transforms.hpp"

namespace maprect {

/// One declared parameter: Stan's `vector<lower=0>[n] name;` and the like.
struct parameter_declaration {
  std::string name;      ///< as in the CSV header and init files
  variable_shape shape;  ///< real, vector, row_vector, matrix, or an array of them
  maprect::bounds range; ///< bounds applied to every value (none by default)
  std::size_t offset = 0;  ///< first index in the unconstrained (and the constrained) vector

  /// <lower=L>.
  parameter_declaration& lower(double l) { return set(l, range.upper); }
  /// <upper=U>.
  parameter_declaration& upper(double u) { return set(range.lower, u); }
  /// <lower=L, upper=U>.
  parameter_declaration& bounds(double l, double u) { return set(l, u); }

 private:
  parameter_declaration& set(double l, double u) {
    check_bounds(maprect::bounds{l, u}, "parameter '" + name + "'");
    range = {l, u};
    return *this;
  }
};

/// The parameters block: each call declares the next parameter, in storage order.
class parameter_list {
 public:
  /// real name.
  parameter_declaration& real(const std::string& name) { return add(name, {variable_kind::real, {}, 1, 1}); }
  /// vector[n] name.
  parameter_declaration& vector(const std::string& name, int n) { return add(name, {variable_kind::vector, {}, n, 1}); }
  /// row_vector[n] name.
  parameter_declaration& row_vector(const std::string& name, int n) {
    return add(name, {variable_kind::row_vector, {}, n, 1});
  }
  /// matrix[r, c] name.
  parameter_declaration& matrix(const std::string& name, int r, int c) {
    return add(name, {variable_kind::matrix, {}, r, c});
  }
  /// array[n] real name.
  parameter_declaration& reals(const std::string& name, int n) { return add(name, {variable_kind::real, {n}, 1, 1}); }
  /// array[n] vector[k] name: map_rect's job parameters.
  parameter_declaration& vectors(const std::string& name, int n, int k) {
    return add(name, {variable_kind::vector, {n}, k, 1});
  }

  /// The declarations in order.
  const std::deque<parameter_declaration>& declarations() const { return list_; }
  /// Unconstrained values in all.
  std::size_t size() const { return list_.empty() ? 0 : list_.back().offset + list_.back().shape.size(); }
  /// The declaration of `name`; throws std::out_of_range naming it when there is none.
  const parameter_declaration& at(const std::string& name) const {
    for (const parameter_declaration& d : list_)
      if (d.name == name) return d;
    throw std::out_of_range("no parameter named '" + name + "'");
  }

 private:
  parameter_declaration& add(const std::string& name, variable_shape shape) {
    if (name.empty()) throw std::invalid_argument("a parameter needs a name");
    for (const parameter_declaration& d : list_)
      if (d.name == name) throw std::invalid_argument("parameter '" + name + "' is declared twice");
    check_dims(shape, "parameter '" + name + "'");
    list_.push_back(parameter_declaration{name, shape, {}, size()});  // size() before the push
    return list_.back();
  }
  std::deque<parameter_declaration> list_;  // a deque keeps references valid while the list grows
};

/// The constrained values of every parameter, read by name in the log density (T = double or var).
template <class T>
class parameter_values {
 public:
  /// Column vector of T.
  using vector_t = Eigen::Matrix<T, Eigen::Dynamic, 1>;
  /// Row vector of T.
  using row_vector_t = Eigen::Matrix<T, 1, Eigen::Dynamic>;
  /// Matrix of T.
  using matrix_t = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;

  /// Values in storage order for the declarations of `list`.
  parameter_values(const parameter_list& list, vector_t values) : list_(&list), values_(std::move(values)) {}

  /// real name.
  T real(const std::string& name) const { return values_(first(name, variable_kind::real, 0)); }
  /// vector[n] name.
  vector_t vector(const std::string& name) const {
    const parameter_declaration& d = find(name, variable_kind::vector, 0);
    return values_.segment(static_cast<Eigen::Index>(d.offset), d.shape.rows);
  }
  /// row_vector[n] name.
  row_vector_t row_vector(const std::string& name) const {
    const parameter_declaration& d = find(name, variable_kind::row_vector, 0);
    return values_.segment(static_cast<Eigen::Index>(d.offset), d.shape.rows).transpose();
  }
  /// matrix[r, c] name.
  matrix_t matrix(const std::string& name) const {
    const parameter_declaration& d = find(name, variable_kind::matrix, 0);
    return Eigen::Map<const matrix_t>(values_.data() + d.offset, d.shape.rows, d.shape.cols);
  }
  /// array[n] real name.
  std::vector<T> reals(const std::string& name) const {
    const parameter_declaration& d = find(name, variable_kind::real, 1);
    return std::vector<T>(values_.data() + d.offset, values_.data() + d.offset + d.shape.size());
  }
  /// array[n] vector[k] name, as map_rect takes job parameters.
  std::vector<vector_t> vectors(const std::string& name) const {
    const parameter_declaration& d = find(name, variable_kind::vector, 1);
    std::vector<vector_t> out;
    out.reserve(static_cast<std::size_t>(d.shape.array_dims[0]));
    for (int i = 0; i < d.shape.array_dims[0]; ++i)
      out.push_back(values_.segment(static_cast<Eigen::Index>(d.offset) + i * d.shape.rows, d.shape.rows));
    return out;
  }
  /// Every value in storage order.
  const vector_t& all() const { return values_; }

 private:
  std::size_t first(const std::string& name, variable_kind kind, std::size_t arrays) const {
    return find(name, kind, arrays).offset;
  }
  const parameter_declaration& find(const std::string& name, variable_kind kind, std::size_t arrays) const {
    const parameter_declaration& d = list_->at(name);
    if (d.shape.kind != kind || d.shape.array_dims.size() != arrays)
      throw std::invalid_argument("parameter '" + name + "' is read with another type than it was declared with");
    return d;
  }
  const parameter_list* list_;
  vector_t values_;
};

/// Generated quantities: each call writes the next variable. Names and shapes must be the same at every draw.
class quantity_writer {
 public:
  /// real name.
  void real(const std::string& name, double value) { add(name, {variable_kind::real, {}, 1, 1}, &value); }
  /// vector[n] name.
  void vector(const std::string& name, const Eigen::VectorXd& v) {
    add(name, {variable_kind::vector, {}, static_cast<int>(v.size()), 1}, v.data());
  }
  /// matrix[r, c] name.
  void matrix(const std::string& name, const Eigen::MatrixXd& m) {
    add(name, {variable_kind::matrix, {}, static_cast<int>(m.rows()), static_cast<int>(m.cols())}, m.data());
  }
  /// array[n] real name.
  void reals(const std::string& name, const std::vector<double>& v) {
    add(name, {variable_kind::real, {static_cast<int>(v.size())}, 1, 1}, v.data());
  }

  /// The column names written so far, in CSV order.
  const std::vector<std::string>& names() const { return names_; }
  /// The values written so far, in CSV order.
  const std::vector<double>& values() const { return values_; }

 private:
  void add(const std::string& name, const variable_shape& shape, const double* data) {
    const std::vector<std::string> columns = csv_names(name, shape);
    names_.insert(names_.end(), columns.begin(), columns.end());
    for (std::size_t k : csv_to_storage(shape)) values_.push_back(data[k]);
  }
  std::vector<std::string> names_;
  std::vector<double> values_;
};

}  // namespace maprect
