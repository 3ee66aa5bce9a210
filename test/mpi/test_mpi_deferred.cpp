// Deferred reverse mode over the cluster (MAPRECT_REVERSE=deferred): the same bits as the deferred call in
// process for any ranks and threads, eager's gradient within 1e-12, the rows shipped once and again when they
// change, failures of the forward and of the reverse pass named by job and rank with the cluster usable after,
// nested tapes, calls that are never differentiated, and calls with no outputs.
#include <catch2/catch.hpp>
#include <maprect/maprect.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "map_rect/deferred_problem.hpp"
#include "src/balance/claims_engine.hpp"
#include "map_rect/functors.hpp"
#include "mpi/compare.hpp"
#include "support/matchers.hpp"
#include "support/mpi_test.hpp"
#include "src/cluster/test_hooks.hpp"

using namespace maprect;
using test::bit_equal;
using test::check_close;
using test::reverse_mode_scope;
using test::weight;
using test::wide_problem;

namespace maprect::test {

/// x_i[0] outputs, one more where the second shared parameter is over 1: the same rows give other counts.
struct counts_by_value_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>&,
                                                                     const std::vector<int>& x_i, std::ostream*) const {
    const int K = x_i[0] + (value_of(phi(1)) > 1 ? 1 : 0);
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(K);
    for (int k = 0; k < K; ++k) out(k) = phi(0) * theta(0) * (k + 1.0) + phi(1);
    return out;
  }
};

}  // namespace maprect::test

MAPRECT_REGISTER(500, maprect::test::wide_job);
MAPRECT_REGISTER(507, maprect::test::counts_by_value_job);
MAPRECT_REGISTER(501, maprect::test::wide_job);
MAPRECT_REGISTER(502, maprect::test::ragged_outputs_job);
MAPRECT_REGISTER(503, maprect::test::reverse_throwing_job);
MAPRECT_REGISTER(504, maprect::test::throwing_job);
MAPRECT_REGISTER(505, maprect::test::wide_job);
MAPRECT_REGISTER(506, maprect::test::wide_job);

namespace {

/// The values, then the gradient (shared first, then each job's) of sum_k weight(k) y_k, with y from map_rect
/// call site Id under MAPRECT_REVERSE = mode and the given parameter kinds; `forward`, when given, gets the
/// call's traffic (before the reverse pass's).
template <int Id, class F, class T_shared = var, class T_job = var>
std::vector<double> evaluate(const wide_problem& p, const char* mode, cluster::traffic* forward = nullptr) {
  const reverse_mode_scope reverse(mode);
  recover_memory();
  Eigen::Matrix<T_shared, Eigen::Dynamic, 1> phi = p.phi.cast<T_shared>();
  std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>> theta;
  for (const auto& t : p.theta) theta.push_back(t.cast<T_job>());
  const vector_v y = map_rect<Id, F>(phi, theta, p.x_r, p.x_i);
  if (forward != nullptr) *forward = test::the_cluster->last_call_traffic();
  std::vector<double> out;
  var lp = 0;
  for (Eigen::Index k = 0; k < y.size(); ++k) {
    out.push_back(y(k).val());
    lp += weight(k) * y(k);
  }
  grad(lp);
  if constexpr (is_var_v<T_shared>)
    for (Eigen::Index s = 0; s < phi.size(); ++s) out.push_back(phi(s).adj());
  if constexpr (is_var_v<T_job>)
    for (const auto& t : theta)
      for (Eigen::Index q = 0; q < t.size(); ++q) out.push_back(t(q).adj());
  recover_memory();
  return out;
}

/// The rank MAPRECT_TEST_HOLD_RANK holds after its first batch until another rank claimed some of its jobs, or
/// -1.
int held_rank() {
  const char* v = std::getenv("MAPRECT_TEST_HOLD_RANK");
  return v != nullptr && v[0] != '\0' ? std::atoi(v) : -1;
}

/// Whether the cluster's calls may go by claims (MAPRECT_BALANCE=auto, the default).
bool claims_on() {
  const char* v = std::getenv("MAPRECT_BALANCE");
  return test::the_cluster->size() > 1 && (v == nullptr || v[0] == '\0' || std::strcmp(v, "auto") == 0);
}

/// Whether every deferred call that can claim does: under a test's pin, whatever the call's length (else a
/// call claims only when it lasts long enough for claims to pay, which depends on the machine).
bool claims_forced() { return claims_on() && held_rank() >= 0; }

/// Whether `runners`, the last call's report of who ran each of its `jobs` jobs, is as this run requires: every
/// job's where claims are forced, none where nothing claims, either elsewhere.
bool runners_as_required(const std::vector<int>& runners, int jobs, bool claimable = true) {
  if (claims_forced() && claimable) return runners.size() == static_cast<std::size_t>(jobs);
  if (!claims_on() || !claimable) return runners.empty();
  return runners.empty() || runners.size() == static_cast<std::size_t>(jobs);
}

bool all_bit_equal(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (!bit_equal(a[k], b[k])) return false;
  return true;
}

}  // namespace

TEST_CASE("deferred over the cluster: the bits of deferred in process, eager's gradient within 1e-12") {
  INFO("ranks " << test::the_cluster->size());
  const std::vector<std::vector<int>> shapes{std::vector<int>(7, 50), std::vector<int>(13, 3),
                                             std::vector<int>(64, 20), {4, 0, 9, 1, 0, 6, 2, 5, 3}};
  const std::vector<int> params{18, 1, 6, 3};
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    INFO("shape " << i);
    const wide_problem p(shapes[i], params[i]);
    const auto serial = test::in_process([&] { return evaluate<500, test::wide_job>(p, "deferred"); });
    for (int call = 0; call < 3; ++call) {  // the first ships the rows, the others find them held
      INFO("call " << call);
      CHECK(all_bit_equal(evaluate<500, test::wide_job>(p, "deferred"), serial));
    }
    check_close(evaluate<500, test::wide_job>(p, "eager"), serial, 1e-12);
    CHECK(all_bit_equal(evaluate<500, test::wide_job>(p, "deferred"), serial));  // after eager re-planned
    CHECK(detail::kept_tapes_of_thread().live_calls == 0);
  }
}

TEST_CASE("auto over the cluster: call after call, the modes and the bits of the same calls in process") {
  // A new shape runs eager; the same J and M again runs as its last call's outputs chose: K = 50, M = 20 and
  // K = 20, M = 7 pay, K = 3, M = 3 does not, and few ragged outputs of the same J and M turn the site back.
  std::vector<int> few;
  for (int j = 0; j < 64; ++j) few.push_back(j % 4 == 1 ? 2 : j % 2);
  const wide_problem wide(std::vector<int>(7, 50), 18), narrow(std::vector<int>(13, 3), 1);
  const wide_problem many(std::vector<int>(64, 20), 5), ragged(few, 5);
  const std::vector<wide_problem> calls{wide, wide, wide, narrow, narrow, many, many, ragged, many, many};
  const std::vector<bool> deferred{false, true, true, false, false, false, true, true, false, true};
  const auto run_all = [&] {
    std::vector<std::vector<double>> out;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      out.push_back(evaluate<505, test::wide_job>(calls[i], "auto"));
      CHECK(detail::reverse_site_of<505>.last_ran_deferred() == deferred[i]);
    }
    return out;
  };
  const auto serial = test::in_process(run_all);
  const auto cluster = run_all();
  for (std::size_t i = 0; i < calls.size(); ++i) {
    INFO("call " << i << (deferred[i] ? ", deferred" : ", eager"));
    CHECK(all_bit_equal(cluster[i], serial[i]));
  }
  CHECK(detail::kept_tapes_of_thread().live_calls == 0);
}

TEST_CASE("deferred over the cluster by claims: each job swept where it ran, with the bits of in process") {
  const int J = 24, R = test::the_cluster->size(), held = held_rank();
  const wide_problem p(std::vector<int>(J, 6), 5);
  const auto serial = test::in_process([&] { return evaluate<506, test::wide_job>(p, "deferred"); });
  for (int call = 0; call < 4; ++call) {
    INFO("call " << call << ", ranks " << R << ", held rank " << held);
    cluster::traffic t;
    CHECK(all_bit_equal(evaluate<506, test::wide_job>(p, "deferred", &t), serial));
    const detail::balance_report b = detail::last_call_balance();
    // The first call reports the sizes that claims need.
    REQUIRE(runners_as_required(b.runners, J, call > 0));
    if (b.runners.empty()) {
      CHECK(t.claims_messages + t.claims_bytes == 0);
      continue;
    }
    REQUIRE(b.ends.size() == static_cast<std::size_t>(R));
    // Each worker's last ask, the root's "none" to it and the head of its own jobs' result at least; every
    // message an ask, a grant or a head. A deferred call's heads carry no times: 20 bytes each.
    const std::uint64_t workers = static_cast<std::uint64_t>(R - 1), messages = t.claims_messages;
    using detail::ask_message, detail::grant_message, detail::result_head;
    constexpr std::uint64_t head_bytes = offsetof(result_head, busy);
    CHECK(messages >= 3 * workers);
    CHECK(t.claims_bytes >= workers * (sizeof(ask_message) + sizeof(grant_message) + head_bytes));
    CHECK(t.claims_bytes >= messages * sizeof(grant_message));
    CHECK(t.claims_bytes <= messages * std::max(sizeof(ask_message), head_bytes));
    // Each rank keeps the jobs it reports: its own chunk's front, and those it took from others.
    const int root_jobs = test::the_cluster->last_call_profile().root_jobs;
    const auto first = [&](int r) { return r == 0 ? 0 : root_jobs + (J - root_jobs) * (r - 1) / (R - 1); };
    for (int r = 0; r < R; ++r) {
      INFO("rank " << r);
      const int kept = static_cast<int>(std::count(b.runners.begin(), b.runners.end(), r));
      CHECK(kept == b.ends[r] + b.taken[r]);
      for (int j = first(r); j < first(r) + b.ends[r]; ++j) CHECK(b.runners[j] == r);
    }
    if (held >= 0) {  // the held rank's jobs that it did not start ran elsewhere
      const int chunk_end = held + 1 == R ? J : first(held + 1);
      CHECK(first(held) + b.ends[held] < chunk_end);
      for (int j = first(held) + b.ends[held]; j < chunk_end; ++j) CHECK(b.runners[j] != held);
    }
  }
}

TEST_CASE("deferred over the cluster by claims: output counts that change run the call again by the split") {
  wide_problem p(std::vector<int>(16, 3), 2);
  // A call with its site's last counts goes by claims; the first, and each that changes the counts, runs
  // again by the static split, which reports them.
  const std::vector<double> phi1{0.5, 0.5, 2.0, 2.0, 0.5, 0.5};
  const std::vector<bool> by_claims{false, true, false, true, false, true};
  for (std::size_t i = 0; i < phi1.size(); ++i) {
    INFO("call " << i << ", phi1 " << phi1[i]);
    p.phi(1) = phi1[i];
    const auto serial = test::in_process([&] { return evaluate<507, test::counts_by_value_job>(p, "deferred"); });
    CHECK(serial.size() == static_cast<std::size_t>(16 * (phi1[i] > 1 ? 4 : 3) + 2 + 16 * 2));
    CHECK(all_bit_equal(evaluate<507, test::counts_by_value_job>(p, "deferred"), serial));
    CHECK(runners_as_required(detail::last_call_balance().runners, 16, by_claims[i]));
  }
}

TEST_CASE("deferred over the cluster: one kind of parameters var, and rows changed in place") {
  wide_problem p(std::vector<int>(11, 4), 3);
  auto serial_vd = test::in_process([&] { return evaluate<501, test::wide_job, var, double>(p, "deferred"); });
  CHECK(all_bit_equal(evaluate<501, test::wide_job, var, double>(p, "deferred"), serial_vd));
  const auto serial_dv = test::in_process([&] { return evaluate<501, test::wide_job, double, var>(p, "deferred"); });
  CHECK(all_bit_equal(evaluate<501, test::wide_job, double, var>(p, "deferred"), serial_dv));
  p.x_r[9][0] += 1.0;  // the workers' copy is stale: the rows go again
  serial_vd = test::in_process([&] { return evaluate<501, test::wide_job, var, double>(p, "deferred"); });
  CHECK(all_bit_equal(evaluate<501, test::wide_job, var, double>(p, "deferred"), serial_vd));
}

TEST_CASE("deferred over the cluster: ragged outputs and a call with none") {
  wide_problem p({0, 0, 0, 0, 0}, 2);
  const reverse_mode_scope reverse("deferred");
  const vector_v phi = to_var(p.phi);
  std::vector<vector_v> theta;
  for (const auto& t : p.theta) theta.push_back(to_var(t));
  CHECK(map_rect<500, test::wide_job>(phi, theta, p.x_r, p.x_i).size() == 0);
  CHECK(detail::kept_tapes_of_thread().live_calls == 0);
  recover_memory();
  wide_problem ragged({3, 1, 4, 1, 5, 9, 2, 6}, 2);
  for (auto& row : ragged.x_r) row.resize(9, 0.25);
  const auto serial = test::in_process([&] { return evaluate<502, test::ragged_outputs_job>(ragged, "deferred"); });
  CHECK(all_bit_equal(evaluate<502, test::ragged_outputs_job>(ragged, "deferred"), serial));
}

TEST_CASE("deferred over the cluster: a reverse pass that throws names the job and its rank") {
  const int J = 12, failing = 9;
  Eigen::VectorXd phi_d(2);
  phi_d << 1.5, 0.5;
  std::vector<Eigen::VectorXd> theta_d(J, Eigen::VectorXd::Constant(2, 0.25));
  std::vector<std::vector<double>> x_r(J, std::vector<double>(1, 0.0));
  std::vector<std::vector<int>> x_i(J, std::vector<int>{0});
  x_i[failing][0] = 1;
  const reverse_mode_scope reverse("deferred");
  for (int round = 0; round < 2; ++round) {  // the cluster stays usable after the failure
    INFO("round " << round);
    recover_memory();
    const vector_v phi = to_var(phi_d);
    std::vector<vector_v> theta;
    for (const auto& t : theta_d) theta.push_back(to_var(t));
    const vector_v y = map_rect<503, test::reverse_throwing_job>(phi, theta, x_r, x_i);
    CHECK(y(failing).val() == 1.5 * 0.25);
    const var total = y.sum();
    try {
      grad(total);
      FAIL("grad() did not throw");
    } catch (const std::domain_error& e) {
      const std::string what = e.what();
      CHECK(what.find("job " + std::to_string(failing)) != std::string::npos);
      CHECK(what.find("reverse of a job failed") != std::string::npos);
      // The job's tape stays where it ran: by claims, the rank the call reports.
      const detail::balance_report b = detail::last_call_balance();
      const int owner = test::the_cluster->size() == 1 ? 0
                        : b.runners.empty()          ? test::the_cluster->size() - 1
                                                     : b.runners[failing];
      CHECK(test::names_rank_or_root(what, owner, test::the_cluster->size()));
    }
    recover_memory();  // the failing call's node stays on a tape until it is recovered
    const vector_v phi2 = to_var(phi_d);
    std::vector<vector_v> theta2;
    for (const auto& t : theta_d) theta2.push_back(to_var(t));
    std::vector<std::vector<int>> good(J, std::vector<int>{0});
    const vector_v z = map_rect<503, test::reverse_throwing_job>(phi2, theta2, x_r, good);
    grad(z.sum());
    CHECK(phi2(0).adj() == J * 0.25);
    recover_memory();
  }
}

TEST_CASE("deferred over the cluster: a forward pass that throws fails the call as eager does") {
  const int J = 10;
  Eigen::VectorXd phi_d(2);
  phi_d << 1.0, 2.0;
  std::vector<Eigen::VectorXd> theta_d(J, Eigen::VectorXd::Constant(1, 0.5));
  std::vector<std::vector<double>> x_r(J, std::vector<double>(1, 0.0));
  std::vector<std::vector<int>> x_i(J, std::vector<int>{0, 0});
  for (int j = 0; j < J; ++j) x_i[j][1] = j;
  x_i[7][0] = 2;
  const reverse_mode_scope reverse("deferred");
  const vector_v phi = to_var(phi_d);
  std::vector<vector_v> theta;
  for (const auto& t : theta_d) theta.push_back(to_var(t));
  CHECK_THROWS_MATCHES((map_rect<504, test::throwing_job>(phi, theta, x_r, x_i)), std::invalid_argument,
                       test::message_contains({"job 7", "bad job 7"}));
  CHECK(detail::kept_tapes_of_thread().live_calls == 0);
  recover_memory();
}

TEST_CASE("deferred over the cluster: nested tapes, and calls never differentiated") {
  const wide_problem p(std::vector<int>(9, 5), 4);
  const auto serial = test::in_process([&] { return evaluate<500, test::wide_job>(p, "deferred"); });
  const std::vector<double> serial_gradient(serial.begin() + 45, serial.end());
  const reverse_mode_scope reverse("deferred");
  recover_memory();
  const vector_v phi = to_var(p.phi);
  std::vector<vector_v> theta;
  for (const auto& t : p.theta) theta.push_back(to_var(t));
  for (int i = 0; i < 200; ++i) {  // no grad(): each nested region drops its call with it
    nested_tape region;
    CHECK(map_rect<500, test::wide_job>(phi, theta, p.x_r, p.x_i).size() == 45);
  }
  CHECK(detail::kept_tapes_of_thread().live_calls == 0);
  const vector_v outer = map_rect<500, test::wide_job>(phi, theta, p.x_r, p.x_i);
  test::check_nested_sweep<500, test::wide_job>(p, phi, theta, outer, serial_gradient);
}
