#pragma once
// Claims in host memory: on a shared machine one core can run at half the speed of another for a while, and
// no split planned in advance can follow that. So for each rank of the root's host, the jobs of its chunk
// that nobody has started yet are one word in memory all of them share: the rank claims them from the front,
// and any rank out of jobs claims a batch from the back of the rank with the most unclaimed work. Any job runs
// the same code wherever it runs, so the results do not depend on who ran what.
//
// Beside each claim word, in a cache line of its own, a worker publishes its progress: how many of its jobs
// have their blocks in its host slot. The root makes those jobs' output nodes while the worker runs the
// rest, instead of all of them after the worker's answer. A third line per rank counts the jobs of its chunk
// that others ran (their blocks are in its slot), its pace on its own so far (which the grant rule and the
// choice of whom to claim from weigh), when the batch it claimed should end (which a slow owner weighs
// before its next job) and, under claims by message across hosts, the call whose range its word holds; and one
// line for the call holds its lowest failing job and whether a changed output
// count stopped it.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include "src/balance/grant_rule.hpp"
#include "src/protocol/chunk_plan.hpp"
#include "src/transport/wait.hpp"

namespace maprect::detail {

/// A worker's progress in a call: jobs [0, done) of its chunk have their blocks in its slot; `finished` once
/// it runs no more jobs (its claims are used up, or a job failed or changed its output count).
struct job_progress {
  int done = 0;
  bool finished = false;
};

/// How a worker's part of a call ended, left in host memory once it has finished.
struct worker_report {
  int code = 0;       ///< a wire::status
  int job = -1;       ///< global index of the failing job
  double busy = 0;    ///< seconds spent on its jobs
  double slowest_thread = 0;  ///< its slowest team thread's busy seconds
  double fastest_thread = 0;  ///< its fastest team thread's busy seconds
  int taken = 0;      ///< by claims between all ranks: jobs of other ranks' chunks it ran
};

/// The claim words of a cluster, and the progress words beside them: one of each per worker that shares
/// memory with the root.
class job_claims {
 public:
  /// Bytes of the words of a cluster of `ranks` ranks (three cache lines per rank, and one for the call).
  static MPI_Aint bytes_for(int ranks);
  /// Places the words at `base` (the host's share of the host window) for a rank of the host: `rank` in the
  /// cluster's communicator, comm_rank[h] for each host rank h. The host's first rank (the root on its host)
  /// makes them (`make`); the others find theirs.
  void place(char* base, int rank, const std::vector<int>& comm_rank, bool make);

  /// Root: whether worker r's jobs can be claimed (it shares memory with the root).
  bool shared_with(int r) const { return r < static_cast<int>(words_.size()) && words_[r] != nullptr; }
  /// Root: whether every worker's jobs can be claimed (all share the root's memory).
  bool shared_with_all() const {
    return words_.size() > 1 && std::all_of(words_.begin() + 1, words_.end(), [](const word* w) { return w != nullptr; });
  }
  /// Root: whether some worker's jobs can be claimed; worker: whether this rank claims its jobs.
  bool in_use() const {
    return mine_ != nullptr || std::any_of(words_.begin(), words_.end(), [](const word* w) { return w != nullptr; });
  }

  /// Root, before a call's request: rank r's chunk of n jobs is all unclaimed, none is done, none timed.
  void reset(int r, int n) {
    progress_[r]->store(0, std::memory_order_relaxed);
    lines_[r].claimed_done->store(0, std::memory_order_relaxed);
    lines_[r].pace->store(0, std::memory_order_relaxed);
    lines_[r].busy_until->store(0, std::memory_order_relaxed);
    words_[r]->store(pack(0, n), std::memory_order_release);
  }
  /// Root, before a call's request: rank r keeps its chunk of n jobs whole, none of it claimable.
  void reset_kept(int r, int n) {
    reset(r, n);
    words_[r]->store(pack(n, n), std::memory_order_release);
  }
  /// Root, before a call by claims between all ranks: rank r's chunk of jobs_of(r) jobs unclaimed (the root's
  /// kept whole when `root_keeps`: a call with a message stream), and no failure.
  template <class JobsOf>
  void reset_all(int ranks, JobsOf&& jobs_of, bool root_keeps) {
    for (int r = 0; r < ranks; ++r) reset(r, jobs_of(r));
    if (root_keeps) reset_kept(0, jobs_of(0));
    reset_call();
  }
  /// Root: worker r's progress in the current call.
  job_progress progress(int r) const {
    const std::uint64_t w = progress_[r]->load(std::memory_order_acquire);
    return {front(w), back(w) != 0};
  }
  /// Root: how worker r's part of the call ended; valid once progress(r) is finished.
  worker_report report(int r) const { return *reinterpret_cast<const worker_report*>(progress_[r] + 1); }
  /// Any rank of the root's host: claims from the back of rank r's unclaimed jobs what the grant rule gives a
  /// thief that holds none (granted_jobs at grant_share of the two ranks' paces), but a job per team thread
  /// while there are that many.
  job_range claim_batch_back(int r, int threads);
  /// Any rank of the root's host: claims a batch from the front of its own unclaimed jobs, as an owner
  /// answering by message does (claim_batch, at most answer_batch at its pace), and publishes its pace on the
  /// batches before it.
  job_range claim_batch_front(int threads);
  /// Rank r's claim word: under claims by message, where the workers of a host claim from each other, the
  /// range a worker runs and grants from (unstarted_jobs::attach).
  std::atomic<std::uint64_t>* word_of(int r) { return words_[r]; }
  /// A rank under claims by message, once its job parameters are where its host's ranks read them: its chunk
  /// of `n` jobs all unclaimed in call `call` (the request's sequence), its pace unknown, and a claim's share
  /// that of one thief among the call's `ranks` (grant_share): the other hosts' ranks claim too. With
  /// `with_root` the root's range is in its word as well (map_rect's), and host_published waits for it.
  void reset_own(int n, int ranks, std::uint64_t call, bool with_root) {
    claimers_ = ranks;
    published_call_ = call;
    published_with_root_ = with_root;
    // The root's host may have run a call by claims between all its ranks, whose failure or stop stays in the
    // call's line; the root clears it before its range is out, which its host's ranks wait for.
    if (self_ == 0) reset_call();
    lines_[self_].pace->store(0, std::memory_order_relaxed);
    words_[self_]->store(pack(0, n), std::memory_order_release);
    lines_[self_].published->store(call, std::memory_order_release);
  }
  /// Worker under claims by message: whether every rank of its host that claims has set its range for the call
  /// of its latest reset_own. Before, an empty word may be the last call's: a worker out of jobs would take it for
  /// one its host's workers had emptied.
  bool host_published() const;
  /// Worker under claims by message: its seconds per job on its own jobs so far, for its host's thieves.
  void publish_pace(double seconds_per_job) { lines_[self_].pace->store(seconds_per_job, std::memory_order_release); }
  /// Rank r's seconds per job on its own jobs in this call so far (0: none timed yet).
  double pace(int r) const { return lines_[r].pace->load(std::memory_order_acquire); }
  /// Whether this rank is MAPRECT_TEST_HOLD_RANK's: a test's pin of a schedule in which others claim. Once its
  /// first batch of a call has run, its next claim from the front waits until another rank has claimed some of
  /// its jobs, none is left, or the call failed or stopped; at most 20 s.
  void hold_for_claims(bool held) { held_ = held; }
  /// Any rank of the root's host: the rank other than `self` with the most unclaimed work, its unclaimed jobs
  /// at its pace (as alike to `self`'s while either is untimed), or -1 if none has any.
  int richest(int self, int ranks) const;
  /// Whether a worker of this host other than `self` claims here: the root claims only by message.
  bool worker_beside(int self) const {
    for (std::size_t r = 1; r < words_.size(); ++r)
      if (static_cast<int>(r) != self && words_[r] != nullptr) return true;
    return false;
  }
  /// Jobs of rank r's chunk that other ranks ran, their blocks in r's slot.
  int claimed_done(int r) const { return lines_[r].claimed_done->load(std::memory_order_acquire); }
  /// Any rank: n more jobs of rank r's chunk have their blocks in r's slot.
  void add_claimed_done(int r, int n) { lines_[r].claimed_done->fetch_add(n, std::memory_order_acq_rel); }
  /// Root, before a call by claims between all ranks: no job has failed, no output count has changed.
  void reset_call() {
    call_->first_failure.store(no_failure, std::memory_order_relaxed);
    call_->stopped.store(0, std::memory_order_release);
  }
  /// The lowest failing job any rank has reported in this call, or no_failure.
  int first_failure() const { return call_->first_failure.load(std::memory_order_acquire); }
  /// Job `job` failed: ranks run no job behind it.
  void note_failure(int job) {
    int seen = call_->first_failure.load(std::memory_order_relaxed);
    while (job < seen && !call_->first_failure.compare_exchange_weak(seen, job, std::memory_order_acq_rel)) {
    }
  }
  /// A job changed its output count: the call is planned anew, so no rank runs another job.
  void stop() { call_->stopped.store(1, std::memory_order_release); }
  /// Whether a changed output count stopped the call.
  bool stopped() const { return call_->stopped.load(std::memory_order_acquire) != 0; }
  /// first_failure() before any failure.
  static constexpr int no_failure = 0x7fffffff;
  /// Worker r's jobs end before this local job once every claim is made: others claimed the rest.
  int worker_end(int r) const { return back(words_[r]->load(std::memory_order_acquire)); }
  /// Worker: claims jobs from the front of this rank's unclaimed ones.
  job_range claim_front();
  /// Worker: claims every job still unclaimed without running them (after a failure), so that the root
  /// and this rank agree on where this rank's jobs end; returns that end.
  int claim_rest();
  /// Worker: jobs [0, done) of this rank's chunk have their blocks in its slot.
  void publish(int done) { my_progress_->store(pack(done, 0), std::memory_order_release); }
  /// Worker: this rank runs no more jobs in this call; `r` says how its part ended. What it published stays.
  void finish(const worker_report& r) {
    *reinterpret_cast<worker_report*>(my_progress_ + 1) = r;
    const std::uint64_t done = my_progress_->load(std::memory_order_relaxed);
    my_progress_->store(pack(front(done), 1), std::memory_order_release);
  }

 private:
  using word = std::atomic<std::uint64_t>;
  static std::uint64_t pack(int front, int back) { return pack_range(front, back); }
  static int front(std::uint64_t w) { return range_front(w); }
  static int back(std::uint64_t w) { return range_back(w); }

  /// The words of the call as a whole.
  struct call_words {
    std::atomic<int> first_failure{no_failure};
    std::atomic<int> stopped{0};
  };
  /// A rank's third line.
  struct rank_lines {
    std::atomic<int>* claimed_done = nullptr;
    std::atomic<double>* pace = nullptr;
    std::atomic<std::int64_t>* busy_until = nullptr;  ///< when its latest claimed batch ends (steady ns)
    std::atomic<std::uint64_t>* published = nullptr;  ///< the call whose range its word holds (claims by message)
  };
  /// Times this rank's front batches: `got` is its claim that ends the batch before, `last` whether it took
  /// the last of the rank's unclaimed jobs. Once a pace is known, a batch expected shorter than
  /// pace_batch_seconds goes untimed, the pace staying as it is (the previous call's until a batch of this one
  /// is timed): a clock read costs tens of ns, and a range of 256 jobs of 0.1 us ran 20 batches.
  void time_front_batch(job_range got, bool last);
  /// An owner whose jobs take leave_pace_seconds or more (the caller checks): while the ranks out of their own
  /// jobs would run all that are left in `w` before it ran one (outrun_by_idle), waits for them to claim, at
  /// most one of its jobs' time. A slow owner that started its last job as the others ran out of theirs made
  /// the call wait for it (the claims by message's idle_thieves).
  void leave_to_faster_thieves(const word& w) const;
  /// Whether the ranks of the host whose own jobs are all claimed would end `left` jobs at their paces, each
  /// after the batch it holds, within half the `own` seconds this rank takes for one from `now`
  /// (idle_ranks_end_within).
  bool outrun_by_idle(int left, double own, std::chrono::steady_clock::time_point now) const;
  /// The shortest job worth leaving to faster ranks: below it the scan of the claim words costs more.
  static constexpr double leave_pace_seconds = 100e-6;
  /// This rank's pace in this call, or its previous call's until one batch is timed (0: none).
  double known_pace() const { return own_.jobs > 0 ? own_.per_job() : last_pace_; }
  /// The shortest batch worth timing, in expected seconds.
  static constexpr double pace_batch_seconds = 20e-6;

  std::vector<word*> words_;     ///< per rank, its claim word or null (every rank of the root's host)
  std::vector<word*> progress_;  ///< per rank, its progress word or null
  std::vector<rank_lines> lines_;  ///< per rank, its count of jobs others ran
  mutable std::vector<idle_rank> idle_;  ///< outrun_by_idle's ranks, one per rank, so that a poll allocates nothing
  call_words* call_ = nullptr;
  /// Waits as hold_for_claims says, while `w`'s back is where it was at the call's first claim, hold_back_.
  void hold_until_claimed(const word& w) const;
  word* mine_ = nullptr;         ///< worker: its claim word, or null
  bool held_ = false;            ///< hold_for_claims
  int hold_back_ = -1;           ///< the back of its jobs at its first claim of the call, until the hold
  word* my_progress_ = nullptr;  ///< worker: its progress word, or null
  int self_ = 0;                 ///< this rank
  int claimers_ = 0;             ///< the ranks that claim from each other: grant_share's ranks
  std::uint64_t published_call_ = 0;  ///< worker under claims by message: the call of its latest reset_own
  bool published_with_root_ = false;  ///< whether that call's host_published waits for the root's range too
  own_pace own_;                 ///< this rank's own jobs in this call so far
  double last_pace_ = 0;         ///< its pace over an earlier call, until this call's first batch is timed
  std::chrono::steady_clock::time_point batch_start_;  ///< when its latest front batch started
  int batch_jobs_ = 0;           ///< that batch's jobs (0: none under way)
};

/// Root: waits, as the policy says, until worker r has finished its part of the call (true), or until the
/// deadline passes (false).
bool await_finished(const job_claims& claims, int r, wait_policy policy,
                    std::chrono::steady_clock::time_point deadline);

/// Root: the workers (of 1 to ranks - 1) that have not finished their part of the call.
std::vector<int> unfinished(const job_claims& claims, int ranks);

/// The claim loop of a rank whose own chunk is done, under claims between all ranks: batches from the back of
/// the rank other than `self` with the most unclaimed work (richest), until no rank has any left or the call
/// stops. A batch behind the call's lowest failing job is dropped unrun. `first_of(r)` is rank r's first job (global);
/// `run(owner, got, first)` runs the batch `got` of owner's chunk, whose first job is `first`, and returns
/// false to stop.
template <class FirstOf, class Run>
void claim_until_none(job_claims& claims, int self, int ranks, int threads, FirstOf&& first_of, Run&& run) {
  for (int owner; !claims.stopped() && (owner = claims.richest(self, ranks)) >= 0;) {
    const job_range got = claims.claim_batch_back(owner, threads);
    const int first = first_of(owner) + got.begin;
    if (got.empty() || first > claims.first_failure()) continue;
    if (!run(owner, got, first)) return;
  }
}

}  // namespace maprect::detail
