// Claims between all ranks of one host: a slow root's jobs are run by the workers, whoever runs a job gives
// the in-process bits, the lowest failing job decides (on a first call, and on steady eager and deferred calls
// whose jobs fail or change their output counts wherever they ran), and a call with a message stream keeps the
// root's own.
#include <mpi.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <numeric>
#include <sstream>
#include <thread>

#include "mpi/compare.hpp"
#include "src/balance/claims_engine.hpp"
#include "support/matchers.hpp"
#include "support/mpi_test.hpp"

using namespace maprect;

namespace {

/// Sleeps x_i[0] microseconds on the root only (a slow root that uses no CPU), throws
/// std::domain_error("boom at <job>") when x_i[1] is not 0 or theta(0) is at least 1000, writes "job <x_i[2]>;"
/// to the message stream, and returns two outputs of every parameter, three where theta(0) is at most -1000.
/// What the parameters alone say fails or changes a steady call's jobs without a new plan.
struct root_slowed_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i,
                                                                     std::ostream* msgs) const {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) std::this_thread::sleep_for(std::chrono::microseconds(x_i[0]));
    const double marker = value_of(theta(0));
    if (x_i[1] != 0 || marker >= 1000) throw std::domain_error("boom at " + std::to_string(x_i[2]));
    if (msgs) *msgs << "job " << x_i[2] << ";";
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(marker <= -1000 ? 3 : 2);
    out(0) = phi(0) * theta(0) * x_r[0] + sin(phi(1) + theta(1));
    out(1) = exp(theta(0) * x_r[1]) * phi(1);
    if (out.size() == 3) out(2) = phi(0) * theta(1);
    return out;
  }
};

/// J jobs whose root-side sleep is `root_us`, failing at the jobs in `failing`.
struct slowed_data {
  Eigen::VectorXd phi = Eigen::Vector2d(0.3, -0.7);
  std::vector<Eigen::VectorXd> theta;
  std::vector<std::vector<double>> x_r;
  std::vector<std::vector<int>> x_i;
  slowed_data(int J, int root_us, std::vector<int> failing = {}) {
    for (int j = 0; j < J; ++j) {
      theta.push_back(Eigen::Vector2d(0.1 * j - 0.4, 0.05 * j));
      x_r.push_back({0.5 + j, 1.0 / (1 + j)});
      const bool fails = std::find(failing.begin(), failing.end(), j) != failing.end();
      x_i.push_back({root_us, fails ? 1 : 0, j});
    }
  }
};

/// Every job ran exactly once, by its owner or by one claim: the owners' ends and the claims add up to J.
void check_every_job_once(const detail::balance_report& b, int J) {
  const int owned = std::accumulate(b.ends.begin(), b.ends.end(), 0);
  const int claimed = std::accumulate(b.taken.begin(), b.taken.end(), 0);
  CHECK(owned + claimed == J);
}

}  // namespace

MAPRECT_REGISTER(261, root_slowed_job);
MAPRECT_REGISTER(262, root_slowed_job);
MAPRECT_REGISTER(263, root_slowed_job);
MAPRECT_REGISTER(264, root_slowed_job);
MAPRECT_REGISTER(265, root_slowed_job);

TEST_CASE("a slow root's jobs run anywhere and give the in-process bits") {
  const int J = 24, R = test::the_cluster->size();
  const slowed_data d(J, 3000);
  const auto serial = test::in_process(
      [&] { return test::evaluate<261, root_slowed_job, var, var>(d.phi, d.theta, d.x_r, d.x_i); });
  for (int call = 0; call < 4; ++call) {
    INFO("call " << call);
    const auto distributed = test::evaluate<261, root_slowed_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);
    REQUIRE(distributed.size() == serial.size());
    for (std::size_t k = 0; k < serial.size(); ++k) CHECK(test::bit_equal(distributed[k], serial[k]));
    const detail::balance_report b = detail::last_call_balance();
    if (call == 0 || R == 1 || !test::reports_through_host_memory()) continue;  // a first call plans; no claims
    REQUIRE(b.ends.size() == static_cast<std::size_t>(R));
    check_every_job_once(b, J);
    // What came to the root through memory is every block of a job it did not run: 5 rows per output, two
    // outputs per job, and each worker's five status values.
    const int root_ran = b.ends[0] + b.taken[0];
    CHECK(test::the_cluster->last_call_traffic().received == 8u * (2 * 5 * (J - root_ran) + 5 * (R - 1)));
  }
}

TEST_CASE("the lowest failing job decides, whichever rank ran it, and the cluster goes on") {
  const int J = 24;
  const slowed_data bad(J, 2000, {7, 19}), good(J, 0);
  for (int call = 0; call < 3; ++call) {
    INFO("call " << call);
    CHECK_THROWS_MATCHES((test::evaluate<262, root_slowed_job, var, var>(bad.phi, bad.theta, bad.x_r, bad.x_i)),
                         std::domain_error, test::message_contains({"boom at 7", "job 7"}));
  }
  const auto serial = test::in_process(
      [&] { return test::evaluate<262, root_slowed_job, var, var>(good.phi, good.theta, good.x_r, good.x_i); });
  const auto distributed = test::evaluate<262, root_slowed_job, var, var>(good.phi, good.theta, good.x_r, good.x_i);
  REQUIRE(distributed.size() == serial.size());
  for (std::size_t k = 0; k < serial.size(); ++k) CHECK(test::bit_equal(distributed[k], serial[k]));
}

TEST_CASE("a call with a message stream keeps the root's own jobs, and their messages reach it") {
  const int J = 12, R = test::the_cluster->size();
  const slowed_data d(J, 2000);
  for (int call = 0; call < 3; ++call) {
    Eigen::Matrix<var, Eigen::Dynamic, 1> phi = d.phi.cast<var>();  // anew each call: recover_memory frees them
    std::vector<Eigen::Matrix<var, Eigen::Dynamic, 1>> theta;
    for (const auto& t : d.theta) theta.push_back(t.cast<var>());
    std::ostringstream msgs;
    const auto out = map_rect<263, root_slowed_job>(phi, theta, d.x_r, d.x_i, &msgs);
    CHECK(out.size() == 2 * J);
    const detail::balance_report b = detail::last_call_balance();
    const int root_jobs = test::the_cluster->last_call_profile().root_jobs;
    INFO("call " << call << ", messages: " << msgs.str());
    if (R == 1) CHECK(msgs.str().find("job " + std::to_string(J - 1) + ";") != std::string::npos);
    if (call > 0 && R > 1 && !b.ends.empty()) CHECK(b.ends[0] == root_jobs);
    for (int j = 0; j < (R == 1 ? J : root_jobs); ++j)
      CHECK(msgs.str().find("job " + std::to_string(j) + ";") != std::string::npos);
    recover_memory();
  }
}

namespace {

/// A steady call's failures under reverse mode `mode`, at call site Id: the lowest failing job's error, whichever
/// rank ran it, and a changed output count's call planned anew with the in-process bits; then a good call's bits.
/// The root sleeps 2 ms a job and the workers not at all: the workers run the back of the root's range, the root
/// its front.
template <int Id>
void check_steady_failures(const char* mode) {
  const detail::reverse_mode_scope reverse(mode);
  const int J = 24, R = test::the_cluster->size();
  const slowed_data d(J, 2000);
  const auto marked = [&](const std::vector<int>& jobs, double marker) {
    std::vector<Eigen::VectorXd> theta = d.theta;
    for (int j : jobs) theta[j](0) = marker;
    return theta;
  };
  const auto evaluate = [&](const std::vector<Eigen::VectorXd>& theta) {
    return test::evaluate<Id, root_slowed_job, var, var>(d.phi, theta, d.x_r, d.x_i);
  };
  for (int call = 0; call < 2; ++call) evaluate(d.theta);  // the first plans the site; the second is steady
  const int root_end = R == 1 ? J : test::the_cluster->last_call_profile().root_jobs;  // one rank: in process
  REQUIRE(root_end > 1);
  // The root's first job, the last of its range (a claim's first), and a worker's last job, in pairs.
  const std::vector<std::vector<int>> failing{{0, root_end - 1}, {root_end - 1, J - 1}, {J - 1}, {1, J - 2}};
  for (const auto& jobs : failing) {
    const std::string lowest = std::to_string(*std::min_element(jobs.begin(), jobs.end()));
    INFO(mode << ", ranks " << R << ", failing " << ::Catch::Detail::stringify(jobs));
    CHECK_THROWS_MATCHES(evaluate(marked(jobs, 1e3)), std::domain_error,
                         test::message_contains({"boom at " + lowest, "job " + lowest}));
  }
  // A changed output count below a failing job: the failure decides, as in process, whoever ran either.
  const std::vector<std::pair<int, int>> changed_below{{0, J - 1}, {0, root_end - 1}, {root_end - 1, J - 1}};
  for (const auto& [changed, failed] : changed_below) {
    if (changed == failed) continue;  // one rank: its last job is the call's
    auto theta = marked({failed}, 1e3);
    theta[changed](0) = -1e3;
    const std::string job = std::to_string(failed);
    INFO(mode << ", ranks " << R << ", changed " << changed << ", failing " << failed);
    CHECK_THROWS_MATCHES(evaluate(theta), std::domain_error, test::message_contains({"boom at " + job, "job " + job}));
  }
  // An output count that changed wherever the job ran plans the call anew.
  for (const auto& jobs : std::vector<std::vector<int>>{{root_end - 1}, {0}, {J - 1}}) {
    const auto theta = marked(jobs, -1e3);
    test::check_same_bits(evaluate(theta), test::in_process([&] { return evaluate(theta); }));
  }
  test::check_same_bits(evaluate(d.theta), test::in_process([&] { return evaluate(d.theta); }));
}

}  // namespace

TEST_CASE("a steady call's lowest failing job decides, whether its owner or a claim ran it, and the cluster goes on") {
  check_steady_failures<264>("eager");
  check_steady_failures<265>("deferred");
}
