// maprect bench: the benchmark matrix of the standard model (docs/benchmark-model.md). For each size J x N
// and kernel (scalar, vector) it times one gradient by: the closed form in double (analytic, the floor of AD),
// the functor for every job on one plain tape (single_tape), map_rect in process (in_process) and map_rect
// over all launched ranks (cluster), next to the raw MPI messages of one call (raw_mpi_floor).
#include <maprect/maprect.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>

#include "commands.hpp"
#include "logreg.hpp"
#include "spmd.hpp"
#include "src/bench/raw_mpi_floor.hpp"

namespace maprect::cli {

namespace {

/// Sizes per run. Each (size, kernel) has a call id for its steady-state calls and `first_call_samples`
/// more, each used for one first call only, so that every timed first call is a true first call.
constexpr int max_sizes = 16;
constexpr int first_call_samples = 5;
constexpr int scalar_call_base = 100;
constexpr int vector_call_base = 200;
constexpr int scalar_first_call_base = 1000;
constexpr int vector_first_call_base = 2000;
constexpr int first_call_ids = max_sizes * first_call_samples;

template <class F, std::size_t... I>
bool register_call_ids(int base, const char* name, std::index_sequence<I...>) {
  (detail::register_functor(base + static_cast<int>(I), detail::make_functor_entry<F>(name)), ...);
  return true;
}
// What MAPRECT_REGISTER does, for ranges of ids; runs before main on every rank.
constexpr const char* scalar_name = "maprect::models::logreg_standard_scalar_job";
constexpr const char* vector_name = "maprect::models::logreg_standard_vector_job";
const bool ids_registered =
    register_call_ids<models::logreg_standard_scalar_job>(scalar_call_base, scalar_name,
                                                          std::make_index_sequence<max_sizes>{}) &&
    register_call_ids<models::logreg_standard_vector_job>(vector_call_base, vector_name,
                                                          std::make_index_sequence<max_sizes>{}) &&
    register_call_ids<models::logreg_standard_scalar_job>(scalar_first_call_base, scalar_name,
                                                          std::make_index_sequence<first_call_ids>{}) &&
    register_call_ids<models::logreg_standard_vector_job>(vector_first_call_base, vector_name,
                                                          std::make_index_sequence<first_call_ids>{});

enum class kernel { scalar, vector };
const char* kernel_name(kernel k) { return k == kernel::scalar ? "scalar" : "vector"; }

/// Per (size, kernel): parameter containers reused by every evaluation, so that no backend pays for
/// allocations the others do not, and what the last evaluation produced.
struct workspace {
  const models::logreg_standard_problem* problem = nullptr;
  vector_v phi = vector_v(2);
  std::vector<vector_v> theta;
  Eigen::VectorXd gradient;
  double value = 0;
  std::size_t call_tape_bytes = 0;  ///< arena bytes the last map_rect call added to the root tape
  std::size_t call_tape_nodes = 0;  ///< nodes it added

  explicit workspace(const models::logreg_standard_problem& p)
      : problem(&p), theta(p.x_r.size(), vector_v(2)), gradient(p.params.size()) {}

  void make_leaves() {
    const Eigen::VectorXd& x = problem->params;
    phi(0) = var(x(0));
    phi(1) = var(x(1));
    for (std::size_t j = 0; j < theta.size(); ++j) {
      theta[j](0) = var(x(2 + 2 * j));
      theta[j](1) = var(x(3 + 2 * j));
    }
  }

  void finish(const var& lp) {
    grad(lp);
    value = lp.val();
    gradient(0) = phi(0).adj();
    gradient(1) = phi(1).adj();
    for (std::size_t j = 0; j < theta.size(); ++j) {
      gradient(2 + 2 * j) = theta[j](0).adj();
      gradient(3 + 2 * j) = theta[j](1).adj();
    }
    recover_memory();
  }
};

using gradient_fn = void (*)(workspace&);

void analytic_gradient(workspace& w) { w.value = models::logreg_standard_closed_form(*w.problem, w.problem->params, w.gradient); }

template <class F>
void single_tape_gradient(workspace& w) {
  w.make_leaves();
  const F f{};
  const int J = static_cast<int>(w.theta.size());
  vector_v outputs(J);
  for (int j = 0; j < J; ++j) outputs(j) = f(w.phi, w.theta[j], w.problem->x_r[j], w.problem->x_i[j], nullptr)(0);
  w.finish(outputs.sum());
}

template <int CallId, class F>
void map_rect_gradient(workspace& w) {
  w.make_leaves();
  const vector_v outputs = map_rect<CallId, F>(w.phi, w.theta, w.problem->x_r, w.problem->x_i);
  w.finish(outputs.sum());
}

/// Like map_rect_gradient, and records what the call added to the root's tape (outside the timings).
template <int CallId, class F>
void map_rect_gradient_counted(workspace& w) {
  w.make_leaves();
  const std::size_t bytes_before = tape_bytes(), nodes_before = tape_size();
  const vector_v outputs = map_rect<CallId, F>(w.phi, w.theta, w.problem->x_r, w.problem->x_i);
  w.call_tape_bytes = tape_bytes() - bytes_before;
  w.call_tape_nodes = tape_size() - nodes_before;
  w.finish(outputs.sum());
}

template <class F, int Base, std::size_t N, std::size_t... I>
std::array<gradient_fn, N> map_rect_table(std::index_sequence<I...>) {
  return {&map_rect_gradient<Base + static_cast<int>(I), F>...};
}

template <class F, int Base, std::size_t... I>
std::array<gradient_fn, max_sizes> counted_table(std::index_sequence<I...>) {
  return {&map_rect_gradient_counted<Base + static_cast<int>(I), F>...};
}

const auto scalar_map_rect =
    map_rect_table<models::logreg_standard_scalar_job, scalar_call_base, max_sizes>(std::make_index_sequence<max_sizes>{});
const auto vector_map_rect =
    map_rect_table<models::logreg_standard_vector_job, vector_call_base, max_sizes>(std::make_index_sequence<max_sizes>{});
const auto scalar_counted =
    counted_table<models::logreg_standard_scalar_job, scalar_call_base>(std::make_index_sequence<max_sizes>{});
const auto vector_counted =
    counted_table<models::logreg_standard_vector_job, vector_call_base>(std::make_index_sequence<max_sizes>{});
const auto scalar_first_calls = map_rect_table<models::logreg_standard_scalar_job, scalar_first_call_base,
                                               first_call_ids>(std::make_index_sequence<first_call_ids>{});
const auto vector_first_calls = map_rect_table<models::logreg_standard_vector_job, vector_first_call_base,
                                               first_call_ids>(std::make_index_sequence<first_call_ids>{});

/// One backend at one size and kernel.
struct record {
  int jobs = 0, points = 0;
  std::string kernel;   ///< scalar | vector | none (analytic and raw_mpi_floor do not depend on the kernel)
  std::string backend;  ///< analytic | single_tape | in_process | cluster | raw_mpi_floor
  int ranks = 1;        ///< ranks the program was launched with
  int working_ranks = 1;
  int repeats = 0;
  double median_us = std::numeric_limits<double>::quiet_NaN();
  double min_us = std::numeric_limits<double>::quiet_NaN();
  double mean_us = std::numeric_limits<double>::quiet_NaN();
  std::optional<double> first_call_us;            ///< median over first_call_samples fresh call sites
  std::optional<double> first_call_over_steady;   ///< median of first call / the steady calls right after it
  std::optional<double> root_us_per_job, worker_us_per_job;  ///< cluster: medians of the calls' profiles
  std::optional<double> check_us;                 ///< cluster: median of the root's data check per call
  std::optional<int> root_jobs;                   ///< cluster: the root's share in the last call
  std::optional<double> max_abs_diff_vs_analytic;
  std::optional<double> log_density;
  std::optional<unsigned long long> bytes_sent, bytes_received;
  std::optional<unsigned long long> bytes_through_memory;  ///< cluster: of those, through node memory
  std::optional<double> tape_bytes_per_output, tape_nodes_per_output;
  std::optional<double> tape_node_bytes_per_output, tape_partials_bytes_per_output, tape_other_bytes_per_output;
};

struct timing {
  double median_us, min_us, mean_us;
};

double median_of(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const std::size_t n = xs.size();
  return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

timing summarise_samples(const std::vector<double>& us) {
  double sum = 0;
  for (double t : us) sum += t;
  return {median_of(us), *std::min_element(us.begin(), us.end()), sum / static_cast<double>(us.size())};
}

/// One backend in a comparison: how it computes a gradient, on which workspace, and whether it must run in
/// process while a cluster is live.
struct contender {
  gradient_fn f;
  workspace* w;
  bool in_process;
  std::vector<double> us;  ///< one sample per round: microseconds per gradient
  const cluster* remote = nullptr;                   ///< the cluster, for calls that use it
  std::vector<double> root_us_per_job, worker_us_per_job;  ///< per round, from the last call's profile
  std::vector<double> check_us;                            ///< per round: the last call's data check

  contender(gradient_fn fn, workspace* ws, bool local = false) : f(fn), w(ws), in_process(local) {}
};

void run_gradient(const contender& c) {
  if (c.in_process) {
    in_process_scope local;
    c.f(*c.w);
  } else {
    c.f(*c.w);
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Times the contenders side by side: `repeat` rounds, each timing every contender once (`batch` gradients,
/// in an order that rotates from round to round). The machine is shared and its speed drifts; interleaving
/// gives every contender the same drift, and ratios taken within a round cancel it. A sample of short
/// gradients follows one untimed gradient of the same contender, so that each is timed as one of a stream
/// of gradients (as in a fit), not cold after the other contenders' turns.
void sample_interleaved(std::vector<contender>& cs, int repeat) {
  using clock = std::chrono::steady_clock;
  const int warm_up = std::clamp(repeat / 10, 2, 20);
  double slowest = 0;  // seconds of one gradient, the slowest contender's
  for (auto& c : cs) {
    for (int i = 0; i < warm_up; ++i) run_gradient(c);
    const auto t0 = clock::now();
    run_gradient(c);
    slowest = std::max(slowest, seconds_since(t0));
  }
  // Samples of at least ~100 us, so that the clock's resolution and the loop do not count.
  const int batch = static_cast<int>(std::clamp(std::ceil(100e-6 / std::max(slowest, 1e-9)), 1.0, 1000.0));
  const bool lead_in = slowest < 5e-3;
  const std::size_t n = cs.size();
  for (auto& c : cs) {
    c.us.clear();
    c.root_us_per_job.clear();
    c.worker_us_per_job.clear();
    c.check_us.clear();
  }
  for (int r = 0; r < repeat; ++r)
    for (std::size_t i = 0; i < n; ++i) {
      contender& c = cs[(i + static_cast<std::size_t>(r)) % n];
      if (lead_in) run_gradient(c);
      const auto t0 = clock::now();
      for (int b = 0; b < batch; ++b) run_gradient(c);
      c.us.push_back(1e6 * seconds_since(t0) / batch);
      if (c.remote != nullptr) {
        const cluster::profile p = c.remote->last_call_profile();
        if (p.root_jobs > 0) c.root_us_per_job.push_back(1e6 * p.root_seconds / p.root_jobs);
        if (p.worker_jobs > 0) c.worker_us_per_job.push_back(1e6 * p.worker_seconds / p.worker_jobs);
        c.check_us.push_back(1e6 * p.check_seconds);
      }
    }
}

/// Median over rounds of a / b, each round's samples against each other.
double paired_ratio(const contender& a, const contender& b) {
  std::vector<double> r(a.us.size());
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = a.us[i] / b.us[i];
  return median_of(r);
}

/// First calls of `first_calls.size()` fresh call sites, each followed by `steady` calls of the same site:
/// the median first call, and the median of (first call / median of the steady calls after it).
std::pair<double, double> sample_first_calls(const std::vector<gradient_fn>& first_calls, workspace& w) {
  using clock = std::chrono::steady_clock;
  constexpr int steady = 5;
  std::vector<double> firsts, ratios;
  for (gradient_fn f : first_calls) {
    auto t0 = clock::now();
    f(w);
    const double first = seconds_since(t0);
    std::vector<double> after;
    for (int i = 0; i < steady; ++i) {
      t0 = clock::now();
      f(w);
      after.push_back(seconds_since(t0));
    }
    firsts.push_back(1e6 * first);
    ratios.push_back(first / median_of(after));
  }
  return {median_of(firsts), median_of(ratios)};
}

record make_record(int J, int N, const std::string& kernel, const std::string& backend, int ranks, int working,
                   int repeat, const timing& t) {
  record r;
  r.jobs = J;
  r.points = N;
  r.kernel = kernel;
  r.backend = backend;
  r.ranks = ranks;
  r.working_ranks = working;
  r.repeats = repeat;
  r.median_us = t.median_us;
  r.min_us = t.min_us;
  r.mean_us = t.mean_us;
  return r;
}

void add_tape_breakdown(record& r, const workspace& w, int J) {
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

double max_abs_diff(const Eigen::VectorXd& a, const Eigen::VectorXd& b) { return (a - b).cwiseAbs().maxCoeff(); }

std::string opt(const std::optional<double>& x) { return x ? json_number(*x) : "null"; }
std::string opt(const std::optional<unsigned long long>& x) { return x ? std::to_string(*x) : "null"; }

const record* find(const std::vector<record>& rs, int J, int N, const std::string& kernel, const std::string& backend) {
  for (const auto& r : rs)
    if (r.jobs == J && r.points == N && r.kernel == kernel && r.backend == backend) return &r;
  return nullptr;
}

/// Ratios of one (size, kernel), as the table shows them: medians over rounds of each round's ratio
/// (the floor, measured apart, as a ratio of medians).
struct summary {
  int jobs, points;
  std::string kernel;
  std::optional<double> single_tape_over_analytic, in_process_over_single_tape, cluster_speedup_over_in_process,
      cluster_over_raw_mpi_floor, in_process_overhead_us_per_job, first_call_over_steady, check_over_in_process,
      single_tape_over_cluster;
};

std::string cell(const std::optional<double>& x, const char* format) {
  if (!x) return "-";
  char text[32];
  std::snprintf(text, sizeof text, format, *x);
  return text;
}

std::string cell(double x, const char* format) { return cell(std::optional<double>(x), format); }

void print_table(const std::vector<record>& rs, const std::vector<summary>& ss, int ranks) {
  std::printf("\nmedian time per gradient in us (%d rank%s); ratios: median over rounds of each round's ratio "
              "(cl/floor: of medians); first: first call / steady\n",
              ranks, ranks == 1 ? "" : "s");
  std::printf("%-9s %-6s %9s %9s %9s %9s %9s | %7s %7s %7s %8s %6s | %10s %16s %8s | %15s\n", "JxN", "kernel",
              "analytic", "single", "in_proc", "cluster", "mpi_floor", "st/an", "ip/st", "speedup", "cl/floor",
              "first", "first_call", "bytes sent/recv", "tape B/o", "us/job root|wkr");
  for (const auto& s : ss) {
    const record* analytic = find(rs, s.jobs, s.points, "none", "analytic");
    const record* floor = find(rs, s.jobs, s.points, "none", "raw_mpi_floor");
    const record* single = find(rs, s.jobs, s.points, s.kernel, "single_tape");
    const record* local = find(rs, s.jobs, s.points, s.kernel, "in_process");
    const record* remote = find(rs, s.jobs, s.points, s.kernel, "cluster");
    auto us = [](const record* r) { return r ? cell(r->median_us, "%.2f") : std::string("-"); };
    std::string bytes = "-";
    if (remote && remote->bytes_sent)
      bytes = std::to_string(*remote->bytes_sent) + "/" + std::to_string(*remote->bytes_received);
    const record* tape_source = remote ? remote : local;
    const std::string size = std::to_string(s.jobs) + "x" + std::to_string(s.points);
    std::string per_job = "-";
    if (remote && remote->root_us_per_job && remote->worker_us_per_job)
      per_job = cell(remote->root_us_per_job, "%.3g") + "|" + cell(remote->worker_us_per_job, "%.3g");
    std::printf("%-9s %-6s %9s %9s %9s %9s %9s | %7s %7s %7s %8s %6s | %10s %16s %8s | %15s\n", size.c_str(),
                s.kernel.c_str(), us(analytic).c_str(), us(single).c_str(), us(local).c_str(), us(remote).c_str(),
                us(floor).c_str(), cell(s.single_tape_over_analytic, "%.2f").c_str(),
                cell(s.in_process_over_single_tape, "%.2f").c_str(),
                cell(s.cluster_speedup_over_in_process, "%.2f").c_str(),
                cell(s.cluster_over_raw_mpi_floor, "%.2f").c_str(), cell(s.first_call_over_steady, "%.2f").c_str(),
                remote && remote->first_call_us ? cell(*remote->first_call_us, "%.1f").c_str() : "-", bytes.c_str(),
                tape_source ? cell(tape_source->tape_bytes_per_output, "%.0f").c_str() : "-", per_job.c_str());
  }
  for (const auto& s : ss)
    if (s.jobs == 512 && s.points == 1 && s.in_process_overhead_us_per_job)
      std::printf("per-job overhead of in_process over single_tape at 512x1 (%s): %.3f us/job\n", s.kernel.c_str(),
                  *s.in_process_overhead_us_per_job);
  for (const auto& s : ss)
    if (s.jobs == 512 && s.points == 1 && s.single_tape_over_cluster)
      std::printf("one plain tape / cluster at 512x1 (%s): %.2f\n", s.kernel.c_str(), *s.single_tape_over_cluster);
  for (const auto& s : ss)
    if (s.check_over_in_process) {
      const record* remote = find(rs, s.jobs, s.points, s.kernel, "cluster");
      std::printf("root's data check per cluster call at %dx%d (%s): %.1f us, %.2f%% of the in_process call\n",
                  s.jobs, s.points, s.kernel.c_str(), remote ? remote->check_us.value_or(0) : 0.0,
                  100 * *s.check_over_in_process);
    }
  for (const auto& r : rs)
    if (r.backend == (ranks > 1 ? "cluster" : "in_process") && r.tape_bytes_per_output) {
      std::printf("root tape per map_rect output (%s): %.1f B = node %.0f + partials %.0f + operand records %.1f; "
                  "%.2f nodes per output\n",
                  r.backend.c_str(), *r.tape_bytes_per_output, *r.tape_node_bytes_per_output,
                  *r.tape_partials_bytes_per_output, *r.tape_other_bytes_per_output, *r.tape_nodes_per_output);
      break;
    }
  std::fflush(stdout);
}

void write_json(std::ostream& out, const std::vector<record>& rs, const std::vector<summary>& ss, int ranks,
                int repeat, const std::string& invocation) {
  out << "{\n";
  out << "  \"records\": [";
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const record& r = rs[i];
    out << (i ? ",\n    " : "\n    ") << "{\"jobs\": " << r.jobs << ", \"points\": " << r.points
        << ", \"kernel\": " << json_string(r.kernel) << ", \"backend\": " << json_string(r.backend)
        << ", \"ranks\": " << r.ranks << ", \"working_ranks\": " << r.working_ranks << ", \"repeats\": " << r.repeats
        << ", \"median_us\": " << json_number(r.median_us) << ", \"min_us\": " << json_number(r.min_us)
        << ", \"mean_us\": " << json_number(r.mean_us) << ", \"first_call_us\": " << opt(r.first_call_us)
        << ", \"first_call_over_steady\": " << opt(r.first_call_over_steady)
        << ", \"root_us_per_job\": " << opt(r.root_us_per_job)
        << ", \"worker_us_per_job\": " << opt(r.worker_us_per_job) << ", \"check_us\": " << opt(r.check_us)
        << ", \"root_jobs\": " << (r.root_jobs ? std::to_string(*r.root_jobs) : std::string("null"))
        << ", \"log_density\": " << opt(r.log_density)
        << ", \"max_abs_diff_vs_analytic\": " << opt(r.max_abs_diff_vs_analytic)
        << ", \"bytes_sent\": " << opt(r.bytes_sent) << ", \"bytes_received\": " << opt(r.bytes_received)
        << ", \"bytes_through_memory\": " << opt(r.bytes_through_memory)
        << ", \"tape_bytes_per_output\": " << opt(r.tape_bytes_per_output)
        << ", \"tape_nodes_per_output\": " << opt(r.tape_nodes_per_output)
        << ", \"tape_breakdown\": {\"node\": " << opt(r.tape_node_bytes_per_output)
        << ", \"partials\": " << opt(r.tape_partials_bytes_per_output)
        << ", \"operand_records\": " << opt(r.tape_other_bytes_per_output) << "}}";
  }
  out << "\n  ],\n";
  out << "  \"summary\": [";
  for (std::size_t i = 0; i < ss.size(); ++i) {
    const summary& s = ss[i];
    out << (i ? ",\n    " : "\n    ") << "{\"jobs\": " << s.jobs << ", \"points\": " << s.points
        << ", \"kernel\": " << json_string(s.kernel) << ", \"ranks\": " << ranks
        << ", \"single_tape_over_analytic\": " << opt(s.single_tape_over_analytic)
        << ", \"in_process_over_single_tape\": " << opt(s.in_process_over_single_tape)
        << ", \"cluster_speedup_over_in_process\": " << opt(s.cluster_speedup_over_in_process)
        << ", \"cluster_over_raw_mpi_floor\": " << opt(s.cluster_over_raw_mpi_floor)
        << ", \"in_process_overhead_us_per_job\": " << opt(s.in_process_overhead_us_per_job)
        << ", \"first_call_over_steady\": " << opt(s.first_call_over_steady)
        << ", \"check_over_in_process\": " << opt(s.check_over_in_process)
        << ", \"single_tape_over_cluster\": " << opt(s.single_tape_over_cluster) << "}";
  }
  out << "\n  ],\n";
  out << "  \"ranks\": " << ranks << ",\n";
  out << "  \"repeat\": " << repeat << ",\n";
  out << "  \"command_line\": " << json_string(invocation) << ",\n";
  out << "  \"hostname\": " << json_string(host_name()) << ",\n";
  out << "  \"date\": " << json_string(utc_timestamp()) << ",\n";
  out << "  \"unit\": \"microseconds per gradient\",\n";
  out << "  \"method\": \"backends timed round-robin, one sample each per round; ratios are medians over rounds of "
         "each round's ratio\",\n";
  out << "  \"model\": \"standard benchmark model (docs/benchmark-model.md)\"\n";
  out << "}\n";
}

struct bench_results {
  std::vector<record> records;
  std::vector<summary> summaries;
};

/// Median over rounds of (a - b) / J.
double paired_difference_per_job(const contender& a, const contender& b, int J) {
  std::vector<double> d(a.us.size());
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = (a.us[i] - b.us[i]) / J;
  return median_of(d);
}

bench_results bench_on_root(const std::vector<std::pair<int, int>>& sizes, int repeat, const cluster& c,
                            const std::vector<double>& floor_seconds) {
  const int ranks = c.size();
  bench_results out;
  std::vector<record>& rs = out.records;
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    const auto [J, N] = sizes[s];
    std::printf("size %dx%d ...\n", J, N);
    std::fflush(stdout);
    const models::logreg_standard_problem problem = models::make_logreg_standard_problem(J, N);

    // Every backend of this size, both kernels, in one interleaved comparison; a workspace each.
    workspace exact(problem);
    std::vector<contender> cs{{&analytic_gradient, &exact}};
    struct per_kernel {
      kernel k;
      std::unique_ptr<workspace> single, local, remote;
      std::size_t single_at = 0, local_at = 0, remote_at = 0;  // indices in cs
    };
    std::vector<per_kernel> ks;
    for (kernel k : {kernel::scalar, kernel::vector}) {
      per_kernel pk{k, std::make_unique<workspace>(problem), std::make_unique<workspace>(problem),
                    std::make_unique<workspace>(problem)};
      const gradient_fn single = k == kernel::scalar ? &single_tape_gradient<models::logreg_standard_scalar_job>
                                                     : &single_tape_gradient<models::logreg_standard_vector_job>;
      const gradient_fn distributed = (k == kernel::scalar ? scalar_map_rect : vector_map_rect)[s];
      pk.single_at = cs.size();
      cs.push_back({single, pk.single.get()});
      pk.local_at = cs.size();
      cs.push_back({distributed, pk.local.get(), true});
      if (ranks > 1) {
        pk.remote_at = cs.size();
        cs.push_back({distributed, pk.remote.get()});
        cs.back().remote = &c;
      }
      ks.push_back(std::move(pk));
    }

    // First calls before anything else of this size runs over the cluster; each on a fresh call site.
    std::vector<std::pair<double, double>> first(ks.size());
    if (ranks > 1)
      for (std::size_t k = 0; k < ks.size(); ++k) {
        const auto& table = ks[k].k == kernel::scalar ? scalar_first_calls : vector_first_calls;
        std::vector<gradient_fn> fs(table.begin() + static_cast<std::ptrdiff_t>(s * first_call_samples),
                                    table.begin() + static_cast<std::ptrdiff_t>((s + 1) * first_call_samples));
        workspace w(problem);
        first[k] = sample_first_calls(fs, w);
      }

    sample_interleaved(cs, repeat);

    record analytic = make_record(J, N, "none", "analytic", ranks, 1, repeat, summarise_samples(cs[0].us));
    analytic.log_density = exact.value;
    rs.push_back(analytic);
    if (ranks > 1) {
      record floor;
      floor.jobs = J;
      floor.points = N;
      floor.kernel = "none";
      floor.backend = "raw_mpi_floor";
      floor.ranks = floor.working_ranks = ranks;
      floor.repeats = repeat;
      floor.median_us = 1e6 * floor_seconds[s];
      rs.push_back(floor);
    }
    for (std::size_t k = 0; k < ks.size(); ++k) {
      const per_kernel& pk = ks[k];
      const std::string name = kernel_name(pk.k);
      auto checked = [&](record r, const workspace& w) {
        r.log_density = w.value;
        r.max_abs_diff_vs_analytic = max_abs_diff(w.gradient, exact.gradient);
        return r;
      };
      const contender& single = cs[pk.single_at];
      const contender& local = cs[pk.local_at];
      // The tape footprint of one more call of each kind, untimed.
      const gradient_fn counted = (pk.k == kernel::scalar ? scalar_counted : vector_counted)[s];
      run_gradient(contender(counted, pk.local.get(), true));
      if (ranks > 1) run_gradient(contender(counted, pk.remote.get()));
      rs.push_back(checked(make_record(J, N, name, "single_tape", ranks, 1, repeat, summarise_samples(single.us)),
                           *pk.single));
      record lr = checked(make_record(J, N, name, "in_process", ranks, 1, repeat, summarise_samples(local.us)),
                          *pk.local);
      add_tape_breakdown(lr, *pk.local, J);
      rs.push_back(lr);

      summary sm{J, N, name, {}, {}, {}, {}, {}, {}, {}, {}};
      sm.single_tape_over_analytic = paired_ratio(single, cs[0]);
      sm.in_process_over_single_tape = paired_ratio(local, single);
      sm.in_process_overhead_us_per_job = paired_difference_per_job(local, single, J);
      if (ranks > 1) {
        const contender& remote = cs[pk.remote_at];
        record r = checked(make_record(J, N, name, "cluster", ranks, ranks, repeat, summarise_samples(remote.us)),
                           *pk.remote);
        r.first_call_us = first[k].first;
        r.first_call_over_steady = first[k].second;
        if (!remote.root_us_per_job.empty()) r.root_us_per_job = median_of(remote.root_us_per_job);
        if (!remote.worker_us_per_job.empty()) r.worker_us_per_job = median_of(remote.worker_us_per_job);
        if (!remote.check_us.empty()) {
          r.check_us = median_of(remote.check_us);
          // Against the in-process call of the same round: the share of a call the check adds to the ranks.
          std::vector<double> share(remote.check_us.size());
          for (std::size_t i = 0; i < share.size(); ++i) share[i] = remote.check_us[i] / local.us[i];
          sm.check_over_in_process = median_of(share);
        }
        r.root_jobs = c.last_call_profile().root_jobs;
        // The traffic of this kernel's last call (the counted one just above).
        const cluster::traffic traffic = c.last_call_traffic();
        r.bytes_sent = traffic.sent;
        r.bytes_received = traffic.received;
        r.bytes_through_memory = traffic.through_memory;
        add_tape_breakdown(r, *pk.remote, J);
        rs.push_back(r);
        sm.cluster_speedup_over_in_process = paired_ratio(local, remote);
        sm.single_tape_over_cluster = paired_ratio(single, remote);
        if (floor_seconds[s] > 0) sm.cluster_over_raw_mpi_floor = r.median_us / (1e6 * floor_seconds[s]);
        sm.first_call_over_steady = first[k].second;
      }
      out.summaries.push_back(sm);
    }
  }
  return out;
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
  if (sizes.size() > static_cast<std::size_t>(max_sizes))
    throw std::invalid_argument("--sizes: at most " + std::to_string(max_sizes) + " sizes per run, got " +
                                std::to_string(sizes.size()));
  return sizes;
}

void add_bench_options(CLI::App& app, bench_options& o) {
  app.add_option("--sizes", o.sizes, "comma-separated JxN: J jobs of N points")->capture_default_str();
  app.add_option("--repeat", o.repeat, "timed gradients per measurement (after a warm-up)")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()))
      ->capture_default_str();
  app.add_option("--json", o.json, "write the records as JSON to this file");
}

int run_bench(const bench_options& o, const std::string& invocation) {
  // Same on every rank, before any communication.
  const std::vector<std::pair<int, int>> sizes = parse_sizes(o.sizes);

  std::ofstream out;
  std::string failure;
  if (world_rank() == 0 && !o.json.empty()) {
    out.open(o.json);
    if (!out) failure = o.json + ": cannot write (" + std::string(std::strerror(errno)) + ")";
  }
  if (!agree(failure.empty())) {
    print_error(failure);
    return 1;
  }

  // The floor is collective and outside the serve loop: every rank measures it for all sizes first.
  const int ranks = world_size();
  std::vector<double> floor_seconds(sizes.size(), 0.0);
  if (ranks > 1) {
    const int rows = detail::rows_per_output(detail::param_kinds::vv, models::logreg_n_shared, models::logreg_n_own);
    for (std::size_t s = 0; s < sizes.size(); ++s)
      floor_seconds[s] = bench::raw_mpi_floor(MPI_COMM_WORLD, models::logreg_n_shared, models::logreg_n_own,
                                              sizes[s].first, 1, rows, o.repeat);
  }

  int code = 0;
  {
    cluster c(MPI_COMM_WORLD);
    if (!c.is_root()) {
      c.serve();
    } else {
      try {
        std::printf("maprect bench: standard model, %zu size%s, %d rank%s, %d repeats\n", sizes.size(),
                    sizes.size() == 1 ? "" : "s", c.size(), c.size() == 1 ? "" : "s", o.repeat);
        const bench_results results = bench_on_root(sizes, o.repeat, c, floor_seconds);
        print_table(results.records, results.summaries, c.size());
        if (out.is_open()) {
          write_json(out, results.records, results.summaries, c.size(), o.repeat, invocation);
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
