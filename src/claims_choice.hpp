#pragma once
// MAPRECT_BALANCE=auto where the ranks span hosts: each call site chooses, per call, between the root's
// take-over on its own host (no message) and the claims by message between any two ranks (src/steal.hpp).
// The claims cost a steady call round trips between every pair of ranks, which doubles a short call, and
// balance a call whose jobs are uneven; which one wins depends on the call's length and spread, the links and
// the ranks' load, so the site measures both. Once a site is steady it times a few calls by the take-over;
// if the ranks' busy times spread by more than a tenth of the call (something to balance), it times a few
// calls by the claims too and keeps the faster by medians, the claims only when they save a tenth. It checks
// again after an interval that doubles each time the choice stays (32 to 1024 calls), and after every new
// plan. The choice travels in each request's header (wire::s_claims), so the workers follow the root.
#include <vector>

#include "src/balance.hpp"

namespace maprect::detail {

/// Chooses, from the timings of one call site's steady calls, whether its next call goes by claims.
class claims_chooser {
 public:
  /// Measured calls per way: the take-over's to decide whether to try the claims, and each way in a trial.
  static constexpr int measured_calls = 4;
  /// Calls kept on a choice before it is checked again: the first interval, and the most it doubles to.
  static constexpr int first_interval = 32;
  static constexpr int last_interval = 1024;
  /// The claims are tried only when the ranks' busy times spread by this share of the call's time.
  static constexpr double min_spread = 0.1;
  /// The claims are chosen only when their median call is this share faster than the take-over's.
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
  /// Records a steady call made the way claims() said: its `seconds`, and `spread`, how much longer the
  /// busiest rank was busy than the ranks' mean.
  void record(double seconds, double spread);

 private:
  enum class phase { settle, try_take_over, try_claims, keep };
  void start_trial();
  void decide(bool claims);

  phase phase_ = phase::settle;
  bool next_ = false;
  bool chosen_ = false;
  bool decided_ = false;
  int calls_ = 0;  ///< calls made in this phase
  int interval_ = first_interval;
  int trials_ = 0;
  std::vector<double> take_over_, claims_, spreads_;
};

/// How much longer the busiest rank of a steady call was busy than the ranks' mean: what perfect balancing
/// could save. The root's busy time is the call's less its check and its wait for the answers.
double busy_spread(const call_timing& t, int ranks);

/// How the steady calls of a call site balance under MAPRECT_BALANCE=auto across hosts.
struct claims_report {
  bool last_call = false;  ///< the cluster's last steady call went by claims (any site; also under hosts)
  bool chosen = false;     ///< the site's last decision is the claims
  int trials = 0;          ///< trials of the claims the site has made
};

/// Root: the report for call site `call_id`; all false and 0 without a live cluster or such a site.
claims_report call_site_claims(int call_id);

}  // namespace maprect::detail
