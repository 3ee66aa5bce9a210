// MAPRECT_BALANCE=auto where the ranks span hosts (here hosts of MAPRECT_TEST_HOST_RANKS ranks on one machine,
// which this test's CTest entries set): a steady call goes by claims by message, brokered by the root
// (src/balance/claims_broker.hpp), when the site's last call lasted long enough for them to pay (claims_pay),
// and else by the static split. Each case pins the round trip that rule judges by (support/claims_always_pay.hpp:
// none, unless the case says otherwise), so that what each call does is known before it runs. A slow rank's
// jobs are run by the others, a short site whose jobs cost alike runs by claims too where they pay and by the
// static split where they do not, reduce_sum follows the same rule, every call gives the in-process bits, and a
// failing job keeps the error rules. Under `static` and `even` no call claims; under `hosts` every call does
// that auto's rule lets.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "balance_hosts/functors.hpp"
#include "mpi/compare.hpp"
#include "src/cluster/test_hooks.hpp"
#include "support/claims_always_pay.hpp"
#include "src/balance/claims_engine.hpp"
#include "support/matchers.hpp"
#include "support/mpi_test.hpp"

using namespace maprect;
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
MAPRECT_REGISTER(627, test::choice_job);
MAPRECT_REGISTER_REDUCE(628, maprect::test::relieved_partial)

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

/// The last rank: with hosts of several ranks it is not on the root's host.
int slow_rank() { return std::max(1, test::the_cluster->size() - 1); }

/// MAPRECT_BALANCE as this run has it ("auto" when unset).
std::string balance() {
  const char* v = std::getenv("MAPRECT_BALANCE");
  return v != nullptr && v[0] != '\0' ? v : "auto";
}

/// Whether this run's steady calls claim: under auto and hosts, at 2 ranks and more.
bool claiming() { return test::the_cluster->size() > 1 && (balance() == "auto" || balance() == "hosts"); }

/// Whether the cluster's last steady call went by claims (it reports who ran what).
bool last_call_claimed() { return !detail::last_call_balance().ends.empty(); }

/// `calls` calls of site Id with the parameter kinds given, each checked bit for bit (values and gradient) and
/// node for node against the call in process, and each steady one for going by claims exactly when this run
/// claims and they `pay`. Returns the jobs of rank `rank`'s chunk that other ranks ran, over the steady calls.
template <int Id, class T_shared, class T_job>
int drive(const choice_data& d, int calls, int rank, bool pay = true) {
  test::tape_added serial_tape, tape;
  const auto serial =
      test::in_process([&] { return evaluate<Id, test::choice_job, T_shared, T_job>(d.phi, d.theta, d.x_r, d.x_i, &serial_tape); });
  const int J = static_cast<int>(d.x_r.size()), R = test::the_cluster->size();
  int others_ran = 0;
  for (int call = 0; call < calls; ++call) {
    INFO("call " << call << ", ranks " << R << ", MAPRECT_BALANCE=" << balance());
    const auto distributed = evaluate<Id, test::choice_job, T_shared, T_job>(d.phi, d.theta, d.x_r, d.x_i, &tape);
    CHECK(tape.nodes == serial_tape.nodes);
    test::check_same_bits(distributed, serial);
    if (call == 0 || R == 1) continue;  // the first call plans: it runs the static split
    CHECK(last_call_claimed() == (claiming() && pay));
    if (!last_call_claimed()) continue;
    const detail::balance_report b = detail::last_call_balance();
    REQUIRE(static_cast<int>(b.ends.size()) == R);
    // Every job ran once: the ranks' own jobs and those they took add up to the call's.
    int ran = 0;
    for (int r = 0; r < R; ++r) ran += b.ends[r] + b.taken[r];
    CHECK(ran == J);
    const cluster::profile p = test::the_cluster->last_call_profile();
    // The plan's chunks: the root's share, then the rest split between the workers as chunk_plan does.
    auto first = [&](int r) { return r == 0 ? 0 : p.root_jobs + (J - p.root_jobs) * (r - 1) / (R - 1); };
    const int chunk = (rank + 1 < R ? first(rank + 1) : J) - first(rank);
    others_ran += chunk - b.ends[rank];
  }
  return others_ran;
}

}  // namespace

TEST_CASE("auto across hosts: a slow rank's jobs are run by the others, with the in-process bits") {
  // The last rank sleeps 3 ms in each job, the others spin 50 us: its chunk is the call's time unless the
  // others take from it.
  const int slow = slow_rank();
  const choice_data d(24, 50, slow, 3000);
  const int taken = drive<621, var, var>(d, 12, slow);
  INFO("ranks " << test::the_cluster->size() << ": others ran " << taken << " of the slow rank's jobs");
  if (claiming()) CHECK(taken > 0);
  else CHECK(taken == 0);
}

TEST_CASE("auto across hosts: a short site whose jobs cost alike runs by claims where they pay") {
  const choice_data d(64, 0);
  drive<622, var, var>(d, 20, 0);
}

TEST_CASE("auto across hosts: a site whose calls last fewer round trips than claims pay for runs by the split") {
  // A round trip of 10 s: no call of this test lasts claims_round_trips of them.
  detail::judge_claims_at_round_trip(10);
  const int slow = slow_rank();
  const choice_data d(24, 50, slow, 3000);
  CHECK(drive<627, var, var>(d, 6, slow, false) == 0);
  // The same site once its calls pay: the claims come back, and the slow rank's jobs move.
  detail::judge_claims_at_round_trip(0);
  const int taken = drive<627, var, var>(d, 6, slow);
  if (claiming()) CHECK(taken > 0);
}

TEST_CASE("auto across hosts: claimed calls give the in-process bits for every kind of parameters") {
  const choice_data d(16, 50, slow_rank(), 1500);
  drive<623, double, var>(d, 8, 0);
  drive<624, var, double>(d, 8, 0);
  drive<625, double, double>(d, 8, 0);
}

TEST_CASE("auto across hosts: a failing job keeps its type and message; the lowest failing job decides") {
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
  for (int call = 0; call < 12; ++call) {
    INFO("call " << call << ", ranks " << R);
    if (call % 3 == 2) {
      fails_at(call % 2 == 0 ? late_bad : both_bad, call % 2 == 0 ? last_of_slow : early);
      // A failed steady call went by claims exactly when the good ones do.
      if (R > 1) CHECK(last_call_claimed() == claiming());
    }
    // The cluster is in step: the next call gives the in-process bits.
    CHECK(evaluate<626, test::choice_job, var, var>(good.phi, good.theta, good.x_r, good.x_i) == expected);
  }
}

TEST_CASE("auto across hosts: reduce_sum claims by the same rule, and gives the in-process bits either way") {
  const int R = test::the_cluster->size();
  // 24 terms, one a slice, each sleeping 200 us (relieved_partial with no owner: it never waits).
  const std::vector<int> info = {-1, 0, 0, -1, 0, 200, 0};
  std::vector<var> terms;
  for (int k = 0; k < 24; ++k) terms.push_back(0.03 * k - 0.4);
  const std::vector<var> phi = {0.25, 0.75};
  const auto evaluate = [&] { return test::relieved_sum_and_adjoints<628>(terms, phi, info); };
  const std::vector<double> serial = test::in_process(evaluate);
  auto claims_messages = [] { return test::the_cluster->last_call_traffic().claims_messages; };
  detail::judge_claims_at_round_trip(10);  // no call lasts claims_round_trips of these
  for (int call = 0; call < 3; ++call) {
    INFO("call " << call << " of a site whose claims do not pay, ranks " << R);
    CHECK(evaluate() == serial);
    CHECK(claims_messages() == 0u);
  }
  detail::judge_claims_at_round_trip(0);
  for (int call = 0; call < 3; ++call) {
    INFO("call " << call << " of a site whose claims pay, ranks " << R);
    CHECK(evaluate() == serial);
    if (claiming()) CHECK(claims_messages() > 0u);
    else CHECK(claims_messages() == 0u);
  }
}
