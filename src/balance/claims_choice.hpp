#pragma once
// MAPRECT_BALANCE=auto where the ranks span hosts: each call site chooses, per call, between the root's
// take-over on its own host (no message) and the claims by message between any two ranks (src/balance/steal.hpp).
// The claims cost a steady call round trips between every pair of ranks, which doubles a short call, and
// balance a call whose jobs are uneven; which one wins depends on the call's length and spread, the links and
// the ranks' load, so the site measures both. Once a site is steady it times a few calls by the take-over;
// if the ranks' busy times spread by more than a tenth of the call (something to balance), it tries the
// claims: calls alternate between the two ways, so that a change of the machine's load falls on both, and
// the claims are kept when the median ratio of a claims call to the take-over call after it is below 0.9.
// The choice is checked again after an interval that doubles each time it holds (32 to 1024 calls), and
// after every new plan. It travels in each request as its route (wire::call_route::claims), so the workers
// follow the root.
#include <vector>

#include "src/balance/share_tuner.hpp"

namespace maprect::detail {

/// Chooses, from the timings of one call site's steady calls, whether its next call goes by claims.
class claims_chooser {
 public:
  /// Measured calls by the take-over that decide whether to try the claims.
  static constexpr int measured_calls = 4;
  /// Measured pairs of calls (claims, then take-over) in a trial, after a first pair that warms up.
  static constexpr int trial_pairs = 5;
  /// Calls kept on a choice before it is checked again: the first interval, and the most it doubles to.
  static constexpr int first_interval = 32;
  static constexpr int last_interval = 1024;
  /// The claims are tried only when the ranks' busy times spread by this share of the call's time.
  static constexpr double min_spread = 0.1;
  /// The claims are chosen only when a claims call takes at most 1 - min_gain of the take-over call after
  /// it (the median of a trial's pairs).
  static constexpr double min_gain = 0.1;

  /// A new plan (a first call, a moved share): the timings so far no longer hold; the choice stays until
  /// measured again.
  void restart();
  /// Whether the next steady call goes by claims.
  bool claims() const { return next_; }
  /// The way chosen by the last decision (the next call may be a trial of the other).
  bool chosen() const { return chosen_; }
  /// Trials of the claims made so far.
  int trials() const { return trials_; }
  /// The last finished trial's median of a claims call's time over the take-over call's after it (0: none).
  double trial_ratio() const { return trial_ratio_; }
  /// Whether a trial is under way: its calls alternate between the ways, so they tune no root share.
  bool trying() const { return phase_ == phase::trial; }
  /// Records a steady call made the way claims() said: its `seconds`, and `spread`, how much longer the
  /// busiest rank was busy than the ranks' mean. Returns true when this call ended a trial.
  bool record(double seconds, double spread);

 private:
  enum class phase { settle, trial, keep };
  void start_trial();
  bool record_trial(double seconds);
  void decide(bool claims);

  phase phase_ = phase::settle;
  bool next_ = false;
  bool chosen_ = false;
  bool decided_ = false;
  int calls_ = 0;  ///< calls made in this phase
  int interval_ = first_interval;
  int trials_ = 0;
  double claims_seconds_ = 0;  ///< the trial's last claims call, waiting for its take-over call
  double trial_ratio_ = 0;     ///< the last finished trial's median ratio
  std::vector<double> take_over_, spreads_, ratios_;
};

/// How much longer the busiest rank of a steady call was busy than the ranks' mean: what perfect balancing
/// could save. The root's busy time is the call's less its check and its wait for the answers.
double busy_spread(const call_timing& t, int ranks);

/// How the steady calls of a call site balance under MAPRECT_BALANCE=auto across hosts.
struct claims_report {
  bool last_call = false;  ///< the cluster's last steady call went by claims (any site; also under hosts)
  bool chosen = false;     ///< the site's last decision is the claims
  int trials = 0;          ///< trials of the claims the site has made
  double trial_ratio = 0;  ///< its last finished trial's median ratio of claims to take-over call time (0: none)
  bool trying = false;     ///< a trial is under way: the site's calls alternate between the two ways
};

/// Root: the report for call site `call_id`; all false and 0 without a live cluster or such a site.
claims_report call_site_claims(int call_id);

}  // namespace maprect::detail
