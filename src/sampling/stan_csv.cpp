// Stan CSV (stan_csv.hpp): the header, the draw rows and the timing block as CmdStan writes them, and the
// reader that resume and summary use.
#include "src/sampling/stan_csv.hpp"

#include <cctype>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace maprect {
namespace detail {
namespace {

/// `s` without its leading and trailing blanks.
std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

/// A number of the adaptation block; throws std::runtime_error naming `what` (the caller adds file and line).
double comment_number(const std::string& text, const char* what) {
  double x = 0;
  if (!parse_stan_number(text, x)) throw std::runtime_error(std::string(what) + ": '" + text + "' is not a number");
  return x;
}

/// A step size or a diagonal inverse metric's element: comment_number, and finite and positive.
double positive_comment_number(const std::string& text, const char* what) {
  const double x = comment_number(text, what);
  if (!(std::isfinite(x) && x > 0))
    throw std::runtime_error(std::string(what) + ": '" + text + "' is not a finite positive number");
  return x;
}

/// The number before " seconds (" of a timing line, after "Elapsed Time:" if there.
std::string timing_value(const std::string& text) {
  const std::size_t colon = text.find(':'), end = text.find(" seconds (");
  const std::size_t begin = colon == std::string::npos || colon > end ? 0 : colon + 1;
  return trimmed(text.substr(begin, end - begin));
}

/// Reads one comment line of a Stan CSV (without its '#') into `r`; `metric_next`: the line holds the
/// inverse metric announced by the line before. Throws std::runtime_error for a malformed number.
void read_csv_comment(const std::string& text, stan_csv& r, bool& metric_next) {
  if (metric_next) {
    std::istringstream values(text);
    std::string v;
    while (std::getline(values, v, ',')) r.inv_metric.push_back(positive_comment_number(trimmed(v), "inverse metric"));
    metric_next = false;
  } else if (text.find("Step size = ") != std::string::npos) {
    r.step_size = positive_comment_number(trimmed(text.substr(text.find('=') + 1)), "step size");
  } else if (text.find("Diagonal elements of inverse mass matrix") != std::string::npos) {
    metric_next = true;
  } else if (text.find("seconds (Warm-up)") != std::string::npos) {
    r.has_timing = true;
    r.warmup_seconds = comment_number(timing_value(text), "warm-up time");
  } else if (text.find("seconds (Sampling)") != std::string::npos) {
    r.sampling_seconds = comment_number(timing_value(text), "sampling time");
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
  for (std::size_t k = 0; k < fields.size(); ++k) {
    double x = 0;
    if (!parse_stan_number(fields[k], x)) fail("column " + std::to_string(k + 1) + ": '" + fields[k] + "' is not a number");
    row.push_back(x);
  }
  return row;
}

}  // namespace
}  // namespace detail

const std::vector<std::string>& stan_sampler_columns() {
  static const std::vector<std::string> names = {"lp__",         "accept_stat__", "stepsize__", "treedepth__",
                                                 "n_leapfrog__", "divergent__",   "energy__"};
  return names;
}

void write_stan_csv_header(std::ostream& out, const stan_csv_config& c, const std::vector<std::string>& names) {
  const sample_options& o = c.options;
  out << "# stan_version_major = 2\n# stan_version_minor = 33\n# stan_version_patch = 0\n"
      << "# model = " << c.model << "\n# method = sample (Default)\n#   sample\n"
      << "#     num_samples = " << o.samples << "\n#     num_warmup = " << o.warmup
      << "\n#     save_warmup = " << stan_csv_argument(o.save_warmup ? 1 : 0, 0)
      << "\n#     thin = " << stan_csv_argument(o.thin, 1)
      << "\n#     adapt\n#       engaged = " << stan_csv_argument(o.adapt_engaged ? 1 : 0, 1) << "\n"
      << "#       gamma = 0.05 (Default)\n#       delta = " << o.delta << "\n#       kappa = 0.75 (Default)\n"
      << "#       t0 = 10 (Default)\n#       init_buffer = " << stan_csv_argument(o.init_buffer, 75)
      << "\n#       term_buffer = " << stan_csv_argument(o.term_buffer, 50)
      << "\n#       window = " << stan_csv_argument(o.window, 25)
      << "\n#     algorithm = hmc (Default)\n#       hmc\n#         engine = nuts (Default)\n"
      << "#           nuts\n#             max_depth = " << o.max_depth
      << "\n#         metric = " << stan_csv_argument(metric_stan_name(o.metric), std::string("diag_e"))
      << "\n#         metric_file = " << stan_csv_argument(c.metric_file, std::string())
      << "\n#         stepsize = " << stan_csv_argument(o.initial_step_size, 1.0)
      << "\n#         stepsize_jitter = " << stan_csv_argument(o.stepsize_jitter, 0.0)
      << "\n#     num_chains = 1 (Default)\n"
      << "# id = " << o.chain << "\n# data\n#   file = " << c.data_file << "\n# init = " << o.init_radius
      << "\n# random\n#   seed = " << o.seed << "\n# output\n#   file = " << c.output_file
      << "\n#   diagnostic_file =  (Default)\n#   refresh = " << c.refresh << "\n#   sig_figs = " << c.sig_figs
      << "\n# num_threads = 1 (Default)\n# maprect_chains = " << c.num_chains << "\n";
  const auto& sampler = stan_sampler_columns();
  for (std::size_t k = 0; k < sampler.size(); ++k) out << (k ? "," : "") << sampler[k];
  for (const std::string& name : names) out << ',' << name;
  out << '\n';
}

std::string stan_csv_number(double x, int sig_figs) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*g", sig_figs, x);
  if (std::isfinite(x) && std::fabs(x) > 1e308 && !std::isfinite(std::strtod(text, nullptr)))
    std::snprintf(text, sizeof text, "%.17g", x);
  return text;
}

bool parse_stan_number(const std::string& text, double& x) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return false;
  if (errno == ERANGE && std::fabs(value) > DBL_MIN) return false;  // overflow; underflow gives a subnormal
  x = value;
  return true;
}

void write_stan_csv_row(std::ostream& out, const Eigen::VectorXd& values, int sig_figs) {
  out << "# ";
  for (Eigen::Index i = 0; i < values.size(); ++i) out << (i ? ", " : "") << stan_csv_number(values(i), sig_figs);
  out << '\n';
}

void write_stan_csv_adaptation(std::ostream& out, double step_size, const Eigen::VectorXd& inv_metric, int sig_figs) {
  out << "# Adaptation terminated\n# Step size = " << stan_csv_number(step_size, sig_figs)
      << "\n# Diagonal elements of inverse mass matrix:\n";
  write_stan_csv_row(out, inv_metric, sig_figs);
}

void write_stan_csv_adaptation(std::ostream& out, double step_size, metric_kind metric,
                               const Eigen::VectorXd& inv_metric, const Eigen::MatrixXd& dense_inv_metric,
                               int sig_figs) {
  if (metric == metric_kind::diag) return write_stan_csv_adaptation(out, step_size, inv_metric, sig_figs);
  out << "# Adaptation terminated\n# Step size = " << stan_csv_number(step_size, sig_figs) << '\n';
  if (metric == metric_kind::unit) {
    out << "# No free parameters for unit metric\n";
    return;
  }
  out << "# Elements of inverse mass matrix:\n";
  for (Eigen::Index r = 0; r < dense_inv_metric.rows(); ++r)
    write_stan_csv_row(out, dense_inv_metric.row(r).transpose(), sig_figs);
}

void write_stan_csv_draw(std::ostream& out, const chain_draw& d, const Eigen::VectorXd& outputs, int sig_figs) {
  const nuts_diagnostics& g = d.diagnostics;
  out << stan_csv_number(d.log_density, sig_figs) << ',' << stan_csv_number(g.accept_stat, sig_figs) << ','
      << stan_csv_number(g.step_size, sig_figs) << ',' << g.tree_depth << ',' << g.n_leapfrog << ','
      << (g.divergent ? 1 : 0) << ',' << stan_csv_number(g.energy, sig_figs);
  for (Eigen::Index i = 0; i < outputs.size(); ++i) out << ',' << stan_csv_number(outputs(i), sig_figs);
  out << '\n';
}

void write_stan_csv_timing(std::ostream& out, double warmup_seconds, double sampling_seconds) {
  char text[256];
  std::snprintf(text, sizeof text,
                "# \n#  Elapsed Time: %g seconds (Warm-up)\n#                %g seconds (Sampling)\n"
                "#                %g seconds (Total)\n# \n",
                warmup_seconds, sampling_seconds, warmup_seconds + sampling_seconds);
  out << text;
}

stan_csv read_stan_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open (" + std::strerror(errno) + ")");
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
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty() && line[0] == '#') {
      if (line.find("Adaptation terminated") != std::string::npos) r.warmup_rows = static_cast<Eigen::Index>(rows.size());
      try {
        detail::read_csv_comment(line.substr(1), r, metric_next);
      } catch (const std::runtime_error& e) {
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

long count_stan_csv_draw_rows(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open (" + std::strerror(errno) + ")");
  long lines = 0;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') ++lines;
  return lines > 0 ? lines - 1 : 0;
}

void check_stan_csv_draw_rows(const std::string& path, long expected, const std::string& source) {
  const long found = count_stan_csv_draw_rows(path);
  if (found != expected)
    throw std::runtime_error(path + ": " + std::to_string(found) + " draw rows, expected " + std::to_string(expected) +
                             " (" + source + "); another process may have written to it");
}

}  // namespace maprect
