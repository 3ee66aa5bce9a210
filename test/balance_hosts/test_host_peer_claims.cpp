// Claims in host memory between the workers of one host where the ranks span hosts (here hosts of
// MAPRECT_TEST_HOST_RANKS ranks on one machine, which this test's CTest entries set; or real hosts over which
// the launcher placed the ranks round-robin, PEER_CLAIMS_HOSTS_BY_NODE of them, as scripts/netns-hosts.sh
// runs it): under claims by message a
// rank's range is its claim word, and a worker out of jobs claims from the back of its host's ranks, the root's
// too, before it asks the root. Every call gives the in-process bits, the jobs add up, and the root's report says which
// jobs moved in host memory: none where a rank has no other on its host. With MAPRECT_TEST_HOLD_RANK set to a
// rank with one other rank on its host, the held rank grants no other host any of its jobs, and the jobs of its
// chunk that others run are exactly those that rank claimed in host memory; a failing job among them keeps
// its type and message. reduce_sum's slices move the same way between the ranks of a host, the root's too.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "balance_hosts/functors.hpp"
#include "balance_hosts/peer_hosts.hpp"
#include "mpi/compare.hpp"
#include "src/balance/claims_engine.hpp"
#include "src/reduce_sum/claimed_slices.hpp"
#include "support/claims_always_pay.hpp"
#include "support/matchers.hpp"
#include "support/mpi_test.hpp"

using namespace maprect;
using test::evaluate;
using test::peer_data;
using test::chunk_of;
using test::check_taken_in_host;
using test::pinned_peer;
using test::setting;

MAPRECT_REGISTER(631, test::rank_slowed_job);
MAPRECT_REGISTER(632, test::rank_slowed_job);
MAPRECT_REGISTER_REDUCE(633, maprect::test::relieved_partial)

namespace maprect::test {
/// One term a slice, sleeping 300 us; the slice starting at info[0] throws std::domain_error("bad slice <start>").
struct failing_partial {
  template <class T_slice, class T_phi>
  return_type_t<T_slice, T_phi> operator()(const std::vector<T_slice>& slice, int start, int, std::ostream*,
                                           const std::vector<T_phi>& phi, const std::vector<int>& info) const {
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    if (start == info[0]) throw std::domain_error("bad slice " + std::to_string(start));
    return phi[0] * slice[0] + sin(phi[1] + slice[0]);
  }
};
}  // namespace maprect::test

MAPRECT_REGISTER_REDUCE(634, maprect::test::failing_partial)

namespace {


/// Checks the last steady call's report: it went by claims, every job ran once, and claims in host memory
/// only where a worker has another on its host. Returns the jobs the last rank's host peer claimed there.
int check_report(int J) {
  const int R = test::the_cluster->size();
  const detail::balance_report b = detail::last_call_balance();
  REQUIRE(static_cast<int>(b.ends.size()) == R);
  REQUIRE(static_cast<int>(b.taken_in_host.size()) == R);
  int ran = 0;
  for (int r = 0; r < R; ++r) {
    INFO("rank " << r);
    ran += b.ends[r] + b.taken[r];
    check_taken_in_host(r, b.taken_in_host[r], b.taken[r], R);
  }
  CHECK(ran == J);
  const int peer = pinned_peer(R), held = setting("MAPRECT_TEST_HOLD_RANK", -1);
  if (peer < 0) return 0;
  const int root_jobs = test::the_cluster->last_call_profile().root_jobs;
  // The held rank granted the root none: its host peer claimed all of its jobs it did not run.
  CHECK(chunk_of(held, J, root_jobs, R) - b.ends[held] == b.taken_in_host[peer]);
  CHECK(b.taken_in_host[peer] > 0);
  return b.taken_in_host[peer];
}

}  // namespace

TEST_CASE("host peers: claims in host memory give the in-process bits, and the report adds up") {
  const int R = test::the_cluster->size(), J = 24;
  const peer_data d(J);
  test::tape_added serial_tape, tape;
  const auto serial = test::in_process(
      [&] { return evaluate<631, test::rank_slowed_job, var, var>(d.phi, d.theta, d.x_r, d.x_i, &serial_tape); });
  int in_host = 0;
  for (int call = 0; call < 10; ++call) {
    INFO("call " << call << ", ranks " << R);
    const auto distributed = evaluate<631, test::rank_slowed_job, var, var>(d.phi, d.theta, d.x_r, d.x_i, &tape);
    CHECK(tape.nodes == serial_tape.nodes);
    test::check_same_bits(distributed, serial);
    if (call > 0 && R > 1) in_host += check_report(J);
  }
  if (pinned_peer(R) >= 0) CHECK(in_host > 0);
}

TEST_CASE("host peers: a failing job claimed in host memory keeps its type and message") {
  const int R = test::the_cluster->size(), J = 24;
  const peer_data good(J);
  const auto expected = test::in_process(
      [&] { return evaluate<632, test::rank_slowed_job, var, var>(good.phi, good.theta, good.x_r, good.x_i); });
  // The last job is at the back of the last rank's chunk, which its host peer claims when it is held and
  // pinned; the next is early in it, which the last rank runs itself, and decides where both fail.
  const int back = J - 1, early = R > 1 ? J - (J - J / R) / (R - 1) + 1 : 1;
  auto failing = [&](std::vector<int> jobs) {
    peer_data bad = good;
    for (int j : jobs) bad.theta[j](0) = -1.0;
    return bad;
  };
  const peer_data back_bad = failing({back}), both_bad = failing({early, back});
  auto fails_at = [&](const peer_data& d, int job) {
    const std::string gave_up = "job gave up at " + std::to_string(d.x_r[job][0]);
    CHECK_THROWS_MATCHES((evaluate<632, test::rank_slowed_job, var, var>(d.phi, d.theta, d.x_r, d.x_i)),
                         std::out_of_range, test::message_contains({gave_up, "job " + std::to_string(job)}));
    recover_memory();
  };
  for (int call = 0; call < 9; ++call) {
    INFO("call " << call << ", ranks " << R);
    if (call % 3 == 2) fails_at(call % 2 == 0 ? back_bad : both_bad, call % 2 == 0 ? back : early);
    // The cluster is in step: the next call gives the in-process bits.
    CHECK(evaluate<632, test::rank_slowed_job, var, var>(good.phi, good.theta, good.x_r, good.x_i) == expected);
  }
}

TEST_CASE("host peers: reduce_sum's slices are claimed in host memory the same way, with the in-process bits") {
  const int R = test::the_cluster->size();
  // 32 terms, one a slice, each sleeping 300 us (relieved_partial with no owner: it never waits).
  const std::vector<int> info = {-1, 0, 0, -1, 0, 300, 0};
  std::vector<var> terms;
  for (int k = 0; k < 32; ++k) terms.push_back(0.05 * k - 0.7);
  const std::vector<var> phi = {0.5, 0.25};
  const auto evaluate = [&] { return test::relieved_sum_and_adjoints<633>(terms, phi, info); };
  const std::vector<double> serial = test::in_process(evaluate);
  int in_host = 0;
  for (int call = 0; call < 6; ++call) {
    INFO("call " << call << ", ranks " << R);
    CHECK(evaluate() == serial);
    if (R == 1) continue;
    const detail::reduce_balance_report b = detail::last_reduce_balance();
    if (b.taken_in_host.empty()) continue;  // the call ran by the static split or by claims between all ranks
    REQUIRE(static_cast<int>(b.taken_in_host.size()) == R);
    for (int r = 0; r < R; ++r) {
      INFO("rank " << r);
      check_taken_in_host(r, b.taken_in_host[r], b.taken[r], R);
    }
    const int peer = pinned_peer(R), held = setting("MAPRECT_TEST_HOLD_RANK", -1);
    if (peer < 0) continue;
    // The held rank (the root too) granted none by message: its host peer claimed all of its slices it did not
    // run.
    CHECK(b.firsts[held + 1] - b.ends[held] == b.taken_in_host[peer]);
    in_host += b.taken_in_host[peer];
  }
  if (pinned_peer(R) >= 0) CHECK(in_host > 0);
}

TEST_CASE("host peers: a failing slice of the root's range claimed in host memory keeps its type and message") {
  const int R = test::the_cluster->size();
  // Where the root is held and pinned, its host peer claims the back of its range in host memory.
  if (pinned_peer(R) < 0 || setting("MAPRECT_TEST_HOLD_RANK", -1) != 0) return;
  // The terms anew in each call: a failing call's recover_memory() frees the ones before.
  const auto sum_with = [](int failing) {
    std::vector<var> terms;
    for (int k = 0; k < 32; ++k) terms.push_back(0.05 * k - 0.7);
    const std::vector<var> phi = {0.5, 0.25};
    return reduce_sum<634, test::failing_partial>(terms, 1, nullptr, phi, std::vector<int>{failing}).val();
  };
  const double serial = test::in_process([&] { return sum_with(-1); });
  for (int call = 0; call < 6; ++call) {
    INFO("call " << call << ", ranks " << R);
    CHECK(sum_with(-1) == serial);  // steady: the next call with the same data goes by claims
    const detail::reduce_balance_report b = detail::last_reduce_balance();
    REQUIRE(b.firsts.size() == static_cast<std::size_t>(R) + 1);
    const int last_of_root = b.firsts[1] - 1;
    const std::string on_peer = "on rank " + std::to_string(pinned_peer(R));
    CHECK_THROWS_MATCHES(sum_with(last_of_root), std::domain_error,
                         test::message_contains({"bad slice " + std::to_string(last_of_root), on_peer}));
    recover_memory();
    CHECK(sum_with(-1) == serial);
  }
}
