#pragma once
// The models `maprect sample` knows, seen the same way: a log density over unconstrained parameters, the CSV
// columns in Stan's naming and their values at a draw, and an identity of the data for checkpoints.
#include <maprect/sample.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"

namespace maprect::cli {

/// A model ready for the sampler.
struct sample_model {
  std::string name;                  ///< logreg | pk2cmt | eight_schools
  std::string description;           ///< what is sampled, for the report
  std::string data_identity;         ///< "embedded-..." or a hash of the data file's bytes
  int size = 0;                      ///< unconstrained parameters
  log_density_function log_density;  ///< log density and gradient (map_rect over the chain's cluster)
  std::vector<std::string> columns;  ///< output columns
  std::function<Eigen::VectorXd(const Eigen::VectorXd&)> write_array;  ///< the columns' values at a draw
  std::vector<std::pair<std::string, double>> truth;  ///< true values of some columns, when simulated
};

/// Stan's target acceptance statistic 0.8, or the model's own where it needs another (eight_schools: 0.9).
double default_delta(const std::string& model);
/// --delta when given, else the model's default_delta.
inline double target_delta(const sample_command_options& o) { return o.delta > 0 ? o.delta : default_delta(o.model); }

/// Builds the model the options name (reads --data); throws like `maprect fit` for bad files.
std::shared_ptr<sample_model> make_sample_model(const sample_command_options& o);

}  // namespace maprect::cli
