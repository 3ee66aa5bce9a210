// plan's per-rank job speeds (see plan_measure.hpp): rank 0 times a sample of the site's jobs alone, then every
// rank times it at once, so that cores that run slower side by side (shared caches, hyperthreads, a busy host)
// show as ranks that run slower.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "plan_measure.hpp"
#include "plan_timing.hpp"

namespace maprect::cli {

namespace {

/// Jobs in the sample: enough to average over uneven jobs, few enough that a round stays short.
constexpr int most_sample_jobs = 16;

/// Waits for `r` sleeping between tests: a rank that polled would take a core from the ranks still timing.
void wait_sleeping(MPI_Request& r) {
  int done = 0;
  while (!done) {
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

/// The sample: `n` jobs spread evenly over the call's J.
std::vector<int> sample_jobs(int jobs) {
  const int n = std::min(jobs, most_sample_jobs);
  std::vector<int> out;
  for (int k = 0; k < n; ++k) out.push_back(static_cast<int>(static_cast<long long>(k) * jobs / n));
  return out;
}

/// One pass over the sample, each job followed by a sleep of `slow_factor - 1` times its own time: a rank
/// slowed as maprect-bench-unequal slows one. Returns its seconds.
double sample_pass(const plan_call_site& site, const std::vector<int>& sample, double slow_factor) {
  const auto start = std::chrono::steady_clock::now();
  for (int j : sample) {
    const auto t0 = std::chrono::steady_clock::now();
    site.run_jobs(j, 1);
    if (slow_factor > 1) std::this_thread::sleep_for((slow_factor - 1) * (std::chrono::steady_clock::now() - t0));
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The median over `repeat` rounds (after an untimed one) of a pass's seconds; a round runs enough passes to
/// last about 2 ms, so that short jobs are not timed at the clock's and the scheduler's grain.
double sample_seconds(const plan_call_site& site, const std::vector<int>& sample, int repeat, double slow_factor) {
  const double first = sample_pass(site, sample, slow_factor);
  const int passes = static_cast<int>(std::clamp(std::ceil(2e-3 / std::max(first, 1e-9)), 1.0, 1000.0));
  std::vector<double> rounds;
  for (int r = 0; r < repeat; ++r) {
    double round = 0;
    for (int k = 0; k < passes; ++k) round += sample_pass(site, sample, slow_factor);
    rounds.push_back(round / passes);
  }
  return plan_median(rounds);
}

}  // namespace

void wait_for_root(MPI_Comm comm) {
  MPI_Request r;
  MPI_Ibarrier(comm, &r);
  wait_sleeping(r);
}

rank_speeds measure_rank_speeds(MPI_Comm comm, const plan_call_site& site, int repeat, int slow_rank,
                                double slow_factor) {
  int me = 0, size = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &size);
  rank_speeds out;
  out.slow_rank = slow_rank >= 0 && slow_rank < size ? slow_rank : -1;
  out.slow_factor = out.slow_rank >= 0 ? slow_factor : 1.0;
  if (size == 1 && out.slow_rank < 0) return out;
  const std::vector<int> sample = sample_jobs(site.jobs);
  out.sample_jobs = static_cast<int>(sample.size());
  double alone = 0;
  if (me == 0) alone = sample_seconds(site, sample, repeat, 1.0);
  wait_for_root(comm);
  MPI_Barrier(comm);  // all at once from here
  const double together = sample_seconds(site, sample, repeat, me == out.slow_rank ? out.slow_factor : 1.0);
  std::vector<double> all(static_cast<std::size_t>(size));
  MPI_Request r;
  MPI_Igather(&together, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, comm, &r);
  wait_sleeping(r);
  if (me == 0)
    for (double t : all) out.job_scale.push_back(alone > 0 ? t / alone : 1.0);
  return out;
}

}  // namespace maprect::cli
