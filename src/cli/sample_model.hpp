#pragma once
// The models the program's commands run, taken from the model registry (MAPRECT_REGISTER_MODEL): the data
// from --data (CmdStan JSON, or CSV for a model that reads it) or embedded, and the sampler's view of them.
#include <maprect/model.hpp>
#include <maprect/sample.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"

namespace maprect::cli {

/// A registered model built on its data, for any command.
struct loaded_model {
  std::shared_ptr<const maprect::model> model;  ///< the model
  std::string description;                       ///< "name: what (data source)", for the report
  std::string data_identity;                     ///< "embedded-..." or a hash of the data file's bytes
};

/// The data of `--data path` for model `name`: CmdStan JSON, or CSV when the model reads CSV (logreg) and the
/// file neither ends in .json nor starts with '{'; without a path, the model's embedded data (--jobs, --points)
/// or none. Throws data_error, csv_error or std::invalid_argument naming the file and what is wrong.
model_data load_model_data(const std::string& name, const std::string& path, int jobs, int points,
                           std::string& identity);
/// The model `name` on the data load_model_data finds.
loaded_model load_model(const std::string& name, const std::string& data, int jobs, int points);
/// The registered models' names, for --model's check.
std::vector<std::string> registered_model_names();
/// Throws std::invalid_argument unless `name` is registered, and, without --data, where --jobs or --points
/// are given to a model without embedded data.
void check_model_arguments(const std::string& name, const std::string& data, int jobs, int points);

/// A model ready for the sampler.
struct sample_model {
  std::string name;                  ///< --model
  std::string description;           ///< what is sampled, for the report
  std::string data_identity;         ///< "embedded-..." or a hash of the data file's bytes
  int size = 0;                      ///< unconstrained parameters
  log_density_function log_density;  ///< log density (with the Jacobian) and gradient, over the chain's cluster
  std::vector<std::string> columns;  ///< output columns
  std::function<Eigen::VectorXd(const Eigen::VectorXd&)> write_array;  ///< the columns' values at a draw
  std::vector<std::pair<std::string, double>> truth;  ///< true values of some columns, when simulated
  std::shared_ptr<const maprect::model> model;        ///< the model itself (parameters, for --init)
};

/// Stan's target acceptance statistic 0.8, or the model's own where it needs another (eight_schools: 0.9).
double default_delta(const std::string& model);
/// --delta when given, else the model's default_delta.
inline double target_delta(const sample_command_options& o) { return o.delta > 0 ? o.delta : default_delta(o.model); }

/// Builds the model the options name (reads --data); throws like `maprect fit` for bad files.
std::shared_ptr<sample_model> make_sample_model(const sample_command_options& o);

/// --init: a radius R >= 0 for uniform(-R, R) inits on the unconstrained scale, or a JSON file of values.
struct init_option {
  double radius = 2;  ///< random inits' radius (also for the parameters a file leaves out)
  std::string file;   ///< JSON file of constrained values; empty: none
};
/// Parses --init's text; throws std::invalid_argument naming it when it is neither a number >= 0 nor a file.
init_option parse_init(const std::string& text);
/// What a checkpoint must match: "2", or "file:<hash of the file's bytes>".
std::string init_identity(const init_option& init);
/// Checks an init file against the model (shapes, bounds: throws as read_init_values) and returns the names
/// in it that are neither parameters nor generated quantities: ignored, as CmdStan ignores them, but likely typos.
std::vector<std::string> check_init_file(const maprect::model& model, const std::string& file);
/// The start of chain `chain` for an init file: its values, and uniform(-R, R) draws from (seed, chain) for
/// the parameters it leaves out, retried up to 100 times until the log density is finite. Throws naming
/// the file and the value for a wrong shape or a value outside its bounds.
Eigen::VectorXd initial_point(const sample_model& m, const init_option& init, std::uint64_t seed, int chain);

}  // namespace maprect::cli
