#pragma once
// The subcommands of the maprect program: their options and entry points. Every rank parses the same
// arguments and calls the same entry point; the entry points are collective over MPI_COMM_WORLD.
#include <CLI/CLI.hpp>

#include <string>
#include <utility>
#include <vector>

#include "plan_commands.hpp"  // maprect plan

namespace maprect::cli {

/// Options of `maprect fit`.
struct fit_options {
  std::string model = "logreg";  ///< logreg | pk2cmt
  std::string data;              ///< CSV of logreg data (group,y,x); empty: embedded data
  int jobs = 0;                  ///< groups (logreg) or subjects (pk2cmt) of the embedded data; 0: model default
  int points = 0;                ///< points per group of the embedded logreg data; 0: default
  int max_iter = 200;            ///< L-BFGS iteration limit
  std::string out;               ///< JSON result file; empty: none
};

/// Options of `maprect bench`.
struct bench_options {
  std::string sizes = "2x1,512x1,64x100,256x100,256x1000,512x1000";  ///< comma-separated JxN
  int repeat = 50;                                                     ///< timed gradients per measurement
  std::string json;                                                    ///< JSON result file; empty: none
};

/// Adds fit's options to its subcommand.
void add_fit_options(CLI::App& app, fit_options& options);
/// Adds bench's options to its subcommand.
void add_bench_options(CLI::App& app, bench_options& options);

/// Runs `maprect fit` on every rank; returns the exit code, the same on every rank.
int run_fit(const fit_options& options, const std::string& command_line);
/// Runs `maprect bench` on every rank; returns the exit code, the same on every rank.
int run_bench(const bench_options& options, const std::string& command_line);

/// Parses "2x1,64x100" into (J, N) pairs; throws std::invalid_argument naming the bad entry.
std::vector<std::pair<int, int>> parse_sizes(const std::string& text);

}  // namespace maprect::cli
