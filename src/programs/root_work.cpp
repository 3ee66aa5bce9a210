// maprect-root-work KERNEL DATA [jobs [points [calls]]]: the root's serial work per steady map_rect call of the
// standard model (var/var, KERNEL scalar or vector, 256 jobs of 1000 points and 400 calls unless given), with
// the rows given as a job_data (DATA job_data) or as x_r/x_i (DATA rows), beside the in-process call.
// The root runs none of the jobs (its share is 0; run it with MAPRECT_BALANCE=even so that it neither takes
// over jobs nor moves its share), so the CPU time of its thread in a call, less what it spent collecting the
// answers (waiting), is its serial work: the request, the packing, the output nodes, the bookkeeping and the
// data check, if any. Should it run jobs after all (another MAPRECT_BALANCE), their time is taken out too, as
// `maprect bench` does (src/cli/bench_root_work.hpp, which both share).
// Prints one line per quantity, in microseconds of thread CPU time per call (mean, median, min).
// Under valgrind --tool=callgrind --collect-atstart=no, instructions are collected for `calls` steady calls,
// each dumped apart (callgrind.out.<pid>.<n>), for docs/performance-root.md.
#include <maprect/maprect.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define MAPRECT_CALLGRIND 1
#endif

#include "src/cli/bench_root_work.hpp"
#include "src/models/logreg.hpp"
#include "src/cluster/test_hooks.hpp"

namespace {

using scalar_job = maprect::models::logreg_standard_scalar_job;
using vector_job = maprect::models::logreg_standard_vector_job;

constexpr int scalar_call = 11;  // the models own 1 and 2
constexpr int vector_call = 12;
constexpr int warm_up = 30;

using maprect::cli::thread_cpu_us;

bool under_valgrind() {
#ifdef MAPRECT_CALLGRIND
  return RUNNING_ON_VALGRIND != 0;
#else
  return false;
#endif
}

/// The model's leaves, reused by every call.
struct leaves {
  maprect::vector_v phi = maprect::vector_v(2);
  std::vector<maprect::vector_v> theta;
  explicit leaves(const Eigen::VectorXd& x) : theta((x.size() - 2) / 2, maprect::vector_v(2)) { make(x); }
  void make(const Eigen::VectorXd& x) {
    phi(0) = maprect::var(x(0));
    phi(1) = maprect::var(x(1));
    for (std::size_t j = 0; j < theta.size(); ++j) {
      theta[j](0) = maprect::var(x(2 + 2 * j));
      theta[j](1) = maprect::var(x(3 + 2 * j));
    }
  }
};

/// One map_rect call on fresh leaves; returns the thread CPU microseconds of the call alone (not the leaves,
/// not the reverse pass, which an in-process call does alike) and leaves the tape recovered.
template <int Id, class F>
double one_call(leaves& l, const Eigen::VectorXd& x, const maprect::job_data* data,
                const maprect::models::logreg_standard_problem& p, double& value) {
  l.make(x);
  const double start = thread_cpu_us();
  const maprect::vector_v out = data != nullptr ? maprect::map_rect<Id, F>(l.phi, l.theta, *data)
                                                : maprect::map_rect<Id, F>(l.phi, l.theta, p.x_r, p.x_i);
  const double used = thread_cpu_us() - start;
  const maprect::var lp = out.sum();
  maprect::grad(lp);
  value = lp.val() + l.phi(0).adj();
  maprect::recover_memory();
  return used;
}

/// In-process gradient (leaves, map_rect, reverse pass) in thread CPU microseconds.
template <int Id, class F>
double in_process_gradient(leaves& l, const Eigen::VectorXd& x, const maprect::models::logreg_standard_problem& p,
                           double& value) {
  const double start = thread_cpu_us();
  l.make(x);
  const maprect::var lp = maprect::map_rect<Id, F>(l.phi, l.theta, p.x_r, p.x_i).sum();
  maprect::grad(lp);
  value = lp.val() + l.phi(0).adj();
  maprect::recover_memory();
  return thread_cpu_us() - start;
}

struct stats {
  double mean, median, min;
};
stats summarise(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return {std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size()), xs[xs.size() / 2], xs[0]};
}
void print(const char* what, const stats& s) {
  std::printf("%-28s mean %10.2f  median %10.2f  min %10.2f us\n", what, s.mean, s.median, s.min);
}

template <int Id, class F>
int run(const maprect::cluster& c, bool with_job_data, int J, int N, int calls) {
  const auto p = maprect::models::make_logreg_standard_problem(J, N);
  const maprect::job_data data(p.x_r, p.x_i);
  const maprect::job_data* fed = with_job_data ? &data : nullptr;
  leaves l(p.params);
  double value = 0, reference = 0;
  const bool valgrind = under_valgrind();

  std::vector<double> local;
  if (!valgrind) {
    const maprect::detail::remote_call backend = maprect::detail::remote_backend;
    maprect::detail::remote_backend = nullptr;
    for (int i = 0; i < warm_up; ++i) in_process_gradient<Id, F>(l, p.params, p, reference);
    for (int i = 0; i < calls; ++i) local.push_back(in_process_gradient<Id, F>(l, p.params, p, reference));
    maprect::detail::remote_backend = backend;
  }

  maprect::detail::plan_root_share(Id, 0);
  maprect::detail::time_root_waits(true);
  for (int i = 0; i < (valgrind ? 3 : warm_up); ++i) one_call<Id, F>(l, p.params, fed, p, value);
  std::vector<double> total, wait, jobs, serial;
  int checked = 0, root_jobs = 0, taken = 0;
  for (int i = 0; i < calls; ++i) {
#ifdef MAPRECT_CALLGRIND
    CALLGRIND_TOGGLE_COLLECT;
#endif
    const double used = one_call<Id, F>(l, p.params, fed, p, value);
#ifdef MAPRECT_CALLGRIND
    CALLGRIND_TOGGLE_COLLECT;
    if (valgrind) CALLGRIND_DUMP_STATS_AT("steady call");
#endif
    const maprect::cluster::profile prof = c.last_call_profile();
    const maprect::cli::root_work_sample sample = maprect::cli::root_work_of(used, prof);
    total.push_back(sample.call_us);
    wait.push_back(sample.wait_us);
    jobs.push_back(sample.jobs_us);
    serial.push_back(sample.serial_us);
    checked = std::max(checked, sample.checked_rows);
    root_jobs = std::max(root_jobs, prof.root_jobs);
    taken = std::max(taken, prof.taken_jobs);
  }
  if (!valgrind && value != reference) {
    std::fprintf(stderr, "maprect-root-work: the cluster's value differs from the in-process one\n");
    return 1;
  }
  std::printf("ranks %d, %s kernel, %s, %d jobs x %d points, %d calls; root jobs %d, taken over %d, rows checked %d\n",
              c.size(), Id == scalar_call ? "scalar" : "vector", with_job_data ? "job_data" : "x_r/x_i", J, N, calls,
              root_jobs, taken, checked);
  const stats s = summarise(serial);
  // A measured call holds about two reads of the clock beyond the root's work: the end of the first read and
  // the start of the last, and the two reads around the collecting of the answers, half of each on either side.
  if (!valgrind) std::printf("one read of the thread CPU clock: %.3f us\n", maprect::cli::clock_read_us());
  print("map_rect call, root thread", summarise(total));
  print("  collecting answers", summarise(wait));
  if (root_jobs + taken > 0) print("  running jobs (wall clock)", summarise(jobs));
  print("  serial work", s);
  if (!local.empty()) {
    const stats in = summarise(local);
    print("in-process gradient", in);
    std::printf("serial work / in-process gradient: %.4f%% (medians), %.4f%% (means)\n", 100 * s.median / in.median,
                100 * s.mean / in.mean);
  }
  return 0;
}

}  // namespace

MAPRECT_REGISTER(11, scalar_job);
MAPRECT_REGISTER(12, vector_job);

int main(int argc, char** argv) {
  maprect::cluster c(argc, argv);
  if (!c.is_root()) {
    c.serve();
    return 0;
  }
  if (argc < 3 || (std::strcmp(argv[1], "scalar") != 0 && std::strcmp(argv[1], "vector") != 0) ||
      (std::strcmp(argv[2], "job_data") != 0 && std::strcmp(argv[2], "rows") != 0)) {
    std::fprintf(stderr, "usage: maprect-root-work scalar|vector job_data|rows [jobs [points [calls]]]\n");
    return 2;
  }
  const bool with_job_data = std::strcmp(argv[2], "job_data") == 0;
  const int J = argc > 3 ? std::atoi(argv[3]) : 256;
  const int N = argc > 4 ? std::atoi(argv[4]) : 1000;
  const int calls = argc > 5 ? std::atoi(argv[5]) : 400;
  if (J < 1 || N < 1 || calls < 1) {
    std::fprintf(stderr, "maprect-root-work: jobs, points and calls must be positive\n");
    return 2;
  }
  return std::strcmp(argv[1], "scalar") == 0 ? run<scalar_call, scalar_job>(c, with_job_data, J, N, calls)
                                             : run<vector_call, vector_job>(c, with_job_data, J, N, calls);
}
