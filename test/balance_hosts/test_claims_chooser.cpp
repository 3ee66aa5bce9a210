// The claims chooser alone, on synthetic call times: when it tries the claims, how a trial alternates the
// ways and decides, how long a choice holds, and what a new plan does.
#include <catch2/catch.hpp>

#include "src/balance/claims_choice.hpp"

using maprect::detail::claims_chooser;

namespace {

/// Feeds `calls` calls to `c`, each taking `take_over` seconds by the take-over and `claims` by the claims,
/// with the busy times spreading by `spread`; returns how many went by claims.
int feed(claims_chooser& c, int calls, double take_over, double claims, double spread) {
  int by_claims = 0;
  for (int k = 0; k < calls; ++k) {
    const bool way = c.claims();
    by_claims += way ? 1 : 0;
    c.record(way ? claims : take_over, way ? 0.0 : spread);
  }
  return by_claims;
}

/// Calls before a fresh chooser has decided: one warm-up and the measured take-over calls, then a trial.
constexpr int settle = 1 + claims_chooser::measured_calls;
constexpr int trial = 2 * (1 + claims_chooser::trial_pairs);

}  // namespace

TEST_CASE("claims chooser: busy times that hardly spread keep the take-over, with no trial") {
  claims_chooser c;
  CHECK(feed(c, settle, 1e-4, 5e-5, 0.09e-4) == 0);
  CHECK_FALSE(c.chosen());
  CHECK(c.trials() == 0);
  // The choice holds for the first interval, then the take-over is measured again.
  CHECK(feed(c, claims_chooser::first_interval + settle, 1e-4, 5e-5, 0.09e-4) == 0);
  CHECK(c.trials() == 0);
}

TEST_CASE("claims chooser: a trial alternates the ways, claims first, and keeps the claims when they save a tenth") {
  claims_chooser c;
  feed(c, settle, 10e-3, 6e-3, 4e-3);  // spread 40% of the call: worth a trial
  CHECK(c.trials() == 1);
  for (int k = 0; k < trial; ++k) {
    INFO("trial call " << k);
    CHECK(c.claims() == (k % 2 == 0));
    c.record(c.claims() ? 6e-3 : 10e-3, 4e-3);
  }
  CHECK(c.chosen());
  CHECK(c.claims());
  CHECK(feed(c, claims_chooser::first_interval - 1, 10e-3, 6e-3, 4e-3) == claims_chooser::first_interval - 1);
}

TEST_CASE("claims chooser: claims that save less than a tenth, or cost more, lose the trial") {
  for (double claims : {0.91e-3, 1.0e-3, 2.0e-3}) {
    INFO("claims call " << claims << " s against 1e-3 s");
    claims_chooser c;
    CHECK(feed(c, settle + trial, 1e-3, claims, 0.5e-3) == 1 + claims_chooser::trial_pairs);
    CHECK(c.trials() == 1);
    CHECK_FALSE(c.chosen());
    CHECK_FALSE(c.claims());
  }
  claims_chooser c;
  feed(c, settle + trial, 1e-3, 0.89e-3, 0.5e-3);
  CHECK(c.chosen());
}

TEST_CASE("claims chooser: a choice that holds is checked after an interval that doubles; a flip resets it") {
  claims_chooser c;
  feed(c, settle + trial, 10e-3, 5e-3, 4e-3);
  REQUIRE(c.chosen());
  // On the claims, a check is a trial at once (one call by the choice first).
  CHECK(feed(c, claims_chooser::first_interval, 10e-3, 5e-3, 4e-3) == claims_chooser::first_interval);
  feed(c, 1 + trial, 10e-3, 5e-3, 4e-3);
  CHECK(c.trials() == 2);
  CHECK(feed(c, 2 * claims_chooser::first_interval, 10e-3, 5e-3, 4e-3) == 2 * claims_chooser::first_interval);
  CHECK(c.trials() == 2);
  // Now the claims cost more: the next check flips the choice, and the interval is the first again.
  feed(c, 1 + trial, 10e-3, 20e-3, 4e-3);
  CHECK(c.trials() == 3);
  CHECK_FALSE(c.chosen());
  CHECK(feed(c, claims_chooser::first_interval, 10e-3, 20e-3, 4e-3) == 0);
  CHECK(feed(c, settle, 10e-3, 20e-3, 4e-3) == 0);  // the take-over is measured again
  CHECK(c.trials() == 4);
}

TEST_CASE("claims chooser: a new plan measures again and keeps the choice until then") {
  claims_chooser c;
  feed(c, settle + trial, 10e-3, 5e-3, 4e-3);
  REQUIRE(c.chosen());
  feed(c, 3, 10e-3, 5e-3, 4e-3);
  c.restart();
  CHECK(c.claims());  // the next call stays on the claims
  feed(c, 1, 10e-3, 5e-3, 4e-3);
  CHECK(c.trials() == 2);
  CHECK(c.claims());  // a trial begins with a claims call
}

TEST_CASE("busy spread: the busiest rank's busy time less the ranks' mean; the root's is its call less check and wait") {
  maprect::detail::call_timing t;
  t.check = 0.001;
  t.arrival = 0.010;
  t.waited = 0.001;  // the root was busy 0.008 s
  t.worker_busy = {0, 0.002};
  CHECK(maprect::detail::busy_spread(t, 2) == Approx(0.008 - 0.005));
  t.worker_busy = {0, 0.002, 0.014};
  CHECK(maprect::detail::busy_spread(t, 3) == Approx(0.014 - 0.008));
  CHECK(maprect::detail::busy_spread(t, 1) == 0);
}
