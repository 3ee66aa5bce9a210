#pragma once
// The root's share of a call site's jobs, tuned to its steady-state calls. With an even split the root is
// the slowest rank: besides its jobs it checks the call's data, sends the messages and builds the output
// nodes (after the gather, or on one host between its jobs as the workers' blocks come). The tuner watches
// every few calls and predicts the call time of each possible root share from the fastest times it saw:
// what it corrects is that standing imbalance, not the moments a shared machine slows one rank down, which
// no split can foresee. It proposes a share when the next window confirms the last one's (by its own
// timings that share saves time too: noise moves the best share by a few jobs from window to window) and
// the saving over the next calls pays for moving the share (the rows of the jobs that change hands). Where
// jobs run never changes a result: each job is computed alone, in the same code on every rank. When the root
// makes the workers' output nodes while they run, that work is the root's too: a share that leaves room for
// it lets the workers run longer while the root catches up.
#include <vector>

#include "src/protocol/chunk_plan.hpp"

namespace maprect::detail {

/// The upper median of `xs` (the element at index size / 2 once sorted); `xs` must not be empty.
double median_of(std::vector<double> xs);

/// Timings of one steady-state call, in seconds, all taken on the root except the workers' busy times.
struct call_timing {
  double check = 0;   ///< the root's data check (after the request is sent)
  double own = 0;     ///< the root's own jobs, with the workers' output nodes it made between them
  int nodes_during_own = 0;  ///< worker jobs whose output nodes the root made between its own jobs
  double node_job = 0;       ///< if timed in this call: seconds per worker job of making its nodes, else 0
  double arrival = 0;  ///< from the request sent to the last answer received
  double waited = 0;   ///< of which the root waited for answers after its own and taken-over jobs
  std::vector<double> worker_busy;  ///< per rank (0: unused): seconds spent on its jobs
  std::vector<int> worker_jobs;     ///< per rank (0: unused): jobs it ran (the root may take over the rest)
};

/// Proposes a better root share for one call site from the timings of its calls.
class share_tuner {
 public:
  /// Calls per decision; the first call after a plan is not measured (it warms up).
  static constexpr int window = 6;
  /// Calls over which a new share must save more than moving the share costs.
  static constexpr int horizon = 50;
  /// A proposal must also save this share of the predicted call time.
  static constexpr double min_gain = 0.004;
  /// Proposals per version of a call site's data.
  static constexpr int max_proposals = 4;

  /// Forgets the timings of the old plan; `move_seconds` is what the last move of the share took with its
  /// call (0 before the first), and `fresh_data` renews the proposal budget.
  void restart(double move_seconds, bool fresh_data);
  /// Records one steady-state call of `plan`.
  void record(const chunk_plan& plan, const call_timing& t);
  /// Whether the next call should time the workers' node making (call_timing::node_job): once per window,
  /// since the clock costs more than a tiny job.
  bool wants_node_timing() const { return proposals_ < max_proposals && !node_timed_; }
  /// A better root share than plan.root_jobs, or -1; decided once per window. With `take_over` (the root
  /// runs the jobs of every worker it finishes before) a share is at most the even split: the root can
  /// take a slow worker's jobs over, but never hand its own away.
  int proposal(const chunk_plan& plan, bool take_over = false);

 private:
  /// Drops the window's timings.
  void forget_window();

  bool warmed_ = false;
  int proposals_ = 0;
  int candidate_ = -1;  ///< the previous window's best share, if it differed from the plan's
  double move_seconds_ = 0;
  bool node_timed_ = false;  ///< this window has timed the node making
  double node_job_ = 0;      ///< the latest timing of the node making per worker job (0: none, or not made during the call)
  std::vector<double> check_, own_per_job_, worker_per_job_, latency_, arrival_;
};

}  // namespace maprect::detail
