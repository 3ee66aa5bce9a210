#pragma once
/// \file Boost.Serialization of reduce_sum's data arguments and of the skeletons of its parameter arguments:
/// double, int, Eigen::Matrix of double, and std::vector of these, nested. This is the form in which a
/// call site's data can go to the ranks once. Only deserialize bytes this code produced: a corrupt stream
/// may announce any length.

#include <Eigen/Dense>
#include <boost/serialization/array_wrapper.hpp>
#include <boost/serialization/split_free.hpp>
#include <boost/serialization/vector.hpp>
#include <stdexcept>
#include <string>

namespace boost::serialization {

/// Writes a double matrix: rows, columns, then the coefficients in storage order.
template <class Archive, int R, int C, int O, int MR, int MC>
void save(Archive& ar, const Eigen::Matrix<double, R, C, O, MR, MC>& m, unsigned /*version*/) {
  const long long rows = m.rows(), cols = m.cols();
  ar << rows << cols;
  ar << make_array(m.data(), static_cast<std::size_t>(m.size()));
}

/// Reads a double matrix written by save().
template <class Archive, int R, int C, int O, int MR, int MC>
void load(Archive& ar, Eigen::Matrix<double, R, C, O, MR, MC>& m, unsigned /*version*/) {
  long long rows = 0, cols = 0;
  ar >> rows >> cols;
  if (rows < 0 || cols < 0 || (R != Eigen::Dynamic && rows != R) || (C != Eigen::Dynamic && cols != C))
    throw std::length_error("reduce_sum: a serialized matrix of " + std::to_string(rows) + " x " +
                            std::to_string(cols) + " does not fit its type");
  m.resize(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  ar >> make_array(m.data(), static_cast<std::size_t>(m.size()));
}

/// Eigen double matrices go through save() and load().
template <class Archive, int R, int C, int O, int MR, int MC>
void serialize(Archive& ar, Eigen::Matrix<double, R, C, O, MR, MC>& m, unsigned version) {
  split_free(ar, m, version);
}

}  // namespace boost::serialization
