// plan's per-rank job speeds (see plan_measure.hpp): rank 0 times a sample of the site's jobs alone, and every
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

/// Passes of the sample that last about `round_s`, from one pass's `seconds`: short jobs are then not timed at
/// the clock's and the scheduler's grain.
int passes_for(double seconds, double round_s) {
  return static_cast<int>(std::clamp(std::ceil(round_s / std::max(seconds, 1e-9)), 1.0, 1000.0));
}

/// A round's length: 2 ms, or where ranks outnumber cores 30 ms, several of the scheduler's time slices, so
/// that ranks taking turns on a core show it in their times. Rounds within one slice ran at once on some ranks
/// and not yet on others, and each timed itself alone.
double round_length_s(bool oversubscribed) { return oversubscribed ? 30e-3 : 2e-3; }

/// Seconds per pass over `passes` passes of the sample.
double round_seconds(const plan_call_site& site, const std::vector<int>& sample, int passes, double slow_factor) {
  double round = 0;
  for (int k = 0; k < passes; ++k) round += sample_pass(site, sample, slow_factor);
  return round / passes;
}

}  // namespace

void sleeping_barrier(MPI_Comm comm) {
  MPI_Request r;
  MPI_Ibarrier(comm, &r);
  wait_sleeping(r);
}

rank_speeds measure_rank_speeds(MPI_Comm comm, const plan_call_site& site, int repeat, int slow_rank,
                                double slow_factor, bool oversubscribed) {
  int me = 0, size = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &size);
  rank_speeds out;
  out.slow_rank = slow_rank >= 0 && slow_rank < size ? slow_rank : -1;
  out.slow_factor = out.slow_rank >= 0 ? slow_factor : 1.0;
  if (size == 1 && out.slow_rank < 0) return out;
  const std::vector<int> sample = sample_jobs(site.jobs);
  out.sample_jobs = static_cast<int>(sample.size());
  out.round_s = round_length_s(oversubscribed);
  const double slow = me == out.slow_rank ? out.slow_factor : 1.0;
  sample_pass(site, sample, slow);  // untimed: every rank's caches warm
  int passes = 1;
  if (me == 0) passes = passes_for(sample_pass(site, sample, 1.0), out.round_s);
  sleeping_barrier(comm);
  MPI_Bcast(&passes, 1, MPI_INT, 0, comm);
  // Alone and together alternate round by round, so that a machine whose cores change speed within seconds
  // moves both alike, and each round's ratio holds only the ranks' sharing and their own speeds.
  std::vector<double> alone(static_cast<std::size_t>(repeat)), together(alone.size());
  for (std::size_t r = 0; r < alone.size(); ++r) {
    if (me == 0) alone[r] = round_seconds(site, sample, passes, 1.0);
    sleeping_barrier(comm);
    MPI_Barrier(comm);  // all at once from here
    together[r] = round_seconds(site, sample, passes, slow);
    sleeping_barrier(comm);  // a rank still at its round would share rank 0's core while it times itself alone
  }
  std::vector<double> all(me == 0 ? together.size() * static_cast<std::size_t>(size) : 0);
  MPI_Request r;
  MPI_Igather(together.data(), repeat, MPI_DOUBLE, all.data(), repeat, MPI_DOUBLE, 0, comm, &r);
  wait_sleeping(r);
  for (int k = 0; me == 0 && k < size; ++k) {
    const double* rank_k = all.data() + static_cast<std::size_t>(k) * alone.size();
    std::vector<double> ratios;
    for (std::size_t i = 0; i < alone.size(); ++i) ratios.push_back(rank_k[i] / alone[i]);
    out.job_scale.push_back(plan_median(ratios));
  }
  return out;
}

}  // namespace maprect::cli
