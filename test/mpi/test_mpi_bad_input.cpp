// Bad input over the cluster: non-finite parameters propagate (no crash, the same bits as in process),
// empty parameter vectors work, and arrays too large for one MPI message are refused before any message.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "mpi/compare.hpp"
#include "support/benchmark_model.hpp"
#include "support/matchers.hpp"
#include "support/mpi_test.hpp"

using namespace maprect;

MAPRECT_REGISTER(241, test::logistic_job);

namespace {

/// sum(shared) + sum(own) + x_r[0]: works whatever the parameter counts, zero included.
struct sums_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& shared,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& own,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>&, std::ostream*) const {
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
    out(0) = return_type_t<T1, T2>(x_r[0]);
    for (Eigen::Index s = 0; s < shared.size(); ++s) out(0) += shared(s);
    for (Eigen::Index p = 0; p < own.size(); ++p) out(0) += own(p);
    return out;
  }
};

}  // namespace

MAPRECT_REGISTER(242, sums_job);

TEST_CASE("NaN and infinite parameters propagate: no crash, same bits as in process") {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  constexpr double inf = std::numeric_limits<double>::infinity();
  test::benchmark_data d(7, 6);
  const int J = 7;

  SECTION("a NaN shared parameter makes every value and partial NaN") {
    d.phi(0) = nan;
    const auto r = test::evaluate<241, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);
    REQUIRE(r.size() == static_cast<std::size_t>(J + 2 + 2 * J));
    for (double v : r) CHECK(std::isnan(v));
    test::check_bit_equal<241, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);
  }
  SECTION("an infinite job parameter gives that job an infinite value; the other jobs are untouched") {
    for (double bad : {inf, -inf}) {
      d.theta[J - 1](0) = bad;
      const auto r = test::evaluate<241, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);
      for (int j = 0; j < J - 1; ++j) CHECK(std::isfinite(r[j]));
      CHECK(r[J - 1] == -inf);  // some y are 1 and some 0, so one of the two terms is -inf
      for (int j = 0; j < J - 1; ++j) {  // the partials of the finite jobs' own parameters stay finite
        CHECK(std::isfinite(r[J + 2 + 2 * j]));
        CHECK(std::isfinite(r[J + 3 + 2 * j]));
      }
      test::check_bit_equal<241, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);
      test::check_bit_equal<241, test::logistic_job, double, double>(d.phi, d.theta, d.x_r, d.x_i);
    }
  }
}

TEST_CASE("empty parameter vectors: no shared, no own, or neither") {
  const int J = 5;
  std::vector<std::vector<double>> x_r(J, std::vector<double>{0.0});
  std::vector<std::vector<int>> x_i(J);
  for (int j = 0; j < J; ++j) x_r[j][0] = j;
  const Eigen::VectorXd none(0), two = Eigen::Vector2d(0.5, 1.5);
  const std::vector<Eigen::VectorXd> own_none(J, Eigen::VectorXd(0)), own_one(J, Eigen::VectorXd::Constant(1, 3.0));

  test::check_bit_equal<242, sums_job, var, var>(none, own_one, x_r, x_i);
  test::check_bit_equal<242, sums_job, var, var>(two, own_none, x_r, x_i);
  test::check_bit_equal<242, sums_job, var, var>(none, own_none, x_r, x_i);
  test::check_bit_equal<242, sums_job, double, var>(none, own_none, x_r, x_i);

  // Values and partials: x_r[j] + 2 + 3 for shared (0.5, 1.5) and own 3; every partial is 1 per job.
  const auto r = test::evaluate<242, sums_job, var, var>(two, own_one, x_r, x_i);
  REQUIRE(r.size() == static_cast<std::size_t>(J + 2 + J));
  for (int j = 0; j < J; ++j) CHECK(r[j] == j + 5.0);
  CHECK(r[J] == J);      // d sum / d shared(0)
  CHECK(r[J + 1] == J);  // d sum / d shared(1)
  for (int j = 0; j < J; ++j) CHECK(r[J + 2 + j] == 1.0);
  const auto only_data = test::evaluate<242, sums_job, var, var>(none, own_none, x_r, x_i);
  REQUIRE(only_data.size() == static_cast<std::size_t>(J));
  CHECK(only_data[J - 1] == J - 1.0);
}

TEST_CASE("counts beyond one MPI message are refused by name, never overflowed") {
  CHECK(detail::fits_one_message(2147483647LL));
  CHECK_FALSE(detail::fits_one_message(2147483648LL));
  CHECK_FALSE(detail::fits_one_message(65536LL * 65536LL));
  CHECK_THROWS_MATCHES(detail::throw_too_large_for_message(2147483648LL, "x_r of call id 9"), std::invalid_argument,
                       test::message_contains({"x_r of call id 9", "2147483648", "2^31-1"}));
}
