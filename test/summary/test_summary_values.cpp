// summarize() against reference numbers and against the known ESS of independent and AR(1) draws.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <utility>

#include "src/sampling/summary.hpp"

namespace {

using maprect::parameter_summary;
using maprect::summarize;

/// Chains of one column from a draws x chains table.
std::vector<Eigen::MatrixXd> one_column_chains(const Eigen::MatrixXd& draws_by_chain) {
  std::vector<Eigen::MatrixXd> chains;
  for (Eigen::Index c = 0; c < draws_by_chain.cols(); ++c) chains.emplace_back(draws_by_chain.col(c));
  return chains;
}

parameter_summary summarize_one(const Eigen::MatrixXd& draws_by_chain) {
  return summarize(one_column_chains(draws_by_chain), {"x"}).at(0);
}

/// The summary matches the reference to 1e-9 relative (the reference sums autocovariances by FFT).
void check_against(const parameter_summary& s, const parameter_summary& ref) {
  const auto close = [](double got, double expected) { return Approx(expected).epsilon(1e-9).margin(1e-12) == got; };
  CHECK(close(s.mean, ref.mean));
  CHECK(close(s.mcse, ref.mcse));
  CHECK(close(s.sd, ref.sd));
  CHECK(close(s.q5, ref.q5));
  CHECK(close(s.q50, ref.q50));
  CHECK(close(s.q95, ref.q95));
  CHECK(close(s.ess_bulk, ref.ess_bulk));
  CHECK(close(s.ess_tail, ref.ess_tail));
  CHECK(close(s.rhat, ref.rhat));
}

/// `chains` chains of `draws` AR(1) draws x_t = rho x_{t-1} + e_t with unit innovations, started stationary.
Eigen::MatrixXd ar1_chains(double rho, Eigen::Index draws, Eigen::Index chains, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  Eigen::MatrixXd x(draws, chains);
  for (Eigen::Index c = 0; c < chains; ++c) {
    x(0, c) = normal(rng) / std::sqrt(1 - rho * rho);
    for (Eigen::Index t = 1; t < draws; ++t) x(t, c) = rho * x(t - 1, c) + normal(rng);
  }
  return x;
}

}  // namespace

// Reference numbers from test/summary/reference_summary.py (numpy; FFT autocovariances, statistics.NormalDist
// normal scores, numpy type-7 quantiles), run with /usr/bin/python3; the data sets are repeated there.
TEST_CASE("summary of a small data set with ties matches the reference (ESS at its cap S log10 S)", "[summary]") {
  Eigen::MatrixXd x(10, 3);
  x << 0.3, 1.2, -0.4, 1.1, 0.9, 0.2, 0.8, 1.2, -1.0, -0.5, 2.0, 0.1, 0.0, 1.5, 0.6, 1.7, 0.4, 0.6, 0.9, 1.1, -0.2,
      0.2, 2.3, 0.4, 1.4, 0.7, -0.7, 0.6, 1.2, 0.0;
  check_against(summarize_one(x), {"x", 0.62, 0.1179153303112874, 0.7849445401010715, -0.61, 0.6, 1.864999999999999,
                                   44.31363764158987, 44.31363764158987, 1.3912697275375403});
}

TEST_CASE("summary of chains of odd length drops each chain's middle draw when splitting", "[summary]") {
  Eigen::MatrixXd x(7, 2);
  x << 2.0, 1.0, 3.5, 0.5, 1.0, 2.5, 4.0, 3.0, 2.5, 2.0, 0.5, 1.5, 3.0, 4.5;
  check_against(summarize_one(x), {"x", 2.25, 0.3521305849125018, 1.2671895007335054, 0.5, 2.25, 4.175,
                                   12.9501749525715, 12.9501749525715, 0.9122240386155241});
}

TEST_CASE("summary of autocorrelated chains matches the reference through several Geyer lags", "[summary]") {
  Eigen::MatrixXd x(40, 4);
  for (Eigen::Index i = 0; i < 40; ++i)
    for (Eigen::Index c = 0; c < 4; ++c) {
      const double t = static_cast<double>(i), k = static_cast<double>(c);
      x(i, c) = std::sin(0.3 * t + 1.7 * k) + 0.05 * t * (k - 1.5) / 4 + 0.3 * std::cos(2.1 * t * (k + 1));
    }
  check_against(summarize_one(x), {"x", 0.07853878095714946, 0.1687944158190956, 0.8435325749435468,
                                   -1.2681871036663699, 0.060252325481871205, 1.3845362929000569, 24.650649296379875,
                                   39.942411227390934, 1.114027429987223});
}

TEST_CASE("quantiles interpolate between order statistics (type 7)", "[summary]") {
  Eigen::MatrixXd x(4, 2);
  x << 4, 8, 1, 5, 3, 7, 2, 6;  // 1..8 in scrambled order
  const auto s = summarize_one(x);
  // h = (8 - 1) p: p = 0.05 -> 1 + 0.35, p = 0.5 -> 4.5, p = 0.95 -> 7 + 0.65.
  CHECK(s.q5 == Approx(1.35));
  CHECK(s.q50 == Approx(4.5));
  CHECK(s.q95 == Approx(7.65));
  CHECK(s.mean == Approx(4.5));
  CHECK(s.sd == Approx(std::sqrt(6.0)));  // sample variance of 1..8 is 42 / 7
}

TEST_CASE("normal scores: the inverse normal CDF to full precision", "[summary]") {
  using maprect::detail::inverse_normal_cdf;
  // Reference values: statistics.NormalDist().inv_cdf in Python (Wichura's AS241).
  CHECK(inverse_normal_cdf(0.5) == Approx(0.0).margin(1e-15));
  CHECK(inverse_normal_cdf(0.975) == Approx(1.959963984540054).epsilon(1e-14));
  CHECK(inverse_normal_cdf(0.01) == Approx(-2.3263478740408408).epsilon(1e-14));
  CHECK(inverse_normal_cdf(1e-10) == Approx(-6.361340902404056).epsilon(1e-13));
  CHECK(inverse_normal_cdf(1 - 1e-6) == Approx(4.753424308817087).epsilon(1e-9));
}

TEST_CASE("independent normal draws: ESS near the draw count, R-hat near 1", "[summary]") {
  std::mt19937_64 rng(20211);
  std::normal_distribution<double> normal(3.0, 2.0);
  std::vector<Eigen::MatrixXd> chains(4, Eigen::MatrixXd(2000, 2));
  for (auto& chain : chains)
    for (Eigen::Index i = 0; i < chain.size(); ++i) chain(i) = normal(rng);
  for (const auto& s : summarize(chains, {"a", "b"})) {
    INFO(s.name << ": ess_bulk " << s.ess_bulk << ", ess_tail " << s.ess_tail << ", rhat " << s.rhat);
    // 8000 draws; over 100 seeds the bulk and tail ESS scatter by 3.3% and 2.7% (tail ESS runs 3% low).
    CHECK(s.ess_bulk == Approx(8000).epsilon(0.15));
    CHECK(s.ess_tail == Approx(8000).epsilon(0.15));
    CHECK(std::abs(s.rhat - 1) < 0.005);
    CHECK(s.mean == Approx(3.0).margin(4 * 2.0 / std::sqrt(8000.0)));
    CHECK(s.sd == Approx(2.0).epsilon(0.03));
    CHECK(s.mcse == Approx(s.sd / std::sqrt(8000.0)).epsilon(0.1));
  }
}

TEST_CASE("AR(1) chains: ESS matches N (1 - rho) / (1 + rho)", "[summary]") {
  const Eigen::Index draws = 20000, chains = 4;
  const double total = static_cast<double>(draws * chains);
  // Tolerances are 4 standard deviations of the ESS estimate, measured over 40 seeds: 2.4%, 4.0% and 2.2%.
  for (const auto& [rho, tolerance] : {std::pair{0.5, 0.1}, std::pair{0.9, 0.16}, std::pair{-0.5, 0.1}}) {
    const auto s = summarize_one(ar1_chains(rho, draws, chains, 7));
    const double expected = total * (1 - rho) / (1 + rho);
    const double mean_ess = std::pow(s.sd / s.mcse, 2);
    INFO("rho " << rho << ": expected " << expected << ", bulk " << s.ess_bulk << ", mean " << mean_ess);
    CHECK(s.ess_bulk == Approx(expected).epsilon(tolerance));
    CHECK(mean_ess == Approx(expected).epsilon(tolerance));
    CHECK(s.sd == Approx(1 / std::sqrt(1 - rho * rho)).epsilon(0.1));
    CHECK(s.rhat < 1.01);
  }
}

TEST_CASE("chains with shifted means have R-hat well above 1.01", "[summary]") {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  std::vector<Eigen::MatrixXd> chains(4, Eigen::MatrixXd(1000, 1));
  for (std::size_t c = 0; c < chains.size(); ++c)
    for (Eigen::Index i = 0; i < 1000; ++i) chains[c](i) = normal(rng) + (c == 2 ? 1.0 : 0.0);
  const auto s = summarize(chains, {"mu"}).at(0);
  CHECK(s.rhat > 1.05);
}

TEST_CASE("chains that differ only in scale are caught by the folded (tail) R-hat", "[summary]") {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal;
  std::vector<Eigen::MatrixXd> chains(4, Eigen::MatrixXd(1000, 1));
  for (std::size_t c = 0; c < chains.size(); ++c)
    for (Eigen::Index i = 0; i < 1000; ++i) chains[c](i) = normal(rng) * (c == 0 ? 4.0 : 1.0);
  const auto s = summarize(chains, {"sigma"}).at(0);
  const auto split = maprect::detail::split_chains(maprect::detail::gather_column(chains, 0));
  const double bulk_rhat = maprect::detail::basic_rhat(maprect::detail::rank_normalize(split));
  CHECK(bulk_rhat < 1.01);  // same location: the bulk form sees nothing
  CHECK(s.rhat > 1.05);     // the folded draws differ in location
}

TEST_CASE("a constant column gives NaN R-hat and ESS, and plain moments", "[summary]") {
  std::vector<Eigen::MatrixXd> chains(2, Eigen::MatrixXd::Constant(10, 2, 2.5));
  for (auto& chain : chains)
    for (Eigen::Index i = 0; i < 10; ++i) chain(i, 1) = static_cast<double>(i);
  const auto rows = summarize(chains, {"fixed", "moving"});
  const auto& s = rows.at(0);
  CHECK(s.mean == 2.5);
  CHECK(s.sd == 0.0);
  CHECK(s.q5 == 2.5);
  CHECK(s.q95 == 2.5);
  CHECK(std::isnan(s.rhat));
  CHECK(std::isnan(s.ess_bulk));
  CHECK(std::isnan(s.ess_tail));
  CHECK(std::isnan(s.mcse));
  CHECK(std::isfinite(rows.at(1).rhat));
}

TEST_CASE("a non-finite draw makes the diagnostics NaN; a NaN draw also the quantiles", "[summary]") {
  Eigen::MatrixXd x = ar1_chains(0.3, 50, 2, 3);
  x(10, 1) = std::numeric_limits<double>::infinity();
  const auto infinite = summarize_one(x);
  CHECK(std::isnan(infinite.rhat));
  CHECK(std::isnan(infinite.ess_bulk));
  CHECK(std::isnan(infinite.ess_tail));
  CHECK(std::isfinite(infinite.q50));  // an infinite draw still has its place in the order
  x(10, 1) = std::numeric_limits<double>::quiet_NaN();
  const auto not_a_number = summarize_one(x);
  CHECK(std::isnan(not_a_number.mean));
  CHECK(std::isnan(not_a_number.q5));
  CHECK(std::isnan(not_a_number.q50));
  CHECK(std::isnan(not_a_number.rhat));
}

TEST_CASE("four draws per chain: R-hat defined, ESS not (split halves of 2 draws, posterior needs 3)",
          "[summary]") {
  Eigen::MatrixXd x(4, 2);
  x << 1, 2, 3, 5, 2, 4, 4, 3;
  const auto s = summarize_one(x);
  CHECK(std::isfinite(s.rhat));
  CHECK(std::isnan(s.ess_bulk));
  CHECK(std::isnan(s.ess_tail));
  CHECK(s.mean == 3.0);
}

TEST_CASE("quantiles at any probabilities, MAD and the MCSE of sd in closed form", "[summary]") {
  // Draws 1..100 as two chains, 1..50 and 51..100.
  Eigen::MatrixXd x(50, 2);
  for (int i = 0; i < 50; ++i) x(i, 0) = i + 1, x(i, 1) = i + 51;
  const auto rows = summarize(one_column_chains(x), {"x"}, {0.0, 0.025, 0.5, 0.9, 1.0});
  REQUIRE(rows[0].quantiles.size() == 5);
  // Type 7 on 1..100: 1 + 99 p.
  CHECK(rows[0].quantiles[0] == 1.0);
  CHECK(rows[0].quantiles[1] == Approx(1 + 99 * 0.025).epsilon(1e-15));
  CHECK(rows[0].quantiles[2] == 50.5);
  CHECK(rows[0].quantiles[3] == Approx(1 + 99 * 0.9).epsilon(1e-15));
  CHECK(rows[0].quantiles[4] == 100.0);
  // |x - 50.5| takes 0.5, 1.5, ..., 49.5 twice each: its median is 25, scaled by 1.4826.
  CHECK(rows[0].mad == Approx(25 * 1.4826).epsilon(1e-15));
  // MCSE of sd: posterior 1.4's formula (its numbers on real draws: cli_summary_posterior_reference_np4).
  const double mean = 50.5;
  Eigen::ArrayXXd c2 = (x.array() - mean).square();
  const double var = c2.mean(), var_var = (c2.square().mean() - var * var) /
                                          maprect::detail::basic_ess(maprect::detail::split_chains(c2.matrix()));
  CHECK(rows[0].mcse_sd == Approx(std::sqrt(var_var / var / 4)).epsilon(1e-14));
  CHECK(std::isfinite(rows[0].mcse_sd));
  CHECK_THROWS_WITH(summarize(one_column_chains(x), {"x"}, {0.5, 1.5}),
                    "summarize: quantile probability 1.500000 is outside [0, 1]");
}
