// The claims' grant and batch rules (grant_rule.hpp).
#include "src/balance/grant_rule.hpp"

namespace maprect::detail {

job_range unstarted_jobs::take_front(int threads, int least, int most) {
  if (front_ >= back_) return {};
  const int take = front_batch(back_ - front_, threads, least, most);
  front_ += take;
  return {front_ - take, front_};
}

job_range unstarted_jobs::grant_back(int held, int least, double share) {
  if (front_ >= back_) return {};
  const int take = granted_jobs(back_ - front_, held, share);
  if (take <= 0) return later_grant();
  if (take < least) return {};
  back_ -= take;
  return {back_, back_ + take};
}

bool idle_ranks_end_within(idle_rank* idle, int n, int left, double within) {
  if (n <= 0 || within <= 0) return false;
  const auto ends_first = [](const idle_rank& a, const idle_rank& b) {
    return a.free_in + a.per_job < b.free_in + b.per_job;
  };
  for (int j = 0; j < left; ++j) {
    idle_rank& first = *std::min_element(idle, idle + n, ends_first);
    first.free_in += first.per_job;
    if (first.free_in >= within) return false;
  }
  return true;
}

}  // namespace maprect::detail
