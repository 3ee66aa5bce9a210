// pointwise_regression: the jobs' K outputs against the closed form, the gradient against finite differences
// and the closed form, the model on the interface with its log_lik columns, and NUTS against the exact
// Gaussian posterior.
#include <catch2/catch.hpp>

#include <maprect/model.hpp>
#include <maprect/sample.hpp>

#include <pointwise_regression.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "src/sampling/summary.hpp"
#include "support/matchers.hpp"
#include "src/cluster/test_hooks.hpp"

using namespace maprect;
using maprect::test::message_contains;

namespace {

/// A point off the truth, so that no partial is zero by symmetry.
Eigen::VectorXd near_truth(const models::pointwise_regression_data& d) {
  Eigen::VectorXd p = d.true_parameters;
  for (Eigen::Index i = 0; i < p.size(); ++i) p(i) += 0.2 * std::sin(1.3 * i + 0.4);
  return p;
}

double value_and_gradient(const models::pointwise_regression_data& d, const job_data& rows, const Eigen::VectorXd& p,
                          Eigen::VectorXd& g) {
  double lp = 0;
  gradient([&](const vector_v& q) { return models::pointwise_regression_log_density(d, rows, q); }, p, lp, g);
  return lp;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::unique_ptr<model> registered(const nlohmann::json& data) {
  return find_model("pointwise_regression").make(model_data(data, "t.json"));
}

}  // namespace

TEST_CASE("pointwise_regression: value and gradient equal the closed form", "[pointwise_regression]") {
  const auto d = models::simulate_pointwise_regression(5, 7, 3);
  const job_data rows = models::pointwise_regression_job_data(d);
  const Eigen::VectorXd p = near_truth(d);
  Eigen::VectorXd g, g_exact;
  const double lp = value_and_gradient(d, rows, p, g);
  const double lp_exact = models::pointwise_regression_closed_form(d, p, g_exact);
  CHECK(lp == Approx(lp_exact).epsilon(1e-13));
  REQUIRE(g.size() == g_exact.size());
  for (Eigen::Index i = 0; i < g.size(); ++i) {
    INFO("parameter " << i);
    CHECK(g(i) == Approx(g_exact(i)).epsilon(1e-12).margin(1e-12));
  }
}

TEST_CASE("pointwise_regression: gradient equals central finite differences", "[pointwise_regression]") {
  const auto d = models::simulate_pointwise_regression(3, 6, 4);
  const job_data rows = models::pointwise_regression_job_data(d);
  const Eigen::VectorXd p = near_truth(d);
  Eigen::VectorXd g;
  value_and_gradient(d, rows, p, g);
  const double h = 1e-5;
  for (Eigen::Index i = 0; i < p.size(); ++i) {
    Eigen::VectorXd up = p, down = p, unused;
    up(i) += h;
    down(i) -= h;
    const double fd = (value_and_gradient(d, rows, up, unused) - value_and_gradient(d, rows, down, unused)) / (2 * h);
    INFO("parameter " << i);
    CHECK(g(i) == Approx(fd).epsilon(1e-6).margin(1e-6));
  }
}

TEST_CASE("pointwise_regression: the job's K outputs are the observations' log likelihoods in every type",
          "[pointwise_regression]") {
  const auto d = models::simulate_pointwise_regression(4, 5, 2);
  const Eigen::VectorXd p = near_truth(d);
  const Eigen::VectorXd log_lik = models::pointwise_regression_log_lik(d, p);
  // Independent of the kernel: normal_lpdf written out, with its constant.
  for (int n = 0; n < d.G * d.K; ++n) {
    const double eta = p(0) + p(1 + d.C + n / d.K) + d.x.row(n).dot(p.segment(1, d.C));
    const double z = (d.y(n) - eta) / d.sigma;
    CHECK(log_lik(n) == Approx(-0.5 * z * z - std::log(d.sigma) - 0.5 * std::log(2 * M_PI)).epsilon(1e-14));
  }
  const auto rows = models::pointwise_regression_rows(d);
  const std::vector<int> no_ints;
  const models::pointwise_regression_job job;
  for (int g = 0; g < d.G; ++g) {
    const Eigen::VectorXd phi = p.head(1 + d.C), theta = p.segment(1 + d.C + g, 1);
    const Eigen::VectorXd dd = job(phi, theta, rows[g], no_ints, nullptr);
    const vector_v vv = job(to_var(phi), to_var(theta), rows[g], no_ints, nullptr);
    const vector_v dv = job(phi, to_var(theta), rows[g], no_ints, nullptr);
    const vector_v vd = job(to_var(phi), theta, rows[g], no_ints, nullptr);
    REQUIRE(dd.size() == d.K);
    for (int k = 0; k < d.K; ++k) {
      const double expected = log_lik(g * d.K + k);
      CHECK(same_bits(dd(k), expected));
      CHECK(same_bits(vv(k).val(), expected));
      CHECK(same_bits(dv(k).val(), expected));
      CHECK(same_bits(vd(k).val(), expected));
    }
    recover_memory();
  }
}

TEST_CASE("pointwise_regression: bad rows and sizes are errors that say what is wrong", "[pointwise_regression]") {
  const models::pointwise_regression_job job;
  const Eigen::VectorXd phi = Eigen::VectorXd::Zero(3), theta = Eigen::VectorXd::Zero(1);
  CHECK_THROWS_MATCHES(job(phi, theta, std::vector<double>{1, 2, 3, 4, 5}, {}, nullptr), std::invalid_argument,
                       message_contains({"a row of 5 reals is not (sigma, K responses, K x 2 covariates)"}));
  CHECK_THROWS_MATCHES(job(phi, theta, std::vector<double>{-1, 2, 3, 4}, {}, nullptr), std::invalid_argument,
                       message_contains({"sigma must be > 0"}));
  CHECK_THROWS_MATCHES(job(phi, Eigen::VectorXd(2), std::vector<double>{1, 2, 3, 4}, {}, nullptr),
                       std::invalid_argument, message_contains({"expected 1 + C shared and 1 job parameter"}));
  CHECK_THROWS_AS(models::simulate_pointwise_regression(2, 3, 0), std::invalid_argument);
}

TEST_CASE("pointwise_regression on the interface: the same density, log_lik columns after the parameters",
          "[pointwise_regression]") {
  const nlohmann::json json = find_model("pointwise_regression").embedded_data(3, 4);
  const auto m = registered(json);
  const auto d = models::simulate_pointwise_regression(3, 4, 4);
  REQUIRE(m->size() == models::pointwise_regression_size(d));
  const Eigen::VectorXd p = near_truth(d);
  Eigen::VectorXd g, g_direct;
  const double lp = m->log_density(p, g, true);
  CHECK(same_bits(lp, value_and_gradient(d, models::pointwise_regression_job_data(d), p, g_direct)));
  CHECK(g == g_direct);
  const std::vector<std::string>& columns = m->column_names();
  REQUIRE(columns.size() == static_cast<std::size_t>(m->size() + 12));
  CHECK(columns[0] == "mu");
  CHECK(columns[1] == "beta.1");
  CHECK(columns[5] == "alpha.1");
  CHECK(columns[8] == "log_lik.1");
  CHECK(columns.back() == "log_lik.12");
  const Eigen::VectorXd row = m->write_array(p);
  const Eigen::VectorXd log_lik = models::pointwise_regression_log_lik(d, p);
  for (int n = 0; n < 12; ++n) CHECK(same_bits(row(8 + n), log_lik(n)));
  const std::vector<std::pair<std::string, double>> truth = m->truth();
  CHECK(std::count(truth.begin(), truth.end(), std::make_pair(std::string("mu"), d.true_parameters(0))) == 1);
  CHECK(std::count(truth.begin(), truth.end(), std::make_pair(std::string("beta.2"), d.true_parameters(2))) == 1);
}

TEST_CASE("pointwise_regression's data errors name the variable", "[pointwise_regression]") {
  nlohmann::json json = find_model("pointwise_regression").embedded_data(2, 3);
  nlohmann::json bad = json;
  bad["y"].erase(0);
  CHECK_THROWS_MATCHES(registered(bad), data_error,
                       message_contains({"data variable 'y' in t.json: expected shape [6], got [5]"}));
  bad = json;
  bad["sigma"] = 0;
  CHECK_THROWS_MATCHES(registered(bad), data_error, message_contains({"data variable 'sigma' in t.json", "> 0"}));
  bad = json;
  bad["C"] = 3;
  CHECK_THROWS_MATCHES(registered(bad), data_error, message_contains({"data variable 'x' in t.json"}));
}

TEST_CASE("pointwise_regression: the closed-form posterior mean is where the gradient vanishes",
          "[pointwise_regression]") {
  const auto d = models::simulate_pointwise_regression(4, 10, 3);
  const models::gaussian_posterior post = models::pointwise_regression_posterior(d);
  Eigen::VectorXd g;
  models::pointwise_regression_closed_form(d, post.mean, g);
  CHECK(g.cwiseAbs().maxCoeff() < 1e-9);
  CHECK((post.sd.array() > 0).all());
}

TEST_CASE("pointwise_regression: NUTS's posterior means match the exact Gaussian posterior",
          "[pointwise_regression][sample]") {
  const auto d = models::simulate_pointwise_regression(4, 20, 2);
  const job_data rows = models::pointwise_regression_job_data(d);
  const models::gaussian_posterior exact = models::pointwise_regression_posterior(d);
  const log_density_function f =
      var_log_density([&](const vector_v& q) { return models::pointwise_regression_log_density(d, rows, q); });
  const int dim = models::pointwise_regression_size(d);
  sample_options o;
  o.seed = 33;
  o.warmup = 300;
  o.samples = 600;
  std::vector<Eigen::MatrixXd> draws;
  for (int chain = 1; chain <= 2; ++chain) {
    o.chain = chain;
    draws.push_back(sample_chain(f, dim, o).draws);
  }
  std::vector<std::string> names = {"mu", "beta.1", "beta.2"};
  for (int g = 1; g <= d.G; ++g) names.push_back("alpha." + std::to_string(g));
  const auto rows_summary = summarize(draws, names);
  for (int i = 0; i < dim; ++i) {
    const parameter_summary& r = rows_summary[i];
    INFO(r.name << ": mean " << r.mean << " mcse " << r.mcse << " exact " << exact.mean(i) << " sd " << r.sd
                << " exact " << exact.sd(i));
    CHECK(std::fabs(r.mean - exact.mean(i)) < 4 * r.mcse);
    CHECK(r.sd == Approx(exact.sd(i)).epsilon(0.15));
    CHECK(r.rhat < 1.02);
  }
}

TEST_CASE("pointwise_regression: a restored chain continues with the uninterrupted chain's bits under auto",
          "[pointwise_regression][sample]") {
  // K = 30 outputs and M = 5 parameters per job: auto runs the site's first call eager and deferred after it.
  const auto d = models::simulate_pointwise_regression(6, 30, 3);
  const job_data rows = models::pointwise_regression_job_data(d);
  const log_density_function f =
      var_log_density([&](const vector_v& q) { return models::pointwise_regression_log_density(d, rows, q); });
  const int dim = models::pointwise_regression_size(d);
  const detail::reverse_mode_scope reverse("auto");
  sample_options o;
  o.seed = 5;
  o.warmup = 60;
  o.samples = 40;
  detail::forget_reverse_choices_for_tests();  // every chain starts as in a process of its own
  nuts_chain straight(f, dim, o);
  straight.initialize();
  std::vector<Eigen::VectorXd> expected;
  while (!straight.done()) expected.push_back(straight.step().q);
  CHECK(detail::reverse_site_of<models::pointwise_regression_call_id>.last_ran_deferred());
  detail::forget_reverse_choices_for_tests();
  nuts_chain first(f, dim, o);
  first.initialize();
  for (int i = 0; i < 50; ++i) first.step();
  const chain_state saved = first.state();
  detail::forget_reverse_choices_for_tests();
  nuts_chain second(f, dim, o);
  second.restore(saved);
  for (int i = 50; i < 100; ++i) {
    INFO("iteration " << i);
    REQUIRE(second.step().q == expected[static_cast<std::size_t>(i)]);  // bit-identical
  }
}
