#pragma once
// reduce_sum's claims by message (under auto wherever the ranks cannot claim in host memory; always under
// MAPRECT_BALANCE=hosts): any rank out of slices takes batches of the slices a slower worker has not started,
// wherever either runs. The claims travel as messages, by map_rect's rules (src/balance/steal.hpp):
// between batches of its own slices an owner answers each thief's ask with a batch from the back of its
// unstarted slices (unstarted_jobs, the grant rule), and every thief asks every worker until it hears "none",
// so that an owner knows when no ask can come any more.
//
// The root owns a range too: it grants from its back between its batches, and once its own slices are done
// it asks each worker in turn. A worker thief asks the root first, then the other workers. Every rank holds
// the call site's data, but a worker holds only its own slices' values: an owner sends a worker thief the
// values of the slices it grants (the root has all of them). A worker answers the root with one message: its
// status, the blocks of the slices it ran of its own range, and each batch it ran for another worker with
// that batch's range. The root puts every block at its slice's place and folds them in slice order, so the
// bits do not depend on who ran what.
#include <chrono>
#include <climits>
#include <deque>
#include <maprect/detail/job_error.hpp>
#include <maprect/detail/reduce_call.hpp>
#include <vector>

#include "src/balance/steal.hpp"
#include "src/cluster/cluster_state.hpp"
#include "src/protocol/tags.hpp"

namespace maprect::detail {

/// Doubles at the head of a worker's answer under claims (wire::status_doubles): status, first failing
/// slice (-1: none), busy seconds, where its own slices end, and the batches it ran for other workers.
namespace claim_answer {
constexpr int status = 0;        ///< a wire::status: ok, or failed (some slice it ran threw)
constexpr int failed_slice = 1;  ///< the lowest slice it ran that failed, or -1
constexpr int busy = 2;          ///< seconds from its request to its answer
constexpr int own_end = 3;       ///< where the slices it ran of its own range end (others ran the rest)
constexpr int batches = 4;       ///< batches of other workers' ranges it ran, after its own blocks
}  // namespace claim_answer

/// Doubles ahead of each batch's blocks in a worker's answer: its first slice, its end, its first failing
/// slice (-1: none).
constexpr int batch_head_doubles = 3;

/// The first failing slice, in slice order, among those one rank ran in a call, and its exception.
struct slice_failure {
  int slice = INT_MAX;  ///< INT_MAX: none
  job_error error;

  /// Keeps `failed` (a slice, or INT_MAX) and its error if it comes before the one kept.
  void keep(int failed, const job_error& e) {
    if (failed >= slice) return;
    slice = failed;
    error = e;
  }
};

/// Who ran which slices in the last cluster reduce_sum call by claims, per rank.
struct reduce_balance_report {
  std::vector<int> firsts;   ///< per rank, the first slice of its range (and, last, the number of slices)
  std::vector<int> ends;     ///< per rank, where its own slices ended (slice index): others ran the rest of its range
  std::vector<int> taken;    ///< per rank, slices of other ranks' ranges it ran (the root's in taken[0])
  std::vector<int> batches;  ///< per rank, the batches it ran of other ranks' ranges
};

/// Root: who ran which slices in the last cluster reduce_sum call by claims (by message, or between
/// all ranks of one host through host memory; empty vectors otherwise). A test hook.
reduce_balance_report last_reduce_balance();

/// Root: its own slices under claims by message, from the request to the workers' answers. It runs them from
/// the front and, between batches and while it waits for workers, grants worker thieves batches from the back,
/// sending each thief the values of the slices granted (none with `grantable` false: a functor's messages
/// reach the caller's stream only from the root, and a call on stale data runs again).
class root_range_claims {
 public:
  root_range_claims(cluster_state& s, const reduce_request& req, int n, bool grantable);
  /// Runs its slices from the front into `own` (slice s's block at layout.block_at(s)), answering asks
  /// between batches; stops at a failure, kept in `failure`. Returns where its own slices end.
  int run(double* own, slice_failure& failure);
  /// Answers every ask that has come: a batch from the back while some are left, else none.
  void serve_asks();
  /// Where its own slices end (others ran the rest of its range).
  int end() const { return slices_.end(); }
  /// Completes the sends of values: once a worker has answered the root, it has received all of its own.
  void finish();

 private:
  cluster_state& s_;
  const reduce_request& req_;
  bool grantable_;
  unstarted_jobs slices_;
  double slice_seconds_ = 0;      ///< seconds per slice of its latest batch
  int told_none_ = 0;             ///< workers told that the root has no slices left
  std::deque<MPI_Request> sent_;  ///< values on their way to thieves
};

/// Root, once its own slices are done: asks each worker in turn for batches of its unstarted slices until it
/// has none left, running each into `taken` (slice s's block at layout.block_at(s)), and answers asks for
/// `mine` meanwhile; with `want` false asks for none (each worker still hears from it once).
/// `seconds_per_slice` is the root's own time per slice (0: not timed). Returns false when `deadline`
/// passed while worker `late` had not answered.
bool claim_slices_as_root(cluster_state& s, const reduce_request& req, root_range_claims& mine, double* taken,
                          bool want, double seconds_per_slice, slice_failure& failure,
                          std::chrono::steady_clock::time_point deadline, int& late);

/// Root: receives every worker's answer, answering asks for `mine` meanwhile, puts every block it holds into
/// `taken` at its slice's place, and each worker's status doubles at statuses[r * wire::status_doubles].
/// Returns false when `deadline` passed before all came; `late` then names the workers that have not finished.
bool receive_claimed_answers(cluster_state& s, const reduce_layout& layout, const reduce_split& split,
                             root_range_claims& mine, double* taken, std::vector<double>& statuses,
                             std::chrono::steady_clock::time_point deadline, std::vector<int>& late);

/// Worker: steps 4 and 5 of a reduce call by claims by message, its own values in site.sliced: runs its
/// slices [first, last) serving the thieves' asks, takes batches from the other workers, then answers the root.
void serve_reduce_claims(cluster_state& s, reduce_worker_site& site, const double* shared, int first, int last);

}  // namespace maprect::detail
