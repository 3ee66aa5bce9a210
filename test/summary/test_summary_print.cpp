// print_summary's table and warnings, and the errors of summarize and print_summary.
#include <catch2/catch.hpp>

#include <random>
#include <sstream>

#include "src/sampling/summary.hpp"

namespace {

using maprect::parameter_summary;

/// Whitespace-separated fields of a line.
std::vector<std::string> fields(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

std::vector<std::string> lines(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string printed(const std::vector<parameter_summary>& rows, const std::vector<int>& divergences, int draws) {
  std::ostringstream os;
  maprect::print_summary(os, rows, divergences, draws);
  return os.str();
}

bool contains(const std::string& text, const std::string& piece) { return text.find(piece) != std::string::npos; }

/// Four chains of `draws` independent normal draws per column, column j shifted in chain 3 by shifts[j].
std::vector<Eigen::MatrixXd> normal_chains(Eigen::Index draws, const std::vector<double>& shifts, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<Eigen::MatrixXd> chains(4, Eigen::MatrixXd(draws, static_cast<Eigen::Index>(shifts.size())));
  for (std::size_t c = 0; c < 4; ++c)
    for (Eigen::Index j = 0; j < chains[c].cols(); ++j)
      for (Eigen::Index i = 0; i < draws; ++i)
        chains[c](i, j) = normal(rng) + (c == 2 ? shifts[static_cast<std::size_t>(j)] : 0.0);
  return chains;
}

}  // namespace

TEST_CASE("the table has stansummary's columns, one row per column, numbers in each cell", "[summary]") {
  const parameter_summary row{"theta.1", 1.23456, 0.0123, 2.5, -2.9, 1.2, 5.4, 3210.4, 2890.6, 1.0004};
  const auto out = lines(printed({row}, {0, 0}, 1000));
  REQUIRE(out.size() >= 4);
  CHECK(out[0] == "Inference for 2 chains: each with 1000 draws (2000 in all).");
  CHECK(out[1].empty());
  CHECK(fields(out[2]) ==
        std::vector<std::string>{"Mean", "MCSE", "StdDev", "5%", "50%", "95%", "ESS_bulk", "ESS_tail", "R_hat"});
  CHECK(fields(out[3]) == std::vector<std::string>{"theta.1", "1.23", "0.012", "2.5", "-2.9", "1.2", "5.4", "3210",
                                                   "2891", "1.000"});
  // Right-aligned columns: every header ends where its cells end.
  CHECK(out[2].size() == out[3].size());
}

TEST_CASE("a far-off R-hat keeps the table's width", "[summary]") {
  const parameter_summary row{"stepsize__", 0.9, 0.01, 0.02, 0.88, 0.9, 0.93, 4, 4, 4.8e14};
  const auto out = lines(printed({row}, {0, 0, 0, 0}, 1000));
  CHECK(fields(out.at(3)).back() == "4.8e+14");
  CHECK(out.at(3).size() == out.at(2).size());
}

TEST_CASE("undefined diagnostics print as NaN and raise no warning", "[summary]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const parameter_summary row{"fixed", 2.5, nan, 0, 2.5, 2.5, 2.5, nan, nan, nan};
  const std::string out = printed({row}, {0}, 100);
  CHECK(fields(lines(out).at(3)) ==
        std::vector<std::string>{"fixed", "2.5", "NaN", "0", "2.5", "2.5", "2.5", "NaN", "NaN", "NaN"});
  CHECK_FALSE(contains(out, "Warning"));
}

TEST_CASE("divergences are listed per chain, with a warning when there are any", "[summary]") {
  const parameter_summary row{"mu", 0, 0.01, 1, -1.6, 0, 1.6, 4000, 4000, 1.0};
  const std::string clean = printed({row}, {0, 0, 0}, 2000);
  CHECK(contains(clean, "Divergent transitions per chain: 1: 0, 2: 0, 3: 0 (0 in all)\n"));
  CHECK_FALSE(contains(clean, "Warning"));
  const std::string diverging = printed({row}, {0, 3, 1}, 2000);
  CHECK(contains(diverging, "Divergent transitions per chain: 1: 0, 2: 3, 3: 1 (4 in all)\n"));
  CHECK(contains(diverging, "Warning: 4 divergent transitions after warm-up"));
}

TEST_CASE("shifted chains: R-hat above 1.01 and the warning names the column", "[summary]") {
  const auto rows = maprect::summarize(normal_chains(1000, {0.0, 1.0}, 3), {"steady", "shifted"});
  CHECK(rows.at(0).rhat < 1.01);
  CHECK(rows.at(1).rhat > 1.05);
  const std::string out = printed(rows, {0, 0, 0, 0}, 1000);
  CHECK(contains(out, "Warning: R_hat > 1.01 (chains have not mixed; run longer or reparameterise) for 1 column: "
                      "shifted\n"));
  // Chains apart in location also leave few effective draws; the steady column is in neither warning.
  CHECK(contains(out, "Warning: ESS_bulk or ESS_tail < 400 (100 per chain; run longer) for 1 column: shifted\n"));
}

TEST_CASE("ESS below 100 per chain is warned of; sampler columns other than lp__ are not", "[summary]") {
  const auto rows = maprect::summarize(normal_chains(40, {0.0, 0.0, 0.0}, 9), {"lp__", "accept_stat__", "mu"});
  REQUIRE(rows.at(2).ess_bulk < 400);  // 160 draws in all
  const std::string out = printed(rows, {0, 0, 0, 0}, 40);
  CHECK(contains(out, "Warning: ESS_bulk or ESS_tail < 400 (100 per chain; run longer) for 2 columns: lp__, mu\n"));
}

TEST_CASE("summarize refuses inconsistent input with a message naming it", "[summary]") {
  using Catch::Message;
  const std::vector<std::string> two{"a", "b"};
  CHECK_THROWS_MATCHES(maprect::summarize({}, {}), std::invalid_argument, Message("summarize: no chains given"));
  CHECK_THROWS_MATCHES(maprect::summarize({Eigen::MatrixXd::Zero(3, 2), Eigen::MatrixXd::Zero(3, 2)}, two),
                       std::invalid_argument,
                       Message("summarize: 3 draws per chain, at least 4 are needed to split chains"));
  CHECK_THROWS_MATCHES(
      maprect::summarize({Eigen::MatrixXd::Zero(100, 2), Eigen::MatrixXd::Zero(100, 2), Eigen::MatrixXd::Zero(99, 2)},
                         two),
      std::invalid_argument, Message("summarize: chain 3 has 99 draws x 2 columns, but chain 1 has 100 x 2"));
  CHECK_THROWS_MATCHES(maprect::summarize({Eigen::MatrixXd::Zero(10, 2), Eigen::MatrixXd::Zero(10, 3)}, two),
                       std::invalid_argument,
                       Message("summarize: chain 2 has 10 draws x 3 columns, but chain 1 has 10 x 2"));
  CHECK_THROWS_MATCHES(maprect::summarize({Eigen::MatrixXd::Zero(10, 2)}, {"a", "b", "c"}), std::invalid_argument,
                       Message("summarize: 3 names for 2 columns"));
}

TEST_CASE("print_summary refuses an inconsistent chain description", "[summary]") {
  using Catch::Message;
  std::ostringstream os;
  CHECK_THROWS_MATCHES(maprect::print_summary(os, {}, {}, 100), std::invalid_argument,
                       Message("print_summary: divergences_per_chain is empty, expected one entry per chain"));
  CHECK_THROWS_MATCHES(maprect::print_summary(os, {}, {0, -2}, 100), std::invalid_argument,
                       Message("print_summary: chain 2 has -2 divergences, expected >= 0"));
  CHECK_THROWS_MATCHES(maprect::print_summary(os, {}, {0}, 0), std::invalid_argument,
                       Message("print_summary: draws_per_chain is 0, expected >= 1"));
  CHECK(os.str().empty());
}
