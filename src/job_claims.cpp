// Claim words in memory that the root shares with the workers of its node (an MPI shared-memory window).
#include "src/job_claims.hpp"

#include <algorithm>
#include <new>

namespace maprect::detail {

namespace {

// A word per cache line: a worker's claims do not disturb its neighbours', and the root reading a worker's
// progress does not disturb that worker's claims. Rank r's claim word is in line 2r, its progress in 2r + 1.
constexpr MPI_Aint line = 64;
constexpr MPI_Aint lines_per_rank = 2;
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "claim words must work across processes");
// A progress word and the report behind it share their line.
static_assert(sizeof(std::atomic<std::uint64_t>) + sizeof(worker_report) <= line, "a report must fit its line");

/// The claim the root makes at once: an eighth of what is left, so that a root much slower than the worker
/// does not take a large batch the worker would then wait for.
int root_batch(int left) { return std::max(1, left / 8); }
/// The claim a worker makes at once: a quarter of what is left (few claims per call, small ones at the end).
int worker_batch(int left) { return std::max(1, left / 4); }

}  // namespace

void job_claims::open(MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // Keyed by rank, so that the root, when present, is rank 0 of its node's communicator.
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_);
  MPI_Group comm_group, node_group;
  MPI_Comm_group(comm, &comm_group);
  MPI_Comm_group(node_, &node_group);
  const int root = 0;
  int root_on_node = MPI_UNDEFINED;
  MPI_Group_translate_ranks(comm_group, 1, &root, node_group, &root_on_node);
  const bool with_root = root_on_node != MPI_UNDEFINED;
  // Without shared memory (an MPI built without it, say) nobody claims: every rank agrees on that.
  MPI_Comm_set_errhandler(node_, MPI_ERRORS_RETURN);
  void* base = nullptr;
  const MPI_Aint bytes_here = rank == 0 ? line * lines_per_rank * size : 0;
  int made = MPI_Win_allocate_shared(bytes_here, 1, MPI_INFO_NULL, node_, &base, &window_) == MPI_SUCCESS;
  MPI_Allreduce(MPI_IN_PLACE, &made, 1, MPI_INT, MPI_MIN, comm);
  if (!made && window_ != MPI_WIN_NULL) MPI_Win_free(&window_);
  if (made && with_root && size > 1) {
    MPI_Aint bytes = 0;
    int unit = 0;
    char* root_base = nullptr;
    MPI_Win_shared_query(window_, root_on_node, &bytes, &unit, &root_base);
    if (rank == 0) {
      words_.assign(static_cast<std::size_t>(size), nullptr);
      progress_.assign(static_cast<std::size_t>(size), nullptr);
      int node_size = 1;
      MPI_Comm_size(node_, &node_size);
      for (int n = 1; n < node_size; ++n) {
        int r = MPI_UNDEFINED;
        MPI_Group_translate_ranks(node_group, 1, &n, comm_group, &r);
        words_[r] = new (root_base + line * lines_per_rank * r) word(pack(0, 0));
        progress_[r] = new (root_base + line * (lines_per_rank * r + 1)) word(pack(0, 0));
      }
    } else {
      mine_ = reinterpret_cast<word*>(root_base + line * lines_per_rank * rank);
      my_progress_ = reinterpret_cast<word*>(root_base + line * (lines_per_rank * rank + 1));
    }
  }
  MPI_Group_free(&comm_group);
  MPI_Group_free(&node_group);
  // The root has made its words before any worker reads one.
  MPI_Barrier(node_);
}

void job_claims::close() {
  if (window_ != MPI_WIN_NULL) MPI_Win_free(&window_);
  if (node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
  words_.clear();
  progress_.clear();
  mine_ = nullptr;
  my_progress_ = nullptr;
}

job_range job_claims::claim_back(int r) {
  word& w = *words_[r];
  std::uint64_t seen = w.load(std::memory_order_acquire);
  while (true) {
    const int f = front(seen), b = back(seen);
    if (f >= b) return {};
    const int take = root_batch(b - f);
    if (w.compare_exchange_weak(seen, pack(f, b - take), std::memory_order_acq_rel, std::memory_order_acquire))
      return {b - take, b};
  }
}

job_range job_claims::claim_front() {
  word& w = *mine_;
  std::uint64_t seen = w.load(std::memory_order_acquire);
  while (true) {
    const int f = front(seen), b = back(seen);
    if (f >= b) return {};
    const int take = worker_batch(b - f);
    if (w.compare_exchange_weak(seen, pack(f + take, b), std::memory_order_acq_rel, std::memory_order_acquire))
      return {f, f + take};
  }
}

int job_claims::claim_rest() {
  word& w = *mine_;
  std::uint64_t seen = w.load(std::memory_order_acquire);
  while (!w.compare_exchange_weak(seen, pack(back(seen), back(seen)), std::memory_order_acq_rel,
                                  std::memory_order_acquire)) {
  }
  return back(seen);
}

}  // namespace maprect::detail
