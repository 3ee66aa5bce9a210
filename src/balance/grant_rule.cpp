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

}  // namespace maprect::detail
