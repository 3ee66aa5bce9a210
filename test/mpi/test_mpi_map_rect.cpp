// map_rect over the cluster against the same call in process: bit-equal values and gradients.
#include <catch2/catch.hpp>
#include <cstring>

#include "support/benchmark_model.hpp"
#include "support/mpi_test.hpp"
#include "mpi/functors.hpp"

using namespace maprect;
using test::benchmark_data;

MAPRECT_REGISTER(201, test::logistic_job);
MAPRECT_REGISTER(202, test::ragged_job);

namespace {

/// Runs f with the cluster's backend switched off, so map_rect runs in process on the root.
template <class F>
auto in_process(F&& f) {
  const detail::remote_call saved = detail::remote_backend;
  detail::remote_backend = nullptr;
  auto result = f();
  detail::remote_backend = saved;
  return result;
}

bool bit_equal(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// Values and gradient (shared first, then each job's) of sum(map_rect(...)) for parameters of the given kinds.
template <int Id, class F, class T_shared, class T_job>
std::vector<double> evaluate(const Eigen::VectorXd& phi_d, const std::vector<Eigen::VectorXd>& theta_d,
                             const std::vector<std::vector<double>>& x_r, const std::vector<std::vector<int>>& x_i) {
  Eigen::Matrix<T_shared, Eigen::Dynamic, 1> phi = phi_d.cast<T_shared>();
  std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>> theta;
  for (auto& t : theta_d) theta.push_back(t.cast<T_job>());
  auto out = map_rect<Id, F>(phi, theta, x_r, x_i);
  std::vector<double> result;
  for (Eigen::Index k = 0; k < out.size(); ++k) result.push_back(value_of(out(k)));
  if constexpr (is_var_v<decltype(out.sum())>) {
    if (out.size() > 0) {
      var total = out.sum();
      grad(total);
      if constexpr (is_var_v<T_shared>)
        for (Eigen::Index s = 0; s < phi.size(); ++s) result.push_back(phi(s).adj());
      if constexpr (is_var_v<T_job>)
        for (auto& t : theta)
          for (Eigen::Index p = 0; p < t.size(); ++p) result.push_back(t(p).adj());
    }
  }
  recover_memory();
  return result;
}

template <int Id, class F, class T_shared, class T_job>
void check_bit_equal(const Eigen::VectorXd& phi, const std::vector<Eigen::VectorXd>& theta,
                     const std::vector<std::vector<double>>& x_r, const std::vector<std::vector<int>>& x_i) {
  const auto serial = in_process([&] { return evaluate<Id, F, T_shared, T_job>(phi, theta, x_r, x_i); });
  for (int repeat = 0; repeat < 3; ++repeat) {  // first call ships data; later ones are steady state
    const auto distributed = evaluate<Id, F, T_shared, T_job>(phi, theta, x_r, x_i);
    REQUIRE(distributed.size() == serial.size());
    for (std::size_t k = 0; k < serial.size(); ++k) {
      INFO("entry " << k << " repeat " << repeat);
      CHECK(bit_equal(distributed[k], serial[k]));
    }
  }
}

}  // namespace

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
  evaluate<201, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);  // plan (if not yet)
  evaluate<201, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);  // steady state
  const auto t = test::the_cluster->last_call_traffic();
  const int R = test::the_cluster->size();
  if (R == 1) {
    CHECK(t.sent == 0);
    CHECK(t.received == 0);
  } else {
    const int root_jobs = 8 / R;  // contiguous balanced chunks, the root first
    // Request broadcast to each worker, the workers' job parameters, their (1 + 2 + 2)-row blocks + status.
    CHECK(t.sent == 8u * (32 * (R - 1) + 2 * (8 - root_jobs)));
    CHECK(t.received == 8u * (5 * (8 - root_jobs) + 2 * (R - 1)));
  }
}
