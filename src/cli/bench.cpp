// maprect bench: the benchmark matrix of the standard model (docs/benchmark-model.md). For each size J x N
// and kernel (scalar, vector) it times one gradient by: the closed form in double (analytic, the floor of AD),
// the functor for every job on one plain tape (single_tape), map_rect in process (in_process) and map_rect
// over all launched ranks (cluster), next to the raw MPI messages of one call (raw_mpi_floor); and reduce_sum
// over the groups at several grainsizes (reduce_sum: over the cluster's ranks, or in process on one rank).
// Over a cluster it also measures the root's serial work per steady call (bench_root_work.hpp), on a call
// site of its own where the root is asked to run no jobs, one call per round.
// This file runs the matrix and turns its samples into records; bench_harness times, bench_table and
// bench_json report.
#include <maprect/maprect.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <utility>

#include "bench_backends.hpp"
#include "bench_harness.hpp"
#include "bench_pointwise.hpp"
#include "bench_records.hpp"
#include "commands.hpp"
#include "logreg.hpp"
#include "spmd.hpp"
#include "src/bench/raw_mpi_floor.hpp"
#include "src/cluster/test_hooks.hpp"

namespace maprect::cli {

namespace {

/// What every measurement of one size shares.
struct size_run {
  std::size_t index;  ///< the size's place in --sizes, which picks its call sites
  int J, N;
  int ranks, repeat;
  const cluster& c;
  double floor_seconds;  ///< the raw MPI floor of this size; 0 on one rank
  bool with_job_data;    ///< map_rect gets the rows as a job_data (else as x_r/x_i)
};

/// One kernel's contenders of a size: a workspace each, where they sit among the size's contenders, and the
/// first calls of the cluster (median first call, median first call / steady).
struct kernel_contenders {
  bench_kernel k;
  std::unique_ptr<bench_workspace> single, local, remote;
  std::unique_ptr<bench_workspace> root_work{};  ///< the root-work call site's, over a cluster
  std::size_t single_at = 0, local_at = 0, remote_at = 0;
  std::pair<double, double> first{};
  std::vector<std::unique_ptr<bench_workspace>> reduce{};  ///< one per grainsize
  std::vector<std::size_t> reduce_at{};
};

/// reduce_sum's grainsizes: 1, 8, 64 and J / (2 ranks threads), the last one slice per thread twice over.
std::vector<int> reduce_grainsizes(const size_run& run) {
  std::vector<int> out;
  for (int G : {1, 8, 64, std::max(1, run.J / (2 * run.ranks * run.c.threads()))})
    if (std::find(out.begin(), out.end(), G) == out.end()) out.push_back(G);
  return out;
}

/// Every backend of one size, both kernels, for one interleaved comparison; contender 0 is the analytic one.
struct size_contenders {
  std::unique_ptr<job_data> data;  ///< the problem's rows, when map_rect gets them as a job_data
  std::unique_ptr<bench_workspace> exact;
  std::vector<contender> cs;
  std::vector<kernel_contenders> ks;
};

/// A workspace for `problem` whose map_rect calls get the rows as `data` when it is not null.
std::unique_ptr<bench_workspace> workspace(const models::logreg_standard_problem& problem, const job_data* data) {
  auto w = std::make_unique<bench_workspace>(problem);
  w->data = data;
  return w;
}

/// The cluster contender's root-work call site, where the root is asked to run none of the jobs: with
/// MAPRECT_BALANCE=even it runs none, and its thread's CPU time is its serial work and its waiting alone.
void add_root_work(const size_run& run, const models::logreg_standard_problem& problem, const job_data* data,
                   kernel_contenders& kc, contender& remote) {
  kc.root_work = workspace(problem, data);
  detail::plan_root_share(root_work_call_id(kc.k, run.index), 0);
  remote.root_work = root_work_gradient(kc.k, run.index);
  remote.root_work_w = kc.root_work.get();
}

size_contenders make_contenders(const size_run& run, const models::logreg_standard_problem& problem) {
  size_contenders out;
  if (run.with_job_data) out.data = std::make_unique<job_data>(problem.x_r, problem.x_i);
  const job_data* data = out.data.get();
  out.exact = std::make_unique<bench_workspace>(problem);
  out.cs.push_back({&analytic_gradient, out.exact.get()});
  for (bench_kernel k : {bench_kernel::scalar, bench_kernel::vector}) {
    kernel_contenders kc{k, std::make_unique<bench_workspace>(problem), workspace(problem, data),
                         workspace(problem, data)};
    const gradient_fn distributed = map_rect_gradient(k, run.index);
    kc.single_at = out.cs.size();
    out.cs.push_back({single_tape_gradient(k), kc.single.get()});
    kc.local_at = out.cs.size();
    out.cs.push_back({distributed, kc.local.get(), true});
    if (run.ranks > 1) {
      kc.remote_at = out.cs.size();
      out.cs.push_back({distributed, kc.remote.get()});
      out.cs.back().remote = &run.c;
      add_root_work(run, problem, data, kc, out.cs.back());
    }
    for (int G : reduce_grainsizes(run)) {
      kc.reduce.push_back(std::make_unique<bench_workspace>(problem));
      kc.reduce.back()->grainsize = G;
      kc.reduce_at.push_back(out.cs.size());
      out.cs.push_back({reduce_sum_gradient(k), kc.reduce.back().get()});
    }
    out.ks.push_back(std::move(kc));
  }
  return out;
}

/// The first calls of both kernels, before anything else of this size runs over the cluster.
void sample_cluster_first_calls(const size_run& run, const models::logreg_standard_problem& problem,
                                size_contenders& sc) {
  if (run.ranks == 1) return;
  for (kernel_contenders& kc : sc.ks) {
    bench_workspace w(problem);
    w.data = sc.data.get();
    kc.first = sample_first_calls(first_call_gradients(kc.k, run.index), w);
  }
}

bench_record make_record(const size_run& run, const std::string& kernel, const std::string& backend, int working,
                         const timing& t) {
  bench_record r;
  r.jobs = run.J;
  r.points = run.N;
  r.kernel = kernel;
  r.backend = backend;
  r.ranks = run.ranks;
  r.working_ranks = working;
  r.repeats = run.repeat;
  r.median_us = t.median_us;
  r.min_us = t.min_us;
  r.mean_us = t.mean_us;
  return r;
}

/// The records that do not depend on the kernel: the analytic gradient, and the floor on more than one rank.
void add_kernel_free_records(const size_run& run, const size_contenders& sc, std::vector<bench_record>& rs) {
  bench_record analytic = make_record(run, "none", "analytic", 1, summarise_samples(sc.cs[0].us));
  analytic.log_density = sc.exact->value;
  rs.push_back(analytic);
  if (run.ranks == 1) return;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  rs.push_back(make_record(run, "none", "raw_mpi_floor", run.ranks, {1e6 * run.floor_seconds, nan, nan}));
}

/// `r` with the log density and the gradient's largest difference from the closed form, from `w`.
bench_record checked(bench_record r, const bench_workspace& w, const bench_workspace& exact) {
  r.log_density = w.value;
  r.max_abs_diff_vs_analytic = (w.gradient - exact.gradient).cwiseAbs().maxCoeff();
  return r;
}

void add_tape_breakdown(bench_record& r, const bench_workspace& w, int J) {
  // Arena bytes per output: the output node, its M partials, and the rest (operand records shared by a
  // job's outputs, the call's record). In process and over a cluster the layout is the same.
  constexpr std::size_t align = arena::alignment;
  const double node = static_cast<double>((sizeof(detail::job_output_vari) + align - 1) / align * align);
  const int rows = detail::rows_per_output(detail::param_kinds::vv, 2, 2);
  const double partials = sizeof(double) * static_cast<double>(rows - 1);
  const double total = static_cast<double>(w.call_tape_bytes) / J;
  r.tape_bytes_per_output = total;
  r.tape_nodes_per_output = static_cast<double>(w.call_tape_nodes) / J;
  r.tape_node_bytes_per_output = node;
  r.tape_partials_bytes_per_output = partials;
  r.tape_other_bytes_per_output = total - node - partials;
}

/// The root's serial work per steady call into the cluster's record `r`, from the root-work calls of `remote`:
/// the calls in which the root ran no jobs give it in CPU time alone, against the CPU time of the in-process
/// call `local` (both clocks stop while their thread waits for a core, so load does not move the share); the
/// calls in which it ran jobs only give an estimate (bench_root_work.hpp). With a team of `threads` above 1
/// the in-process jobs run on the team, whose CPU time the calling thread's clock leaves out: no share then.
void add_root_serial_work(bench_record& r, const contender& remote, const contender& local, int threads) {
  std::vector<double> serial, call, wait, estimate;
  int jobs_run = 0, checked_rows = 0;
  for (const root_work_sample& s : remote.root_work_samples) {
    checked_rows = std::max(checked_rows, s.checked_rows);
    if (s.jobs_run > 0) {
      jobs_run = std::max(jobs_run, s.jobs_run);
      estimate.push_back(s.serial_us);
      continue;
    }
    serial.push_back(s.serial_us);
    call.push_back(s.call_us);
    wait.push_back(s.wait_us);
  }
  r.root_serial_calls = static_cast<int>(serial.size());
  r.root_serial_calls_with_jobs = static_cast<int>(estimate.size());
  r.root_serial_checked_rows = checked_rows;
  if (threads == 1) r.root_serial_in_process_cpu_us = median_of(local.cpu_us);
  if (!serial.empty()) {
    const timing t = summarise_samples(serial);
    r.root_serial_us = t.median_us;
    r.root_serial_min_us = t.min_us;
    if (r.root_serial_in_process_cpu_us) r.root_serial_over_in_process = t.median_us / *r.root_serial_in_process_cpu_us;
    r.root_serial_call_cpu_us = median_of(call);
    r.root_serial_wait_cpu_us = median_of(wait);
  }
  if (!estimate.empty()) {
    r.root_serial_jobs_run = jobs_run;
    r.root_serial_with_jobs_us = median_of(estimate);
  }
}

/// The cluster's record of one kernel, and its ratios in `sm`. Reads the cluster's last call, which must be
/// this kernel's counted call.
bench_record cluster_record(const size_run& run, const size_contenders& sc, const kernel_contenders& kc,
                            bench_summary& sm) {
  const contender& remote = sc.cs[kc.remote_at];
  const contender& local = sc.cs[kc.local_at];
  bench_record r = checked(make_record(run, sm.kernel, "cluster", run.ranks, summarise_samples(remote.us)),
                           *kc.remote, *sc.exact);
  r.first_call_us = kc.first.first;
  r.first_call_over_steady = kc.first.second;
  if (!remote.root_us_per_job.empty()) r.root_us_per_job = median_of(remote.root_us_per_job);
  if (!remote.worker_us_per_job.empty()) r.worker_us_per_job = median_of(remote.worker_us_per_job);
  if (!remote.check_us.empty()) {
    r.check_us = median_of(remote.check_us);
    // Against the in-process call of the same round: the share of a call the check adds to the ranks.
    std::vector<double> share(remote.check_us.size());
    for (std::size_t i = 0; i < share.size(); ++i) share[i] = remote.check_us[i] / local.us[i];
    sm.check_over_in_process = median_of(share);
  }
  r.root_jobs = run.c.last_call_profile().root_jobs;
  r.threads = run.c.threads();
  if (!remote.thread_slowest_us.empty()) {
    r.thread_slowest_us = median_of(remote.thread_slowest_us);
    r.thread_fastest_us = median_of(remote.thread_fastest_us);
    r.worker_thread_slowest_us = median_of(remote.worker_thread_slowest_us);
    r.worker_thread_fastest_us = median_of(remote.worker_thread_fastest_us);
  }
  const cluster::traffic traffic = run.c.last_call_traffic();
  r.bytes_sent = traffic.sent;
  r.bytes_received = traffic.received;
  r.bytes_through_memory = traffic.through_memory;
  add_tape_breakdown(r, *kc.remote, run.J);
  add_root_serial_work(r, remote, local, run.c.threads());
  sm.cluster_speedup_over_in_process = paired_ratio(local, remote);
  sm.single_tape_over_cluster = paired_ratio(sc.cs[kc.single_at], remote);
  if (run.floor_seconds > 0) sm.cluster_over_raw_mpi_floor = r.median_us / (1e6 * run.floor_seconds);
  sm.first_call_over_steady = kc.first.second;
  return r;
}

/// The record of reduce_sum at the kernel's i-th grainsize: its time, against one plain tape and against
/// map_rect on the same ranks, and (over a cluster) the bytes of one more call, untimed.
bench_record reduce_record(const size_run& run, const size_contenders& sc, const kernel_contenders& kc,
                           std::size_t i) {
  const contender& c = sc.cs[kc.reduce_at[i]];
  run_gradient(c);
  bench_record r = checked(make_record(run, kernel_name(kc.k), "reduce_sum", run.ranks, summarise_samples(c.us)),
                           *kc.reduce[i], *sc.exact);
  r.grainsize = kc.reduce[i]->grainsize;
  r.threads = run.c.threads();
  r.single_tape_over_this = paired_ratio(sc.cs[kc.single_at], c);
  r.map_rect_over_this = paired_ratio(sc.cs[run.ranks > 1 ? kc.remote_at : kc.local_at], c);
  if (run.ranks > 1) {
    const cluster::traffic traffic = run.c.last_call_traffic();
    r.bytes_sent = traffic.sent;
    r.bytes_received = traffic.received;
  }
  return r;
}

/// The records and the summary of one kernel, after the interleaved comparison.
void add_kernel_results(const size_run& run, const size_contenders& sc, const kernel_contenders& kc,
                        bench_results& out) {
  const std::string name = kernel_name(kc.k);
  const contender& single = sc.cs[kc.single_at];
  const contender& local = sc.cs[kc.local_at];
  // The tape footprint of one more call of each kind, untimed.
  const gradient_fn counted = counted_map_rect_gradient(kc.k, run.index);
  run_gradient(contender(counted, kc.local.get(), true));
  if (run.ranks > 1) run_gradient(contender(counted, kc.remote.get()));
  out.records.push_back(
      checked(make_record(run, name, "single_tape", 1, summarise_samples(single.us)), *kc.single, *sc.exact));
  bench_record lr = checked(make_record(run, name, "in_process", 1, summarise_samples(local.us)), *kc.local, *sc.exact);
  add_tape_breakdown(lr, *kc.local, run.J);
  out.records.push_back(lr);

  bench_summary sm;
  sm.jobs = run.J;
  sm.points = run.N;
  sm.kernel = name;
  sm.single_tape_over_analytic = paired_ratio(single, sc.cs[0]);
  sm.in_process_over_single_tape = paired_ratio(local, single);
  sm.in_process_overhead_us_per_job = paired_difference_per_job(local, single, run.J);
  if (run.ranks > 1) out.records.push_back(cluster_record(run, sc, kc, sm));
  for (std::size_t i = 0; i < kc.reduce.size(); ++i) out.records.push_back(reduce_record(run, sc, kc, i));
  out.summaries.push_back(sm);
}

/// Every backend of one size: first calls, the interleaved comparison, then the records and summaries.
void bench_size(const size_run& run, bench_results& out) {
  std::printf("size %dx%d ...\n", run.J, run.N);
  std::fflush(stdout);
  const models::logreg_standard_problem problem = models::make_logreg_standard_problem(run.J, run.N);
  size_contenders sc = make_contenders(run, problem);
  sample_cluster_first_calls(run, problem, sc);
  sample_interleaved(sc.cs, run.repeat);
  add_kernel_free_records(run, sc, out.records);
  for (const kernel_contenders& kc : sc.ks) add_kernel_results(run, sc, kc, out);
}

bench_results bench_on_root(const std::vector<std::pair<int, int>>& sizes, int repeat, const cluster& c,
                            const std::vector<double>& floor_seconds, const std::string& data) {
  bench_results out;
  out.data = data;
  out.clock_read_us = clock_read_us();
  const bool with_job_data = data == "job_data";
  for (std::size_t s = 0; s < sizes.size(); ++s)
    bench_size({s, sizes[s].first, sizes[s].second, c.size(), repeat, c, floor_seconds[s], with_job_data}, out);
  return out;
}

/// The raw MPI floor of every size, in seconds (0 on one rank). Collective and outside the serve loop: every
/// rank measures it for all sizes before the cluster starts.
std::vector<double> measure_floors(const std::vector<std::pair<int, int>>& sizes, int repeat) {
  std::vector<double> floor_seconds(sizes.size(), 0.0);
  if (world_size() == 1) return floor_seconds;
  const int rows = detail::rows_per_output(detail::param_kinds::vv, models::logreg_n_shared, models::logreg_n_own);
  for (std::size_t s = 0; s < sizes.size(); ++s)
    floor_seconds[s] = bench::raw_mpi_floor(MPI_COMM_WORLD, models::logreg_n_shared, models::logreg_n_own,
                                            sizes[s].first, 1, rows, repeat);
  return floor_seconds;
}

}  // namespace

std::vector<std::pair<int, int>> parse_sizes(const std::string& text) {
  std::vector<std::pair<int, int>> sizes;
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    const std::size_t x = item.find_first_of("xX");
    int J = 0, N = 0;
    std::size_t used_j = 0, used_n = 0;
    bool ok = x != std::string::npos && x > 0 && x + 1 < item.size();
    if (ok) {
      try {
        J = std::stoi(item.substr(0, x), &used_j);
        N = std::stoi(item.substr(x + 1), &used_n);
      } catch (const std::exception&) {
        ok = false;
      }
    }
    ok = ok && used_j == x && used_n == item.size() - x - 1 && J > 0 && N > 0;
    if (!ok) throw std::invalid_argument("--sizes: '" + item + "' is not JxN with positive integers J and N (e.g. 64x100)");
    sizes.emplace_back(J, N);
  }
  if (sizes.empty()) throw std::invalid_argument("--sizes: no sizes given (e.g. --sizes 2x1,64x100)");
  if (sizes.size() > static_cast<std::size_t>(max_bench_sizes))
    throw std::invalid_argument("--sizes: at most " + std::to_string(max_bench_sizes) + " sizes per run, got " +
                                std::to_string(sizes.size()));
  return sizes;
}

void add_bench_options(CLI::App& app, bench_options& o) {
  app.add_option("--sizes", o.sizes, "comma-separated JxN: J jobs of N points")->capture_default_str();
  app.add_option("--repeat", o.repeat, "timed gradients per measurement (after a warm-up)")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()))
      ->capture_default_str();
  app.add_option("--json", o.json, "write the records as JSON to this file");
  app.add_option("--data", o.data,
                 "how map_rect gets the rows: rows (x_r/x_i, which the root checks every call) or job_data")
      ->check(CLI::IsMember({"rows", "job_data"}))
      ->capture_default_str();
  app.add_option("--model", o.model,
                 "standard (the benchmark model, one output per job) or pointwise_regression (one output per "
                 "observation; --sizes is then GxK, default " + std::string(pointwise_default_sizes) + ")")
      ->check(CLI::IsMember({"standard", "pointwise_regression"}))
      ->capture_default_str();
  app.add_option("--covariates", o.covariates, "pointwise_regression: covariates C of every observation")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  add_threads_option(app, o.threads);
}

int run_bench(const bench_options& o, const std::string& invocation) {
  // Same on every rank, before any communication.
  const bool pointwise = o.model == "pointwise_regression";
  // The standard sizes' 512 jobs of 1000 observations would be 50 MB of partials per pointwise call.
  const bool default_sizes = o.sizes == bench_options{}.sizes;
  const std::vector<std::pair<int, int>> sizes =
      parse_sizes(pointwise && default_sizes ? std::string(pointwise_default_sizes) : o.sizes);
  const cluster::options threads = cluster_options(o.threads);

  std::ofstream out;
  if (!open_output_on_root(o.json, out)) return 1;

  const std::vector<double> floor_seconds =
      pointwise ? std::vector<double>(sizes.size(), 0.0) : measure_floors(sizes, o.repeat);

  int code = 0;
  {
    cluster c(MPI_COMM_WORLD, threads);
    if (!c.is_root()) {
      c.serve();
    } else {
      try {
        if (pointwise) {
          bench_pointwise(sizes, o.covariates, o.repeat, c, out.is_open() ? &out : nullptr, invocation);
        } else {
          std::printf("maprect bench: standard model, %zu size%s, %d rank%s x %d thread%s, %d repeats, rows as %s\n",
                      sizes.size(), sizes.size() == 1 ? "" : "s", c.size(), c.size() == 1 ? "" : "s", c.threads(),
                      c.threads() == 1 ? "" : "s", o.repeat, o.data == "job_data" ? "a job_data" : "x_r/x_i");
          const bench_results results = bench_on_root(sizes, o.repeat, c, floor_seconds, o.data);
          print_bench_table(results, c.size());
          if (out.is_open()) write_bench_json(out, results, c.size(), o.repeat, invocation);
        }
        if (out.is_open()) {
          out.close();
          if (!out) throw std::runtime_error(o.json + ": write failed");
          std::printf("wrote %s\n", o.json.c_str());
        }
      } catch (const std::exception& e) {
        print_error(e.what());
        code = 1;
      }
      c.stop();
    }
  }
  return agree(code);
}

}  // namespace maprect::cli
