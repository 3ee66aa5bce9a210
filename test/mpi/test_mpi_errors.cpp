// Failures inside jobs on any rank come back to the root as their standard type with the original
// message, the job and the rank; the cluster stays in step and the next call works.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "mpi/compare.hpp"
#include "mpi/functors.hpp"
#include "support/benchmark_model.hpp"
#include "support/matchers.hpp"
#include "support/mpi_test.hpp"

using namespace maprect;

MAPRECT_REGISTER(211, test::throwing_job);
MAPRECT_REGISTER(212, test::logistic_job);

namespace {

constexpr int J = 9;

/// Data for throwing_job over `jobs` jobs: job `failing` throws error kind `kind` (0: nobody throws).
struct throwing_data {
  std::vector<std::vector<double>> x_r;
  std::vector<std::vector<int>> x_i;
  throwing_data(int failing, int kind, int jobs = J)
      : x_r(jobs, std::vector<double>{1.0}), x_i(jobs, std::vector<int>{0, 0}) {
    for (int j = 0; j < jobs; ++j) x_i[j][1] = j;
    if (failing >= 0) x_i[failing][0] = kind;
  }
};

/// The sum of the outputs plus its derivative by phi, for phi = 2 and theta_j = j: 3 * sum of j.
template <int Id = 211>
double good_call(const throwing_data& d) {
  const int n = static_cast<int>(d.x_i.size());
  vector_v phi(1);
  phi << 2.0;
  std::vector<vector_v> theta(n, vector_v(1));
  for (int j = 0; j < n; ++j) theta[j](0) = j;
  var total = map_rect<Id, test::throwing_job>(phi, theta, d.x_r, d.x_i).sum();
  grad(total);
  const double result = total.val() + phi(0).adj();
  recover_memory();
  return result;
}

int rank_of_job(int job) {
  const int R = test::the_cluster->size();
  for (int r = R - 1; r >= 0; --r)
    if (job >= static_cast<int>(static_cast<long long>(J) * r / R)) return r;
  return 0;
}

/// A call whose job `failing_job` throws leaves the root's tape as it found it: no node of the jobs that
/// ran before it (the root makes its own jobs' outputs as they finish) and no operand record.
void check_tape_unchanged_by_failure(int failing_job) {
  const throwing_data bad(failing_job, 1);
  vector_v phi(1);
  phi << 2.0;
  std::vector<vector_v> theta(J, vector_v(1));
  for (int j = 0; j < J; ++j) theta[j](0) = j;
  const std::size_t bytes = tape_bytes(), nodes = tape_size();
  CHECK_THROWS_AS((map_rect<211, test::throwing_job>(phi, theta, bad.x_r, bad.x_i)), std::domain_error);
  CHECK(tape_bytes() == bytes);
  CHECK(tape_size() == nodes);
  recover_memory();
}

template <class Expected>
void check_failure(int failing_job, int kind) {
  throwing_data bad(failing_job, kind), good(-1, 0);
  const std::string job = "job " + std::to_string(failing_job);
  const std::string original = "boom at " + std::to_string(failing_job);
  CHECK_THROWS_MATCHES(good_call(bad), Expected,
                       Catch::Matchers::Predicate<Expected>([&](const Expected& e) {
                         const std::string what = e.what();
                         return what.find(original) != std::string::npos && what.find(job) != std::string::npos &&
                                test::names_rank_or_root(what, rank_of_job(failing_job), test::the_cluster->size());
                       }));
  recover_memory();
  // Sum over jobs of 2 * j, plus d/dphi = sum of j: the cluster is in step again.
  CHECK(good_call(good) == Approx(2.0 * 36 + 36));
}

}  // namespace

TEST_CASE("each standard exception type crosses ranks as itself, on first and later calls") {
  for (int failing : {0, J / 2, J - 1}) {  // the root's chunk, a middle rank, the last rank
    INFO("failing job " << failing << " of " << J << " on " << test::the_cluster->size() << " ranks");
    check_failure<std::domain_error>(failing, 1);
    check_failure<std::invalid_argument>(failing, 2);
    check_failure<std::out_of_range>(failing, 3);
    check_failure<std::range_error>(failing, 4);
    check_failure<std::overflow_error>(failing, 5);
    check_failure<std::underflow_error>(failing, 6);
    check_failure<std::length_error>(failing, 7);
    check_failure<std::logic_error>(failing, 8);
    check_failure<std::runtime_error>(failing, 9);
    check_tape_unchanged_by_failure(failing);
  }
}

TEST_CASE("a non-standard exception becomes runtime_error") {
  throwing_data bad(J - 1, 10), good(-1, 0);
  CHECK_THROWS_MATCHES(good_call(bad), std::runtime_error, test::message_contains({"job 8"}));
  recover_memory();
  CHECK(good_call(good) == Approx(108.0));
}

TEST_CASE("a throw on the very first call of a call site, then good calls") {
  // A fresh id so that the failing call is the one that ships data.
  throwing_data bad(J - 1, 1), good(-1, 0);
  vector_v phi(1);
  phi << 2.0;
  std::vector<vector_v> theta(J, vector_v(1));
  for (int j = 0; j < J; ++j) theta[j](0) = j;
  CHECK_THROWS_AS((map_rect<213, test::throwing_job>(phi, theta, bad.x_r, bad.x_i)), std::domain_error);
  recover_memory();
  for (int repeat = 0; repeat < 3; ++repeat) {
    vector_v phi2(1);
    phi2 << 2.0;
    std::vector<vector_v> theta2(J, vector_v(1));
    for (int j = 0; j < J; ++j) theta2[j](0) = j;
    var total = map_rect<213, test::throwing_job>(phi2, theta2, good.x_r, good.x_i).sum();
    CHECK(total.val() == Approx(72.0));
    recover_memory();
  }
}
MAPRECT_REGISTER(213, test::throwing_job);

TEST_CASE("data changed under the same call id is shipped again, never stale") {
  test::benchmark_data d(12, 6);
  vector_v phi = to_var(d.phi);
  std::vector<vector_v> theta;
  for (auto& t : d.theta) theta.push_back(to_var(t));
  Eigen::VectorXd expected;
  for (int change = 0; change < 4; ++change) {
    // Change one value of one row in place (the last job lives on the last rank).
    d.x_r[11][change] += 0.25;
    d.x_i[change][2] = 1 - d.x_i[change][2];
    const double lp_expected = d.closed_form(expected);
    var lp = map_rect<212, test::logistic_job>(phi, theta, d.x_r, d.x_i).sum();
    grad(lp);
    CHECK(lp.val() == Approx(lp_expected).epsilon(1e-13));
    CHECK(theta[11](1).adj() == Approx(expected(3 + 2 * 11)).epsilon(1e-12));
    recover_memory();
    phi = to_var(d.phi);
    theta.clear();
    for (auto& t : d.theta) theta.push_back(to_var(t));
  }
}

TEST_CASE("the number of jobs and the output counts may change between calls of one call site") {
  for (int n_jobs : {5, 9, 2, 9}) {
    test::benchmark_data d(n_jobs, 4 + n_jobs);  // row lengths change too
    Eigen::VectorXd expected;
    const double lp_expected = d.closed_form(expected);
    vector_v phi = to_var(d.phi);
    std::vector<vector_v> theta;
    for (auto& t : d.theta) theta.push_back(to_var(t));
    var lp = map_rect<212, test::logistic_job>(phi, theta, d.x_r, d.x_i).sum();
    grad(lp);
    CHECK(lp.val() == Approx(lp_expected).epsilon(1e-13));
    CHECK(phi(1).adj() == Approx(expected(1)).epsilon(1e-12));
    recover_memory();
  }
  // New data that change a job's output count: shipped and re-planned.
  std::vector<std::vector<double>> x_r(6, std::vector<double>{0.5});
  std::vector<std::vector<int>> x_i(6, std::vector<int>{1});
  for (int outputs : {1, 3, 0, 2}) {
    for (auto& row : x_i) row[0] = 1;
    Eigen::VectorXd phi(1);
    phi << 0.1;
    std::vector<Eigen::VectorXd> theta(6, Eigen::VectorXd::Ones(1));
    // ragged_job reads its output count from x_i; change it for the last job only, keeping x_i's
    // contents compared by the root, so this goes through the data check as well.
    x_i[5][0] = outputs;
    const Eigen::VectorXd out = map_rect<214, test::ragged_job>(phi, theta, x_r, x_i);
    CHECK(out.size() == 5 + outputs);
  }
}
MAPRECT_REGISTER(214, test::ragged_job);
MAPRECT_REGISTER(216, test::throwing_job);
MAPRECT_REGISTER(215, test::parameter_count_job);

namespace {

/// Seven jobs of parameter_count_job on fixed data, whose output counts the parameters alone set: job j's
/// first parameter is its count. The first job is the root's, the last a worker's.
struct counted_jobs {
  static constexpr int J = 7;
  const std::vector<std::vector<double>> x_r = std::vector<std::vector<double>>(J, std::vector<double>{0.25});
  const std::vector<std::vector<int>> x_i = std::vector<std::vector<int>>(J, std::vector<int>{});
  const Eigen::VectorXd phi = Eigen::VectorXd::Constant(1, 0.3);
  /// The job parameters that give job j counts[j] outputs.
  static std::vector<Eigen::VectorXd> theta(const std::vector<int>& counts) {
    std::vector<Eigen::VectorXd> t;
    for (int j = 0; j < J; ++j) t.push_back(Eigen::Vector2d(counts[j], 0.1 * (j + 1)));
    return t;
  }
};

}  // namespace

TEST_CASE("output counts that change with the parameters alone are re-planned, bit-equal to in process") {
  const counted_jobs d;
  const std::vector<std::vector<int>> patterns{
      {2, 2, 2, 2, 2, 2, 2}, {2, 2, 2, 2, 2, 2, 3}, {0, 2, 2, 2, 2, 2, 3}, {1, 1, 1, 1, 1, 1, 1}, {0, 0, 0, 0, 0, 0, 4}};
  for (const auto& counts : patterns) {
    const std::vector<Eigen::VectorXd> theta = counted_jobs::theta(counts);
    int outputs = 0;
    for (int c : counts) outputs += c;
    INFO("counts " << ::Catch::Detail::stringify(counts) << ", ranks " << test::the_cluster->size());
    CHECK(test::evaluate<215, test::parameter_count_job, double, double>(d.phi, theta, d.x_r, d.x_i).size() ==
          static_cast<std::size_t>(outputs));
    test::check_bit_equal<215, test::parameter_count_job, var, var>(d.phi, theta, d.x_r, d.x_i);
    test::check_bit_equal<215, test::parameter_count_job, double, var>(d.phi, theta, d.x_r, d.x_i);
    test::check_bit_equal<215, test::parameter_count_job, double, double>(d.phi, theta, d.x_r, d.x_i);
  }
}

MAPRECT_REGISTER(217, test::parameter_count_job);

TEST_CASE("a steady call whose output counts change runs again, its root jobs' outputs made once") {
  // Only var parameters, so every call after the first of a pattern is a steady call of the same plan:
  // a changed count is found after the root has made its own jobs' outputs, which the call made anew must
  // replace (check_bit_equal compares the nodes and bytes the call adds with those of in process).
  const counted_jobs d;
  const std::vector<std::vector<int>> patterns{
      {2, 2, 2, 2, 2, 2, 2}, {2, 2, 2, 2, 2, 2, 3}, {3, 2, 2, 2, 2, 2, 3}, {1, 1, 1, 1, 1, 1, 1}};
  for (const auto& counts : patterns) {
    const std::vector<Eigen::VectorXd> theta = counted_jobs::theta(counts);
    INFO("counts " << ::Catch::Detail::stringify(counts) << ", ranks " << test::the_cluster->size());
    test::check_bit_equal<217, test::parameter_count_job, var, var>(d.phi, theta, d.x_r, d.x_i);
    test::check_bit_equal<217, test::parameter_count_job, var, var>(d.phi, theta, d.x_r, d.x_i);
  }
}

TEST_CASE("a call id registered on the root only is a clear error, and the cluster goes on") {
  static const bool registered =
      detail::register_functor(299, detail::make_functor_entry<test::logistic_job>("root_only_logistic"));
  (void)registered;
  test::benchmark_data d(6, 3);
  if (test::the_cluster->size() > 1) {
    CHECK_THROWS_MATCHES((map_rect<299, test::logistic_job>(d.phi, d.theta, d.x_r, d.x_i)), std::invalid_argument,
                         test::message_contains({"call id 299 is not registered on rank"}));
  }
  Eigen::VectorXd expected;
  const double lp = map_rect<212, test::logistic_job>(d.phi, d.theta, d.x_r, d.x_i).sum();
  CHECK(lp == Approx(d.closed_form(expected)).epsilon(1e-13));
}

TEST_CASE("an unregistered call id is refused on the root before any message") {
  test::benchmark_data d(3, 3);
  CHECK_THROWS_MATCHES((map_rect<298, test::logistic_job>(d.phi, d.theta, d.x_r, d.x_i)), std::invalid_argument,
                       test::message_contains({"call id 298 is not registered"}));
}

TEST_CASE("a throw in a call whose messages pass the shared-memory eager size, then good calls") {
  // 2400 jobs of one parameter: each worker's parameters are at least 600 jobs (4800 bytes) at 2 to 4 ranks.
  const int n = 2400, R = test::the_cluster->size();
  const throwing_data bad(n - 1, 2, n), good(-1, 0, n);  // the last job, on the last rank, throws invalid_argument
  const double expected = 3.0 * n * (n - 1) / 2;
  CHECK(good_call<216>(good) == expected);
  // Run by the last worker, or by the root if it took the job over.
  CHECK_THROWS_MATCHES(good_call<216>(bad), std::invalid_argument,
                       Catch::Matchers::Predicate<std::invalid_argument>([&](const std::invalid_argument& e) {
                         const std::string what = e.what();
                         return what.find("boom at 2399") != std::string::npos &&
                                what.find("job 2399") != std::string::npos && test::names_rank_or_root(what, R - 1, R);
                       }));
  recover_memory();
  for (int repeat = 0; repeat < 3; ++repeat) CHECK(good_call<216>(good) == expected);
}
