#pragma once
/// \file Stan CSV: the file layout CmdStan writes for `method=sample` (comment header with the configuration,
/// column names, adaptation block, draws, timing), so that CmdStanPy, cmdstanr, ArviZ and posterior read it.

#include <Eigen/Dense>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "chain.hpp"

namespace maprect {

/// Stan's sampler columns, in CmdStan's order.
inline const std::vector<std::string>& stan_sampler_columns() {
  static const std::vector<std::string> names = {"lp__",         "accept_stat__", "stepsize__", "treedepth__",
                                                 "n_leapfrog__", "divergent__",   "energy__"};
  return names;
}

/// What the comment header of one chain's file says.
struct stan_csv_config {
  std::string model;         ///< model name
  std::string data_file;     ///< data file, empty for embedded data
  std::string output_file;   ///< this file
  sample_options options;    ///< the chain's settings
  int num_chains = 1;        ///< chains of the run
  int sig_figs = 17;         ///< significant digits of the numbers
  int refresh = 100;         ///< progress granularity (iterations)
};

/// Writes the comment header (CmdStan's argument tree) and the column names.
inline void write_stan_csv_header(std::ostream& out, const stan_csv_config& c, const std::vector<std::string>& names) {
  const sample_options& o = c.options;
  out << "# stan_version_major = 2\n# stan_version_minor = 33\n# stan_version_patch = 0\n"
      << "# model = " << c.model << "\n# method = sample (Default)\n#   sample\n"
      << "#     num_samples = " << o.samples << "\n#     num_warmup = " << o.warmup
      << "\n#     save_warmup = 0 (Default)\n#     thin = 1 (Default)\n#     adapt\n#       engaged = 1 (Default)\n"
      << "#       gamma = 0.05 (Default)\n#       delta = " << o.delta << "\n#       kappa = 0.75 (Default)\n"
      << "#       t0 = 10 (Default)\n#       init_buffer = 75 (Default)\n#       term_buffer = 50 (Default)\n"
      << "#       window = 25 (Default)\n#     algorithm = hmc (Default)\n#       hmc\n#         engine = nuts (Default)\n"
      << "#           nuts\n#             max_depth = " << o.max_depth << "\n#         metric = diag_e (Default)\n"
      << "#         metric_file =  (Default)\n#         stepsize = " << o.initial_step_size
      << "\n#         stepsize_jitter = 0 (Default)\n#     num_chains = 1 (Default)\n"
      << "# id = " << o.chain << "\n# data\n#   file = " << c.data_file << "\n# init = " << o.init_radius
      << "\n# random\n#   seed = " << o.seed << "\n# output\n#   file = " << c.output_file
      << "\n#   diagnostic_file =  (Default)\n#   refresh = " << c.refresh << "\n#   sig_figs = " << c.sig_figs
      << "\n# num_threads = 1 (Default)\n# maprect_chains = " << c.num_chains << "\n";
  const auto& sampler = stan_sampler_columns();
  for (std::size_t k = 0; k < sampler.size(); ++k) out << (k ? "," : "") << sampler[k];
  for (const std::string& name : names) out << ',' << name;
  out << '\n';
}

/// A number as Stan CSV writes it: `sig_figs` significant digits, shortest form.
inline std::string stan_csv_number(double x, int sig_figs) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*g", sig_figs, x);
  return text;
}

/// Writes the adaptation block that ends warm-up: step size and the inverse metric's diagonal.
inline void write_stan_csv_adaptation(std::ostream& out, double step_size, const Eigen::VectorXd& inv_metric,
                                      int sig_figs) {
  out << "# Adaptation terminated\n# Step size = " << stan_csv_number(step_size, sig_figs)
      << "\n# Diagonal elements of inverse mass matrix:\n# ";
  for (Eigen::Index i = 0; i < inv_metric.size(); ++i)
    out << (i ? ", " : "") << stan_csv_number(inv_metric(i), sig_figs);
  out << '\n';
}

/// Writes one draw: the sampler columns, then the model's outputs at the draw.
inline void write_stan_csv_draw(std::ostream& out, const chain_draw& d, const Eigen::VectorXd& outputs,
                                int sig_figs) {
  const nuts_diagnostics& g = d.diagnostics;
  out << stan_csv_number(d.log_density, sig_figs) << ',' << stan_csv_number(g.accept_stat, sig_figs) << ','
      << stan_csv_number(g.step_size, sig_figs) << ',' << g.tree_depth << ',' << g.n_leapfrog << ','
      << (g.divergent ? 1 : 0) << ',' << stan_csv_number(g.energy, sig_figs);
  for (Eigen::Index i = 0; i < outputs.size(); ++i) out << ',' << stan_csv_number(outputs(i), sig_figs);
  out << '\n';
}

/// Writes CmdStan's timing block.
inline void write_stan_csv_timing(std::ostream& out, double warmup_seconds, double sampling_seconds) {
  char text[256];
  std::snprintf(text, sizeof text,
                "# \n#  Elapsed Time: %g seconds (Warm-up)\n#                %g seconds (Sampling)\n"
                "#                %g seconds (Total)\n# \n",
                warmup_seconds, sampling_seconds, warmup_seconds + sampling_seconds);
  out << text;
}

/// A Stan CSV file read back.
struct stan_csv {
  std::map<std::string, std::string> config;  ///< "key = value" pairs of the header, "(Default)" removed
  std::vector<std::string> columns;           ///< column names
  double step_size = 0;                       ///< from the adaptation block (0 if none)
  std::vector<double> inv_metric;             ///< from the adaptation block
  Eigen::MatrixXd draws;                      ///< rows: draws, columns: as `columns`
  bool has_timing = false;                    ///< the timing block is there
};

namespace detail {

/// `s` without its leading and trailing blanks.
inline std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

/// `text` (blanks around it aside) as a finite positive number; throws std::invalid_argument naming `what`
/// and the text otherwise.
inline double positive_comment_number(const std::string& text, const char* what) {
  const std::string t = trimmed(text);
  char* end = nullptr;
  const double x = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(x) || !(x > 0))
    throw std::invalid_argument(std::string(what) + " '" + t + "' is not a finite positive number");
  return x;
}

/// Reads one comment line of a Stan CSV (without its '#') into `r`; `metric_next`: the line holds the
/// inverse metric announced by the line before. Throws std::invalid_argument for a malformed number.
inline void read_csv_comment(const std::string& text, stan_csv& r, bool& metric_next) {
  if (metric_next) {
    std::istringstream values(text);
    std::string v;
    while (std::getline(values, v, ','))
      r.inv_metric.push_back(positive_comment_number(v, "the inverse metric's element"));
    metric_next = false;
  } else if (text.find("Step size = ") != std::string::npos) {
    r.step_size = positive_comment_number(text.substr(text.find('=') + 1), "the step size");
  } else if (text.find("Diagonal elements of inverse mass matrix") != std::string::npos) {
    metric_next = true;
  } else if (text.find("Elapsed Time") != std::string::npos) {
    r.has_timing = true;
  } else if (r.columns.empty() && text.find('=') != std::string::npos) {
    std::string value = trimmed(text.substr(text.find('=') + 1));
    const auto d = value.find("(Default)");
    if (d != std::string::npos) value = trimmed(value.substr(0, d));
    r.config[trimmed(text.substr(0, text.find('=')))] = value;
  }
}

/// The numbers of one draw's line; `fail` is called with what is wrong.
template <class Fail>
std::vector<double> read_csv_draw(const std::vector<std::string>& fields, std::size_t n_columns, Fail fail) {
  if (fields.size() != n_columns)
    fail(std::to_string(fields.size()) + " values for " + std::to_string(n_columns) + " columns");
  std::vector<double> row;
  for (const std::string& f : fields) {
    std::size_t used = 0;
    double x = 0;
    try {
      x = std::stod(f, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != f.size() || f.empty()) fail("'" + f + "' is not a number");
    row.push_back(x);
  }
  return row;
}

}  // namespace detail

/// Reads a Stan CSV file; throws std::runtime_error naming the file and line of anything malformed.
inline stan_csv read_stan_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  stan_csv r;
  std::vector<std::vector<double>> rows;
  std::string line;
  bool metric_next = false;
  int number = 0;
  auto fail = [&](const std::string& what) {
    throw std::runtime_error(path + ": line " + std::to_string(number) + ": " + what);
  };
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // a file that passed through Windows
    if (!line.empty() && line[0] == '#') {
      try {
        detail::read_csv_comment(line.substr(1), r, metric_next);
      } catch (const std::invalid_argument& e) {
        fail(e.what());
      }
      continue;
    }
    std::vector<std::string> fields;
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) fields.push_back(cell);
    if (r.columns.empty()) r.columns = fields;
    else rows.push_back(detail::read_csv_draw(fields, r.columns.size(), fail));
  }
  if (r.columns.empty()) throw std::runtime_error(path + ": no column names");
  r.draws.resize(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(r.columns.size()));
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = 0; j < rows[i].size(); ++j) r.draws(i, j) = rows[i][j];
  return r;
}

}  // namespace maprect
