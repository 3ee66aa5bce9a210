// map_rect with a job_data: the same bits as with x_r/x_i, no per-call data check, and new data under an old
// call id shipped as such.
#include <catch2/catch.hpp>
#include <maprect/job_data.hpp>
#include <maprect/maprect.hpp>

#include "mpi/compare.hpp"
#include "src/models/logreg.hpp"
#include "support/benchmark_model.hpp"
#include "support/mpi_test.hpp"
#include "src/cluster/test_hooks.hpp"

using namespace maprect;
using test::benchmark_data;
using test::bit_equal;

MAPRECT_REGISTER(301, test::logistic_job);
MAPRECT_REGISTER(302, test::logistic_job);
MAPRECT_REGISTER(303, test::logistic_job);
MAPRECT_REGISTER(304, test::logistic_job);
MAPRECT_REGISTER(305, test::logistic_job);
MAPRECT_REGISTER(306, test::logistic_job);

namespace {

/// Values and gradient (shared first, then each job's) of sum(call(phi, theta)) for parameters of the given
/// kinds; `call` is map_rect with its data bound.
template <class T_shared, class T_job, class Call>
std::vector<double> evaluate_with(const Eigen::VectorXd& phi_d, const std::vector<Eigen::VectorXd>& theta_d,
                                  Call call) {
  Eigen::Matrix<T_shared, Eigen::Dynamic, 1> phi = phi_d.cast<T_shared>();
  std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>> theta;
  for (auto& t : theta_d) theta.push_back(t.cast<T_job>());
  return test::values_and_gradient(call(phi, theta), phi, theta);
}

/// sum(map_rect) and its gradient with call site Id fed `data`.
template <int Id, class T_shared, class T_job>
std::vector<double> with_job_data(const benchmark_data& d, const job_data& data) {
  return evaluate_with<T_shared, T_job>(
      d.phi, d.theta, [&](auto& phi, auto& theta) { return map_rect<Id, test::logistic_job>(phi, theta, data); });
}

/// The same with call site Id fed rows the caller may change.
template <int Id, class T_shared, class T_job>
std::vector<double> with_rows(const benchmark_data& d) {
  return evaluate_with<T_shared, T_job>(d.phi, d.theta, [&](auto& phi, auto& theta) {
    return map_rect<Id, test::logistic_job>(phi, theta, d.x_r, d.x_i);
  });
}

bool all_bit_equal(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (!bit_equal(a[k], b[k])) return false;
  return true;
}

/// Bytes of the rows of jobs [first, J) of `d`.
std::uint64_t row_bytes(const benchmark_data& d, int first) {
  const auto J = static_cast<std::uint64_t>(d.x_r.size()), N = static_cast<std::uint64_t>(d.x_r[0].size());
  return (J - static_cast<std::uint64_t>(first)) * N * (sizeof(double) + sizeof(int));
}

template <class T_shared, class T_job>
void check_kind_bit_equal(const benchmark_data& d) {
  const job_data data(d.x_r, d.x_i);
  const auto serial = test::in_process([&] { return with_rows<302, T_shared, T_job>(d); });
  for (int call = 0; call < 3; ++call) {  // the first call ships the rows, the others are steady
    INFO("call " << call);
    CHECK(all_bit_equal(with_job_data<301, T_shared, T_job>(d, data), serial));
    CHECK(all_bit_equal(with_rows<302, T_shared, T_job>(d), serial));
  }
  CHECK(all_bit_equal(test::in_process([&] { return with_job_data<301, T_shared, T_job>(d, data); }), serial));
}

}  // namespace

TEST_CASE("job_data: same bits as x_r/x_i, in process and over the cluster, all type combinations") {
  INFO("ranks " << test::the_cluster->size());
  for (auto [J, N] : {std::pair{1, 5}, std::pair{3, 7}, std::pair{16, 20}, std::pair{33, 3}}) {
    INFO("J " << J << ", N " << N);
    const benchmark_data d(J, N);
    check_kind_bit_equal<var, var>(d);
    check_kind_bit_equal<var, double>(d);
    check_kind_bit_equal<double, var>(d);
    check_kind_bit_equal<double, double>(d);
  }
}

TEST_CASE("job_data: a steady call checks no row and sends none, with the same object or a copy") {
  const int R = test::the_cluster->size();
  const benchmark_data d(24, 200);
  const job_data data(d.x_r, d.x_i);
  const auto serial = test::in_process([&] { return with_rows<304, var, var>(d); });
  // Both sites planned with every job on the workers, so that their steady calls send the same.
  detail::plan_root_share(303, 0);
  detail::plan_root_share(304, 0);
  CHECK(all_bit_equal(with_job_data<303, var, var>(d, data), serial));
  const cluster::traffic first = test::the_cluster->last_call_traffic();
  CHECK(all_bit_equal(with_rows<304, var, var>(d), serial));
  CHECK(all_bit_equal(with_rows<304, var, var>(d), serial));
  const cluster::profile checked = test::the_cluster->last_call_profile();
  const cluster::traffic steady_rows = test::the_cluster->last_call_traffic();

  const job_data copy = data;  // NOLINT(performance-unnecessary-copy-initialization): a copy is the point
  CHECK(copy.id() == data.id());
  for (const job_data* fed : {&data, &copy, &data}) {
    CHECK(all_bit_equal(with_job_data<303, var, var>(d, *fed), serial));
    const cluster::profile p = test::the_cluster->last_call_profile();
    const cluster::traffic t = test::the_cluster->last_call_traffic();
    CHECK(p.checked_rows == 0);
    if (R == 1) continue;
    // A steady call: the profile is filled in, and the same bytes go as in a steady call with x_r/x_i.
    CHECK(p.root_jobs + p.worker_jobs + p.taken_jobs > 0);
    if (p.root_jobs == checked.root_jobs) CHECK(t.sent == steady_rows.sent);  // received: less what the root took over
    CHECK(t.sent < row_bytes(d, 24 - 1));  // less than one row
  }
  if (R == 1) return;
  // x_r/x_i: every steady call compares the workers' rows.
  CHECK(checked.checked_rows == 24 - checked.root_jobs);
  CHECK(checked.checked_rows > 0);
  // The job_data's first call shipped every row (the root ran no job).
  CHECK(first.sent >= row_bytes(d, 0));
}

TEST_CASE("job_data: a new object under an old call id is shipped and never answered from the old rows") {
  const int R = test::the_cluster->size();
  benchmark_data d(20, 100);
  const job_data old_data(d.x_r, d.x_i);
  for (int call = 0; call < 2; ++call) with_job_data<305, var, var>(d, old_data);
  // Different rows: the results follow them.
  for (auto& row : d.x_r)
    for (double& x : row) x = 0.5 * x + 0.25;
  d.x_i[7][3] = 1 - d.x_i[7][3];
  const job_data new_data(d.x_r, d.x_i);
  CHECK(new_data.id() != old_data.id());
  const auto serial = test::in_process([&] { return with_rows<306, var, var>(d); });
  const auto old_serial = test::in_process([&] { return with_job_data<306, var, var>(d, old_data); });
  REQUIRE_FALSE(all_bit_equal(serial, old_serial));
  for (int call = 0; call < 3; ++call) {
    INFO("call " << call);
    if (call == 0) detail::plan_root_share(305, 0);  // the new rows all go to the workers
    CHECK(all_bit_equal(with_job_data<305, var, var>(d, new_data), serial));
    const cluster::traffic t = test::the_cluster->last_call_traffic();
    if (R > 1 && call == 0) CHECK(t.sent >= row_bytes(d, 0));
    if (R > 1 && call > 0) CHECK(t.sent < row_bytes(d, 20 - 1));  // less than one row
  }
  // Equal rows in a new object are new data too: shipped again, same results.
  const job_data equal_rows(d.x_r, d.x_i);
  detail::plan_root_share(305, 0);
  CHECK(all_bit_equal(with_job_data<305, var, var>(d, equal_rows), serial));
  if (R > 1) CHECK(test::the_cluster->last_call_traffic().sent >= row_bytes(d, 0));
  // Back to the old object: its rows, not the last ones shipped.
  CHECK(all_bit_equal(with_job_data<305, var, var>(d, old_data), old_serial));
  // Rows the caller may change, then a job_data again, at the same call id.
  CHECK(all_bit_equal(with_rows<305, var, var>(d), serial));
  CHECK(all_bit_equal(with_rows<305, var, var>(d), serial));
  if (R > 1) CHECK(test::the_cluster->last_call_profile().checked_rows > 0);
  CHECK(all_bit_equal(with_job_data<305, var, var>(d, old_data), old_serial));
  CHECK(all_bit_equal(with_job_data<305, var, var>(d, old_data), old_serial));
  CHECK(test::the_cluster->last_call_profile().checked_rows == 0);
}

TEST_CASE("job_data: moves of the root's share keep the bits") {
  const int R = test::the_cluster->size();
  const benchmark_data d(26, 12);
  const job_data data(d.x_r, d.x_i);
  const auto serial = test::in_process([&] { return with_rows<304, double, var>(d); });
  CHECK(all_bit_equal(with_job_data<303, double, var>(d, data), serial));
  for (int root_jobs : {0, 5, 26, 1, 13, 0, 40}) {
    INFO("root share " << root_jobs);
    detail::plan_root_share(303, root_jobs);
    const job_data copy = data;
    CHECK(all_bit_equal(with_job_data<303, double, var>(d, copy), serial));
    CHECK(all_bit_equal(with_job_data<303, double, var>(d, data), serial));
    const cluster::profile p = test::the_cluster->last_call_profile();
    CHECK(p.checked_rows == 0);
    if (R > 1) CHECK(p.root_jobs == std::min(root_jobs, 26));
  }
}

TEST_CASE("job_data: bad shapes are named") {
  using rows_r = std::vector<std::vector<double>>;
  using rows_i = std::vector<std::vector<int>>;
  CHECK_THROWS_MATCHES(job_data(rows_r(3, std::vector<double>(2)), rows_i(4, std::vector<int>(1))),
                       std::invalid_argument,
                       Catch::Message("job_data: x_r has 3 rows but x_i has 4 (one row of each per job)"));
  rows_r x_r(4, std::vector<double>(2));
  x_r[2].resize(5);
  CHECK_THROWS_MATCHES(job_data(x_r, rows_i(4, std::vector<int>(1))), std::invalid_argument,
                       Catch::Message("job_data: x_r[2] has size 5, expected 2 (the size of x_r[0])"));
  rows_i x_i(4, std::vector<int>(3));
  x_i[1].clear();
  CHECK_THROWS_MATCHES(job_data(rows_r(4, std::vector<double>(2)), x_i), std::invalid_argument,
                       Catch::Message("job_data: x_i[1] has size 0, expected 3 (the size of x_i[0])"));

  const job_data empty;
  CHECK(empty.size() == 0);
  const job_data three(rows_r(3, std::vector<double>(2, 1.0)), rows_i(3, std::vector<int>(2, 1)));
  CHECK(three.size() == 3);
  CHECK(three.x_r()[2].size() == 2);
  CHECK(three.x_i()[1].size() == 2);
  CHECK(three.id() != empty.id());
  const benchmark_data d(4, 2);
  CHECK_THROWS_MATCHES((map_rect<301, test::logistic_job>(d.phi, d.theta, three)), std::invalid_argument,
                       Catch::Message("map_rect: x_r has 3 rows but job_params has 4 jobs (one row per job)"));
  CHECK((map_rect<301, test::logistic_job>(d.phi, std::vector<Eigen::VectorXd>{}, empty).size() == 0));
}

TEST_CASE("job_data: the models' steady calls over the cluster check no row") {
  const int R = test::the_cluster->size();
  const models::logreg_model model(12, 40);
  Eigen::VectorXd x(model.size());
  for (Eigen::Index i = 0; i < x.size(); ++i) x(i) = 0.1 * std::sin(1.0 + i);
  const double serial = test::in_process([&] { return model.log_density(x); });
  for (int call = 0; call < 3; ++call) {
    INFO("call " << call);
    CHECK(bit_equal(model.log_density(x), serial));
    if (call > 0 && R > 1) {
      const cluster::profile p = test::the_cluster->last_call_profile();
      CHECK(p.checked_rows == 0);
      CHECK(p.root_jobs + p.worker_jobs + p.taken_jobs > 0);  // a steady call
    }
  }
  // A copy of the model shares its job_data: still steady, still unchecked.
  const models::logreg_model copy = model;
  CHECK(bit_equal(copy.log_density(x), serial));
  const cluster::profile p = test::the_cluster->last_call_profile();
  CHECK(p.checked_rows == 0);
  if (R > 1) CHECK(p.root_jobs + p.worker_jobs + p.taken_jobs > 0);  // steady: the copy's rows were not shipped
}
