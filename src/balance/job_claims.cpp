// Claim words in memory that the root shares with the workers of its host (an MPI shared-memory window).
#include "src/balance/job_claims.hpp"

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

MPI_Aint job_claims::bytes_for(int ranks) { return line * lines_per_rank * ranks; }

void job_claims::place(char* base, int rank, const std::vector<int>& comm_rank) {
  words_.clear();
  progress_.clear();
  mine_ = nullptr;
  my_progress_ = nullptr;
  if (rank != 0) {
    mine_ = reinterpret_cast<word*>(base + line * lines_per_rank * rank);
    my_progress_ = reinterpret_cast<word*>(base + line * (lines_per_rank * rank + 1));
    return;
  }
  const int ranks = *std::max_element(comm_rank.begin(), comm_rank.end()) + 1;
  words_.assign(static_cast<std::size_t>(ranks), nullptr);
  progress_.assign(static_cast<std::size_t>(ranks), nullptr);
  for (std::size_t h = 1; h < comm_rank.size(); ++h) {
    const int r = comm_rank[h];
    words_[r] = new (base + line * lines_per_rank * r) word(pack(0, 0));
    progress_[r] = new (base + line * (lines_per_rank * r + 1)) word(pack(0, 0));
  }
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

bool await_finished(const job_claims& claims, int r, wait_policy policy,
                    std::chrono::steady_clock::time_point deadline) {
  struct finished_test {
    const job_claims* claims;
    int rank;
    static bool ready(void* self) {
      const auto& t = *static_cast<finished_test*>(self);
      return t.claims->progress(t.rank).finished;
    }
  };
  finished_test test{&claims, r};
  return wait_until(&finished_test::ready, &test, policy, deadline);
}

std::vector<int> unfinished(const job_claims& claims, int ranks) {
  std::vector<int> late;
  for (int r = 1; r < ranks; ++r)
    if (!claims.progress(r).finished) late.push_back(r);
  return late;
}

}  // namespace maprect::detail
