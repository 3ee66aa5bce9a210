#pragma once
// The subcommands of the maprect program: their options and entry points. Every rank parses the same
// arguments and calls the same entry point; the entry points are collective over MPI_COMM_WORLD.
#include <CLI/CLI.hpp>

#include <maprect/cluster.hpp>

#include <string>
#include <utility>
#include <vector>

#include "plan_commands.hpp"  // maprect plan

namespace maprect::cli {

/// Options of `maprect fit`.
struct fit_options {
  std::string model = "logreg";  ///< a registered model: logreg | pk2cmt | eight_schools | your own
  std::string data;              ///< CmdStan JSON (or logreg's CSV group,y,x); empty: embedded data
  int jobs = 0;                  ///< groups (logreg) or subjects (pk2cmt) of the embedded data; 0: model default
  int points = 0;                ///< points per group of the embedded logreg data; 0: default
  int max_iter = 200;            ///< L-BFGS iteration limit
  std::string out;               ///< JSON result file; empty: none
  std::string threads;           ///< threads per rank: N or auto; empty: MAPRECT_THREADS decides
};

/// Options of `maprect bench`.
struct bench_options {
  std::string sizes = "2x1,512x1,64x100,256x100,256x1000,512x1000";  ///< comma-separated JxN
  int repeat = 50;                                                     ///< timed gradients per measurement
  std::string json;                                                    ///< JSON result file; empty: none
  std::string threads;  ///< threads per rank: N or auto; empty: MAPRECT_THREADS decides
  std::string data = "rows";  ///< how map_rect gets the rows: rows (x_r/x_i, checked every call) or job_data
  std::string model = "standard";  ///< standard (the benchmark model) | pointwise_regression
  int covariates = 10;             ///< pointwise_regression: covariates C
};

/// Adds fit's options to its subcommand.
void add_fit_options(CLI::App& app, fit_options& options);
/// Adds bench's options to its subcommand.
void add_bench_options(CLI::App& app, bench_options& options);

/// Runs `maprect fit` on every rank; returns the exit code, the same on every rank.
int run_fit(const fit_options& options, const std::string& command_line);
/// Runs `maprect bench` on every rank; returns the exit code, the same on every rank.
int run_bench(const bench_options& options, const std::string& command_line);

/// Adds --threads (N or auto) to a subcommand.
void add_threads_option(CLI::App& app, std::string& threads);
/// The cluster's options for a --threads value (empty: MAPRECT_THREADS decides); throws std::invalid_argument
/// naming --threads and the value when it is neither auto nor a thread count from 1 to 1024.
cluster::options cluster_options(const std::string& threads);

/// Parses "2x1,64x100" into (J, N) pairs; throws std::invalid_argument naming the bad entry.
std::vector<std::pair<int, int>> parse_sizes(const std::string& text);

}  // namespace maprect::cli

namespace maprect::cli {

/// Options of `maprect sample`.
struct sample_command_options {
  std::string model = "logreg";  ///< a registered model: logreg | pk2cmt | eight_schools | your own
  std::string data;              ///< CmdStan JSON (or logreg's CSV); empty: embedded data
  std::string init = "2";        ///< --init: radius R of uniform(-R, R) inits, or a JSON file of values
  int jobs = 0;                  ///< groups (logreg) or subjects (pk2cmt) of the embedded data; 0: default
  int points = 0;                ///< points per group of the embedded logreg data; 0: default
  int chains = 4;                ///< chains, each on its own group of ranks
  int warmup = 1000;             ///< warm-up iterations per chain
  int samples = 1000;            ///< draws per chain
  std::string seed = "1";        ///< random seed (text, checked by run_sample)
  int max_depth = 10;            ///< largest NUTS tree depth
  double delta = 0;              ///< target acceptance statistic; 0: the model's (default_delta)
  std::string output_dir = "output";  ///< where <model>-<chain>.csv go
  int checkpoint_every = 0;      ///< iterations between checkpoints; 0: none
  bool resume = false;           ///< continue from the checkpoints in output_dir
  int sig_figs = 17;             ///< significant digits in the CSV (17: exact doubles)
  double progress_seconds = 2;   ///< least seconds between two progress lines of a chain
  bool plot = false;             ///< write <model>-draws.png with scripts/plot-draws.py
  // CmdStan's sampler arguments, checked by check_sampler_arguments (sample_options.hpp).
  int thin = 1;                  ///< keep every thin-th iteration (CmdStan's thin)
  bool save_warmup = false;      ///< write the warm-up draws too (CmdStan's save_warmup)
  std::string metric = "diag";   ///< unit | diag | dense (CmdStan's metric unit_e | diag_e | dense_e)
  std::string metric_file;       ///< JSON {"inv_metric": ...} of the initial inverse metric; empty: identity
  double stepsize = 1;           ///< initial step size (CmdStan's stepsize)
  double stepsize_jitter = 0;    ///< uniform jitter of each transition's step size, in [0, 1]
  int adapt_engaged = 1;         ///< 0: no adaptation (CmdStan's adapt engaged)
  int init_buffer = 75;          ///< CmdStan's adapt init_buffer
  int term_buffer = 50;          ///< CmdStan's adapt term_buffer
  int window = 25;               ///< CmdStan's adapt window
};

/// Adds sample's options to its subcommand.
void add_sample_options(CLI::App& app, sample_command_options& options);
/// Runs `maprect sample` on every rank; returns the exit code, the same on every rank.
int run_sample(const sample_command_options& options, const std::string& command_line);

}  // namespace maprect::cli

namespace maprect::cli {

/// Options of `maprect summary`.
struct summary_command_options {
  std::vector<std::string> files;       ///< Stan CSV files, one per chain
  std::string percentiles = "5,50,95";  ///< percentiles to show
  int sig_figs = 2;                     ///< significant digits of the numbers
  std::string csv_file;                 ///< also write the table as CSV here; "-": only CSV, on stdout
};

/// Adds summary's options to its subcommand.
void add_summary_options(CLI::App& app, summary_command_options& options);
/// Runs `maprect summary` (rank 0 reads and prints); returns the exit code, the same on every rank.
int run_summary(const summary_command_options& options);

}  // namespace maprect::cli
