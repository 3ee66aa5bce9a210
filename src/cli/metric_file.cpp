// CmdStan's metric file, read for `maprect sample --metric-file`, apart from the options so that its fuzz
// target links nothing of the program.
#include "metric_file.hpp"

#include <nlohmann/json.hpp>

#include <Eigen/Cholesky>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace maprect::cli {

std::string shown_exactly(double x) {
  char text[48];
  std::snprintf(text, sizeof text, "%.17g", x);
  return text;
}

namespace {

/// One row of the metric file's matrix (or its vector) as doubles; `what` names it in errors.
Eigen::VectorXd json_numbers(const nlohmann::json& values, const std::string& path, const std::string& what) {
  if (!values.is_array()) throw std::runtime_error(path + ": " + what + " is not an array of numbers");
  Eigen::VectorXd v(static_cast<Eigen::Index>(values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!values[i].is_number())
      throw std::runtime_error(path + ": " + what + " entry " + std::to_string(i + 1) + " is not a number");
    v(static_cast<Eigen::Index>(i)) = values[i].get<double>();
  }
  return v;
}

/// The metric file's "inv_metric" entry, parsed; throws naming the file.
nlohmann::json metric_file_entry(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open the metric file");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {  // a syntax error, or a number beyond a double
    throw std::runtime_error(path + ": not JSON (" + std::string(e.what()) + ")");
  }
  if (!doc.is_object() || !doc.contains("inv_metric"))
    throw std::runtime_error(path + ": no \"inv_metric\" entry (CmdStan's metric file is {\"inv_metric\": [...]})");
  return doc["inv_metric"];
}

}  // namespace

Eigen::MatrixXd read_metric_file(const std::string& path, metric_kind metric, int dim) {
  const nlohmann::json entry = metric_file_entry(path);
  if (!entry.is_array()) throw std::runtime_error(path + ": \"inv_metric\" is not an array");
  const std::string n = std::to_string(dim);
  Eigen::MatrixXd m;
  if (metric == metric_kind::diag) {
    if (!entry.empty() && entry[0].is_array())
      throw std::runtime_error(path + ": \"inv_metric\" is a matrix, but --metric diag needs a vector of " + n +
                               " numbers");
    m = json_numbers(entry, path, "\"inv_metric\"");
    if (m.rows() != dim)
      throw std::runtime_error(path + ": \"inv_metric\" has " + std::to_string(m.rows()) +
                               " entries, but the model has " + n + " parameters");
    for (Eigen::Index i = 0; i < m.rows(); ++i)
      if (!std::isfinite(m(i, 0)) || !(m(i, 0) > 0))
        throw std::runtime_error(path + ": \"inv_metric\" entry " + std::to_string(i + 1) + " is " + shown_exactly(m(i, 0)) +
                                 ", but the diagonal must be finite and positive");
    return m;
  }
  if (static_cast<int>(entry.size()) != dim || (dim > 0 && !entry[0].is_array()))
    throw std::runtime_error(path + ": \"inv_metric\" must be " + n + " rows of " + n +
                             " numbers for --metric dense (the model has " + n + " parameters), got " +
                             std::to_string(entry.size()) +
                             (entry.empty() || entry[0].is_array() ? " rows" : " numbers"));
  m.resize(dim, dim);
  for (int r = 0; r < dim; ++r) {
    const Eigen::VectorXd row = json_numbers(entry[r], path, "\"inv_metric\" row " + std::to_string(r + 1));
    if (row.size() != dim)
      throw std::runtime_error(path + ": \"inv_metric\" row " + std::to_string(r + 1) + " has " +
                               std::to_string(row.size()) + " numbers, but the model has " + n + " parameters");
    m.row(r) = row.transpose();
  }
  if (!m.allFinite()) throw std::runtime_error(path + ": \"inv_metric\" has a non-finite entry");
  // CmdStan writes 6 significant digits by default, which can round m(i, j) and m(j, i) apart.
  if ((m - m.transpose()).cwiseAbs().maxCoeff() > 1e-5 * m.cwiseAbs().maxCoeff())
    throw std::runtime_error(path + ": \"inv_metric\" is not symmetric");
  m = (0.5 * (m + m.transpose())).eval();
  if (Eigen::LLT<Eigen::MatrixXd>(m).info() != Eigen::Success)
    throw std::runtime_error(path + ": \"inv_metric\" is not positive definite");
  return m;
}

}  // namespace maprect::cli
