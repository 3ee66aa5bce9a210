#pragma once
// What `maprect bench` measures, as the table and the JSON report it: one record per backend, size and
// kernel, and the ratios of each size and kernel.
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace maprect::cli {

/// One backend at one size and kernel.
struct bench_record {
  int jobs = 0, points = 0;
  std::string kernel;   ///< scalar | vector | none (analytic and raw_mpi_floor do not depend on the kernel)
  std::string backend;  ///< analytic | single_tape | in_process | cluster | raw_mpi_floor | reduce_sum
  int ranks = 1;        ///< ranks the program was launched with
  int working_ranks = 1;
  int repeats = 0;
  double median_us = std::numeric_limits<double>::quiet_NaN();
  double min_us = std::numeric_limits<double>::quiet_NaN();
  double mean_us = std::numeric_limits<double>::quiet_NaN();
  std::optional<double> first_call_us;            ///< median over the fresh call sites of the first calls
  std::optional<double> first_call_over_steady;   ///< median of first call / the steady calls right after it
  std::optional<double> root_us_per_job, worker_us_per_job;  ///< cluster: medians of the calls' profiles
  std::optional<double> check_us;                 ///< cluster: median of the root's data check per call
  std::optional<int> root_jobs;                   ///< cluster: the root's share in the last call
  std::optional<int> threads;                     ///< cluster: threads per rank (the root's team)
  std::optional<double> thread_slowest_us, thread_fastest_us;  ///< cluster: medians of the root team's busiest
                                                               ///< and idlest thread per call
  std::optional<double> worker_thread_slowest_us, worker_thread_fastest_us;  ///< cluster: the same, busiest worker
  // Cluster: the root's serial work per steady call, from the root-work calls in which the root ran no jobs.
  std::optional<double> root_serial_us, root_serial_min_us;  ///< CPU us of its thread: median, min
  std::optional<double> root_serial_over_in_process;  ///< root_serial_us / root_serial_in_process_cpu_us
  std::optional<double> root_serial_in_process_cpu_us;  ///< median CPU us of the calling thread per in_process
                                                        ///< gradient; one thread per rank only
  std::optional<double> root_serial_call_cpu_us;  ///< median CPU us of the root's thread in those calls,
  std::optional<double> root_serial_wait_cpu_us;  ///< of which collecting the answers (median)
  std::optional<int> root_serial_calls;           ///< the root-work calls measured (steady, no jobs on the root)
  std::optional<int> root_serial_checked_rows;    ///< workers' rows each compared (0 with job_data)
  // Cluster: the root-work calls in which the root ran jobs (the auto balance gives it some).
  std::optional<int> root_serial_calls_with_jobs;  ///< how many
  std::optional<int> root_serial_jobs_run;         ///< most jobs the root ran in one
  std::optional<double> root_serial_with_jobs_us;  ///< median of CPU - collecting - the jobs' wall-clock time: an
                                                   ///< estimate that descheduling during the jobs drives down
  std::optional<double> max_abs_diff_vs_analytic;
  std::optional<double> log_density;
  std::optional<unsigned long long> bytes_sent, bytes_received;
  std::optional<unsigned long long> bytes_through_memory;  ///< cluster: of those, through host memory
  std::optional<double> tape_bytes_per_output, tape_nodes_per_output;
  std::optional<double> tape_node_bytes_per_output, tape_partials_bytes_per_output, tape_other_bytes_per_output;
  std::optional<int> grainsize;                   ///< reduce_sum: its grainsize
  std::optional<double> single_tape_over_this;    ///< reduce_sum: single_tape / this, median over rounds
  std::optional<double> map_rect_over_this;       ///< reduce_sum: map_rect (cluster, or in_process on one rank) / this
};

/// Ratios of one (size, kernel), as the table shows them: medians over rounds of each round's ratio
/// (the floor, measured apart, as a ratio of medians).
struct bench_summary {
  int jobs = 0, points = 0;
  std::string kernel;
  std::optional<double> single_tape_over_analytic, in_process_over_single_tape, cluster_speedup_over_in_process,
      cluster_over_raw_mpi_floor, in_process_overhead_us_per_job, first_call_over_steady, check_over_in_process,
      single_tape_over_cluster;
};

/// Everything one run of `maprect bench` measured.
struct bench_results {
  std::string data = "rows";  ///< how map_rect got the rows: rows (x_r/x_i) or job_data
  double clock_read_us = 0;   ///< thread CPU us of one read of the thread's CPU clock, measured on the root
  std::vector<bench_record> records;
  std::vector<bench_summary> summaries;
};

/// The record of (J, N, kernel, backend) in `records`; null when that backend did not run.
const bench_record* find_record(const std::vector<bench_record>& records, int J, int N, const std::string& kernel,
                                const std::string& backend);

/// Prints the results as a table with its notes on stdout (root only).
void print_bench_table(const bench_results& results, int ranks);

/// Writes the results as one JSON document, with how and where they were taken.
void write_bench_json(std::ostream& out, const bench_results& results, int ranks, int repeat,
                      const std::string& command_line);

}  // namespace maprect::cli
