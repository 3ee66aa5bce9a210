// MAPRECT_BALANCE=auto where the ranks span hosts (here hosts of MAPRECT_TEST_HOST_RANKS ranks on one machine,
// which this test's CTest entries set): each call site measures its calls by the root's take-over and by the
// claims between any two ranks, and keeps the faster. A site whose jobs are uneven and long goes to the claims,
// a short one whose jobs cost alike stays on the take-over; whichever way a call goes, its bits are the
// in-process ones, and a failing job keeps the error rules.
#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "balance_hosts/functors.hpp"
#include "mpi/compare.hpp"
#include "src/balance/claims_choice.hpp"
#include "src/balance/steal.hpp"
#include "support/matchers.hpp"
#include "support/mpi_test.hpp"

using namespace maprect;
using test::bit_equal;
using test::evaluate;

namespace maprect::test {

/// rank_slowed_job's time and outputs (functors.hpp), x_i[j][1] of them, but throws
/// std::domain_error("job refused theta <theta(1)>") when theta(1) is negative: a failure that job parameters
/// cause, so that a steady call (whose data stay) can fail. Its results never depend on the rank.
struct choice_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i, std::ostream*) const {
    spend_job_time(x_i);
    if (value_of(theta(1)) < 0) throw std::domain_error("job refused theta " + std::to_string(value_of(theta(1))));
    return scaled_outputs(phi, theta, x_r[0], x_i[1]);
  }
};

}  // namespace maprect::test

MAPRECT_REGISTER(621, test::choice_job);
MAPRECT_REGISTER(622, test::choice_job);
MAPRECT_REGISTER(623, test::choice_job);
MAPRECT_REGISTER(624, test::choice_job);
MAPRECT_REGISTER(625, test::choice_job);
MAPRECT_REGISTER(626, test::choice_job);

namespace {

/// `jobs` jobs spinning `us` microseconds, job j with j % 4 outputs (some none), and on rank `slow_rank`
/// `sleep_us` microseconds more per job.
struct choice_data {
  std::vector<std::vector<double>> x_r;
  std::vector<std::vector<int>> x_i;
  Eigen::VectorXd phi = Eigen::VectorXd::Constant(2, 0.25);
  std::vector<Eigen::VectorXd> theta;
  choice_data(int jobs, int us, int slow_rank = -1, int sleep_us = 0) {
    for (int j = 0; j < jobs; ++j) {
      x_r.push_back({0.5 * j + 0.125});
      x_i.push_back({us, j % 4, 0, slow_rank, sleep_us});
      theta.push_back(Eigen::VectorXd::LinSpaced(2, 0.1 * j, 1.0 - 0.01 * j));
    }
  }
};

/// The last rank: with hosts of several ranks it is not on the root's host, where the take-over reaches.
int slow_rank() { return std::max(1, test::the_cluster->size() - 1); }

/// Whether this run's sites choose by their measurements alone: the share tuner, which could balance a slow
/// rank's share statically at 2 ranks, is off under the sleep policy; at 3 ranks and more it cannot
/// balance one worker against another.
bool choice_asserted() {
  const char* wait = std::getenv("MAPRECT_WAIT");
  return test::the_cluster->size() >= 3 || (wait != nullptr && std::strcmp(wait, "sleep") == 0);
}

/// How many of a run of calls went each way.
struct ways {
  int claims = 0;
  int take_over = 0;
};

/// MAPRECT_BALANCE as this run has it ("auto" when unset).
std::string balance() {
  const char* v = std::getenv("MAPRECT_BALANCE");
  return v != nullptr && v[0] != '\0' ? v : "auto";
}

/// Under a setting that forces the way (hosts: always the claims; even, static: never), checks that every
/// steady call of `w` went that way and that no trial ran; returns whether the way was forced.
bool forced_way(const ways& w, const detail::claims_report& report) {
  if (balance() == "auto") return false;
  INFO("MAPRECT_BALANCE=" << balance());
  CHECK(report.trials == 0);
  if (balance() == "hosts" && test::the_cluster->size() > 1) CHECK(w.take_over == 0);
  else CHECK(w.claims == 0);
  return true;
}

/// `calls` calls of site Id with the parameter kinds given, each checked bit for bit (values and gradient) and
/// node for node against the call in process; counts the steady calls that went each way.
template <int Id, class T_shared, class T_job>
ways drive(const choice_data& d, int calls) {
  test::tape_added serial_tape, tape;
  const auto serial =
      test::in_process([&] { return evaluate<Id, test::choice_job, T_shared, T_job>(d.phi, d.theta, d.x_r, d.x_i, &serial_tape); });
  ways w;
  for (int call = 0; call < calls; ++call) {
    INFO("call " << call << ", ranks " << test::the_cluster->size());
    const auto distributed = evaluate<Id, test::choice_job, T_shared, T_job>(d.phi, d.theta, d.x_r, d.x_i, &tape);
    CHECK(tape.nodes == serial_tape.nodes);
    REQUIRE(distributed.size() == serial.size());
    bool same = true;
    for (std::size_t k = 0; k < serial.size(); ++k) same = same && bit_equal(distributed[k], serial[k]);
    CHECK(same);
    if (call == 0) continue;  // the first call plans: it runs the static split
    if (detail::call_site_claims(Id).last_call) ++w.claims;
    else ++w.take_over;
  }
  return w;
}

}  // namespace

TEST_CASE("auto across hosts: a site whose jobs are uneven and long goes to the claims, with the in-process bits") {
  const int R = test::the_cluster->size();
  // The last rank sleeps 3 ms in each job, the others spin 50 us: the take-over (on the root's host, where
  // that rank is not) leaves its chunk to it, the claims hand it out.
  const int slow = slow_rank();
  const choice_data d(24, 50, slow, 3000);
  const ways w = drive<621, var, var>(d, 30);
  const detail::claims_report report = detail::call_site_claims(621);
  INFO("ranks " << R << ": " << w.claims << " calls by claims, " << w.take_over << " by the take-over");
  if (forced_way(w, report)) return;
  if (R == 1) {  // in process: nothing to choose
    CHECK(w.claims == 0);
    CHECK(report.trials == 0);
    return;
  }
  CHECK(report.trials >= 1);  // the ranks' busy times spread: the claims were tried
  CHECK(w.claims >= detail::claims_chooser::trial_pairs);
  CHECK(w.take_over >= detail::claims_chooser::measured_calls + detail::claims_chooser::trial_pairs);
  if (!choice_asserted()) return;
  // Whether the claims win is the machine's: on one loaded by other work their messages wait for the ranks
  // to be scheduled, and can cost more than the slow rank's jobs they spread. The site follows its trial's
  // measurement (the chooser's rule on given times: test_claims_chooser.cpp).
  INFO("the trial's median claims / take-over call time: " << report.trial_ratio);
  CHECK(report.trial_ratio > 0);
  CHECK(report.chosen == (report.trial_ratio < 1 - detail::claims_chooser::min_gain));
  if (!report.last_call) return;
  // The claims reported who ran what, within the slow rank's chunk.
  const detail::balance_report b = detail::last_call_balance();
  REQUIRE(static_cast<int>(b.ends.size()) == R);
  CHECK(b.ends[slow] <= (24 - 24 / R) / (R - 1));
}

TEST_CASE("auto across hosts: a short site whose jobs cost alike stays on the take-over") {
  const int R = test::the_cluster->size();
  const choice_data d(64, 0);
  const ways w = drive<622, var, var>(d, 40);
  const detail::claims_report report = detail::call_site_claims(622);
  INFO("ranks " << R << ": " << w.claims << " calls by claims, " << w.take_over << " by the take-over, "
                << report.trials << " trials");
  if (forced_way(w, report)) return;
  // The claims have nothing to spread here. A trial, if the spread of busy times (noise) asked for one, finds
  // them no faster but where the noise of a loaded machine says otherwise: the site follows its measurement.
  // A trial still under way at the last call (a first one, or another after a new plan) has not moved the site
  // off the way its last finished trial chose, but its calls alternate: the last may have gone by claims.
  INFO("the last finished trial's median claims / take-over call time (0: none finished): " << report.trial_ratio
       << (report.trying ? "; a trial under way" : ""));
  CHECK(report.chosen == (report.trial_ratio > 0 && report.trial_ratio < 1 - detail::claims_chooser::min_gain));
  if (report.chosen) return;
  if (!report.trying) CHECK_FALSE(report.last_call);
  // A trial makes one claims call per pair.
  CHECK(w.claims <= report.trials * (detail::claims_chooser::trial_pairs + 1));
}

TEST_CASE("auto across hosts: calls that switch ways give the in-process bits for every kind of parameters") {
  const choice_data d(16, 50, slow_rank(), 1500);
  const std::pair<int, ways> sites[] = {{623, drive<623, double, var>(d, 18)},
                                        {624, drive<624, var, double>(d, 18)},
                                        {625, drive<625, double, double>(d, 18)}};
  for (const auto& [id, w] : sites) {
    INFO("call id " << id << ": " << w.claims << " calls by claims, " << w.take_over << " by the take-over");
    if (forced_way(w, detail::call_site_claims(id)) || test::the_cluster->size() == 1) continue;
    // Measured take-over calls, then (the busy times spread) a trial whose calls alternate.
    CHECK(w.take_over >= detail::claims_chooser::measured_calls + detail::claims_chooser::trial_pairs);
    CHECK(w.claims >= detail::claims_chooser::trial_pairs);
  }
}

TEST_CASE("auto across hosts: a failing job keeps its type and message whichever way; a good call follows") {
  const int R = test::the_cluster->size();
  const int J = 24;
  const choice_data good(J, 50, slow_rank(), 3000);
  const auto expected = test::in_process(
      [&] { return evaluate<626, test::choice_job, var, var>(good.phi, good.theta, good.x_r, good.x_i); });
  // The back of the slow (last) rank's chunk is what others take from it; a job early in it fails as well,
  // and decides.
  const int last_of_slow = J - 1;
  const int early = R > 1 ? J - (J - J / R) / (R - 1) + 1 : 1;
  auto failing = [&](std::vector<int> jobs) {
    choice_data bad = good;
    for (int j : jobs) bad.theta[j](1) = -0.5 - j;
    return bad;
  };
  const choice_data late_bad = failing({last_of_slow}), both_bad = failing({early, last_of_slow});
  auto fails_at = [&](const choice_data& d, int job) {
    const std::string refused = "job refused theta " + std::to_string(-0.5 - job);
    CHECK_THROWS_MATCHES((evaluate<626, test::choice_job, var, var>(d.phi, d.theta, d.x_r, d.x_i)), std::domain_error,
                         test::message_contains({refused, "job " + std::to_string(job)}));
    recover_memory();
  };
  bool failed_by_claims = false, failed_by_take_over = false;
  for (int call = 0; call < 24; ++call) {
    INFO("call " << call << ", ranks " << R);
    if (call % 3 == 2) {
      fails_at(call % 2 == 0 ? late_bad : both_bad, call % 2 == 0 ? last_of_slow : early);
      // A steady call names its way before it runs: the failed call's is the last one's.
      (detail::call_site_claims(626).last_call ? failed_by_claims : failed_by_take_over) = true;
    }
    // The cluster is in step: the next call gives the in-process bits.
    CHECK(evaluate<626, test::choice_job, var, var>(good.phi, good.theta, good.x_r, good.x_i) == expected);
  }
  const std::string forced = balance();
  if (R > 1 && (forced == "hosts" || (forced == "auto" && choice_asserted()))) CHECK(failed_by_claims);
  if (R == 1 || forced != "hosts") CHECK(failed_by_take_over);
  if (forced != "auto" && forced != "hosts") CHECK_FALSE(failed_by_claims);
}
