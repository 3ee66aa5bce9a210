#pragma once
// `maprect plan`: its options and entry point (collective over MPI_COMM_WORLD, like every subcommand).
#include <CLI/CLI.hpp>

#include <string>

namespace maprect::cli {

/// Options of `maprect plan`.
struct plan_options {
  std::string model = "logreg";   ///< logreg (standard model) | pk2cmt
  std::string kernel = "scalar";  ///< logreg kernel: scalar | vector
  int jobs = 0;                   ///< J; 0: the model's default
  int points = 0;                 ///< logreg points per job; 0: default
  int skew = 1;                   ///< logreg: the last tenth of the jobs have skew times the points
  bool job_data = false;          ///< the call site is fed a job_data: no per-call data check on the root
  int threads = 1;                ///< T per rank
  int ranks_max = 1024;           ///< largest P of the table
  int ranks_per_host = 0;         ///< H; 0: as launched (several hosts) or the cores of this host
  int cores_per_host = 0;         ///< cores per host; 0: this host's, or one per thread with ranks_per_host
  double alpha_us = -1;           ///< what-if latency between hosts; < 0: measured or assumed
  double beta_gbs = 0;            ///< what-if bandwidth between hosts; 0: measured or assumed
  double overhead_us = -1;        ///< what-if root time per message between hosts; < 0: as alpha
  int repeat = 20;                ///< timed rounds per figure
  std::string json;               ///< JSON output file; empty: none
};

/// Adds plan's options to its subcommand.
void add_plan_options(CLI::App& app, plan_options& options);
/// Runs `maprect plan` on every rank; returns the exit code, the same on every rank.
int run_plan(const plan_options& options, const std::string& invocation);

}  // namespace maprect::cli
