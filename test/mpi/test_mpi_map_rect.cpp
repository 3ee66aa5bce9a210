// map_rect over the cluster against the same call in process: bit-equal values and gradients.
#include <catch2/catch.hpp>
#include <cstring>

#include "support/benchmark_model.hpp"
#include "support/mpi_test.hpp"
#include "mpi/compare.hpp"
#include "mpi/functors.hpp"
#include "src/protocol/chunk_plan.hpp"
#include "src/balance/claims_engine.hpp"
#include "src/cluster/test_hooks.hpp"

using namespace maprect;
using test::benchmark_data;
using test::bit_equal;
using test::check_bit_equal;
using test::evaluate;

MAPRECT_REGISTER(201, test::logistic_job);
MAPRECT_REGISTER(202, test::ragged_job);
MAPRECT_REGISTER(205, test::logistic_job);
MAPRECT_REGISTER(206, test::logistic_job);
MAPRECT_REGISTER(207, test::logistic_job);
MAPRECT_REGISTER(208, test::logistic_job);


TEST_CASE("standard model: cluster equals in process bit for bit, all type combinations") {
  INFO("ranks " << test::the_cluster->size());
  for (auto [J, N] : {std::pair{1, 5}, std::pair{3, 7}, std::pair{16, 20}, std::pair{33, 3}}) {
    benchmark_data d(J, N);
    check_bit_equal<201, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);
    check_bit_equal<201, test::logistic_job, var, double>(d.phi, d.theta, d.x_r, d.x_i);
    check_bit_equal<201, test::logistic_job, double, var>(d.phi, d.theta, d.x_r, d.x_i);
    check_bit_equal<201, test::logistic_job, double, double>(d.phi, d.theta, d.x_r, d.x_i);
  }
}

TEST_CASE("standard model over the cluster matches the closed form") {
  benchmark_data d(24, 50);
  Eigen::VectorXd expected;
  const double lp_expected = d.closed_form(expected);
  vector_v phi = to_var(d.phi);
  std::vector<vector_v> theta;
  for (auto& t : d.theta) theta.push_back(to_var(t));
  var lp = map_rect<201, test::logistic_job>(phi, theta, d.x_r, d.x_i).sum();
  grad(lp);
  CHECK(lp.val() == Approx(lp_expected).epsilon(1e-13));
  CHECK(phi(0).adj() == Approx(expected(0)).epsilon(1e-12));
  CHECK(phi(1).adj() == Approx(expected(1)).epsilon(1e-12));
  for (int j = 0; j < 24; ++j) {
    CHECK(theta[j](0).adj() == Approx(expected(2 + 2 * j)).epsilon(1e-12));
    CHECK(theta[j](1).adj() == Approx(expected(3 + 2 * j)).epsilon(1e-12));
  }
  recover_memory();
}

TEST_CASE("ragged and zero-output jobs, J smaller than the ranks, J = 1, J = 0") {
  for (int J : {0, 1, 2, 5, 11}) {
    INFO("J = " << J);
    std::vector<std::vector<double>> x_r(J, std::vector<double>{0.5, -1.5, 2.5});
    std::vector<std::vector<int>> x_i(J, std::vector<int>{0});
    for (int j = 0; j < J; ++j) x_i[j][0] = (j * 7) % 4;  // 0..3 outputs, some jobs none
    Eigen::VectorXd phi(1);
    phi << 0.2;
    std::vector<Eigen::VectorXd> theta(J, Eigen::VectorXd::Zero(3));
    for (int j = 0; j < J; ++j) theta[j] << j, -0.5 * j, 1.0;
    check_bit_equal<202, test::ragged_job, var, var>(phi, theta, x_r, x_i);
    check_bit_equal<202, test::ragged_job, double, var>(phi, theta, x_r, x_i);
    check_bit_equal<202, test::ragged_job, var, double>(phi, theta, x_r, x_i);
    check_bit_equal<202, test::ragged_job, double, double>(phi, theta, x_r, x_i);
  }
}

TEST_CASE("1000 consecutive calls give identical results") {
  benchmark_data d(10, 10);
  const auto first = evaluate<201, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);
  int mismatches = 0;
  for (int i = 0; i < 1000; ++i) {
    const auto again = evaluate<201, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);
    for (std::size_t k = 0; k < first.size(); ++k) mismatches += bit_equal(again[k], first[k]) ? 0 : 1;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("calls really cross ranks: traffic per call matches the message plan") {
  benchmark_data d(8, 4);
  const int R = test::the_cluster->size(), root_jobs = 8 / R;  // contiguous balanced chunks, the root first
  detail::plan_root_share(201, root_jobs);
  evaluate<201, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);  // plan
  const auto planned = test::the_cluster->last_call_traffic();
  CHECK(planned.through_memory == 0);  // a first call ships the data by message
  evaluate<201, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);  // steady state
  const auto t = test::the_cluster->last_call_traffic();
  if (R == 1) {
    CHECK(t.sent == 0);
    CHECK(t.received == 0);
    CHECK(t.through_memory == 0);
  } else {
    // Request broadcast to each worker, the workers' job parameters, the (1 + 2 + 2)-row blocks of the jobs
    // the workers ran and five status values (status, failing job, busy seconds, the slowest and the fastest
    // team thread's busy seconds). Who ran which jobs is the schedule's: under claims (MAPRECT_BALANCE=hosts)
    // a worker may run the back of the root's chunk, else the root may take over workers' jobs. The call
    // reports which, and the expectation follows it.
    const int taken = test::the_cluster->last_call_profile().taken_jobs;
    const auto claims = detail::last_call_balance();
    const int root_ran = claims.ends.empty() ? root_jobs + taken : claims.ends[0] + claims.taken[0];
    INFO("the root ran " << root_ran << " jobs (" << (claims.ends.empty() ? "take-over" : "claims") << ")");
    CHECK(root_ran <= 8);
    CHECK(t.sent == 8u * (32 * (R - 1) + 2 * (8 - root_jobs)));
    CHECK(t.received == 8u * (5 * (8 - root_ran) + 5 * (R - 1)));
    // On one host the parameters and blocks go through memory, and the status too when the workers claim
    // their jobs; the request (and otherwise the status) by message.
    const unsigned status_bytes = test::reports_through_host_memory() ? 8u * 5 * (R - 1) : 0u;
    CHECK(t.through_memory ==
          (test::through_host_memory() ? 8u * (2 * (8 - root_jobs) + 5 * (8 - root_ran)) + status_bytes
                                       : 0u));
  }
}

MAPRECT_REGISTER(203, test::nested_job);
MAPRECT_REGISTER(204, test::ragged_job);

template <class T1, class T2>
Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> test::nested_job::operator()(
    const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi, const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
    const std::vector<double>& x_r, const std::vector<int>&, std::ostream*) const {
  std::vector<Eigen::Matrix<T2, Eigen::Dynamic, 1>> inner_theta(x_r.size(), theta);
  std::vector<std::vector<double>> inner_x_r(x_r.size(), x_r);
  std::vector<std::vector<int>> inner_x_i(x_r.size(), std::vector<int>{2});
  const auto inner = map_rect<204, test::ragged_job>(phi, inner_theta, inner_x_r, inner_x_i);
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(2);
  out(0) = inner.sum();
  out(1) = inner(0) * x_r[0];
  return out;
}

TEST_CASE("a functor that calls map_rect itself: in process inside, bit-equal over the cluster") {
  std::vector<std::vector<double>> x_r{{0.5, 1.5}, {2.0, -1.0}, {0.25, 0.75}, {3.0, 1.0}, {-2.0, 0.5}};
  std::vector<std::vector<int>> x_i(5, std::vector<int>{0});
  Eigen::VectorXd phi(1);
  phi << 0.3;
  std::vector<Eigen::VectorXd> theta(5, Eigen::VectorXd(2));
  for (int j = 0; j < 5; ++j) theta[j] << 0.1 * j, 1.0 - 0.2 * j;
  check_bit_equal<203, test::nested_job, var, var>(phi, theta, x_r, x_i);
  check_bit_equal<203, test::nested_job, double, double>(phi, theta, x_r, x_i);
}

TEST_CASE("any root share gives the in-process bits, and the messages of that share") {
  // The root's share of the jobs is tuned at run time; every share must give the same results.
  const int J = 9;
  benchmark_data d(J, 6);
  const int R = test::the_cluster->size();
  const auto serial = test::in_process([&] { return evaluate<205, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i); });
  for (int root_jobs : {0, 1, 4, 8, 9, 20}) {
    INFO("root share " << root_jobs << ", ranks " << R);
    detail::plan_root_share(205, root_jobs);
    for (int call = 0; call < 2; ++call) {  // planned with that share, then a steady-state call
      const auto distributed = evaluate<205, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);
      REQUIRE(distributed.size() == serial.size());
      for (std::size_t k = 0; k < serial.size(); ++k) {
        INFO("entry " << k << ", call " << call);
        CHECK(bit_equal(distributed[k], serial[k]));
      }
    }
    const cluster::profile p = test::the_cluster->last_call_profile();
    if (R > 1) {
      // The steady call: the workers sent back the (1 + 2 + 2)-row blocks of the jobs the root did not run,
      // neither as its share nor by taking them over from a worker that it finished before.
      const int worker_jobs = J - std::min(root_jobs, J);
      CHECK(p.taken_jobs >= 0);
      CHECK(p.taken_jobs <= worker_jobs);
      // Under MAPRECT_BALANCE=hosts the workers may have run the back of the root's share: its blocks came too.
      const detail::balance_report b = detail::last_call_balance();
      const int root_jobs_sent = b.ends.empty() ? 0 : std::min(root_jobs, J) - b.ends[0];
      CHECK(root_jobs_sent >= 0);
      CHECK(test::the_cluster->last_call_traffic().received ==
            8u * (5 * (worker_jobs - p.taken_jobs + root_jobs_sent) + 5 * (R - 1)));
      // Its profile: the root's share, and the busiest worker's jobs, at most one of the even split's
      // shares of the rest (the one that took longest, not always the larger, less what the root took).
      CHECK(p.root_jobs == std::min(root_jobs, J));
      const int more = (worker_jobs + R - 2) / (R - 1);
      CHECK(p.worker_jobs >= 0);
      CHECK(p.worker_jobs <= more);
      CHECK(p.root_seconds >= 0);
      CHECK(p.worker_seconds >= 0);
      if (p.worker_jobs > 0) CHECK(p.worker_seconds > 0);
    } else {
      CHECK(p.root_jobs == 0);  // in process: no cluster call to profile
      CHECK(p.worker_seconds == 0);
    }
  }
}

TEST_CASE("a new root share plans the call site anew, and the data check still sees the rows") {
  const int J = 9, N = 6;
  benchmark_data d(J, N);
  const int R = test::the_cluster->size();
  auto in_process = [&] {
    return test::in_process([&] { return evaluate<207, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i); });
  };
  auto serial = in_process();
  auto check_bits = [&](const auto& distributed, const char* which) {
    REQUIRE(distributed.size() == serial.size());
    for (std::size_t k = 0; k < serial.size(); ++k) {
      INFO(which << " call, entry " << k);
      CHECK(bit_equal(distributed[k], serial[k]));
    }
    return test::the_cluster->last_call_traffic();
  };
  auto check_call = [&](const char* which) {
    return check_bits(evaluate<207, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i), which);
  };
  detail::plan_root_share(207, 8);
  check_call("first");
  // Down and up: workers gain jobs in front of theirs, behind them, or only jobs they did not hold.
  for (int next : {2, 5, 0, 9, 3, 6}) {
    INFO("root share " << next << ", ranks " << R);
    detail::plan_root_share(207, next);
    const cluster::traffic moved = check_call("moving");
    const cluster::traffic steady = check_call("steady");
    if (R > 1) CHECK(test::the_cluster->last_call_profile().root_jobs == next);
    // The same call's first call at another call site, at the same share: the same bytes.
    detail::plan_root_share(208, next);
    const cluster::traffic first =
        check_bits(evaluate<208, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i), "first at 208");
    if (R > 1) CHECK(moved.sent == first.sent);
    // At least the rows of the workers' jobs went out again.
    const std::uint64_t worker_rows = static_cast<std::uint64_t>(J - next) * (8 * N + 4 * N);
    if (R > 1) CHECK(moved.sent - steady.sent >= worker_rows);
  }
  // Rows the workers received with the last share, changed in place: never stale.
  d.x_r[J - 1][2] += 0.5;
  d.x_i[6][4] = 1 - d.x_i[6][4];
  serial = in_process();
  check_call("changed data");
  check_call("steady");
}

TEST_CASE("messages past the shared-memory eager size (4 KiB) give the same bits") {
  // 1200 jobs of 2 parameters: at 2 to 4 ranks each worker's parameters are at least 4800 bytes and, with
  // var parameters, its planned blocks at least 7200, so Open MPI hands them over by rendezvous, on first
  // and steady-state calls (unless the root takes over most of a worker's jobs).
  const int J = 1200, R = test::the_cluster->size();
  benchmark_data d(J, 2);
  check_bit_equal<206, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);
  check_bit_equal<206, test::logistic_job, double, var>(d.phi, d.theta, d.x_r, d.x_i);
  check_bit_equal<206, test::logistic_job, double, double>(d.phi, d.theta, d.x_r, d.x_i);
  // Planned again for var parameters, then a steady-state call: the request and the workers' parameters.
  evaluate<206, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);
  evaluate<206, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);
  if (R > 1) CHECK(test::the_cluster->last_call_traffic().sent == 8u * (32 * (R - 1) + 2 * (J - J / R)));
}
