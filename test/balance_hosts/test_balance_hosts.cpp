// Dynamic balancing across hosts (MAPRECT_BALANCE=hosts, which this test's CTest entries and
// scripts/netns-hosts.sh set): any rank
// out of jobs takes batches of a slower rank's unstarted jobs, the root's own included. The results stay bit-equal to in process
// whoever runs a job, a slow rank's jobs are run by the others, and a failing job keeps the error rules
// (the failing job of lowest index decides, wherever it ran).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "balance_hosts/functors.hpp"
#include "mpi/compare.hpp"
#include "support/claims_always_pay.hpp"
#include "src/cluster/cluster_state.hpp"
#include "src/balance/claims_engine.hpp"
#include "support/matchers.hpp"
#include "support/mpi_test.hpp"
#include "src/cluster/test_hooks.hpp"

using namespace maprect;
using test::bit_equal;
using test::evaluate;

MAPRECT_REGISTER(601, test::rank_slowed_job);
MAPRECT_REGISTER(602, test::rank_slowed_job);
MAPRECT_REGISTER(603, test::rank_slowed_job);
MAPRECT_REGISTER(604, test::rank_slowed_job);
MAPRECT_REGISTER(605, test::rank_slowed_job);
MAPRECT_REGISTER(606, test::rank_slowed_job);
MAPRECT_REGISTER(607, test::rank_slowed_job);
MAPRECT_REGISTER(608, test::rank_slowed_job);
MAPRECT_REGISTER(609, test::rank_slowed_job);
MAPRECT_REGISTER(610, test::rank_slowed_job);
MAPRECT_REGISTER(611, test::rank_slowed_job);
MAPRECT_REGISTER(612, test::rank_slowed_job);
MAPRECT_REGISTER(613, test::rank_slowed_job);
MAPRECT_REGISTER(614, test::rank_slowed_job);
MAPRECT_REGISTER(615, test::rank_slowed_job);

namespace {

/// Data for rank_slowed_job: `jobs` jobs spinning `us` microseconds, job j with j % 4 outputs (some none),
/// and on rank `slow_rank` `sleep_us` microseconds more; the jobs in `failing` throw.
struct slowed_data {
  std::vector<std::vector<double>> x_r;
  std::vector<std::vector<int>> x_i;
  Eigen::VectorXd phi = Eigen::VectorXd::Constant(2, 0.25);
  std::vector<Eigen::VectorXd> theta;
  slowed_data(int jobs, int us, int slow_rank = -1, int sleep_us = 0, std::vector<int> failing = {}) {
    for (int j = 0; j < jobs; ++j) {
      x_r.push_back({0.5 * j + 0.125});
      x_i.push_back({us, j % 4, 0, slow_rank, sleep_us});
      theta.push_back(Eigen::VectorXd::LinSpaced(2, 0.1 * j, 1.0 - 0.1 * j));
    }
    for (int j : failing) x_i[j][2] = 1;
  }
};

bool balancing_across_hosts() {
  const char* v = std::getenv("MAPRECT_BALANCE");
  return v != nullptr && std::strcmp(v, "hosts") == 0;
}

/// Whether MAPRECT_TEST_HOLD_RANK pins `rank` (as the ranks agreed it): after its first batch it runs no more
/// until another rank took some of its jobs, so that others run the back of its chunk in every steady call.
bool held(int rank) { return detail::live_cluster_root()->settings.test_held_rank == rank; }

int sum(const std::vector<int>& v, std::size_t from) {
  int total = 0;
  for (std::size_t k = from; k < v.size(); ++k) total += v[k];
  return total;
}

}  // namespace

TEST_CASE("runs under MAPRECT_BALANCE=hosts, and the runtime balances across hosts then") {
  REQUIRE(balancing_across_hosts());
  const slowed_data d(12, 10);
  const auto serial =
      test::in_process([&] { return evaluate<607, test::rank_slowed_job, var, var>(d.phi, d.theta, d.x_r, d.x_i); });
  for (int call = 0; call < 2; ++call)  // the first call ships the data; the second is a steady one
    CHECK(evaluate<607, test::rank_slowed_job, var, var>(d.phi, d.theta, d.x_r, d.x_i) == serial);
  // Who ran which jobs is reported only when the runtime balances across hosts.
  const std::size_t ranks = static_cast<std::size_t>(test::the_cluster->size());
  if (ranks > 1) CHECK(detail::last_call_balance().ends.size() == ranks);
}

TEST_CASE("claims forced from the start give the in-process bits, for every kind of parameters") {
  // The root runs none of its own jobs: it takes batches from the workers from the first moment on.
  const slowed_data d(40, 100);
  detail::plan_root_share(601, 0);
  detail::plan_root_share(602, 0);
  detail::plan_root_share(603, 0);
  detail::plan_root_share(604, 0);
  test::check_bit_equal<601, test::rank_slowed_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);
  test::check_bit_equal<602, test::rank_slowed_job, double, var>(d.phi, d.theta, d.x_r, d.x_i);
  test::check_bit_equal<603, test::rank_slowed_job, var, double>(d.phi, d.theta, d.x_r, d.x_i);
  test::check_bit_equal<604, test::rank_slowed_job, double, double>(d.phi, d.theta, d.x_r, d.x_i);
  const int R = test::the_cluster->size();
  if (R == 1) return;
  // Every worker's chunk ended where it stopped running its own jobs; the root ran the rest of them.
  const detail::balance_report b = detail::last_call_balance();
  REQUIRE(static_cast<int>(b.ends.size()) == R);
  REQUIRE(static_cast<int>(b.taken.size()) == R);
  const int root_taken = test::the_cluster->last_call_profile().taken_jobs;
  const int chunk = 40 / (R - 1);  // (J - 0) / (R - 1) split evenly here for R = 2, 3, 5; at most one off
  int others = 0;
  for (int r = 1; r < R; ++r) {
    CHECK(b.ends[r] >= 0);
    CHECK(b.ends[r] <= chunk + 1);
    others += b.taken[r];
  }
  CHECK(root_taken + others == 40 - sum(b.ends, 1));
}

TEST_CASE("the jobs of a slow rank are run by the others, with the in-process bits") {
  const int R = test::the_cluster->size();
  // Rank 1 sleeps 4 ms in each job, the others spin 50 us. The root's own share is half the jobs.
  const int J = 48;
  const slowed_data d(J, 50, 1, 4000);
  const auto serial =
      test::in_process([&] { return evaluate<605, test::rank_slowed_job, var, var>(d.phi, d.theta, d.x_r, d.x_i); });
  detail::plan_root_share(605, J / 2);
  // Who ran what is the schedule's: every steady call accounts for each job once. That others ran the back of
  // the slow rank's chunk in every steady call is pinned by holding rank 1 (the test's "held" entries): on a
  // loaded machine a preempted 50 us job can last a time slice, and the others need not outrun its 4 ms sleeps.
  int taken_by_root = 0, taken_by_workers = 0, calls_helping_1 = 0;
  for (int call = 0; call < 4; ++call) {
    INFO("call " << call << ", ranks " << R);
    const auto distributed = evaluate<605, test::rank_slowed_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);
    REQUIRE(distributed.size() == serial.size());
    for (std::size_t k = 0; k < serial.size(); ++k) {
      INFO("entry " << k);
      CHECK(bit_equal(distributed[k], serial[k]));
    }
    if (call == 0 || R == 1) continue;  // the first call plans: it runs the static split
    const detail::balance_report b = detail::last_call_balance();
    REQUIRE(static_cast<int>(b.ends.size()) == R);
    const int chunk_of_1 = (J - J / 2) / (R - 1);
    CHECK(b.ends[1] <= chunk_of_1);
    CHECK(sum(b.ends, 0) + sum(b.taken, 0) == J);  // each job ran exactly once
    calls_helping_1 += b.ends[1] < chunk_of_1 ? 1 : 0;  // others ran the back of the slow rank's chunk
    CHECK(b.taken[0] == test::the_cluster->last_call_profile().taken_jobs);
    taken_by_root += b.taken[0];
    taken_by_workers += sum(b.taken, 2);
  }
  // Which of the others asks first is the schedule's as well (on a loaded machine each ask waits for its
  // owner to be scheduled): the root and the other workers share the slow rank's jobs as their asks come.
  INFO("the root took " << taken_by_root << " jobs, the workers " << taken_by_workers);
  if (R > 1 && held(1)) CHECK(calls_helping_1 == 3);
  if (R > 1 && held(1)) CHECK(taken_by_root + taken_by_workers >= 3);
}

TEST_CASE("a failing job that another rank took keeps its type and message; the lowest failing job decides") {
  const int R = test::the_cluster->size();
  const int J = 32;
  // The slow rank 1 holds jobs [J / 2, J / 2 + chunk): the last of them is taken by another rank, and with
  // `early` failing too, the earlier one (run by rank 1 itself, later in time) decides.
  const int chunk = R > 1 ? (J - J / 2) / (R - 1) : J;
  const int last_of_1 = R > 1 ? J / 2 + chunk - 1 : J - 1;
  const int early = R > 1 ? J / 2 + 1 : 1;
  const slowed_data good(J, 50, 1, 3000), late_bad(J, 50, 1, 3000, {last_of_1}),
      both_bad(J, 50, 1, 3000, {early, last_of_1});
  detail::plan_root_share(606, J / 2);
  const auto expected = test::in_process(
      [&] { return evaluate<606, test::rank_slowed_job, var, var>(good.phi, good.theta, good.x_r, good.x_i); });
  CHECK(evaluate<606, test::rank_slowed_job, var, var>(good.phi, good.theta, good.x_r, good.x_i) == expected);
  auto fails_at = [&](const slowed_data& d, int job) {
    const std::string at = "job gave up at " + std::to_string(0.5 * job + 0.125);
    CHECK_THROWS_MATCHES((evaluate<606, test::rank_slowed_job, var, var>(d.phi, d.theta, d.x_r, d.x_i)),
                         std::out_of_range, test::message_contains({at, "job " + std::to_string(job)}));
    recover_memory();
  };
  for (int repeat = 0; repeat < 2; ++repeat) {
    INFO("repeat " << repeat << ", ranks " << R);
    fails_at(late_bad, last_of_1);
    fails_at(both_bad, early);
    // The cluster is in step: the next call gives the in-process bits.
    CHECK(evaluate<606, test::rank_slowed_job, var, var>(good.phi, good.theta, good.x_r, good.x_i) == expected);
  }
}

namespace {

/// Checks who ran the jobs of the last steady call: every one of the J jobs ran once, the root its first
/// job at least, the workers the rest of its chunk. Returns where the root's own jobs ended (`root_jobs` at
/// one rank): how far the workers got into its chunk is the schedule's, which the callers sum over calls.
int check_root_jobs_taken(int J, int root_jobs) {
  const int R = test::the_cluster->size();
  if (R == 1) return root_jobs;
  const detail::balance_report b = detail::last_call_balance();
  REQUIRE(static_cast<int>(b.ends.size()) == R);
  INFO("ranks " << R << ", the root's own jobs ended at " << b.ends[0] << " of " << root_jobs);
  CHECK(b.ends[0] >= 1);  // the root always runs its first job
  CHECK(b.ends[0] <= root_jobs);
  CHECK(sum(b.taken, 1) >= root_jobs - b.ends[0]);
  CHECK(sum(b.ends, 0) + sum(b.taken, 0) == J);  // each job ran exactly once
  return b.ends[0];
}

/// With the root held (MAPRECT_TEST_HOLD_RANK=0: after its first batch it runs no more of its own until a
/// worker took some), checks that the workers ran jobs of the slow root's chunk in every call whose root ends
/// are `ends`. Without the hold that is the schedule's (on a loaded machine each ask waits for its owner to be
/// scheduled, and a preempted 50 us job can outlast the root's 3 ms sleeps), and nothing is asserted. What an
/// owner grants per ask is test_grant_rule's.
void check_workers_took_some(const std::vector<int>& ends, int root_jobs) {
  if (test::the_cluster->size() == 1 || !held(0)) return;
  INFO("the root's own jobs ended at " << *std::max_element(ends.begin(), ends.end()) << " of " << root_jobs);
  CHECK(*std::max_element(ends.begin(), ends.end()) < root_jobs);
}

}  // namespace

TEST_CASE("the jobs of a slow root are run by the workers, with the in-process bits, for every kind of parameters") {
  // The root sleeps 3 ms in each job, the workers spin 50 us. The root's own share is half the jobs.
  const int J = 48, root_jobs = J / 2;
  const slowed_data d(J, 50, 0, 3000);
  for (int id : {608, 609, 610, 611}) detail::plan_root_share(id, root_jobs);
  // Each compares three calls with the in-process tape (nodes, bytes) and bits: the first plans, two are steady.
  std::vector<int> ends;
  test::check_bit_equal<608, test::rank_slowed_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);
  ends.push_back(check_root_jobs_taken(J, root_jobs));
  test::check_bit_equal<609, test::rank_slowed_job, double, var>(d.phi, d.theta, d.x_r, d.x_i);
  ends.push_back(check_root_jobs_taken(J, root_jobs));
  test::check_bit_equal<610, test::rank_slowed_job, var, double>(d.phi, d.theta, d.x_r, d.x_i);
  ends.push_back(check_root_jobs_taken(J, root_jobs));
  test::check_bit_equal<611, test::rank_slowed_job, double, double>(d.phi, d.theta, d.x_r, d.x_i);
  ends.push_back(check_root_jobs_taken(J, root_jobs));
  check_workers_took_some(ends, root_jobs);
}

TEST_CASE("a failing job among the root's that a worker took keeps its type and message; the lowest job decides") {
  const int R = test::the_cluster->size();
  const int J = 48, root_jobs = J / 2, last_of_root = root_jobs - 1;
  // A negative theta(0) fails the job in a steady call: the data stay, so the claims run as before.
  const slowed_data good(J, 50, 0, 3000);
  slowed_data late_bad = good, both_bad = good;
  late_bad.theta[last_of_root](0) = -1;
  both_bad.theta[last_of_root](0) = -1;
  // The root's fifth job fails too: the root runs its first ones itself (3 ms each), and a worker asking
  // meanwhile is granted the back of the chunk, so the last job fails first in time, the fifth decides.
  both_bad.theta[4](0) = -1;
  detail::plan_root_share(612, root_jobs);
  const auto expected = test::in_process(
      [&] { return evaluate<612, test::rank_slowed_job, var, var>(good.phi, good.theta, good.x_r, good.x_i); });
  CHECK(evaluate<612, test::rank_slowed_job, var, var>(good.phi, good.theta, good.x_r, good.x_i) == expected);
  // Which rank ran a failing job is the schedule's: the claims report where the root's own jobs ended (it runs
  // them from the front), and the error must name the root exactly for the jobs before that end.
  std::vector<int> ends;
  auto fails_at = [&](const slowed_data& d, int job) {
    std::string what;
    try {
      evaluate<612, test::rank_slowed_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);
    } catch (const std::out_of_range& e) {
      what = e.what();
    }
    recover_memory();
    INFO(what);
    CHECK(what.find("map_rect: job " + std::to_string(job)) != std::string::npos);
    CHECK(what.find("job gave up at " + std::to_string(0.5 * job + 0.125)) != std::string::npos);
    if (R == 1) return;
    const detail::balance_report b = detail::last_call_balance();
    REQUIRE(static_cast<int>(b.ends.size()) == R);
    ends.push_back(b.ends[0]);
    // The rank that ran the job is named: the root for its own, a worker for one it was granted.
    CHECK((what.find(" on rank 0 ") != std::string::npos) == (job < b.ends[0]));
    CHECK(what.find(" on rank ") != std::string::npos);
  };
  std::vector<int> good_ends;
  for (int repeat = 0; repeat < 2; ++repeat) {
    INFO("repeat " << repeat << ", ranks " << R);
    fails_at(late_bad, last_of_root);
    fails_at(both_bad, 4);
    // The cluster is in step: the next call gives the in-process bits, and the workers take the root's jobs.
    CHECK(evaluate<612, test::rank_slowed_job, var, var>(good.phi, good.theta, good.x_r, good.x_i) == expected);
    good_ends.push_back(check_root_jobs_taken(J, root_jobs));
  }
  if (R == 1) return;
  // The root sleeps 3 ms per job, the workers spin 50 us; held, in every call a worker was granted the root's
  // last job (it failed off the root), and in every good call the workers ran jobs of the root's chunk.
  check_workers_took_some(ends, last_of_root + 1);
  check_workers_took_some(good_ends, root_jobs);
}

TEST_CASE("with a message stream the root keeps its own jobs: their text reaches the stream in job order") {
  const int R = test::the_cluster->size();
  const int J = 24, root_jobs = J / 2;
  const slowed_data d(J, 50, 0, 2000);
  detail::plan_root_share(613, root_jobs);
  const auto expected = test::in_process(
      [&] { return evaluate<613, test::rank_slowed_job, var, var>(d.phi, d.theta, d.x_r, d.x_i); });
  for (int call = 0; call < 2; ++call) {
    std::ostringstream text;
    Eigen::Matrix<var, Eigen::Dynamic, 1> phi = d.phi.cast<var>();
    std::vector<Eigen::Matrix<var, Eigen::Dynamic, 1>> theta;
    for (const auto& t : d.theta) theta.push_back(t.cast<var>());
    const auto out = map_rect<613, test::rank_slowed_job>(phi, theta, d.x_r, d.x_i, &text);
    CHECK(test::values_and_gradient(out, phi, theta) == expected);
  }
  if (R == 1) return;
  CHECK(detail::last_call_balance().ends[0] == root_jobs);
}

namespace {

/// Values and gradient of the sum of map_rect<Id> over `data` with var parameters (those of `d`).
template <int Id>
std::vector<double> evaluate_data(const slowed_data& d, const job_data& data) {
  Eigen::Matrix<var, Eigen::Dynamic, 1> phi = d.phi.cast<var>();
  std::vector<Eigen::Matrix<var, Eigen::Dynamic, 1>> theta;
  for (const auto& t : d.theta) theta.push_back(t.cast<var>());
  const auto out = map_rect<Id, test::rank_slowed_job>(phi, theta, data);
  return test::values_and_gradient(out, phi, theta);
}

/// Rows of call site `id`'s job_data that the root sent to thieves with claims so far (of its own jobs, and of
/// workers' jobs it forwarded to other workers), over every job_data the site had.
long long root_rows_sent(int id) { return detail::live_cluster_root()->root.sent_rows[id].rows; }

/// The (worker, job) pairs whose rows the root has sent for call site `id`'s current job_data.
long long rows_held(int id) {
  long long pairs = 0;
  for (const auto& worker : detail::live_cluster_root()->root.sent_rows[id].held)
    pairs += std::count(worker.begin(), worker.end(), 1);
  return pairs;
}

}  // namespace

TEST_CASE("a job_data's rows of the root's jobs go to each worker once; a new job_data's go again") {
  const int R = test::the_cluster->size();
  const int J = 48, root_jobs = J / 2;
  slowed_data d(J, 50, 0, 3000);
  const job_data data(d.x_r, d.x_i);
  detail::plan_root_share(614, root_jobs);
  const auto expected = test::in_process([&] { return evaluate_data<614>(d, data); });
  int taken = 0;  // the root's jobs the workers ran in the steady calls
  std::vector<int> ends;
  for (int call = 0; call < 6; ++call) {
    INFO("call " << call << ", ranks " << R);
    CHECK(evaluate_data<614>(d, data) == expected);
    if (call == 0 || R == 1) continue;  // the first call plans: it runs the static split
    ends.push_back(check_root_jobs_taken(J, root_jobs));
    taken += root_jobs - ends.back();
  }
  check_workers_took_some(ends, root_jobs);
  // A failure in the root's last job, which a worker takes: the error keeps its type and message, and the
  // next calls, whose claims run from the rows the workers hold, give the in-process bits.
  slowed_data bad = d;
  bad.theta[root_jobs - 1](0) = -1;
  for (int call = 0; call < 2; ++call) {
    CHECK_THROWS_MATCHES(evaluate_data<614>(bad, data), std::out_of_range,
                         test::message_contains({"job " + std::to_string(root_jobs - 1), "job gave up at"}));
    recover_memory();
    CHECK(evaluate_data<614>(d, data) == expected);
  }
  if (R == 1) return;
  const long long first_rows = root_rows_sent(614);
  CHECK(first_rows > 0);
  // Each worker got each row once at most: the rows sent are the (worker, job) pairs that hold one. Which
  // jobs a worker ran for others is the schedule's: the root's, or another worker's that the root forwarded.
  CHECK(first_rows == rows_held(614));
  CHECK(first_rows <= static_cast<long long>(R - 1) * J);
  // The one worker ran rows it held from earlier calls: with the root held, it ran most of the root's jobs in
  // every call (the root 3 ms per job, the worker 50 us), which no schedule pins without the hold.
  if (R == 2 && held(0)) CHECK(taken > first_rows);
  // Other rows under the same call site: a new job_data, whose rows go to the workers again.
  for (auto& row : d.x_r) row[0] += 100;
  const job_data other(d.x_r, d.x_i);
  const auto expected_other = test::in_process([&] { return evaluate_data<614>(d, other); });
  REQUIRE(expected_other != expected);
  bool granted = false;  // a worker ran a job of another rank's: its rows went to it
  std::vector<int> other_ends;
  for (int call = 0; call < 3; ++call) {
    INFO("new data, call " << call << ", ranks " << R);
    CHECK(evaluate_data<614>(d, other) == expected_other);
    const detail::balance_report b = detail::last_call_balance();
    granted = granted || (!b.taken.empty() && sum(b.taken, 1) > 0);
    if (!b.ends.empty()) other_ends.push_back(b.ends[0]);
  }
  check_root_jobs_taken(J, root_jobs);
  CHECK((root_rows_sent(614) > first_rows) == granted);
  CHECK(root_rows_sent(614) - first_rows == rows_held(614));
  check_workers_took_some(other_ends, root_jobs);  // the root sleeps 3 ms per job, the workers spin 50 us
}

TEST_CASE("a root's job that a worker took and whose output count changed plans the call anew, with its bits") {
  const int R = test::the_cluster->size();
  const int J = 48, root_jobs = J / 2, last_of_root = root_jobs - 1;
  const slowed_data d(J, 50, 0, 3000);
  slowed_data more = d;  // a parameter, not the data: the call that changes the count is a steady one
  more.theta[last_of_root](1) = 200;
  detail::plan_root_share(615, root_jobs);
  const auto expected = test::in_process(
      [&] { return evaluate<615, test::rank_slowed_job, var, var>(d.phi, d.theta, d.x_r, d.x_i); });
  const auto expected_more = test::in_process(
      [&] { return evaluate<615, test::rank_slowed_job, var, var>(more.phi, more.theta, more.x_r, more.x_i); });
  REQUIRE(expected_more.size() == expected.size() + 1);  // one more value, as many gradient entries
  for (int round = 0; round < 2; ++round) {
    INFO("round " << round << ", ranks " << R);
    for (int call = 0; call < 2; ++call)  // planned, then steady: the workers take the root's last jobs
      CHECK(evaluate<615, test::rank_slowed_job, var, var>(d.phi, d.theta, d.x_r, d.x_i) == expected);
    check_root_jobs_taken(J, root_jobs);
    CHECK(evaluate<615, test::rank_slowed_job, var, var>(more.phi, more.theta, more.x_r, more.x_i) == expected_more);
    CHECK(evaluate<615, test::rank_slowed_job, var, var>(more.phi, more.theta, more.x_r, more.x_i) == expected_more);
  }
}
