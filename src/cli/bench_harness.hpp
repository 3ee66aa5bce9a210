#pragma once
// maprect bench's timing method. The machine is shared and its speed drifts, so the backends of one size are
// timed side by side: in every round each takes one sample, in an order that rotates from round to round,
// and every figure is a median over rounds (a ratio: the median of each round's ratio, which cancels the drift
// the round's samples share).
#include <utility>
#include <vector>

#include "bench_root_work.hpp"

namespace maprect {
class cluster;
}

namespace maprect::cli {

struct bench_workspace;

/// One gradient of a backend on its workspace (parameters, and what the gradient produced).
using gradient_fn = void (*)(bench_workspace&);

/// Median, smallest and mean of one contender's samples, in microseconds per gradient.
struct timing {
  double median_us, min_us, mean_us;
};

/// One backend in a comparison: how it computes a gradient, on which workspace, whether it must run in process
/// while a cluster is live, and the samples it took.
struct contender {
  gradient_fn f;
  bench_workspace* w;
  bool in_process;
  std::vector<double> us;                                  ///< one sample per round: microseconds per gradient
  std::vector<double> cpu_us;  ///< in process, per round: CPU microseconds of the calling thread per gradient
  const cluster* remote = nullptr;                         ///< the cluster, for calls that use it
  std::vector<double> root_us_per_job, worker_us_per_job;  ///< per round, from the last call's profile
  std::vector<double> check_us;                            ///< per round: the last call's data check
  std::vector<double> thread_slowest_us, thread_fastest_us;  ///< per round: the root team's busiest and idlest thread
  std::vector<double> worker_thread_slowest_us, worker_thread_fastest_us;  ///< per round: the busiest worker's
  gradient_fn root_work = nullptr;            ///< cluster: a steady call that measures the root's serial work
  bench_workspace* root_work_w = nullptr;     ///< its workspace
  std::vector<root_work_sample> root_work_samples;  ///< one per round whose root-work call was steady

  contender(gradient_fn fn, bench_workspace* ws, bool local = false) : f(fn), w(ws), in_process(local) {}
};

/// The median of `xs` (the mean of the middle two when their number is even).
double median_of(std::vector<double> xs);

/// Which of `n` contenders runs `i`-th in round `round`: the order rotated by the round, and backwards in odd
/// rounds, so that no contender always follows the same one. A gradient leaves its caches, heap and workers to
/// the next: in one fixed cycle the backend after the eager ones ran up to 20% slower than the same calls elsewhere.
inline std::size_t interleaved_index(std::size_t i, int round, std::size_t n) {
  const std::size_t k = (i + static_cast<std::size_t>(round)) % n;
  return round % 2 != 0 ? n - 1 - k : k;
}

/// Median, minimum and mean of `us`, which must not be empty.
timing summarise_samples(const std::vector<double>& us);

/// One gradient of `c`, in process when `c` says so.
void run_gradient(const contender& c);

/// Times the contenders side by side for `repeat` rounds: each round times every contender once (a batch of
/// gradients, long enough for the clock), collecting the cluster's profile of the last call of each sample.
/// A contender with a root-work call makes one more call after each of its samples, untimed by the wall
/// clock, for the root's serial work (its clock reads stay out of the timed sample).
void sample_interleaved(std::vector<contender>& cs, int repeat);

/// Median over rounds of a / b, each round's samples against each other.
double paired_ratio(const contender& a, const contender& b);

/// Median over rounds of (a - b) / J: what `a` adds per job.
double paired_difference_per_job(const contender& a, const contender& b, int J);

/// First calls of fresh call sites, one each, each followed by a few steady calls of the same site: the median
/// first call in microseconds, and the median of (first call / median of the steady calls after it).
std::pair<double, double> sample_first_calls(const std::vector<gradient_fn>& first_calls, bench_workspace& w);

}  // namespace maprect::cli
