// In-process map_rect failures: inconsistent arguments name the argument, job and sizes; a job's
// exception comes back as its own type with its message and job; call ids that are unregistered, used
// with the wrong functor or claimed twice name the id. None leaves anything on the caller's tape.
#include <catch2/catch.hpp>

#include "map_rect/functors.hpp"
#include "support/matchers.hpp"

using namespace maprect;
using test::message_contains;

namespace maprect::test {
/// A second functor for id 150, so that the id is claimed twice.
struct other_job : logistic_job {};
/// A functor split_job-like, calling throwing_job from inside its own job.
struct nested_throwing_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i, std::ostream*) const {
    // Two inner jobs; the second fails when this job's x_i[0] says so, reporting itself as job x_i[1].
    const std::vector<Eigen::Matrix<T2, Eigen::Dynamic, 1>> inner_theta(2, theta);
    const std::vector<std::vector<double>> inner_x_r(2, x_r);
    const std::vector<std::vector<int>> inner_x_i = {{0, 0}, {x_i[0], x_i[1]}};
    return map_rect<111, throwing_job>(phi, inner_theta, inner_x_r, inner_x_i);
  }
};
}  // namespace maprect::test

MAPRECT_REGISTER(110, maprect::test::logistic_job);
MAPRECT_REGISTER(111, maprect::test::throwing_job);
MAPRECT_REGISTER(112, maprect::test::nested_throwing_job);
MAPRECT_REGISTER(150, maprect::test::logistic_job);
MAPRECT_REGISTER(150, maprect::test::other_job);

namespace {

using vectors_v = std::vector<vector_v>;
using vectors_d = std::vector<Eigen::VectorXd>;
using rows_r = std::vector<std::vector<double>>;
using rows_i = std::vector<std::vector<int>>;

const Eigen::VectorXd phi_d = Eigen::Vector2d(0.3, -0.5);

vectors_d job_params_d(int J, int P = 2) { return vectors_d(J, Eigen::VectorXd::Constant(P, 0.1)); }
vectors_v job_params_v(int J, int P = 2) { return vectors_v(J, to_var(Eigen::VectorXd::Constant(P, 0.1))); }

/// Runs `call` expecting std::invalid_argument containing all `pieces`, and checks the tape is unchanged.
/// Arguments are made before `call` runs, so that any node left on the tape is the call's.
template <class Call>
void check_rejected(Call&& call, std::vector<std::string> pieces) {
  const std::size_t size = tape_size();
  CHECK_THROWS_MATCHES(call(), std::invalid_argument, message_contains(pieces));
  CHECK(tape_size() == size);
  CHECK(tape::current().nests.empty());
}

}  // namespace

TEST_CASE("map_rect rejects a number of x_r or x_i rows different from the number of jobs") {
  recover_memory();
  const vector_v phi_v = to_var(phi_d);
  const vectors_v params_v3 = job_params_v(3);
  const rows_r r3(3, std::vector<double>{1.0}), r2(2, std::vector<double>{1.0});
  const rows_i i3(3, std::vector<int>{1}), i4(4, std::vector<int>{1});
  check_rejected([&] { return map_rect<110, test::logistic_job>(phi_d, job_params_d(3), r2, i3); },
                 {"x_r", "2 rows", "3 jobs"});
  check_rejected([&] { return map_rect<110, test::logistic_job>(phi_v, params_v3, r2, i3); },
                 {"x_r", "2 rows", "3 jobs"});
  check_rejected([&] { return map_rect<110, test::logistic_job>(phi_d, params_v3, r3, i4); },
                 {"x_i", "4 rows", "3 jobs"});
  check_rejected([&] { return map_rect<110, test::logistic_job>(phi_v, job_params_d(3), r3, i4); },
                 {"x_i", "4 rows", "3 jobs"});
  // No jobs but data rows.
  check_rejected([&] { return map_rect<110, test::logistic_job>(phi_d, job_params_d(0), r2, rows_i{}); },
                 {"x_r", "2 rows", "0 jobs"});
  recover_memory();
}

TEST_CASE("map_rect rejects job parameter vectors of unequal length, naming the job and both sizes") {
  recover_memory();
  const rows_r r(4, std::vector<double>{1.0});
  const rows_i i(4, std::vector<int>{1});
  vectors_d params_d = job_params_d(4);
  params_d[2] = Eigen::VectorXd::Constant(3, 0.1);
  check_rejected([&] { return map_rect<110, test::logistic_job>(phi_d, params_d, r, i); },
                 {"job_params[2]", "size 3", "expected 2"});
  const vector_v phi_v = to_var(phi_d);
  vectors_v params_v = job_params_v(4);
  params_v[3] = vector_v(1);
  params_v[3](0) = 0.1;
  check_rejected([&] { return map_rect<110, test::logistic_job>(phi_v, params_v, r, i); },
                 {"job_params[3]", "size 1", "expected 2"});
  recover_memory();
}

TEST_CASE("map_rect rejects x_r or x_i rows of unequal length, naming the job and both sizes") {
  recover_memory();
  const vector_v phi_v = to_var(phi_d);
  const vectors_v params_v4 = job_params_v(4);
  rows_r r(4, std::vector<double>(5, 1.0));
  rows_i i(4, std::vector<int>(5, 1));
  r[1].resize(4);
  check_rejected([&] { return map_rect<110, test::logistic_job>(phi_d, job_params_d(4), r, i); },
                 {"x_r[1]", "size 4", "expected 5"});
  check_rejected([&] { return map_rect<110, test::logistic_job>(phi_v, params_v4, r, i); },
                 {"x_r[1]", "size 4", "expected 5"});
  r[1].resize(5);
  i[3].resize(7);
  check_rejected([&] { return map_rect<110, test::logistic_job>(phi_d, params_v4, r, i); },
                 {"x_i[3]", "size 7", "expected 5"});
  check_rejected([&] { return map_rect<110, test::logistic_job>(phi_v, job_params_d(4), r, i); },
                 {"x_i[3]", "size 7", "expected 5"});
  recover_memory();
}

namespace {

/// Five jobs of throwing_job; job `failing` throws kind `kind`.
struct throwing_data {
  rows_r x_r = rows_r(5, std::vector<double>{});
  rows_i x_i = rows_i(5, std::vector<int>{0, 0});
  throwing_data(int failing, int kind) {
    for (int j = 0; j < 5; ++j) x_i[j][1] = j;
    if (failing >= 0) x_i[failing][0] = kind;
  }
};

template <class T_shared, class T_job, class Expected>
void check_job_failure(int failing, int kind, std::vector<std::string> pieces) {
  recover_memory();
  const throwing_data bad(failing, kind), good(-1, 0);
  Eigen::Matrix<T_shared, Eigen::Dynamic, 1> phi = Eigen::VectorXd::Constant(1, 2.0).cast<T_shared>();
  std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>> theta;
  for (int j = 0; j < 5; ++j) theta.push_back(Eigen::VectorXd::Constant(1, j).cast<T_job>());
  const std::size_t size = tape_size(), bytes = tape_bytes();
  CHECK_THROWS_MATCHES((map_rect<111, test::throwing_job>(phi, theta, bad.x_r, bad.x_i)), Expected,
                       message_contains(pieces));
  // Neither the failed job's graph nor the outputs of the jobs before it stay on the caller's tape.
  CHECK(tape_size() == size);
  CHECK(tape_bytes() == bytes);
  CHECK(tape::current().nests.empty());
  CHECK(detail::functor_depth == 0);
  // The next call works: outputs phi0 * theta0 = 2 j.
  const auto out = map_rect<111, test::throwing_job>(phi, theta, good.x_r, good.x_i);
  CHECK(value_of(out) == (Eigen::VectorXd(5) << 0, 2, 4, 6, 8).finished());
  recover_memory();
}

template <class T_shared, class T_job>
void check_job_failures() {
  for (int failing : {0, 2, 4}) {
    INFO("failing job " << failing);
    const std::string job = "job " + std::to_string(failing), original = "bad job " + std::to_string(failing);
    check_job_failure<T_shared, T_job, std::domain_error>(failing, 1, {job, original});
    check_job_failure<T_shared, T_job, std::invalid_argument>(failing, 2, {job, original});
    check_job_failure<T_shared, T_job, std::runtime_error>(failing, 3, {job, "unknown exception"});
  }
}

}  // namespace

TEST_CASE("an exception thrown by the functor propagates with its type, message and job") {
  check_job_failures<double, double>();
  check_job_failures<double, var>();
  check_job_failures<var, double>();
  check_job_failures<var, var>();
}

TEST_CASE("an exception inside a nested map_rect names both the outer and the inner job") {
  recover_memory();
  vector_v phi = to_var(Eigen::VectorXd::Constant(1, 2.0));
  const vectors_v theta(3, to_var(Eigen::VectorXd::Constant(1, 1.0)));
  const rows_r x_r(3, std::vector<double>{});
  rows_i x_i(3, std::vector<int>{0, 7});
  x_i[1][0] = 1;  // outer job 1 makes its inner job 1 throw domain_error "bad job 7"
  const std::size_t size = tape_size();
  CHECK_THROWS_MATCHES((map_rect<112, test::nested_throwing_job>(phi, theta, x_r, x_i)), std::domain_error,
                       message_contains({"map_rect: job 1 failed: map_rect: job 1 failed: bad job 7"}));
  CHECK(tape_size() == size);
  CHECK(detail::functor_depth == 0);
  x_i[1][0] = 0;
  const vector_v out = map_rect<112, test::nested_throwing_job>(phi, theta, x_r, x_i);
  CHECK(value_of(out) == Eigen::VectorXd::Constant(6, 2.0));
  recover_memory();
}

TEST_CASE("an unregistered call id is rejected, naming the id") {
  recover_memory();
  const vector_v phi_v = to_var(phi_d);
  const vectors_v params_v1 = job_params_v(1);
  const rows_r r(1, std::vector<double>{1.0});
  const rows_i i(1, std::vector<int>{1});
  check_rejected([&] { return map_rect<199, test::logistic_job>(phi_d, job_params_d(1), r, i); },
                 {"call id 199", "not registered"});
  check_rejected([&] { return map_rect<199, test::logistic_job>(phi_v, params_v1, r, i); },
                 {"call id 199", "not registered"});
}

TEST_CASE("a call id used with a functor other than its registered one is rejected, naming the id") {
  recover_memory();
  const vector_v phi_v = to_var(phi_d);
  const vectors_v params_v1 = job_params_v(1);
  const rows_r r(1, std::vector<double>{1.0});
  const rows_i i(1, std::vector<int>{1, 0});
  check_rejected([&] { return map_rect<110, test::throwing_job>(phi_d, job_params_d(1), r, i); },
                 {"call id 110", "registered for", "logistic_job"});
  check_rejected([&] { return map_rect<110, test::throwing_job>(phi_v, params_v1, r, i); },
                 {"call id 110", "registered for", "logistic_job"});
  // The same id with its own functor still works.
  const auto ok = map_rect<110, test::logistic_job>(phi_d, job_params_d(1), r, rows_i(1, std::vector<int>{1}));
  CHECK(ok.size() == 1);
}

TEST_CASE("a call id registered for two functors is rejected, naming the id and both functors") {
  recover_memory();
  const vector_v phi_v = to_var(phi_d);
  const vectors_v params_v1 = job_params_v(1);
  const rows_r r(1, std::vector<double>{1.0});
  const rows_i i(1, std::vector<int>{1});
  check_rejected([&] { return map_rect<150, test::logistic_job>(phi_d, job_params_d(1), r, i); },
                 {"call id 150", "two functors", "logistic_job", "other_job"});
  check_rejected([&] { return map_rect<150, test::other_job>(phi_v, params_v1, r, i); },
                 {"call id 150", "two functors"});
}
