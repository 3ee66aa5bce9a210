// plan's core sharing of short phases (see plan_measure.hpp): on more ranks than cores, a call's compute
// shorter than the scheduler's time slice runs by turns, so the ranks' measured sharing over long runs
// understates it. Measured only where rank 0's host runs more ranks than it has cores: across hosts whose
// ranks fit their cores, the model's links and the counted sharing predict better.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>
#include <vector>

#include "plan_measure.hpp"
#include "plan_timing.hpp"
#include "src/cluster/clock.hpp"
#include "src/transport/wait.hpp"

namespace maprect::cli {

namespace {

using clock_type = std::chrono::steady_clock;
using detail::seconds_since;

/// The lengths measured: 30 us to 30 ms, three to a decade, from calls of a few jobs to long ones.
const std::vector<double> phase_lengths_s = {30e-6, 100e-6, 300e-6, 1e-3, 3e-3, 10e-3, 30e-3};

/// Each length's rounds stop after this long (at least 3 rounds), so that the whole ladder takes about a second
/// whatever the links' latency.
constexpr double seconds_per_length = 0.1;

/// Phases timed back to back in a round: as a steady call follows the last, a rank waits polling, not asleep.
constexpr double phases_per_round_s = 2e-3;
constexpr int most_phases_per_round = 20;

/// `n` steps of a recurrence the optimizer keeps: work of a fixed count whatever the clock.
double busy_steps(long long n) {
  volatile double x = 1;
  for (long long i = 0; i < n; ++i) x = x * 0.999999 + 1e-9;
  return x;
}

/// Rank 0's steps per second alone, the fastest of a few runs.
double steps_per_second() {
  constexpr long long n = 1 << 20;
  double best = 1e9;
  for (int k = 0; k < 5; ++k) {
    const auto start = clock_type::now();
    busy_steps(n);
    best = std::min(best, seconds_since(start));
  }
  return n / std::max(best, 1e-9);
}

/// Phases on every rank of `comm`: the root's broadcast of a token, work, a gather to the root, each waited
/// for as the cluster's ranks wait. The gather's buffer is made once, so that a timed phase allocates nothing.
class phase_runner {
 public:
  phase_runner(MPI_Comm comm, detail::wait_policy policy) : comm_(comm), policy_(policy) {
    int size = 1;
    MPI_Comm_rank(comm, &me_);
    MPI_Comm_size(comm, &size);
    gathered_.resize(me_ == 0 ? static_cast<std::size_t>(size) : 0);
  }
  int rank() const { return me_; }
  /// One phase of `steps` of work; returns the root's `token`.
  int run(long long steps, int token = 1) {
    MPI_Request r;
    MPI_Ibcast(&token, 1, MPI_INT, 0, comm_, &r);
    detail::wait(r, policy_);
    busy_steps(steps);
    MPI_Igather(&token, 1, MPI_INT, gathered_.data(), 1, MPI_INT, 0, comm_, &r);
    detail::wait(r, policy_);
    return token;
  }
  /// Seconds per phase of `steps`, `phases` back to back (valid on rank 0).
  double seconds(long long steps, int phases) {
    const auto start = clock_type::now();
    for (int p = 0; p < phases; ++p) run(steps);
    return seconds_since(start) / phases;
  }
  MPI_Comm comm() const { return comm_; }

 private:
  MPI_Comm comm_;
  detail::wait_policy policy_;
  int me_ = 0;
  std::vector<int> gathered_;
};

/// Rounds of phases of `length_s` alone: each round rank 0 times the steps alone, then every rank runs the
/// phases, then empty ones. Per round (wall - empty) / alone; the medians over rounds (valid on rank 0).
std::pair<double, double> sharing_at(phase_runner& phases, double length_s, double rate, int repeat) {
  const long long steps = std::max(1LL, std::llround(length_s * rate));
  const int per_round = static_cast<int>(std::clamp(std::ceil(phases_per_round_s / length_s), 1.0,
                                                    static_cast<double>(most_phases_per_round)));
  std::vector<double> ratios, empty;
  const auto start = clock_type::now();
  for (int k = 0;; ++k) {
    const int more = k < 3 || (k < repeat && seconds_since(start) < seconds_per_length) ? 1 : 0;
    double alone = 0;
    if (phases.rank() == 0 && more) {
      const auto t0 = clock_type::now();
      busy_steps(steps);
      alone = seconds_since(t0);
    }
    sleeping_barrier(phases.comm());
    // Untimed, and the root's word whether the rounds go on; after it every rank polls for the next.
    if (phases.run(steps, more) == 0) break;
    const double wall = phases.seconds(steps, per_round);
    empty.push_back(phases.seconds(0, most_phases_per_round));
    ratios.push_back((wall - empty.back()) / std::max(alone, 1e-9));
  }
  return {std::max(1.0, plan_median(ratios)), plan_median(empty)};
}

}  // namespace

phase_figures measure_phase_sharing(MPI_Comm comm, int repeat, bool oversubscribed) {
  int me = 0, size = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &size);
  phase_figures out;
  int measure = size > 1 && oversubscribed ? 1 : 0;
  MPI_Bcast(&measure, 1, MPI_INT, 0, comm);
  if (!measure) return out;
  double rate = me == 0 ? steps_per_second() : 0;
  MPI_Bcast(&rate, 1, MPI_DOUBLE, 0, comm);
  // The runtime's own wait under MAPRECT_WAIT=auto where ranks outnumber cores.
  phase_runner phases(comm, detail::wait_policy::sleep);
  out.ranks = size;
  out.lengths_s = phase_lengths_s;
  std::vector<double> empty;
  for (double length : phase_lengths_s) {
    const auto [sharing, round] = sharing_at(phases, length, rate, repeat);
    out.sharing.push_back(sharing);
    empty.push_back(round);
  }
  out.round_s = plan_median(empty);
  return out;
}

}  // namespace maprect::cli
