// The sampler against known posteriors: a correlated normal with scales 100x apart, eight schools against the
// published reference posterior, logistic regression against the simulation's truth.
#include <catch2/catch.hpp>
#include <maprect/sample.hpp>

#include <array>
#include <cmath>

#include "eight_schools.hpp"
#include "logreg.hpp"
#include "src/sampling/summary.hpp"

#include <LBFGS.h>

namespace {

/// Runs `chains` chains of f and returns their output columns (per draw: outputs(q)).
template <class Outputs>
std::vector<Eigen::MatrixXd> run(const maprect::log_density_function& f, int dim, int chains, maprect::sample_options o,
                                 Outputs outputs, std::vector<int>* divergences = nullptr) {
  std::vector<Eigen::MatrixXd> draws;
  for (int c = 1; c <= chains; ++c) {
    o.chain = c;
    const maprect::sample_result r = maprect::sample_chain(f, dim, o);
    Eigen::MatrixXd out(r.draws.rows(), outputs(Eigen::VectorXd(r.draws.row(0).transpose())).size());
    for (Eigen::Index s = 0; s < r.draws.rows(); ++s) out.row(s) = outputs(Eigen::VectorXd(r.draws.row(s).transpose()));
    draws.push_back(out);
    if (divergences) divergences->push_back(r.divergent.sum());
  }
  return draws;
}

Eigen::VectorXd identity(const Eigen::VectorXd& q) { return q; }

/// The summary row of `name`.
const maprect::parameter_summary& row(const std::vector<maprect::parameter_summary>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.name == name) return r;
  throw std::out_of_range("no summary row " + name);
}

}  // namespace

TEST_CASE("a 10-d normal with scales 0.1..10 and one correlated pair: means, variances, R-hat") {
  const int d = 10;
  Eigen::VectorXd mean(d), sd(d);
  for (int i = 0; i < d; ++i) mean(i) = i - 4.5, sd(i) = 0.1 * std::pow(100.0, i / (d - 1.0));
  const double rho = 0.9;  // between coordinates 3 and 4
  Eigen::MatrixXd cov = sd.cwiseAbs2().asDiagonal();
  cov(3, 4) = cov(4, 3) = rho * sd(3) * sd(4);
  const Eigen::MatrixXd precision = cov.inverse();
  const maprect::log_density_function f = [&](const Eigen::VectorXd& q, Eigen::VectorXd& g) {
    const Eigen::VectorXd r = q - mean;
    g = -precision * r;
    return 0.5 * r.dot(g);
  };
  maprect::sample_options o;
  o.seed = 4242;
  o.warmup = 1000;
  o.samples = 1000;
  const std::vector<Eigen::MatrixXd> draws = run(f, d, 4, o, identity);
  std::vector<std::string> names;
  for (int i = 1; i <= d; ++i) names.push_back("x." + std::to_string(i));
  const auto rows = maprect::summarize(draws, names);
  Eigen::MatrixXd all(4 * o.samples, d);
  for (int c = 0; c < 4; ++c) all.middleRows(c * o.samples, o.samples) = draws[c];
  const Eigen::MatrixXd centred = all.rowwise() - all.colwise().mean();
  const Eigen::MatrixXd sample_cov = centred.transpose() * centred / (all.rows() - 1.0);
  for (int i = 0; i < d; ++i) {
    INFO(names[i] << ": mean " << rows[i].mean << " mcse " << rows[i].mcse << " sd " << rows[i].sd << " ess "
                  << rows[i].ess_bulk << " rhat " << rows[i].rhat);
    CHECK(std::fabs(rows[i].mean - mean(i)) < 4 * rows[i].mcse);
    // Variance: relative error of an estimate from ESS draws is about sqrt(2 / ESS) (about 3% here).
    CHECK(sample_cov(i, i) / cov(i, i) == Approx(1.0).margin(4 * std::sqrt(2.0 / rows[i].ess_bulk)));
    CHECK(rows[i].rhat < 1.01);
    CHECK(rows[i].ess_bulk > 400);
  }
  CHECK(sample_cov(3, 4) / std::sqrt(sample_cov(3, 3) * sample_cov(4, 4)) == Approx(rho).margin(0.03));
}

TEST_CASE("eight schools' log density is the model's normalised density less a constant, with its gradient") {
  // At mu = 1.5, tau = 2, theta_tilde = (0.5, -1, 0.25, 0, 1, -0.5, 2, -2): the normalised log density of
  // normal(mu | 0, 5), half-Cauchy(tau | 0, 5) with the Jacobian tau of tau = exp(log tau), the eight
  // normal(theta_tilde | 0, 1) and the eight normal(y | mu + tau theta_tilde, sigma), written out here; lp__
  // drops the normalising constants as Stan's `~` does, so the two differ by those constants exactly.
  const std::array<double, 8> y = {28, 8, -3, 7, -1, 1, 18, 12}, sigma = {15, 10, 16, 11, 9, 11, 10, 18};
  const double mu = 1.5, tau = 2;
  Eigen::VectorXd q(10);
  q << mu, std::log(tau), 0.5, -1, 0.25, 0, 1, -0.5, 2, -2;
  const double log_sqrt_2pi = 0.5 * std::log(2 * M_PI);
  auto normal_lpdf = [&](double x, double m, double sd) {
    return -0.5 * std::pow((x - m) / sd, 2) - std::log(sd) - log_sqrt_2pi;
  };
  double full = normal_lpdf(mu, 0, 5) + std::log(2 / (M_PI * 5 * (1 + std::pow(tau / 5, 2)))) + std::log(tau);
  double constants = -std::log(5.0) - log_sqrt_2pi + std::log(2 / (M_PI * 5));
  for (int j = 0; j < 8; ++j) {
    full += normal_lpdf(q(2 + j), 0, 1) + normal_lpdf(y[j], mu + tau * q(2 + j), sigma[j]);
    constants += -2 * log_sqrt_2pi - std::log(sigma[j]);
  }
  const maprect::models::eight_schools_model model;
  CHECK(model.log_density(q) == Approx(full - constants).epsilon(1e-14));
  CHECK(model.log_density(q) == Approx(-7.993343883952777).epsilon(1e-14));  // the same sum in Python
  const maprect::log_density_function f =
      maprect::var_log_density([&](const maprect::vector_v& x) { return model.log_density(x); });
  Eigen::VectorXd g;
  CHECK(f(q, g) == Approx(full - constants).epsilon(1e-14));
  for (int i = 0; i < 10; ++i) {
    const double h = 1e-6;
    Eigen::VectorXd up = q, down = q;
    up(i) += h;
    down(i) -= h;
    INFO("coordinate " << i);
    CHECK(g(i) == Approx((model.log_density(up) - model.log_density(down)) / (2 * h)).epsilon(1e-6));
  }
}

TEST_CASE("eight schools (non-centred): mu and tau match the posteriordb reference, no divergences") {
  // posteriordb, posterior_database/reference_posteriors/summary_statistics/mean/mean/
  // eight_schools-eight_schools_noncentered.json (github.com/stan-dev/posteriordb, commit e3545336): the mean of
  // 10,000 reference draws and its MCSE.
  const double mu_reference = 4.41051833695493, mu_reference_mcse = 0.0330374705950917;
  const double tau_reference = 3.60205952364059, tau_reference_mcse = 0.0318615135640706;
  const maprect::models::eight_schools_model model;
  const maprect::log_density_function f =
      maprect::var_log_density([&](const maprect::vector_v& q) { return model.log_density(q); });
  maprect::sample_options o;  // the defaults: 1000 warm-up, 1000 draws, max depth 10
  o.delta = maprect::models::eight_schools_default_delta;  // what `maprect sample` uses for this model: 0.9
  o.seed = 8;
  std::vector<int> divergences;
  const auto draws = run(f, model.size(), 4, o, [&](const Eigen::VectorXd& q) { return model.write_array(q); },
                         &divergences);
  const auto rows = maprect::summarize(draws, model.column_names());
  const auto& mu = row(rows, "mu");
  const auto& tau = row(rows, "tau");
  INFO("mu " << mu.mean << " (mcse " << mu.mcse << "), tau " << tau.mean << " (mcse " << tau.mcse << ")");
  CHECK(std::fabs(mu.mean - mu_reference) < 4 * std::hypot(mu.mcse, mu_reference_mcse));
  CHECK(std::fabs(tau.mean - tau_reference) < 4 * std::hypot(tau.mcse, tau_reference_mcse));
  // At Stan's 0.8 a few divergent transitions remain on this model, in Stan as here: about 2 per 10,000 draws
  // (18 over seeds 1-20 x 4 chains x 1000 draws, 8 of the 20 seeds with any). At the model's 0.9: none over
  // seeds 1-20, 8 over seeds 21-100 (5 of those 80 seeds with any). Seed 8 was not picked for this check: it
  // is the seed the test ran at 0.8.
  CHECK(divergences == std::vector<int>{0, 0, 0, 0});
  for (const auto& r : rows) CHECK(r.rhat < 1.01);
  // theta = mu + tau * theta_tilde, column by column.
  CHECK(draws[0](17, 2 + 8) == Approx(draws[0](17, 0) + draws[0](17, 1) * draws[0](17, 2)).epsilon(1e-14));
}

/// The posterior mode of f by L-BFGS from zero.
Eigen::VectorXd posterior_mode(const maprect::log_density_function& f, int dim) {
  LBFGSpp::LBFGSParam<double> param;
  param.epsilon = 1e-9;
  param.max_iterations = 500;
  LBFGSpp::LBFGSSolver<double> solver(param);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(dim);
  double fx = 0;
  auto negative = [&](const Eigen::VectorXd& q, Eigen::VectorXd& g) {
    const double lp = f(q, g);
    g = -g;
    return -lp;
  };
  solver.minimize(negative, x, fx);
  return x;
}

TEST_CASE("logistic regression: posterior means near the MAP and the simulation's truth") {
  const maprect::models::logreg_model model(4, 100);
  const maprect::log_density_function f =
      maprect::var_log_density([&](const maprect::vector_v& q) { return model.log_density(q); });
  maprect::sample_options o;
  o.seed = 11;
  o.warmup = 500;
  o.samples = 500;
  const auto draws = run(f, model.size(), 2, o, identity);
  std::vector<std::string> names;
  for (int i = 0; i < model.size(); ++i) names.push_back("p." + std::to_string(i + 1));
  const auto rows = maprect::summarize(draws, names);
  const Eigen::VectorXd& truth = model.data().true_parameters;
  const Eigen::VectorXd mode = posterior_mode(f, model.size());
  for (int i = 0; i < model.size(); ++i) {
    INFO(names[i] << " mean " << rows[i].mean << " mcse " << rows[i].mcse << " sd " << rows[i].sd << " MAP " << mode(i)
                  << " truth " << truth(i));
    // Mean and mode of a nearly normal posterior: apart by its skewness only, a small part of an sd.
    CHECK(std::fabs(rows[i].mean - mode(i)) < 4 * rows[i].mcse + 0.1 * rows[i].sd);
    // The truth is one draw from the prior; the posterior puts it within a few posterior sds.
    CHECK(std::fabs(rows[i].mean - truth(i)) < 3.5 * rows[i].sd);
    CHECK(rows[i].rhat < 1.02);
  }
}

namespace {

/// A 50-d normal with every pairwise correlation 0.9, sds from 0.5 to 2 and means from -2.45 to 2.45.
struct correlated_normal {
  static constexpr int dim = 50;
  Eigen::VectorXd mean = Eigen::VectorXd::LinSpaced(dim, -2.45, 2.45);
  Eigen::VectorXd sd = Eigen::VectorXd::LinSpaced(dim, 0.5, 2.0);
  Eigen::MatrixXd cov = sd.asDiagonal() * (0.1 * Eigen::MatrixXd::Identity(dim, dim) +
                                           0.9 * Eigen::MatrixXd::Ones(dim, dim)) * sd.asDiagonal();
  Eigen::MatrixXd precision = cov.inverse();
  maprect::log_density_function density() const {
    return [this](const Eigen::VectorXd& q, Eigen::VectorXd& g) {
      const Eigen::VectorXd r = q - mean;
      g = -precision * r;
      return 0.5 * r.dot(g);
    };
  }
};

/// Four chains of the correlated normal: the summary, and the smallest bulk ESS per post-warm-up gradient.
struct metric_run {
  std::vector<maprect::parameter_summary> rows;
  Eigen::MatrixXd all;  // every chain's draws, stacked
  double min_ess_per_gradient = 0;
  long gradients = 0;
};

metric_run run_metric(const correlated_normal& model, maprect::metric_kind metric, std::uint64_t seed) {
  maprect::sample_options o;
  o.seed = seed;
  o.metric = metric;
  std::vector<Eigen::MatrixXd> draws;
  metric_run r;
  for (int c = 1; c <= 4; ++c) {
    o.chain = c;
    const maprect::sample_result s = maprect::sample_chain(model.density(), model.dim, o);
    draws.push_back(s.draws);
    r.gradients += s.gradients;
  }
  std::vector<std::string> names;
  for (int i = 1; i <= model.dim; ++i) names.push_back("x." + std::to_string(i));
  r.rows = maprect::summarize(draws, names);
  double min_ess = r.rows[0].ess_bulk;
  for (const auto& row : r.rows) min_ess = std::min(min_ess, row.ess_bulk);
  r.min_ess_per_gradient = min_ess / static_cast<double>(r.gradients);
  r.all.resize(4 * o.samples, model.dim);
  for (int c = 0; c < 4; ++c) r.all.middleRows(c * o.samples, o.samples) = draws[c];
  return r;
}

}  // namespace

TEST_CASE("dense metric: on a 50-d normal with correlations 0.9, 3x the diagonal metric's ESS per gradient") {
  const correlated_normal model;
  for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
    const metric_run diag = run_metric(model, maprect::metric_kind::diag, seed);
    const metric_run dense = run_metric(model, maprect::metric_kind::dense, seed);
    const double ratio = dense.min_ess_per_gradient / diag.min_ess_per_gradient;
    // The figures of docs/sampling.md: run this test case with -s to see them.
    std::printf("seed %llu: slowest-coordinate bulk ESS per gradient: diag %.5f (%ld gradients), dense %.5f (%ld "
                "gradients), ratio %.1f\n",
                static_cast<unsigned long long>(seed), diag.min_ess_per_gradient, diag.gradients,
                dense.min_ess_per_gradient, dense.gradients, ratio);
    INFO("seed " << seed << ": diag " << diag.min_ess_per_gradient << ", dense " << dense.min_ess_per_gradient);
    CHECK(ratio >= 3);
    // The dense chains recover the known posterior: means within 4 MCSE, variances within 4 sqrt(2 / ESS),
    // the correlations within 0.02.
    const Eigen::MatrixXd centred = dense.all.rowwise() - dense.all.colwise().mean();
    const Eigen::MatrixXd sample_cov = centred.transpose() * centred / (dense.all.rows() - 1.0);
    for (int i = 0; i < model.dim; ++i) {
      const auto& row = dense.rows[i];
      INFO(row.name << ": mean " << row.mean << " mcse " << row.mcse << " ess " << row.ess_bulk);
      CHECK(std::fabs(row.mean - model.mean(i)) < 4 * row.mcse);
      CHECK(sample_cov(i, i) / model.cov(i, i) == Approx(1.0).margin(4 * std::sqrt(2.0 / row.ess_bulk)));
      CHECK(row.rhat < 1.01);
    }
    for (int i = 0; i + 1 < model.dim; i += 7)
      CHECK(sample_cov(i, i + 1) / std::sqrt(sample_cov(i, i) * sample_cov(i + 1, i + 1)) ==
            Approx(0.9).margin(0.02));
  }
}

TEST_CASE("eight schools with thin 2 and the dense metric: mu and tau still match the posteriordb reference") {
  const double mu_reference = 4.41051833695493, mu_reference_mcse = 0.0330374705950917;
  const double tau_reference = 3.60205952364059, tau_reference_mcse = 0.0318615135640706;
  const maprect::models::eight_schools_model model;
  const maprect::log_density_function f =
      maprect::var_log_density([&](const maprect::vector_v& q) { return model.log_density(q); });
  maprect::sample_options o;
  o.delta = maprect::models::eight_schools_default_delta;
  o.seed = 8;
  o.samples = 2000;
  o.thin = 2;
  o.metric = maprect::metric_kind::dense;
  const auto draws = run(f, model.size(), 4, o, [&](const Eigen::VectorXd& q) { return model.write_array(q); });
  REQUIRE(draws[0].rows() == 1000);
  const auto rows = maprect::summarize(draws, model.column_names());
  const auto& mu = row(rows, "mu");
  const auto& tau = row(rows, "tau");
  INFO("mu " << mu.mean << " (mcse " << mu.mcse << "), tau " << tau.mean << " (mcse " << tau.mcse << ")");
  CHECK(std::fabs(mu.mean - mu_reference) < 4 * std::hypot(mu.mcse, mu_reference_mcse));
  CHECK(std::fabs(tau.mean - tau_reference) < 4 * std::hypot(tau.mcse, tau_reference_mcse));
  for (const auto& r : rows) CHECK(r.rhat < 1.01);
}

TEST_CASE("logistic regression with thin 2 and the dense metric: posterior means near the MAP") {
  const maprect::models::logreg_model model(4, 100);
  const maprect::log_density_function f =
      maprect::var_log_density([&](const maprect::vector_v& q) { return model.log_density(q); });
  maprect::sample_options o;
  o.seed = 11;
  o.warmup = 500;
  o.samples = 1000;
  o.thin = 2;
  o.metric = maprect::metric_kind::dense;
  const auto draws = run(f, model.size(), 2, o, identity);
  std::vector<std::string> names;
  for (int i = 0; i < model.size(); ++i) names.push_back("p." + std::to_string(i + 1));
  const auto rows = maprect::summarize(draws, names);
  const Eigen::VectorXd mode = posterior_mode(f, model.size());
  for (int i = 0; i < model.size(); ++i) {
    INFO(names[i] << " mean " << rows[i].mean << " mcse " << rows[i].mcse << " sd " << rows[i].sd << " MAP " << mode(i));
    CHECK(std::fabs(rows[i].mean - mode(i)) < 4 * rows[i].mcse + 0.1 * rows[i].sd);
    CHECK(rows[i].rhat < 1.02);
  }
}
