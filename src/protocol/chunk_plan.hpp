#pragma once
// Which jobs each rank runs: contiguous, the root first with a share of its own, the workers splitting the
// rest evenly.
#include <maprect/detail/wire.hpp>
#include <algorithm>
#include <vector>

namespace maprect::detail {

/// J jobs over `ranks` ranks: the root runs jobs [0, root_jobs), and the workers the rest, balanced and in
/// rank order. The root's share starts at an even split and moves with the root's extra work (see
/// balance.hpp).
struct chunk_plan {
  int n_jobs = 0;
  int ranks = 1;
  int root_jobs = 0;

  /// The even split: the root runs J / ranks jobs (rounded down), like every worker.
  static chunk_plan even(int n_jobs, int ranks) { return {n_jobs, ranks, n_jobs / ranks}; }

  /// First job of rank r (rank r runs jobs [first(r), first(r + 1))); first(ranks) is J.
  int first(int r) const {
    if (r <= 0) return 0;
    if (r >= ranks) return n_jobs;
    const long long rest = n_jobs - root_jobs;
    return root_jobs + static_cast<int>(rest * (r - 1) / (ranks - 1));
  }
  /// Jobs of rank r.
  int jobs(int r) const { return first(r + 1) - first(r); }
  /// Jobs of the busiest worker (rank 1 on; 0 without workers).
  int most_worker_jobs() const {
    int most = 0;
    for (int r = 1; r < ranks; ++r) most = std::max(most, jobs(r));
    return most;
  }
};

/// Jobs [begin, end), by global or local index.
struct job_range {
  int begin = 0;
  int end = 0;
  bool empty() const { return begin >= end; }
  int size() const { return end - begin; }
};

/// The one batch rule of the claims, for an owner's next batch from its front: a quarter of what is left (few
/// batches per call, small ones at the end), but a job per team thread while there are that many.
inline int claim_batch(int left, int threads) { return left < threads ? left : (left / 4 > threads ? left / 4 : threads); }

/// Where each of a rank's n jobs starts in that rank's blocks, in doubles, given the jobs' output counts and
/// the rows per output. The root and the worker each compute it, and must agree to the double.
inline void block_offsets(const int* counts, int n, int rows, int* at) {
  for (int j = 0, offset = 0; j < n; offset += counts[j++] * rows) at[j] = offset;
}

/// One rank's part of a steady call: where each of its n jobs' blocks start (block_offsets), and the doubles
/// of its answer, status and blocks. The root lays out every rank's part with it, and each worker its own.
inline int lay_out_answer(const int* counts, int n, int rows, int* block_at) {
  block_offsets(counts, n, rows, block_at);
  long long outputs = 0;
  for (int j = 0; j < n; ++j) outputs += counts[j];
  return wire::status_doubles + static_cast<int>(outputs * rows);
}

/// Doubles in a worker's answer to a steady call when its jobs end before its local job `end` of n (the root
/// took over the rest): `planned` (status and all blocks) if none were taken, else the status and the blocks
/// of the jobs before `end`. The root sizes its gather by the same rule the worker sends by.
inline int answer_doubles(int planned, const int* block_at, int n, int end) {
  return end >= n ? planned : wire::status_doubles + block_at[end];
}

/// Element counts and displacements for a scatter/gather of `per_job` values per job.
struct rank_layout {
  std::vector<int> counts;
  std::vector<int> displs;
  void assign(const chunk_plan& plan, long long per_job) {
    counts.resize(plan.ranks);
    displs.resize(plan.ranks);
    for (int r = 0; r < plan.ranks; ++r) {
      displs[r] = static_cast<int>(plan.first(r) * per_job);
      counts[r] = static_cast<int>(plan.jobs(r) * per_job);
    }
  }
  /// The largest part of any worker (rank 1 on; 0 without workers).
  int largest_worker_part() const {
    return counts.size() > 1 ? *std::max_element(counts.begin() + 1, counts.end()) : 0;
  }
  /// The workers' part only, as a buffer that starts at the first worker job (the root's count is 0).
  void assign_workers(const chunk_plan& plan, long long per_job) {
    assign(plan, per_job);
    counts[0] = 0;
    for (int r = 1; r < plan.ranks; ++r) displs[r] -= static_cast<int>(plan.root_jobs * per_job);
  }
};

/// What each rank reports after running its jobs of a first call: its status code, its failing job, and
/// the output count of each of its jobs (ints). The root gathers by it and each worker sends by it.
inline rank_layout first_reports(const chunk_plan& plan) {
  rank_layout l;
  l.assign(plan, 1);
  for (int r = 0; r < plan.ranks; ++r) {
    l.displs[r] += 2 * r;
    l.counts[r] += 2;
  }
  return l;
}

}  // namespace maprect::detail
