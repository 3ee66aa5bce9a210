#pragma once
// `plan`: its options and entry points (collective over MPI_COMM_WORLD, like every subcommand): the maprect
// program's plan of its built-in call sites, and the plan of a registered model in a program of your own.
#include <CLI/CLI.hpp>

#include <string>

namespace maprect::cli {

/// Options of `maprect plan`.
struct plan_options {
  std::string model = "logreg";   ///< logreg | pk2cmt | sleep | pointwise_regression; a registered model's name
  std::string data;               ///< a registered model's CmdStan JSON data; empty: its embedded data
  std::string kernel = "scalar";  ///< logreg kernel: scalar | vector
  int jobs = 0;                   ///< J; 0: the model's default
  int points = 0;                 ///< logreg points per job; 0: default
  int covariates = 8;             ///< pointwise_regression: covariates C
  int skew = 1;                   ///< logreg: the last tenth of the jobs have skew times the points
  double job_ms = 1;              ///< sleep: each job's milliseconds
  int slow_rank = -1;             ///< the rank whose timed jobs are slowed (-1: none)
  double slow_factor = 3;         ///< slow_rank's jobs take this many times as long (a sleep after each)
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

/// Adds plan's options to its subcommand (the maprect program's built-in call sites).
void add_plan_options(CLI::App& app, plan_options& options);
/// Runs `maprect plan` on every rank; returns the exit code, the same on every rank.
int run_plan(const plan_options& options, const std::string& invocation);
/// Adds plan's options for a registered model (--model, --data, --jobs, --points and the machine's options).
void add_model_plan_options(CLI::App& app, plan_options& options);
/// Runs plan for the registered model --model on every rank: its first map_rect call site, measured in
/// process on rank 0; returns the exit code, the same on every rank.
int run_model_plan(const plan_options& options, const std::string& invocation);

}  // namespace maprect::cli
