#pragma once
// Taking over a slower worker's jobs. On a shared machine one core can run at half the speed of another for
// a while, and no split planned in advance can follow that. So for each worker on the root's host, the
// jobs of its chunk that nobody has started yet are one word in memory both share: the worker claims them
// from the front, and the root, once its own jobs are done, from the back. The worker's jobs are then a
// prefix of its chunk, which it sends as usual; the root places the blocks of the rest itself. Any job runs
// the same code wherever it runs, so the results do not depend on who ran what.
//
// Beside each claim word, in a cache line of its own, the worker publishes its progress: how many of its
// jobs have their blocks in its host slot. The root makes those jobs' output nodes while the worker runs
// the rest, instead of all of them after the worker's answer.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

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
};

/// The claim words of a cluster, and the progress words beside them: one of each per worker that shares
/// memory with the root.
class job_claims {
 public:
  /// Bytes of the words of a cluster of `ranks` ranks (a pair of cache lines per rank).
  static MPI_Aint bytes_for(int ranks);
  /// Places the words at `base` (the root host's share of the host window) for a rank of the root's host:
  /// `rank` in the cluster's communicator, comm_rank[h] for each host rank h. The root makes the words of
  /// its host's workers; a worker finds its own.
  void place(char* base, int rank, const std::vector<int>& comm_rank);

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

  /// Root, before a call's request: worker r's chunk of n jobs is all unclaimed, and none is done.
  void reset(int r, int n) {
    progress_[r]->store(0, std::memory_order_relaxed);
    words_[r]->store(pack(0, n), std::memory_order_release);
  }
  /// Root: worker r's progress in the current call.
  job_progress progress(int r) const {
    const std::uint64_t w = progress_[r]->load(std::memory_order_acquire);
    return {front(w), back(w) != 0};
  }
  /// Root: how worker r's part of the call ended; valid once progress(r) is finished.
  worker_report report(int r) const { return *reinterpret_cast<const worker_report*>(progress_[r] + 1); }
  /// Root: claims jobs from the back of worker r's unclaimed ones (none when they are all taken).
  job_range claim_back(int r);
  /// Root: worker r's jobs end before this local job once every claim is made: the root claims the rest.
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
  static std::uint64_t pack(int front, int back) {
    return static_cast<std::uint32_t>(front) | (static_cast<std::uint64_t>(static_cast<std::uint32_t>(back)) << 32);
  }
  static int front(std::uint64_t w) { return static_cast<int>(static_cast<std::uint32_t>(w)); }
  static int back(std::uint64_t w) { return static_cast<int>(w >> 32); }

  std::vector<word*> words_;     ///< root: per rank, its claim word or null
  std::vector<word*> progress_;  ///< root: per rank, its progress word or null
  word* mine_ = nullptr;         ///< worker: its claim word, or null
  word* my_progress_ = nullptr;  ///< worker: its progress word, or null
};

/// Root: waits, as the policy says, until worker r has finished its part of the call (true), or until the
/// deadline passes (false).
bool await_finished(const job_claims& claims, int r, wait_policy policy,
                    std::chrono::steady_clock::time_point deadline);

/// Root: the workers (of 1 to ranks - 1) that have not finished their part of the call.
std::vector<int> unfinished(const job_claims& claims, int ranks);

}  // namespace maprect::detail
