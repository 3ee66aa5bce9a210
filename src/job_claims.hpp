#pragma once
// Taking over a slower worker's jobs. On a shared machine one core can run at half the speed of another for
// a while, and no split planned in advance can follow that. So for each worker on the root's node, the
// jobs of its chunk that nobody has started yet are one word in memory both share: the worker claims them
// from the front, and the root, once its own jobs are done, from the back. The worker's jobs are then a
// prefix of its chunk, which it sends as usual; the root places the blocks of the rest itself. Any job runs
// the same code wherever it runs, so the results do not depend on who ran what.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

namespace maprect::detail {

/// A run of a chunk's jobs, [begin, end), local to the chunk; empty when begin == end.
struct job_range {
  int begin = 0;
  int end = 0;
  bool empty() const { return begin >= end; }
  int size() const { return end - begin; }
};

/// The claim words of a cluster: one per worker that shares memory with the root.
class job_claims {
 public:
  /// Sets up the words on every rank of comm that shares memory with rank 0. Collective over comm.
  void open(MPI_Comm comm);
  /// Frees them. Collective over the communicator given to open().
  void close();

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

  /// Root, before a call's request: worker r's chunk of n jobs is all unclaimed.
  void reset(int r, int n) { words_[r]->store(pack(0, n), std::memory_order_release); }
  /// Root: claims jobs from the back of worker r's unclaimed ones (none when they are all taken).
  job_range claim_back(int r);
  /// Root: worker r's jobs end before this local job once every claim is made: the root claims the rest.
  int worker_end(int r) const { return back(words_[r]->load(std::memory_order_acquire)); }
  /// Worker: claims jobs from the front of this rank's unclaimed ones.
  job_range claim_front();
  /// Worker: claims every job still unclaimed without running them (after a failure), so that the root
  /// and this rank agree on where this rank's jobs end; returns that end.
  int claim_rest();

 private:
  using word = std::atomic<std::uint64_t>;
  static std::uint64_t pack(int front, int back) {
    return static_cast<std::uint32_t>(front) | (static_cast<std::uint64_t>(static_cast<std::uint32_t>(back)) << 32);
  }
  static int front(std::uint64_t w) { return static_cast<int>(static_cast<std::uint32_t>(w)); }
  static int back(std::uint64_t w) { return static_cast<int>(w >> 32); }

  MPI_Comm node_ = MPI_COMM_NULL;
  MPI_Win window_ = MPI_WIN_NULL;
  std::vector<word*> words_;  ///< root: per rank, its word or null
  word* mine_ = nullptr;      ///< worker: its word, or null
};

}  // namespace maprect::detail
