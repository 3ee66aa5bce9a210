#pragma once
// reduce_sum's slices under the claims engine (src/balance/: claims_broker on the root, serve_claims on a
// worker), wherever the ranks claim by message (MAPRECT_BALANCE=hosts, or auto where they cannot claim in host
// memory). A slice is a job: each rank owns a contiguous range of them, runs it from the front and is claimed
// from the back. Every rank holds the call site's data, but a worker holds only its own slices' values: the
// root, which has all of them, sends a worker thief the values of the slices it is granted. The blocks come
// back in the results, and the root folds them in slice order, so the bits do not depend on who ran what.
#include <climits>
#include <deque>
#include <maprect/detail/job_error.hpp>
#include <maprect/detail/reduce_call.hpp>
#include <vector>

#include "src/balance/claims_broker.hpp"
#include "src/cluster/rank_context.hpp"
#include "src/reduce_sum/reduce_sites.hpp"

namespace maprect::detail {

/// Where a worker's status holds the lowest slice it ran that failed (-1: none), whatever the route.
constexpr int failed_slice_at = 1;

/// Keeps in `failure` the root's outcome of slices it ran: `failed`, the first failing one (INT_MAX: none),
/// with its exception `e`, by the lowest failure's rule (the slice is the job).
inline void keep_slice_failure(lowest_failure& failure, int failed, job_error&& e) {
  if (failed != INT_MAX) failure.keep(wire::status::failed, 0, failed, std::move(e));
}

/// keep_slice_failure on a worker, which keeps the error for fetch_error in `s.last_error` where it decides.
inline void keep_worker_slice_failure(rank_context& s, lowest_failure& failure, int failed, job_error&& e) {
  if (failed != INT_MAX) failure.keep(wire::status::failed, s.rank, failed, std::move(e), s.last_error);
}

/// Who ran which slices in the last cluster reduce_sum call by claims, per rank.
struct reduce_balance_report {
  std::vector<int> firsts;   ///< per rank, the first slice of its range (and, last, the number of slices)
  std::vector<int> ends;     ///< per rank, where its own slices ended (slice index): others ran the rest of its range
  std::vector<int> taken;    ///< per rank, slices of other ranks' ranges it ran (the root's in taken[0])
  std::vector<int> batches;  ///< per rank, the batches it ran of other ranks' ranges
  /// By message: of `taken`, the slices it claimed in host memory from the workers of its host (else empty).
  std::vector<int> taken_in_host;
};

/// Root: who ran which slices in the last cluster reduce_sum call by claims (by message, or between
/// all ranks of one host through host memory; empty vectors otherwise). A test hook.
reduce_balance_report last_reduce_balance();

/// Root: the slices of one reduce_sum call under claims by message, for claims_broker: its own, and those it
/// brokers. Its own land in the buffers' `own`; blocks of slices the root did not run of its own range in
/// `taken` at their slice's place, each worker's status in `statuses`; the lowest failure among the slices
/// the root runs is kept in `failure`.
class reduce_claimed_slices final : public root_claimed_work, public own_batch_runner {
 public:
  reduce_claimed_slices(rank_context& s, reduce_root_buffers& buffers, const reduce_request& req,
                        const reduce_split& split, lowest_failure& failure);
  int jobs_of(int r) const override { return split_.first(r + 1) - split_.first(r); }
  int global_job(int owner, int local) const override { return split_.first(owner) + local; }
  void send_batch(int thief, int owner, job_range g) override;
  void finish_sends() override;
  wire::status run_on_root(int owner, job_range g, int& failed_job) override;
  double* place_result(int from, const result_head& head, int& n) override;
  /// Runs the root's own slices `g` into the buffers' `own`.
  wire::status run(job_range g, int& failed_job) override;
  /// Without a team: the front door runs slices on the calling thread's team, which another thread lacks.
  bool runs_aside() const override { return s_.team == nullptr; }

 private:
  rank_context& s_;
  reduce_root_buffers& b_;
  const reduce_request& req_;
  reduce_split split_;
  lowest_failure& failure_;
  grant_payloads payloads_;  ///< values on their way to thieves
};

/// The most values of one rank's range of slices under `split` among `ranks` ranks: the room each rank of a
/// host needs to share them with its host's ranks (host_memory::peer_params).
long long most_rank_values(const reduce_layout& layout, const reduce_split& split, int ranks);

/// Whether the ranks of this rank's host, the root too where it is there, claim each other's slices in host
/// memory under claims by message: two of them claim there, and the largest range's values fit its room. Every
/// rank of a host decides alike.
bool reduce_host_claims_for(const rank_context& s, const reduce_layout& layout, const reduce_split& split);

/// Root, in a call by claims by message where reduce_host_claims_for: puts its slices' values where the workers
/// of its host read them and its range in its claim word, for them and for its own runs alike. Empty where
/// nobody may take its slices (stale data, a message stream): its host's workers wait for its range.
void share_root_slices(rank_context& s, const reduce_request& req, const reduce_split& split, claims_broker& broker,
                       bool claimable);

/// Worker: steps 4 and 5 of a reduce call by claims by message, its own values in site.sliced: runs its
/// slices [first, last) of `split`, answering the root's asks, then those it claims from the workers of its
/// host in host memory (where they claim each other's), then the batches the root grants it.
void serve_reduce_claims(rank_context& s, reduce_worker_site& site, const double* shared, const reduce_split& split);

}  // namespace maprect::detail
