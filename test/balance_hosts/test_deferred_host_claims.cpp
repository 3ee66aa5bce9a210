// A deferred call's jobs claimed in host memory: under claims by message the ranks of a host claim each other's
// unstarted jobs there, run them on tapes they keep, and the reverse pass sweeps each job where it ran. On one
// host (this test's plain CTest entries) and on hosts of MAPRECT_TEST_HOST_RANKS ranks, every call gives the
// in-process bits of the deferred call, values and gradient; the report of who ran which job adds up, and jobs
// move in host memory only between ranks of one host. With MAPRECT_TEST_HOLD_RANK set to a worker that shares
// its host with exactly one other worker, the held worker grants the root none of its jobs, so the jobs of its
// chunk that others run are exactly those that worker claimed in host memory, and that worker keeps their
// tapes; a job among them that throws in the reverse pass is named with that worker's rank. The root's own range
// stays out of host memory: the jobs of its that it does not run go by message.
#include <catch2/catch.hpp>
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "balance_hosts/functors.hpp"
#include "balance_hosts/peer_hosts.hpp"
#include "map_rect/deferred_problem.hpp"
#include "map_rect/functors.hpp"
#include "mpi/compare.hpp"
#include "src/balance/claims_engine.hpp"
#include "src/cluster/test_hooks.hpp"
#include "support/claims_always_pay.hpp"
#include "support/matchers.hpp"
#include "support/mpi_test.hpp"

using namespace maprect;
using test::first_of;
using test::check_taken_in_host;
using test::pinned_peer;
using test::peer_data;
using test::setting;

MAPRECT_REGISTER(641, test::rank_slowed_job);
MAPRECT_REGISTER(642, test::reverse_throwing_job);

namespace {


std::vector<double> evaluate_deferred(const peer_data& d) {
  const test::reverse_mode_scope deferred("deferred");
  return test::evaluate<641, test::rank_slowed_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);
}

/// Checks the last deferred call's report: every job ran once and keeps its tape where it ran, and jobs moved
/// in host memory only between ranks of a host. Returns the jobs the held worker's peer claimed there.
int check_report(int J) {
  const int R = test::the_cluster->size();
  const detail::balance_report b = detail::last_call_balance();
  REQUIRE(static_cast<int>(b.runners.size()) == J);
  REQUIRE(static_cast<int>(b.ends.size()) == R);
  REQUIRE(static_cast<int>(b.taken_in_host.size()) == R);
  const int root_jobs = test::the_cluster->last_call_profile().root_jobs;
  for (int r = 0; r < R; ++r) {
    INFO("rank " << r);
    CHECK(std::count(b.runners.begin(), b.runners.end(), r) == b.ends[r] + b.taken[r]);
    for (int j = first_of(r, J, root_jobs, R); j < first_of(r, J, root_jobs, R) + b.ends[r]; ++j)
      CHECK(b.runners[j] == r);
    check_taken_in_host(r, b.taken_in_host[r], b.taken[r], R);
  }
  const int peer = pinned_peer(R), held = setting("MAPRECT_TEST_HOLD_RANK", -1);
  // The root's jobs it did not run went by message (its range stays out of host memory). Whether a held root
  // grants any depends on the thieves' paces (grant_for), so only where they went is asserted.
  for (int j = b.ends[0]; j < root_jobs; ++j) CHECK(b.runners[j] > 0);
  if (peer < 0) return 0;
  // The held worker granted the root none: its peer claimed, and keeps, all of its jobs it did not run (on the
  // root's host, some of the root's jobs too).
  const int end = first_of(held + 1, J, root_jobs, R);
  CHECK(end - first_of(held, J, root_jobs, R) - b.ends[held] <= b.taken_in_host[peer]);
  for (int j = first_of(held, J, root_jobs, R) + b.ends[held]; j < end; ++j) CHECK(b.runners[j] == peer);
  CHECK(b.taken_in_host[peer] > 0);
  return b.taken_in_host[peer];
}

}  // namespace

TEST_CASE("deferred host claims: the in-process bits, and each job's tape where it ran") {
  const int R = test::the_cluster->size(), J = 24;
  const peer_data d(J);
  const auto serial = test::in_process([&] { return evaluate_deferred(d); });
  int in_host = 0;
  for (int call = 0; call < 6; ++call) {
    INFO("call " << call << ", ranks " << R);
    const auto distributed = evaluate_deferred(d);
    test::check_same_bits(distributed, serial);
    // The first call runs by the static split and reports the output counts that claims need.
    if (call > 0 && R > 1) in_host += check_report(J);
  }
  if (pinned_peer(R) >= 0) CHECK(in_host > 0);
  CHECK(detail::kept_tapes_of_thread().live_calls == 0);
}

TEST_CASE("deferred host claims: a reverse pass that throws on a job claimed in host memory names its rank") {
  const int R = test::the_cluster->size(), peer = pinned_peer(R), held = setting("MAPRECT_TEST_HOLD_RANK", -1);
  if (peer < 0) return;
  // The held worker's last job, which it leaves to its peer: the peer keeps its tape and runs its reverse.
  const int J = 24, failing = first_of(held + 1, J, J / R, R) - 1;
  Eigen::VectorXd phi_d = Eigen::VectorXd::Constant(2, 0.5);
  std::vector<Eigen::VectorXd> theta_d(J, Eigen::VectorXd::Constant(2, 0.25));
  std::vector<std::vector<double>> x_r(J, std::vector<double>(1, 0.0));
  std::vector<std::vector<int>> x_i(J, std::vector<int>{0});
  x_i[failing][0] = 1;
  const test::reverse_mode_scope deferred("deferred");
  for (int call = 0; call < 3; ++call) {  // the first by the static split, the others by claims
    INFO("call " << call);
    const vector_v phi = to_var(phi_d);
    std::vector<vector_v> theta;
    for (const auto& t : theta_d) theta.push_back(to_var(t));
    const vector_v y = map_rect<642, test::reverse_throwing_job>(phi, theta, x_r, x_i);
    const detail::balance_report b = detail::last_call_balance();
    REQUIRE(test::the_cluster->last_call_profile().root_jobs == J / R);
    const int runner = call == 0 ? held : peer;
    if (call > 0) REQUIRE(static_cast<int>(b.runners.size()) == J);
    if (call > 0) CHECK(b.runners[failing] == peer);
    CHECK_THROWS_MATCHES(grad(y.sum()), std::domain_error,
                         test::message_contains({"job " + std::to_string(failing), "rank " + std::to_string(runner) + " "}));
    recover_memory();
  }
  CHECK(detail::kept_tapes_of_thread().live_calls == 0);
}
