// A root with no jobs of its own claims the workers' unstarted jobs (MAPRECT_BALANCE=auto: in host memory,
// or by message under MAPRECT_TRANSPORT=messages): the results stay bit-equal to in process, the workers send
// only the blocks of the jobs they ran, and a job that fails where another rank claimed it comes back like
// any other. Run also with MAPRECT_BALANCE=static, under which nobody claims a worker's job.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mpi/compare.hpp"
#include "mpi/functors.hpp"
#include "support/matchers.hpp"
#include "support/mpi_test.hpp"
#include "src/balance/claims_engine.hpp"
#include "src/cluster/test_hooks.hpp"

using namespace maprect;
using test::bit_equal;
using test::evaluate;

MAPRECT_REGISTER(231, test::slow_job);
MAPRECT_REGISTER(232, test::slow_job);
MAPRECT_REGISTER(233, test::slow_job);

namespace {

constexpr int outputs_per_job = 2;

/// Data for slow_job: `jobs` jobs of `us` microseconds and two outputs each; job `failing` throws.
struct slow_data {
  std::vector<std::vector<double>> x_r;
  std::vector<std::vector<int>> x_i;
  Eigen::VectorXd phi = Eigen::VectorXd::Constant(2, 0.25);
  std::vector<Eigen::VectorXd> theta;
  slow_data(int jobs, int us, int failing = -1)
      : x_r(jobs, std::vector<double>{0.0}), x_i(jobs, std::vector<int>{us, outputs_per_job, 0}) {
    for (int j = 0; j < jobs; ++j) {
      x_r[j][0] = 0.5 * j;
      theta.push_back(Eigen::VectorXd::LinSpaced(2, 0.1 * j, 1.0 - 0.1 * j));
    }
    if (failing >= 0) x_i[failing][2] = 1;
  }
};

/// Whether this run lets the root claim the workers' jobs.
bool taking_over() {
  const char* v = std::getenv("MAPRECT_BALANCE");
  return v == nullptr || v[0] == '\0' || std::strcmp(v, "auto") == 0;
}

/// Whether worker 1 holds its jobs after its first batch until another rank claimed some
/// (MAPRECT_TEST_HOLD_RANK=1): then in every steady call another rank runs some of them, in host memory or by
/// message (where the held worker grants even a batch its round trip would not repay). At 2 ranks that rank is
/// the root, which has none of its own; at more, another worker may be the one, as the schedule goes.
bool worker_held() {
  const char* v = std::getenv("MAPRECT_TEST_HOLD_RANK");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

/// Runs `calls` calls of call site Id with the root running none of its own jobs, each bit-equal to in
/// process; returns the jobs the root took over in the steady ones, checking each one's traffic against what
/// the root reports it took (and, with worker 1 held, that others ran some of worker 1's, the root at 2 ranks).
template <int Id, class T_shared, class T_job>
int taken_over_in(const slow_data& d, int calls) {
  const int J = static_cast<int>(d.x_r.size()), R = test::the_cluster->size();
  const auto serial =
      test::in_process([&] { return evaluate<Id, test::slow_job, T_shared, T_job>(d.phi, d.theta, d.x_r, d.x_i); });
  detail::plan_root_share(Id, 0);
  const int rows = detail::rows_per_output(detail::kinds_of<T_shared, T_job>(), 2, 2);
  int taken = 0;
  for (int call = 0; call < calls; ++call) {
    INFO("call " << call << ", ranks " << R);
    const auto distributed = evaluate<Id, test::slow_job, T_shared, T_job>(d.phi, d.theta, d.x_r, d.x_i);
    REQUIRE(distributed.size() == serial.size());
    for (std::size_t k = 0; k < serial.size(); ++k) {
      INFO("entry " << k);
      CHECK(bit_equal(distributed[k], serial[k]));
    }
    if (call == 0 || R == 1) continue;  // the first call plans; nobody claims
    const cluster::profile p = test::the_cluster->last_call_profile();
    CHECK(p.root_jobs == 0);
    CHECK(p.taken_jobs >= 0);
    CHECK(p.taken_jobs <= J);
    if (worker_held() && taking_over()) {
      const detail::balance_report b = detail::last_call_balance();
      REQUIRE(b.ends.size() == static_cast<std::size_t>(R));
      CHECK(b.ends[1] < J / (R - 1));  // worker 1's own jobs ended before its chunk's end: others ran the rest
      if (R == 2) CHECK(p.taken_jobs > 0);
    }
    // Every worker sent its status and the blocks of the jobs it ran, and of no other.
    CHECK(test::the_cluster->last_call_traffic().received ==
          8u * (static_cast<unsigned>(rows * outputs_per_job * (J - p.taken_jobs)) + 5u * (R - 1)));
    taken += p.taken_jobs;
  }
  return taken;
}

}  // namespace

TEST_CASE("the root claims a worker's jobs and gets the in-process bits") {
  // 48 jobs of 200 us and none of them the root's: it runs some of the workers' while they run theirs. How
  // many is the schedule's; with worker 1 held at 2 ranks, it took some in every steady call.
  const slow_data d(48, 200);
  const int R = test::the_cluster->size();
  const int vv = taken_over_in<231, var, var>(d, 5);
  const int dd = taken_over_in<232, double, double>(d, 5);
  if (R == 1 || !taking_over()) {
    CHECK(vv == 0);
    CHECK(dd == 0);
  } else if (R == 2 && worker_held()) {
    CHECK(vv > 0);
    CHECK(dd > 0);
  }
}

TEST_CASE("a job that throws where another rank may claim it comes back with its type, job and rank") {
  // The last job is the first another rank claims from the last worker; whichever rank runs it is named.
  const int J = 24, R = test::the_cluster->size();
  const slow_data good(J, 100), bad(J, 100, J - 1);
  detail::plan_root_share(233, 0);
  const auto expected = test::in_process(
      [&] { return evaluate<233, test::slow_job, var, var>(good.phi, good.theta, good.x_r, good.x_i); });
  CHECK(evaluate<233, test::slow_job, var, var>(good.phi, good.theta, good.x_r, good.x_i) == expected);
  for (int repeat = 0; repeat < 3; ++repeat) {
    INFO("repeat " << repeat << ", ranks " << R);
    CHECK_THROWS_MATCHES((evaluate<233, test::slow_job, var, var>(bad.phi, bad.theta, bad.x_r, bad.x_i)),
                         std::out_of_range,
                         Catch::Matchers::Predicate<std::out_of_range>([&](const std::out_of_range& e) {
                           const std::string what = e.what();
                           return what.find("slow job gave up") != std::string::npos &&
                                  what.find("job " + std::to_string(J - 1)) != std::string::npos &&
                                  test::names_rank_or_root(what, R - 1, R);
                         }));
    recover_memory();
    // The cluster is in step: the next call gives the in-process bits.
    CHECK(evaluate<233, test::slow_job, var, var>(good.phi, good.theta, good.x_r, good.x_i) == expected);
  }
}
