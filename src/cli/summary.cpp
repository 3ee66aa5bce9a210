// maprect summary: CmdStan's stansummary for Stan CSV files (maprect's or CmdStan's), one file per chain: every
// column with the sampler's, chosen percentiles and significant digits, ESS per second of sampling, the
// divergence and tree-depth warnings, and the table as CSV for programs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "commands.hpp"
#include "spmd.hpp"
#include "src/sampling/stan_csv.hpp"
#include "src/sampling/summary.hpp"

namespace maprect::cli {

namespace {

/// The draws of the chains, as read from their files.
struct summary_input {
  std::vector<std::string> files;        ///< one per chain
  std::vector<std::string> columns;      ///< column names, the same in every file
  std::vector<Eigen::MatrixXd> draws;    ///< per chain: draws after warm-up x columns
  std::vector<Eigen::Index> warmup_rows; ///< per chain: warm-up draws saved before them (left out)
  std::vector<double> warmup_seconds, sampling_seconds;  ///< per chain, from the timing block
  std::string model = "unknown";         ///< the first file's model
  std::string algorithm = "hmc", engine = "nuts";
  int max_depth = 10;                    ///< the first file's NUTS max_depth
  std::vector<int> thin;                 ///< per chain
};

/// The integer `key` of a file's header, or `fallback` when it is not there.
int config_integer(const stan_csv& csv, const std::string& key, int fallback) {
  const auto at = csv.config.find(key);
  if (at == csv.config.end()) return fallback;
  try {
    return std::stoi(at->second);
  } catch (const std::exception&) {
    return fallback;
  }
}

/// Reads one chain's file into `in`; throws std::runtime_error naming the file for anything that does not fit.
void add_chain(summary_input& in, const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) throw std::runtime_error(path + ": no such file");
  if (std::filesystem::is_directory(path, error)) throw std::runtime_error(path + ": a directory, not a Stan CSV file");
  const stan_csv csv = read_stan_csv(path);
  if (in.files.empty()) {
    in.columns = csv.columns;
    if (csv.config.count("model")) in.model = csv.config.at("model");
    if (csv.config.count("algorithm")) in.algorithm = csv.config.at("algorithm");
    if (csv.config.count("engine")) in.engine = csv.config.at("engine");
    in.max_depth = config_integer(csv, "max_depth", 10);
  } else if (csv.columns != in.columns) {
    std::size_t k = 0;
    while (k < csv.columns.size() && k < in.columns.size() && csv.columns[k] == in.columns[k]) ++k;
    throw std::runtime_error(path + ": its columns differ from " + in.files[0] + "'s (column " + std::to_string(k + 1) +
                             " is '" + (k < csv.columns.size() ? csv.columns[k] : "") + "', there '" +
                             (k < in.columns.size() ? in.columns[k] : "") + "')");
  }
  const Eigen::Index kept = csv.draws.rows() - csv.warmup_rows;
  if (kept < 1) throw std::runtime_error(path + ": no draws after warm-up");
  if (!in.draws.empty() && kept != in.draws[0].rows())
    throw std::runtime_error(path + ": " + std::to_string(kept) + " draws, but " + in.files[0] + " has " +
                             std::to_string(in.draws[0].rows()) + "; the chains must be of equal length");
  in.files.push_back(path);
  in.draws.push_back(csv.draws.bottomRows(kept));
  in.warmup_rows.push_back(csv.warmup_rows);
  in.warmup_seconds.push_back(csv.warmup_seconds);
  in.sampling_seconds.push_back(csv.sampling_seconds);
  in.thin.push_back(config_integer(csv, "thin", 1));
}

/// "5,50,95" as probabilities 0.05, 0.5, 0.95; throws std::invalid_argument naming a bad entry.
std::vector<double> parse_percentiles(const std::string& text, std::vector<std::string>& labels) {
  std::vector<double> probabilities;
  std::istringstream entries(text);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    double percent = -1;
    if (!parse_stan_number(entry, percent) || !(percent >= 0 && percent <= 100))
      throw std::invalid_argument("--percentiles: '" + entry + "' is not a number from 0 to 100");
    if (!probabilities.empty() && percent / 100 <= probabilities.back())
      throw std::invalid_argument("--percentiles: " + entry + " does not increase on the one before");
    probabilities.push_back(percent / 100);
    labels.push_back(entry + "%");
  }
  if (probabilities.empty()) throw std::invalid_argument("--percentiles: no percentile in '" + text + "'");
  return probabilities;
}

/// A table cell: `sig_figs` significant digits, but every digit of the integer part (as stansummary shows
/// -243 and 2036 at 2 digits); "nan" for an undefined value.
std::string cell(double x, int sig_figs) {
  if (std::isnan(x)) return "nan";
  const std::string shortest = stan_csv_number(x, sig_figs);
  const double rounded = std::strtod(shortest.c_str(), nullptr);  // 0.9996 at 2 digits is 1: shown as "1.0"
  if (!std::isfinite(x) || std::fabs(rounded) < 1 || std::fabs(x) >= 1e17) return shortest;
  const int integer_digits = static_cast<int>(std::floor(std::log10(std::fabs(rounded)))) + 1;
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", std::max(0, sig_figs - integer_digits), x);  // 99.99 at 2: "100"
  return text;
}

/// The header of the table: the statistics' names.
std::vector<std::string> table_header(const std::vector<std::string>& percentile_labels) {
  std::vector<std::string> header = {"Mean", "MCSE", "StdDev", "MAD"};
  header.insert(header.end(), percentile_labels.begin(), percentile_labels.end());
  header.insert(header.end(), {"ESS_bulk", "ESS_tail", "ESS_bulk/s", "R_hat"});
  return header;
}

/// A row's statistics in the header's order; `sampling_seconds`: the chains' sampling time summed.
std::vector<double> table_row(const parameter_summary& s, double sampling_seconds) {
  std::vector<double> row = {s.mean, s.mcse, s.sd, s.mad};
  row.insert(row.end(), s.quantiles.begin(), s.quantiles.end());
  const double per_second = sampling_seconds > 0 ? s.ess_bulk / sampling_seconds : std::nan("");
  row.insert(row.end(), {s.ess_bulk, s.ess_tail, per_second, s.rhat});
  return row;
}

/// A list of per-chain numbers as "(a, b, c)" or "a" for one chain.
template <class T, class Format>
std::string per_chain(const std::vector<T>& values, Format format, const char* separator) {
  std::string text = values.size() > 1 ? "(" : "";
  for (std::size_t c = 0; c < values.size(); ++c) text += (c ? separator : "") + format(values[c]);
  return text + (values.size() > 1 ? ")" : "");
}

/// The lines above the table: model, chains, draws, and the time of warm-up and sampling.
void print_preamble(std::ostream& os, const summary_input& in) {
  auto integer = [](auto v) { return std::to_string(v); };
  std::vector<long> iterations;
  for (const auto& d : in.draws) iterations.push_back(static_cast<long>(d.rows()));
  os << "Inference for Stan model: " << in.model << '\n'
     << in.draws.size() << (in.draws.size() == 1 ? " chain" : " chains") << ": each with iter=" << per_chain(iterations, integer, ",")
     << "; warmup=" << per_chain(in.warmup_rows, integer, ",") << "; thin=" << per_chain(in.thin, integer, ",") << "; "
     << iterations[0] * static_cast<long>(in.draws.size()) << " iterations saved.\n\n";
  auto seconds = [](double v) { return cell(v, 2); };
  for (const auto& [what, times] : {std::make_pair("Warmup", &in.warmup_seconds), std::make_pair("Sampling", &in.sampling_seconds)}) {
    double total = 0;
    for (double t : *times) total += t;
    os << what << " took " << per_chain(*times, seconds, ", ") << " seconds";
    if (times->size() > 1) os << ", " << cell(total, 2) << " seconds total";
    os << '\n';
  }
  os << '\n';
}

/// The table, names left-aligned, each column as wide as its widest cell.
void print_table(std::ostream& os, const std::vector<std::string>& header, const std::vector<std::string>& names,
                 const std::vector<std::vector<double>>& rows, int sig_figs) {
  std::size_t name_width = 0;
  for (const auto& n : names) name_width = std::max(name_width, n.size());
  std::vector<std::vector<std::string>> cells(rows.size());
  std::vector<std::size_t> widths(header.size());
  for (std::size_t j = 0; j < header.size(); ++j) widths[j] = header[j].size();
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = 0; j < header.size(); ++j) {
      cells[i].push_back(cell(rows[i][j], sig_figs));
      widths[j] = std::max(widths[j], cells[i][j].size());
    }
  auto padded = [](const std::string& text, std::size_t width) { return std::string(width - text.size(), ' ') + text; };
  os << std::string(name_width, ' ');
  for (std::size_t j = 0; j < header.size(); ++j) os << "  " << padded(header[j], widths[j]);
  os << "\n\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    os << names[i] << std::string(name_width - names[i].size(), ' ');
    for (std::size_t j = 0; j < header.size(); ++j) os << "  " << padded(cells[i][j], widths[j]);
    os << '\n';
  }
}

/// The table as CSV: a "name" column, the header's statistics, then MCSE_SD; numbers at `sig_figs` digits.
void write_table_csv(std::ostream& os, const std::vector<std::string>& header,
                     const std::vector<parameter_summary>& summaries, const std::vector<std::vector<double>>& rows,
                     int sig_figs) {
  os << "name";
  for (const auto& h : header) os << ',' << h;
  os << ",MCSE_SD\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    os << '"' << summaries[i].name << '"';
    for (double x : rows[i]) os << ',' << stan_csv_number(x, sig_figs);
    os << ',' << stan_csv_number(summaries[i].mcse_sd, sig_figs) << '\n';
  }
}

/// Count of draws of column `name` over all chains for which `hit` holds; -1 when there is no such column.
template <class Hit>
long count_draws(const summary_input& in, const std::string& name, Hit hit) {
  const auto at = std::find(in.columns.begin(), in.columns.end(), name);
  if (at == in.columns.end()) return -1;
  const Eigen::Index j = at - in.columns.begin();
  long n = 0;
  for (const auto& d : in.draws)
    for (Eigen::Index s = 0; s < d.rows(); ++s) n += hit(d(s, j));
  return n;
}

/// "N of M (x%) transitions ...": the warnings CmdStan's tools give for divergences and the tree-depth limit.
void print_sampler_warnings(std::ostream& os, const summary_input& in) {
  const long total = static_cast<long>(in.draws[0].rows() * static_cast<Eigen::Index>(in.draws.size()));
  auto share = [&](long n) {
    char text[64];
    std::snprintf(text, sizeof text, "%ld of %ld (%.2g%%)", n, total, 100.0 * static_cast<double>(n) / static_cast<double>(total));
    return std::string(text);
  };
  const long divergent = count_draws(in, "divergent__", [](double x) { return x != 0; });
  if (divergent > 0)
    os << "Warning: " << share(divergent) << " transitions ended with a divergence.\n"
       << "See https://mc-stan.org/misc/warnings for details.\n\n";
  const int depth = in.max_depth;
  const long at_limit = count_draws(in, "treedepth__", [depth](double x) { return x >= depth; });
  if (at_limit > 0)
    os << "Warning: " << share(at_limit) << " transitions hit the maximum treedepth limit of " << depth << ", or 2^"
       << depth << " leapfrog steps.\nTrajectories that are prematurely terminated due to this limit will result in "
       << "slow exploration.\nFor optimal performance, increase this limit.\n\n";
}

/// Everything below the table: warnings and what the columns mean.
void print_footer(std::ostream& os, const summary_input& in, const std::vector<parameter_summary>& summaries) {
  os << '\n';
  print_sampler_warnings(os, in);
  std::ostringstream convergence;
  detail::print_convergence_warnings(convergence, summaries, in.draws.size());
  if (!convergence.str().empty()) os << convergence.str() << '\n';
  os << "Samples were drawn using " << in.algorithm << " with " << in.engine << ".\n"
     << "For each parameter, ESS_bulk and ESS_tail measure the effective sample size for the entire sample (bulk)\n"
     << "and for the .05 and .95 tails (tail), and R_hat measures the potential scale reduction on split chains.\n"
     << "At convergence R_hat will be very close to 1.00. ESS_bulk/s divides ESS_bulk by the sampling time of all\n"
     << "chains together.\n";
}

/// Reads, summarises and prints; throws for bad files and options.
void summarize_files(const summary_command_options& o) {
  std::vector<std::string> labels;
  const std::vector<double> probabilities = parse_percentiles(o.percentiles, labels);
  std::ofstream csv_out;
  if (!o.csv_file.empty() && o.csv_file != "-") {
    csv_out.open(o.csv_file);
    if (!csv_out) throw std::runtime_error(o.csv_file + ": cannot write the CSV table");
  }
  summary_input in;
  for (const std::string& file : o.files) add_chain(in, file);
  if (in.draws[0].rows() < 4)
    throw std::runtime_error(in.files[0] + ": " + std::to_string(in.draws[0].rows()) +
                             " draws per chain; the summary needs at least 4 to split chains");
  const std::vector<parameter_summary> summaries = summarize(in.draws, in.columns, probabilities);
  double sampling_seconds = 0;
  for (double t : in.sampling_seconds) sampling_seconds += t;
  std::vector<std::vector<double>> rows;
  for (const auto& s : summaries) rows.push_back(table_row(s, sampling_seconds));
  const std::vector<std::string> header = table_header(labels);
  if (o.csv_file == "-") {
    write_table_csv(std::cout, header, summaries, rows, o.sig_figs);
    return;
  }
  print_preamble(std::cout, in);
  print_table(std::cout, header, in.columns, rows, o.sig_figs);
  print_footer(std::cout, in, summaries);
  if (csv_out.is_open()) {
    write_table_csv(csv_out, header, summaries, rows, o.sig_figs);
    if (!csv_out.flush()) throw std::runtime_error(o.csv_file + ": write failed");
  }
}

}  // namespace

void add_summary_options(CLI::App& app, summary_command_options& o) {
  app.add_option("files", o.files, "Stan CSV files, one per chain (maprect's or CmdStan's)")->required();
  app.add_option("--percentiles", o.percentiles, "comma-separated percentiles to show, increasing, 0 to 100")
      ->capture_default_str();
  app.add_option("--sig-figs", o.sig_figs, "significant digits of the numbers (17: every double exactly)")
      ->check(CLI::Range(1, 17))
      ->capture_default_str();
  app.add_option("--csv", o.csv_file, "also write the table as CSV to this file (-: only the CSV, on stdout)");
}

int run_summary(const summary_command_options& o) {
  int code = 0;
  if (world_rank() == 0) {
    try {
      summarize_files(o);
      std::cout.flush();
    } catch (const std::invalid_argument& e) {
      print_error(e.what());
      code = 2;
    } catch (const std::exception& e) {
      print_error(e.what());
      code = 1;
    }
  }
  return agree(code);
}

}  // namespace maprect::cli
