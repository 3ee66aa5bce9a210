#pragma once
// CmdStan's metric file ({"inv_metric": ...}) as `maprect sample --metric-file` reads it.
#include <maprect/sample.hpp>

#include <string>

namespace maprect::cli {

/// A number as messages and fingerprints show it: 17 significant digits, so that it reads back exactly.
std::string shown_exactly(double x);
/// The inverse metric in CmdStan's metric file (JSON {"inv_metric": vector for diag, array of rows for dense}),
/// checked against the model's `dim` parameters: a column for diag, dim x dim for dense. Throws
/// std::runtime_error naming the file and what is wrong.
Eigen::MatrixXd read_metric_file(const std::string& path, metric_kind metric, int dim);

}  // namespace maprect::cli
