// Every double maprect writes reads back: Stan CSV numbers at every --sig-figs (bit for bit at 17, the correctly
// rounded decimal below) and checkpoints (hexadecimal, always bit for bit), over the edge values of doubles:
// subnormals, the smallest and largest normals, -0, infinities.
#include <catch2/catch.hpp>
#include <maprect/sample.hpp>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "src/sampling/checkpoint.hpp"
#include "src/sampling/stan_csv.hpp"

namespace {

/// The doubles at the edges of the format, each with its negative.
std::vector<double> edge_values() {
  using limits = std::numeric_limits<double>;
  const std::vector<double> positive = {0.0,
                                        limits::denorm_min(),
                                        2 * limits::denorm_min(),
                                        6.98e-316,  // an accept_stat__ that a run wrote and could not read back
                                        std::nextafter(DBL_MIN, 0.0),  // the largest subnormal
                                        DBL_MIN,
                                        std::nextafter(DBL_MIN, 1.0),
                                        1e-300,
                                        limits::epsilon(),
                                        1.0 / 3.0,
                                        1.0,
                                        std::nextafter(1.0, 2.0),
                                        3.141592653589793,
                                        123456789.123456789,
                                        9.999999999999999e22,
                                        1e300,
                                        std::nextafter(DBL_MAX, 0.0),
                                        DBL_MAX,
                                        limits::infinity()};
  std::vector<double> all;
  for (double x : positive) all.push_back(x), all.push_back(-x);
  return all;
}

std::uint64_t bits(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

std::string temp_path(const std::string& name) { return "stan-numbers-" + name; }

}  // namespace

TEST_CASE("Stan CSV numbers read back bit for bit at 17 digits, subnormals and -0 included") {
  for (double x : edge_values()) {
    const std::string text = maprect::stan_csv_number(x, 17);
    double back = 1;
    INFO("x = " << text);
    REQUIRE(maprect::parse_stan_number(text, back));
    CHECK(bits(back) == bits(x));
  }
}

TEST_CASE("Stan CSV numbers at every --sig-figs read back as the decimal written") {
  for (int digits = 1; digits <= 17; ++digits)
    for (double x : edge_values()) {
      const std::string text = maprect::stan_csv_number(x, digits);
      INFO("x = " << maprect::stan_csv_number(x, 17) << ", " << digits << " digits: " << text);
      double back = 1;
      REQUIRE(maprect::parse_stan_number(text, back));
      // Writing what was read gives the same text: the reader lost nothing of what the writer wrote ...
      CHECK(maprect::stan_csv_number(back, digits) == text);
      // ... and the text is x to `digits` digits: within half a unit of its last digit.
      if (std::isfinite(x) && x != 0 && std::fabs(x) >= DBL_MIN)
        CHECK(std::fabs(back - x) <= 0.5 * std::pow(10.0, std::floor(std::log10(std::fabs(x))) - digits + 1) *
                                         (1 + 1e-15));
      if (x == 0) CHECK(bits(back) == bits(x));  // -0 stays -0
    }
}

TEST_CASE("the reader takes NaN and infinities and refuses what is not a double") {
  double x = 0;
  CHECK(maprect::parse_stan_number("nan", x));
  CHECK(std::isnan(x));
  CHECK(maprect::parse_stan_number("-inf", x));
  CHECK(x == -std::numeric_limits<double>::infinity());
  CHECK(maprect::parse_stan_number("4.9406564584124654e-324", x));
  CHECK(x == std::numeric_limits<double>::denorm_min());
  CHECK(maprect::parse_stan_number("1e-400", x));  // below the least subnormal: zero, as written
  CHECK(x == 0);
  for (const char* bad : {"", " 1", "1 ", "1e999", "-1e999", "1,5", "0x", "abc", "1.5.2"}) {
    INFO("'" << bad << "'");
    CHECK_FALSE(maprect::parse_stan_number(bad, x));
  }
}

TEST_CASE("a Stan CSV file with edge values in every column reads back bit for bit") {
  const std::vector<double> values = edge_values();
  maprect::stan_csv_config c;
  c.model = "edges";
  c.options.samples = static_cast<int>(values.size());
  std::ostringstream out;
  maprect::write_stan_csv_header(out, c, {"x", "y"});
  maprect::write_stan_csv_adaptation(out, 6.98e-316, Eigen::VectorXd::Constant(2, DBL_MIN / 3), 17);
  for (std::size_t i = 0; i < values.size(); ++i) {
    maprect::chain_draw d;
    d.log_density = values[i];
    d.diagnostics.accept_stat = values[values.size() - 1 - i];
    d.diagnostics.step_size = values[(i + 3) % values.size()];
    d.diagnostics.tree_depth = 3;
    d.diagnostics.n_leapfrog = 7;
    d.diagnostics.energy = values[(i + 5) % values.size()];
    const Eigen::VectorXd outputs = (Eigen::VectorXd(2) << values[(i + 7) % values.size()], -values[i]).finished();
    maprect::write_stan_csv_draw(out, d, outputs, 17);
  }
  maprect::write_stan_csv_timing(out, 1.5, 2.25);
  const std::string path = temp_path("edges.csv");
  std::ofstream(path) << out.str();
  const maprect::stan_csv r = maprect::read_stan_csv(path);
  REQUIRE(r.draws.rows() == static_cast<Eigen::Index>(values.size()));
  CHECK(bits(r.step_size) == bits(6.98e-316));
  CHECK(bits(r.inv_metric[1]) == bits(DBL_MIN / 3));
  CHECK(r.warmup_seconds == 1.5);
  CHECK(r.sampling_seconds == 2.25);
  for (std::size_t i = 0; i < values.size(); ++i) {
    INFO("row " << i);
    CHECK(bits(r.draws(i, 0)) == bits(values[i]));
    CHECK(bits(r.draws(i, 1)) == bits(values[values.size() - 1 - i]));
    CHECK(bits(r.draws(i, 2)) == bits(values[(i + 3) % values.size()]));
    CHECK(bits(r.draws(i, 6)) == bits(values[(i + 5) % values.size()]));
    CHECK(bits(r.draws(i, 7)) == bits(values[(i + 7) % values.size()]));
    CHECK(bits(r.draws(i, 8)) == bits(-values[i]));
  }
  std::remove(path.c_str());
}

TEST_CASE("a malformed Stan CSV names its file, line and column") {
  const std::string path = temp_path("bad.csv");
  std::ofstream(path) << "# model = m\nlp__,x\n1,2\n3,1e999\n";
  CHECK_THROWS_WITH(maprect::read_stan_csv(path), path + ": line 4: column 2: '1e999' is not a number");
  std::ofstream(path) << "lp__,x\n1,2\n3\n";
  CHECK_THROWS_WITH(maprect::read_stan_csv(path), path + ": line 3: 1 values for 2 columns");
  std::ofstream(path) << "lp__,x\n# Step size = fast\n";
  CHECK_THROWS_WITH(maprect::read_stan_csv(path), path + ": line 2: step size: 'fast' is not a number");
  std::remove(path.c_str());
}

TEST_CASE("a checkpoint with edge values in every number reads back bit for bit") {
  const std::vector<double> values = edge_values();
  maprect::chain_checkpoint c;
  c.fingerprint = "model=edges seed=1";
  c.output_bytes = 4242;
  c.draw_rows = 17;
  c.warmup_seconds = std::numeric_limits<double>::denorm_min();
  c.sampling_seconds = DBL_MAX;
  c.state.iteration = 12;
  c.state.step_size = 6.98e-316;
  c.state.rng = maprect::sampler_rng(1, 1).state();  // a valid state: a damaged one is refused
  c.state.q = Eigen::Map<const Eigen::VectorXd>(values.data(), static_cast<Eigen::Index>(values.size()));
  // A metric must be finite and positive (a damaged one is refused): its edges are the magnitudes of the others.
  c.state.inv_metric = c.state.q.reverse().unaryExpr([](double v) {
    return std::isfinite(v) && v != 0 ? std::fabs(v) : std::numeric_limits<double>::denorm_min();
  });
  c.state.step_adapt.mu = -0.0;
  c.state.step_adapt.s_bar = std::nextafter(DBL_MIN, 0.0);
  c.state.step_adapt.x_bar = -DBL_MAX;
  c.state.metric_adapt.samples.m = c.state.q;
  c.state.metric_adapt.samples.m2 = c.state.inv_metric;
  const std::string path = temp_path("edges.checkpoint");
  maprect::write_checkpoint(path, c);
  const maprect::chain_checkpoint back = maprect::read_checkpoint(path, c.fingerprint);
  CHECK(back.output_bytes == 4242);
  CHECK(back.draw_rows == 17);
  CHECK(bits(back.warmup_seconds) == bits(c.warmup_seconds));
  CHECK(bits(back.sampling_seconds) == bits(DBL_MAX));
  CHECK(bits(back.state.step_size) == bits(6.98e-316));
  CHECK(bits(back.state.step_adapt.mu) == bits(-0.0));
  CHECK(bits(back.state.step_adapt.s_bar) == bits(std::nextafter(DBL_MIN, 0.0)));
  CHECK(bits(back.state.step_adapt.x_bar) == bits(-DBL_MAX));
  REQUIRE(back.state.q.size() == c.state.q.size());
  for (Eigen::Index i = 0; i < c.state.q.size(); ++i) {
    INFO("element " << i);
    CHECK(bits(back.state.q(i)) == bits(c.state.q(i)));
    CHECK(bits(back.state.inv_metric(i)) == bits(c.state.inv_metric(i)));
    CHECK(bits(back.state.metric_adapt.samples.m(i)) == bits(c.state.metric_adapt.samples.m(i)));
    CHECK(bits(back.state.metric_adapt.samples.m2(i)) == bits(c.state.metric_adapt.samples.m2(i)));
  }
  std::remove(path.c_str());
}
