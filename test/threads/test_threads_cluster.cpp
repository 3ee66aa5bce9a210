// A cluster whose ranks run their shares of a call on teams of threads (MAPRECT_THREADS, set by CTest): the
// values, gradients and tape of every call are byte-equal to the serial in-process call (and so to one
// thread, and to any rank count), for the four double/var kinds, ragged outputs and jobs with none, with the
// root's share large or none, with take-over; several failing jobs give the error of the lowest, and the
// next call works.
#include <catch2/catch.hpp>
#include <climits>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <maprect/thread_team.hpp>

#include "mpi/compare.hpp"
#include "mpi/functors.hpp"
#include "support/benchmark_model.hpp"
#include "support/matchers.hpp"
#include "support/mpi_test.hpp"
#include "src/cluster/test_hooks.hpp"

using namespace maprect;
using test::bit_equal;
using test::evaluate;

MAPRECT_REGISTER(441, test::ragged_job);
MAPRECT_REGISTER(442, test::throwing_job);
MAPRECT_REGISTER(443, test::slow_job);
MAPRECT_REGISTER(446, test::logistic_job);

namespace maprect::test {
/// Calls map_rect itself on inner ragged jobs and checks that they ran on its own thread (a team thread,
/// on a team): a map_rect inside a functor runs in process, serially, where the outer job runs.
struct nested_team_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>&, std::ostream*) const;
};
/// The inner job: its outputs as ragged_job's, after recording the thread it ran on.
struct thread_recording_job {
  static thread_local std::thread::id ran_on;
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i, std::ostream* m) const {
    ran_on = std::this_thread::get_id();
    return ragged_job()(phi, theta, x_r, x_i, m);
  }
};
thread_local std::thread::id thread_recording_job::ran_on;
}  // namespace maprect::test

MAPRECT_REGISTER(444, test::nested_team_job);
MAPRECT_REGISTER(445, test::thread_recording_job);

template <class T1, class T2>
Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> test::nested_team_job::operator()(
    const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi, const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
    const std::vector<double>& x_r, const std::vector<int>&, std::ostream*) const {
  std::vector<Eigen::Matrix<T2, Eigen::Dynamic, 1>> inner_theta(x_r.size(), theta);
  std::vector<std::vector<double>> inner_x_r(x_r.size(), x_r);
  std::vector<std::vector<int>> inner_x_i(x_r.size(), std::vector<int>{2});
  thread_recording_job::ran_on = std::thread::id();
  const auto inner = map_rect<445, thread_recording_job>(phi, inner_theta, inner_x_r, inner_x_i);
  if (thread_recording_job::ran_on != std::this_thread::get_id())
    throw std::logic_error("an inner map_rect ran its jobs on another thread");
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(2);
  out(0) = inner.sum();
  out(1) = inner(0) * x_r[0];
  return out;
}

namespace {

/// The thread count MAPRECT_THREADS asks for (CTest sets a number or nothing).
int threads_asked() {
  const char* v = std::getenv("MAPRECT_THREADS");
  return v == nullptr || v[0] == '\0' ? 1 : std::atoi(v);
}

/// Runs f in process on the calling thread alone: no cluster backend, no team.
template <class F>
auto serially(F&& f) {
  thread_team* const saved = detail::installed_team;
  detail::installed_team = nullptr;
  auto result = test::in_process(f);
  detail::installed_team = saved;
  return result;
}

/// J jobs of ragged_job: job j returns (j * 7) % 4 outputs (every fourth none), with data of its own.
struct ragged_data {
  Eigen::VectorXd phi = Eigen::VectorXd::LinSpaced(3, 0.1, 0.4);
  std::vector<Eigen::VectorXd> theta;
  std::vector<std::vector<double>> x_r;
  std::vector<std::vector<int>> x_i;
  explicit ragged_data(int J) {
    for (int j = 0; j < J; ++j) {
      theta.push_back(Eigen::VectorXd::LinSpaced(2, 0.01 * j, 1.0 / (j + 1.0)));
      x_r.push_back({0.5 * j, -0.25 * j, 1.0 + j});
      x_i.push_back({(j * 7) % 4});
    }
  }
};

/// Calls of site Id (the first ships the data, the others are steady) byte-equal to the serial call, with
/// the root running `root_jobs` of them when that is not -1.
template <int Id, class F, class T_shared, class T_job, class Data>
void check_calls(const Data& d, int root_jobs, int calls = 3) {
  test::tape_added serial_tape, cluster_tape;
  const auto serial =
      serially([&] { return evaluate<Id, F, T_shared, T_job>(d.phi, d.theta, d.x_r, d.x_i, &serial_tape); });
  if (root_jobs >= 0) detail::plan_root_share(Id, root_jobs);
  for (int call = 0; call < calls; ++call) {
    const auto got = evaluate<Id, F, T_shared, T_job>(d.phi, d.theta, d.x_r, d.x_i, &cluster_tape);
    INFO("call " << call << ", root jobs " << root_jobs);
    CHECK(cluster_tape.nodes == serial_tape.nodes);
    // With one thread the root makes the workers' output nodes between its own jobs when their blocks come
    // through host memory: the same nodes, but the arena's block ends can fall elsewhere. On a team the
    // root makes every node after the jobs, in job order, as the serial call does.
    if (test::the_cluster->threads() > 1 || !test::reports_through_host_memory())
      CHECK(cluster_tape.bytes == serial_tape.bytes);
    REQUIRE(got.size() == serial.size());
    int differing = 0;
    for (std::size_t k = 0; k < serial.size(); ++k) differing += bit_equal(got[k], serial[k]) ? 0 : 1;
    CHECK(differing == 0);
  }
}

template <class T_shared, class T_job>
void check_kind(int J) {
  const ragged_data d(J);
  INFO("J = " << J << ", kinds " << is_var_v<T_shared> << is_var_v<T_job>);
  check_calls<441, test::ragged_job, T_shared, T_job>(d, -1);
  check_calls<441, test::ragged_job, T_shared, T_job>(d, J);      // every job on the root's team
  check_calls<441, test::ragged_job, T_shared, T_job>(d, J / 2);  // half
}

/// The error of one call of throwing_job over `J` jobs in which the jobs `failing` throw (kinds 1, 2, 9 in
/// turn), as type name and message.
std::string error_of(const std::vector<int>& failing, int J, bool in_process) {
  std::vector<std::vector<double>> x_r(J, std::vector<double>{1.0});
  std::vector<std::vector<int>> x_i(J, std::vector<int>{0, 0});
  const int kinds[] = {1, 2, 9};
  for (int j = 0; j < J; ++j) x_i[j][1] = j;
  for (std::size_t f = 0; f < failing.size(); ++f) x_i[failing[f]][0] = kinds[f % 3];
  vector_v phi = vector_v::Constant(1, 2.0);
  std::vector<vector_v> theta(J, vector_v::Constant(1, 1.0));
  std::string error = "none";
  auto call = [&] {
    try {
      map_rect<442, test::throwing_job>(phi, theta, x_r, x_i);
    } catch (const std::domain_error& e) {
      error = std::string("domain_error: ") + e.what();
    } catch (const std::invalid_argument& e) {
      error = std::string("invalid_argument: ") + e.what();
    } catch (const std::runtime_error& e) {
      error = std::string("runtime_error: ") + e.what();
    }
    return 0;
  };
  if (in_process) serially(call);
  else call();
  recover_memory();
  return error;
}

}  // namespace

TEST_CASE("every rank's team has the threads MAPRECT_THREADS asks for") {
  CHECK(test::the_cluster->threads() == threads_asked());
  if (threads_asked() == 1) CHECK(current_team() == nullptr);
  if (threads_asked() > 1) {  // the root's team also serves its in-process calls
    REQUIRE(current_team() != nullptr);
    CHECK(current_team()->size() == threads_asked());
  }
}

TEST_CASE("calls over ranks with teams are byte-equal to the serial call, for every kind and size") {
  for (int J : {0, 1, 5, 64, 513}) {
    check_kind<double, double>(J);
    check_kind<var, double>(J);
    check_kind<double, var>(J);
    check_kind<var, var>(J);
  }
}

TEST_CASE("with take-over and teams, slow jobs give the serial bits and the profile names the threads") {
  struct slow_data {
    Eigen::VectorXd phi = Eigen::VectorXd::Constant(2, 0.25);
    std::vector<Eigen::VectorXd> theta;
    std::vector<std::vector<double>> x_r;
    std::vector<std::vector<int>> x_i;
  } d;
  const int J = 48;
  for (int j = 0; j < J; ++j) {
    d.theta.push_back(Eigen::VectorXd::LinSpaced(2, 0.1 * j, 1.0 - 0.1 * j));
    d.x_r.push_back({0.5 * j});
    d.x_i.push_back({j % 3 == 0 ? 300 : 50, 2, 0});  // uneven jobs of 50-300 us, two outputs each
  }
  check_calls<443, test::slow_job, var, var>(d, 0, 4);
  check_calls<443, test::slow_job, double, var>(d, J / 4, 4);
  const cluster::profile p = test::the_cluster->last_call_profile();
  if (test::the_cluster->size() > 1) {
    CHECK(p.threads == threads_asked());
    CHECK(p.slowest_thread_seconds >= p.fastest_thread_seconds);
    CHECK(p.fastest_thread_seconds >= 0);
    CHECK(p.slowest_thread_seconds > 0);  // the root ran J / 4 jobs of at least 50 us each
    // The busiest worker's team, from its status: its threads ran within its busy time.
    CHECK(p.worker_slowest_thread_seconds >= p.worker_fastest_thread_seconds);
    CHECK(p.worker_fastest_thread_seconds >= 0);
    CHECK(p.worker_slowest_thread_seconds <= p.worker_seconds + 1e-4);
    if (p.worker_jobs > 0) CHECK(p.worker_slowest_thread_seconds > 0);
    if (threads_asked() == 1) CHECK(p.worker_slowest_thread_seconds == p.worker_fastest_thread_seconds);
  }
}

TEST_CASE("several failing jobs: the lowest one's error for every thread count, then a good call") {
  const int J = 64;
  for (const std::vector<int>& failing :
       {std::vector<int>{40, 50, 60}, std::vector<int>{3, 40, 60}, std::vector<int>{61, 62, 63},
        std::vector<int>{17, 18, 19, 20, 21, 22}}) {
    const std::string expected = error_of(failing, J, true);
    INFO("failing jobs from " << failing[0] << ": " << expected);
    REQUIRE(expected != "none");
    for (int repeat = 0; repeat < 2; ++repeat) {
      const std::string got = error_of(failing, J, false);
      // In process the message names no rank; over the cluster it names the one that ran the job.
      CHECK(got.substr(0, got.find(':')) == expected.substr(0, expected.find(':')));
      CHECK_THAT(got, Catch::Matchers::Contains("job " + std::to_string(failing[0])) &&
                          Catch::Matchers::Contains("boom at " + std::to_string(failing[0])));
    }
    check_calls<441, test::ragged_job, var, var>(ragged_data(J), -1, 2);
  }
}

TEST_CASE("a map_rect inside a functor on a team thread runs in process on that thread, with the serial bits") {
  struct nested_data {
    Eigen::VectorXd phi = Eigen::VectorXd::Constant(3, 0.3);
    std::vector<Eigen::VectorXd> theta;
    std::vector<std::vector<double>> x_r;
    std::vector<std::vector<int>> x_i;
  } d;
  for (int j = 0; j < 40; ++j) {
    d.theta.push_back(Eigen::VectorXd::LinSpaced(2, 0.1 * j, 1.0 - 0.02 * j));
    d.x_r.push_back({0.5 + j, -1.0, 0.25 * j});
    d.x_i.push_back({0});
  }
  check_calls<444, test::nested_team_job, var, var>(d, 20);
  check_calls<444, test::nested_team_job, double, double>(d, -1);
}

TEST_CASE("a changed row among many is seen by the root's data check, which runs on the team") {
  // 64 jobs of 600 points: 76,800 values in the workers' rows, enough for the check to use the team.
  test::benchmark_data d(64, 600);
  check_calls<446, test::logistic_job, var, var>(d, 16, 2);
  d.x_r[63][599] += 0.5;  // the last value of the last worker's last job
  check_calls<446, test::logistic_job, var, var>(d, -1, 2);
  d.x_i[40][0] = 1 - d.x_i[40][0];  // a worker job in the middle
  check_calls<446, test::logistic_job, var, var>(d, -1, 2);
  d.x_r[16][0] = -d.x_r[16][0];  // the first worker job
  check_calls<446, test::logistic_job, double, var>(d, -1, 2);
}
