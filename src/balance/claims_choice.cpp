// Choosing per call site between the root's take-over and the claims by message, from measured calls.
#include "src/balance/claims_choice.hpp"

#include <algorithm>

#include "src/cluster/cluster_state.hpp"

namespace maprect::detail {

void claims_chooser::restart() {
  phase_ = phase::settle;
  calls_ = 0;
  next_ = chosen_;
  take_over_.clear();
  spreads_.clear();
}

void claims_chooser::start_trial() {
  ++trials_;
  phase_ = phase::trial;
  calls_ = 0;
  ratios_.clear();
  next_ = true;
}

void claims_chooser::decide(bool claims) {
  if (decided_) interval_ = claims == chosen_ ? std::min(2 * interval_, last_interval) : first_interval;
  decided_ = true;
  chosen_ = next_ = claims;
  phase_ = phase::keep;
  calls_ = 0;
}

bool claims_chooser::record_trial(double seconds) {
  // Calls alternate, claims first; the first pair warms up (a first claim may open connections).
  const int k = calls_++;
  next_ = k % 2 == 1;
  if (k < 2) return false;
  if (k % 2 == 0) {
    claims_seconds_ = seconds;
    return false;
  }
  ratios_.push_back(claims_seconds_ / seconds);
  if (static_cast<int>(ratios_.size()) < trial_pairs) return false;
  trial_ratio_ = median_of(ratios_);
  decide(trial_ratio_ < 1 - min_gain);
  return true;
}

bool claims_chooser::record(double seconds, double spread) {
  switch (phase_) {
    case phase::settle:
      if (chosen_) {  // on the claims: only a trial compares the ways
        start_trial();
        return false;
      }
      if (calls_++ == 0) return false;  // after a new plan the first call warms up
      take_over_.push_back(seconds);
      spreads_.push_back(spread);
      if (static_cast<int>(take_over_.size()) < measured_calls) return false;
      if (median_of(spreads_) >= min_spread * median_of(take_over_)) start_trial();
      else decide(false);
      return false;
    case phase::trial:
      return record_trial(seconds);
    case phase::keep:
      if (++calls_ >= interval_) restart();
      return false;
  }
  return false;
}

double busy_spread(const call_timing& t, int ranks) {
  if (ranks < 2 || static_cast<int>(t.worker_busy.size()) < ranks) return 0;
  double most = std::max(0.0, t.arrival - t.waited - t.check), total = most;
  for (int r = 1; r < ranks; ++r) {
    most = std::max(most, t.worker_busy[r]);
    total += t.worker_busy[r];
  }
  return most - total / ranks;
}

claims_report call_site_claims(int call_id) {
  const cluster_state* s = live_cluster_root();
  if (s == nullptr) return {};
  const auto site = s->root.sites.find(call_id);
  if (site == s->root.sites.end()) return {s->call.claimed, false, 0};
  const claims_chooser& c = site->second.claims;
  return {s->call.claimed, c.chosen(), c.trials(), c.trial_ratio(), c.trying()};
}

}  // namespace maprect::detail
