// pointwise_regression over the cluster: each job's K outputs, and the model's value and gradient through the
// model interface, bit-equal to the same evaluation in process.
#include <catch2/catch.hpp>

#include <maprect/model.hpp>

#include "mpi/compare.hpp"
#include "src/models/pointwise_regression.hpp"
#include "src/cluster/test_hooks.hpp"

using namespace maprect;

namespace {

/// Packed parameters near the truth, with no partial zero by symmetry.
Eigen::VectorXd near_truth(const models::pointwise_regression_data& d) {
  Eigen::VectorXd p = d.true_parameters;
  for (Eigen::Index i = 0; i < p.size(); ++i) p(i) += 0.1 * std::cos(0.7 * i);
  return p;
}

}  // namespace

TEST_CASE("pointwise_regression's K outputs per job over the cluster equal in process bit for bit") {
  const auto d = models::simulate_pointwise_regression(7, 9, 3);
  const Eigen::VectorXd p = near_truth(d);
  const Eigen::VectorXd phi = p.head(1 + d.C);
  std::vector<Eigen::VectorXd> theta;
  for (int g = 0; g < d.G; ++g) theta.push_back(p.segment(1 + d.C + g, 1));
  const auto x_r = models::pointwise_regression_rows(d);
  const std::vector<std::vector<int>> x_i(static_cast<std::size_t>(d.G));
  using job = models::pointwise_regression_job;
  constexpr int id = models::pointwise_regression_call_id;
  test::check_bit_equal<id, job, var, var>(phi, theta, x_r, x_i);
  test::check_bit_equal<id, job, double, var>(phi, theta, x_r, x_i);
  test::check_bit_equal<id, job, var, double>(phi, theta, x_r, x_i);
  test::check_bit_equal<id, job, double, double>(phi, theta, x_r, x_i);
}

TEST_CASE("pointwise_regression's value, gradient and log_lik over the cluster equal in process bit for bit") {
  const auto d = models::simulate_pointwise_regression(11, 13, 5);
  const job_data rows = models::pointwise_regression_job_data(d);
  const Eigen::VectorXd p = near_truth(d);
  auto evaluate = [&] {
    double lp = 0;
    Eigen::VectorXd g;
    gradient([&](const vector_v& q) { return models::pointwise_regression_log_density(d, rows, q); }, p, lp, g);
    std::vector<double> out = {lp, models::pointwise_regression_log_density(d, rows, p)};
    out.insert(out.end(), g.data(), g.data() + g.size());
    return out;
  };
  // Call by call from a site that forgot its calls: under auto the first runs eager, the others deferred.
  detail::forget_reverse_choices_for_tests();
  const auto locals =
      test::in_process([&] { return std::vector<std::vector<double>>{evaluate(), evaluate(), evaluate()}; });
  detail::forget_reverse_choices_for_tests();
  for (int repeat = 0; repeat < 3; ++repeat) {  // the first call ships the rows; later ones are steady
    const std::vector<double> remote = evaluate();
    const std::vector<double>& local = locals[static_cast<std::size_t>(repeat)];
    REQUIRE(remote.size() == local.size());
    for (std::size_t k = 0; k < local.size(); ++k) {
      INFO("entry " << k << " repeat " << repeat << ": " << remote[k] << " vs " << local[k]);
      CHECK(test::bit_equal(remote[k], local[k]));
    }
  }
  CHECK(detail::reverse_site_of<models::pointwise_regression_call_id>.last_ran_deferred());
  // The same through the registered model (its data as JSON), whose gradient the sampler takes.
  const auto m = find_model("pointwise_regression").make(
      model_data(find_model("pointwise_regression").embedded_data(6, 10), "embedded"));
  const Eigen::VectorXd u = Eigen::VectorXd::LinSpaced(m->size(), -0.5, 0.5);
  Eigen::VectorXd g_local, g_remote;
  detail::forget_reverse_choices_for_tests();
  const double lp_local = test::in_process([&] { return m->log_density(u, g_local, true); });
  detail::forget_reverse_choices_for_tests();
  const double lp_remote = m->log_density(u, g_remote, true);
  CHECK(test::bit_equal(lp_local, lp_remote));
  REQUIRE(g_local.size() == g_remote.size());
  for (Eigen::Index i = 0; i < g_local.size(); ++i) CHECK(test::bit_equal(g_local(i), g_remote(i)));
}
