#pragma once
// Which jobs each rank runs: contiguous and balanced, the root first.
#include <vector>

namespace maprect::detail {

/// First job of rank r when J jobs go to `ranks` ranks (rank r gets jobs [first_job(r), first_job(r+1))).
inline int first_job(int r, int n_jobs, int ranks) {
  return static_cast<int>(static_cast<long long>(n_jobs) * r / ranks);
}

/// Element counts and displacements for a scatter/gather of `per_job` values per job.
struct rank_layout {
  std::vector<int> counts;
  std::vector<int> displs;
  void assign(int n_jobs, int ranks, long long per_job) {
    counts.resize(ranks);
    displs.resize(ranks);
    for (int r = 0; r < ranks; ++r) {
      const int b = first_job(r, n_jobs, ranks), e = first_job(r + 1, n_jobs, ranks);
      displs[r] = static_cast<int>(b * per_job);
      counts[r] = static_cast<int>((e - b) * per_job);
    }
  }
};

}  // namespace maprect::detail
