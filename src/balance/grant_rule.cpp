// The claims' grant and batch rules (grant_rule.hpp).
#include "src/balance/grant_rule.hpp"

namespace maprect::detail {

job_range unstarted_jobs::take_front(int threads, int least, int most) {
  return take_from_range(*word_, true, [&](int left) { return front_batch(left, threads, least, most); });
}

job_range unstarted_jobs::grant_back(int held, int least, double share) {
  bool later = false;
  const job_range got = take_from_range(*word_, false, [&](int left) {
    const int take = granted_jobs(left, held, share);
    later = take <= 0;
    return take >= least ? take : 0;
  });
  return later ? later_grant() : got;
}

namespace {

/// How many jobs one rank free in `free_in` seconds, at `per_job` seconds each, ends before `within`; at most
/// `most`, which is all the caller needs to know (and keeps the count from overflowing).
long long jobs_ended_before(double free_in, double per_job, double within, int most) {
  if (free_in + per_job >= within) return 0;
  const double fit = (within - free_in) / per_job;
  if (fit > most + 1.0) return most;
  auto k = static_cast<long long>(std::ceil(fit)) - 1;
  while (k > 1 && free_in + k * per_job >= within) --k;  // the division's rounding, either way
  while (free_in + (k + 1) * per_job < within) ++k;
  return k;
}

}  // namespace

bool idle_ranks_end_within(const idle_rank* idle, int n, int left, double within) {
  if (within <= 0) return false;
  long long ended = 0;
  bool anyone = false;  // nobody idle: the owner runs its jobs, however few
  for (int i = 0; i < n; ++i) {
    if (idle[i].ranks <= 0 || idle[i].per_job <= 0) continue;
    anyone = true;
    ended += idle[i].ranks * jobs_ended_before(idle[i].free_in, idle[i].per_job, within, left);
    if (ended >= left) return true;
  }
  return anyone && ended >= left;
}

}  // namespace maprect::detail
