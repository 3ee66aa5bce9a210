#pragma once
/// \file Stan CSV: the file layout CmdStan writes for `method=sample` (comment header with the configuration,
/// column names, adaptation block, draws, timing), so that CmdStanPy, cmdstanr, ArviZ and posterior read it.

#include <maprect/sample/chain.hpp>

#include <Eigen/Dense>

#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace maprect {

/// Stan's sampler columns, in CmdStan's order.
const std::vector<std::string>& stan_sampler_columns();

/// What the comment header of one chain's file says.
struct stan_csv_config {
  std::string model;         ///< model name
  std::string data_file;     ///< data file, empty for embedded data
  std::string output_file;   ///< this file
  sample_options options;    ///< the chain's settings
  int num_chains = 1;        ///< chains of the run
  int sig_figs = 17;         ///< significant digits of the numbers
  int refresh = 100;         ///< progress granularity (iterations)
  std::string metric_file;   ///< the --metric-file read, empty if none
};

/// `value`, followed by " (Default)" when it is CmdStan's default, as CmdStan writes its arguments.
template <class T>
std::string stan_csv_argument(const T& value, const T& default_value) {
  std::ostringstream out;
  out << value << (value == default_value ? " (Default)" : "");
  return out.str();
}

/// Writes the comment header (CmdStan's argument tree) and the column names.
void write_stan_csv_header(std::ostream& out, const stan_csv_config& c, const std::vector<std::string>& names);

/// A number as Stan CSV writes it: `sig_figs` significant digits, shortest form (17 digits give every double,
/// subnormals and -0 included, back bit for bit); infinities and NaN as "inf", "-inf", "nan".
/// A value near the largest double rounds up past it at few digits ("2e+308" for DBL_MAX at 1 digit), which would
/// read back as no number: such a value is written with all 17 digits.
std::string stan_csv_number(double x, int sig_figs);

/// Reads a whole field as a double into `x`; false for anything else (empty, trailing text, a magnitude beyond
/// the largest double). A value below DBL_MIN is no error: it reads as the nearest subnormal (or zero), where
/// std::stod would throw for strtod's ERANGE.
bool parse_stan_number(const std::string& text, double& x);

/// Writes `values` as one comment line: "# a, b, c".
void write_stan_csv_row(std::ostream& out, const Eigen::VectorXd& values, int sig_figs);

/// Writes the adaptation block that ends warm-up: step size and the inverse metric's diagonal.
void write_stan_csv_adaptation(std::ostream& out, double step_size, const Eigen::VectorXd& inv_metric, int sig_figs);

/// Writes the adaptation block as CmdStan does for each metric: unit_e has no free parameters, diag_e one line
/// of the diagonal, dense_e one line per row of the matrix.
void write_stan_csv_adaptation(std::ostream& out, double step_size, metric_kind metric,
                               const Eigen::VectorXd& inv_metric, const Eigen::MatrixXd& dense_inv_metric,
                               int sig_figs);

/// Writes one draw: the sampler columns, then the model's outputs at the draw.
void write_stan_csv_draw(std::ostream& out, const chain_draw& d, const Eigen::VectorXd& outputs, int sig_figs);

/// Writes CmdStan's timing block.
void write_stan_csv_timing(std::ostream& out, double warmup_seconds, double sampling_seconds);

/// A Stan CSV file read back.
struct stan_csv {
  std::map<std::string, std::string> config;  ///< "key = value" pairs of the header, "(Default)" removed
  std::vector<std::string> columns;           ///< column names
  double step_size = 0;                       ///< from the adaptation block (0 if none)
  std::vector<double> inv_metric;             ///< from the adaptation block
  Eigen::MatrixXd draws;                      ///< rows: draws, columns: as `columns`
  bool has_timing = false;                    ///< the timing block is there
  double warmup_seconds = 0;                  ///< the timing block's warm-up time (0 if none)
  double sampling_seconds = 0;                ///< the timing block's sampling time (0 if none)
  Eigen::Index warmup_rows = 0;               ///< leading rows of `draws` saved during warm-up (--save-warmup)
};

/// Reads a Stan CSV file; throws std::runtime_error naming the file and line of anything malformed.
stan_csv read_stan_csv(const std::string& path);

/// Rows of draws in a Stan CSV file: its lines that are neither comments nor empty, less the column names.
long count_stan_csv_draw_rows(const std::string& path);

/// Throws std::runtime_error when `path` holds other than `expected` draw rows; `source` says where the
/// expectation comes from (a checkpoint, the run itself).
void check_stan_csv_draw_rows(const std::string& path, long expected, const std::string& source);

}  // namespace maprect
