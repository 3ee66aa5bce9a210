// CmdStan's sampler options in the sampler itself: the dense metric and its adaptation, the unit metric, step
// size jitter, warm-up without adaptation, custom windows, thinning, and their checkpoints and Stan CSV.
#include <catch2/catch.hpp>
#include <maprect/sample.hpp>

#include <cmath>
#include <cstdio>
#include <sstream>

#include "src/sampling/checkpoint.hpp"
#include "src/sampling/stan_csv.hpp"

namespace {

/// A 3-d normal with covariance `cov` (mean zero).
maprect::log_density_function normal_with(const Eigen::MatrixXd& cov) {
  const Eigen::MatrixXd precision = cov.inverse();
  return [precision](const Eigen::VectorXd& q, Eigen::VectorXd& g) {
    g = -precision * q;
    return 0.5 * q.dot(g);
  };
}

Eigen::MatrixXd correlated_cov() {
  Eigen::MatrixXd cov(3, 3);
  cov << 1.0, 0.8, 0.1, 0.8, 4.0, -0.5, 0.1, -0.5, 0.25;  // positive definite (determinant 0.47)
  return cov;
}

/// Every draw of a chain run to the end (warm-up included).
std::vector<maprect::chain_draw> all_draws(maprect::nuts_chain& chain) {
  std::vector<maprect::chain_draw> draws;
  while (!chain.done()) draws.push_back(chain.step());
  return draws;
}

}  // namespace

TEST_CASE("the dense estimate is Stan's regularised sample covariance of the window's draws") {
  maprect::metric_adaptation m;
  m.windows.configure(1000);
  m.covariance.restart(2);
  Eigen::MatrixXd inv_metric = Eigen::MatrixXd::Identity(2, 2);
  std::vector<Eigen::Vector2d> window;
  bool updated = false;
  for (int i = 0; i < 100; ++i) {
    const Eigen::Vector2d q(std::sin(i * 1.3), 10 * std::cos(i * 0.7) + std::sin(i * 1.3));
    if (i >= 75) window.push_back(q);
    updated = m.learn(inv_metric, q);
  }
  REQUIRE(updated);  // iteration 99 ends the first window
  Eigen::Vector2d mean = Eigen::Vector2d::Zero();
  for (const auto& q : window) mean += q / 25.0;
  Eigen::Matrix2d cov = Eigen::Matrix2d::Zero();
  for (const auto& q : window) cov += (q - mean) * (q - mean).transpose() / 24.0;
  const Eigen::Matrix2d expected = (25.0 / 30.0) * cov + 1e-3 * (5.0 / 30.0) * Eigen::Matrix2d::Identity();
  CHECK((inv_metric - expected).cwiseAbs().maxCoeff() < 1e-12 * expected.cwiseAbs().maxCoeff());
  CHECK(m.covariance.n == 0);  // restarted for the next window
}

TEST_CASE("a dense metric that is diagonal draws the same bits as the diagonal metric") {
  // A dynamic vector: copied from a fixed-size one into the options' MatrixXd, GCC 12 warns of uninitialized data.
  const Eigen::VectorXd diagonal = Eigen::Vector3d(0.5, 2.0, 1.5);
  maprect::sample_options o;
  o.seed = 3;
  o.warmup = 50;
  o.samples = 80;
  o.adapt_engaged = false;  // keep the given metric
  o.initial_step_size = 0.7;
  o.stepsize_jitter = 0.3;
  o.metric = maprect::metric_kind::diag;
  o.initial_inv_metric = diagonal;
  maprect::nuts_chain diag(normal_with(correlated_cov()), 3, o);
  o.metric = maprect::metric_kind::dense;
  o.initial_inv_metric = Eigen::MatrixXd(diagonal.asDiagonal());
  maprect::nuts_chain dense(normal_with(correlated_cov()), 3, o);
  diag.initialize();
  dense.initialize();
  const auto a = all_draws(diag), b = all_draws(dense);
  for (std::size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].q == b[i].q);
    REQUIRE(a[i].diagnostics.step_size == b[i].diagnostics.step_size);
  }
}

TEST_CASE("without adaptation the step size and metric stay as given; jitter spreads the step size around it") {
  maprect::sample_options o;
  o.seed = 5;
  o.warmup = 100;
  o.samples = 100;
  o.adapt_engaged = false;
  o.initial_step_size = 0.4;
  maprect::nuts_chain plain(normal_with(correlated_cov()), 3, o);
  plain.initialize();
  for (const auto& d : all_draws(plain)) REQUIRE(d.diagnostics.step_size == 0.4);
  CHECK(plain.inv_metric() == Eigen::VectorXd::Ones(3));
  CHECK(plain.step_size() == 0.4);

  o.stepsize_jitter = 0.5;
  maprect::nuts_chain jittered(normal_with(correlated_cov()), 3, o);
  jittered.initialize();
  double lo = 1, hi = 0;
  for (const auto& d : all_draws(jittered)) {
    lo = std::min(lo, d.diagnostics.step_size);
    hi = std::max(hi, d.diagnostics.step_size);
  }
  CHECK(lo >= 0.4 * 0.5);
  CHECK(hi < 0.4 * 1.5);
  CHECK(lo < 0.25);  // 200 uniform draws over (0.2, 0.6) reach both ends
  CHECK(hi > 0.55);
}

TEST_CASE("the unit metric adapts the step size only; the dense metric learns the covariance") {
  maprect::sample_options o;
  o.seed = 9;
  o.metric = maprect::metric_kind::unit;
  const maprect::sample_result unit = maprect::sample_chain(normal_with(correlated_cov()), 3, o);
  CHECK(unit.inv_metric == Eigen::VectorXd::Ones(3));
  CHECK(unit.warmup_accept_stat == Approx(0.8).margin(0.08));
  o.metric = maprect::metric_kind::dense;
  const maprect::sample_result dense = maprect::sample_chain(normal_with(correlated_cov()), 3, o);
  REQUIRE(dense.dense_inv_metric.rows() == 3);
  // The last window has 500 draws of 1000 warm-up: the covariance within about 3 sqrt(2 / ESS).
  const Eigen::MatrixXd cov = correlated_cov();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      INFO(i << "," << j << ": " << dense.dense_inv_metric(i, j) << " vs " << cov(i, j));
      CHECK(std::fabs(dense.dense_inv_metric(i, j) - cov(i, j)) < 0.2 * std::sqrt(cov(i, i) * cov(j, j)));
    }
  CHECK(dense.inv_metric == dense.dense_inv_metric.diagonal());
}

TEST_CASE("custom buffers and window move Stan's window ends") {
  auto window_ends = [](int warmup, int init, int term, int base) {
    maprect::metric_adaptation m;
    m.windows.configure(warmup, init, term, base);
    m.samples.restart(1);
    Eigen::VectorXd v = Eigen::VectorXd::Ones(1);
    std::vector<int> ends;
    for (int i = 0; i < warmup; ++i)
      if (m.learn(v, Eigen::VectorXd::Constant(1, i % 5))) ends.push_back(i);
    return ends;
  };
  // init 10, windows 20, 40, 80 (the last stretched to the terminal buffer of 20 at 200 warm-up).
  CHECK(window_ends(200, 10, 20, 20) == std::vector<int>{29, 69, 179});
  CHECK(maprect::metric_windows::fits(200, 10, 20, 20));
  CHECK_FALSE(maprect::metric_windows::fits(100, 75, 50, 25));
  CHECK(maprect::metric_windows::fits(19, 75, 50, 25));  // no metric adaptation at all below 20
}

TEST_CASE("thinning keeps iterations 0, thin, 2 thin, ... of the sampling phase") {
  maprect::sample_options o;
  o.seed = 4;
  o.warmup = 100;
  o.samples = 25;
  const maprect::sample_result every = maprect::sample_chain(normal_with(correlated_cov()), 3, o);
  o.thin = 3;
  const maprect::sample_result thinned = maprect::sample_chain(normal_with(correlated_cov()), 3, o);
  REQUIRE(thinned.draws.rows() == 9);  // ceil(25 / 3)
  CHECK(maprect::kept_draws(25, 3) == 9);
  for (int s = 0; s < 9; ++s) REQUIRE(thinned.draws.row(s) == every.draws.row(3 * s));
  CHECK(thinned.gradients == every.gradients);
}

TEST_CASE("a checkpoint of a dense, jittered chain inside a metric window restores the same bits") {
  maprect::sample_options o;
  o.seed = 21;
  o.warmup = 150;
  o.samples = 60;
  o.metric = maprect::metric_kind::dense;
  o.stepsize_jitter = 0.2;
  o.init_buffer = 20;
  o.window = 15;
  o.term_buffer = 20;
  maprect::nuts_chain straight(normal_with(correlated_cov()), 3, o);
  straight.initialize();
  const auto expected = all_draws(straight);
  for (int cut : {57, 170}) {  // inside the second window; after warm-up
    maprect::nuts_chain first(normal_with(correlated_cov()), 3, o);
    first.initialize();
    for (int i = 0; i < cut; ++i) first.step();
    maprect::chain_checkpoint c;
    c.fingerprint = "model=normal metric=dense";
    c.state = first.state();
    REQUIRE(c.state.dense_inv_metric.rows() == 3);
    const std::string path = "sample-test-dense.ckpt";
    maprect::write_checkpoint(path, c);
    maprect::nuts_chain second(normal_with(correlated_cov()), 3, o);
    second.restore(maprect::read_checkpoint(path, c.fingerprint).state);
    std::remove(path.c_str());
    for (int i = cut; i < o.warmup + o.samples; ++i) {
      const maprect::chain_draw d = second.step();
      REQUIRE(d.q == expected[i].q);
      REQUIRE(d.diagnostics.step_size == expected[i].diagnostics.step_size);
    }
    CHECK(second.dense_inv_metric() == straight.dense_inv_metric());
  }
}

TEST_CASE("the new options out of range, and initial metrics of the wrong shape, are clear errors") {
  const auto f = normal_with(correlated_cov());
  auto with = [](auto change) {
    maprect::sample_options o;
    change(o);
    return o;
  };
  using opts = maprect::sample_options;
  CHECK_THROWS_WITH(maprect::check_sample_options(with([](opts& o) { o.thin = 0; })),
                    "sample: thin must be >= 1, got 0");
  CHECK_THROWS_WITH(maprect::check_sample_options(with([](opts& o) { o.stepsize_jitter = 1.5; })),
                    "sample: stepsize_jitter must be in [0, 1], got 1.500000");
  CHECK_THROWS_WITH(maprect::check_sample_options(with([](opts& o) { o.init_buffer = -1; })),
                    "sample: init_buffer must be >= 0, got -1");
  CHECK_THROWS_WITH(maprect::check_sample_options(with([](opts& o) { o.term_buffer = -2; })),
                    "sample: term_buffer must be >= 0, got -2");
  CHECK_THROWS_WITH(maprect::check_sample_options(with([](opts& o) { o.window = 0; })),
                    "sample: window must be >= 1, got 0");
  CHECK_THROWS_WITH(maprect::nuts_chain(f, 3, with([](opts& o) {
                      o.metric = maprect::metric_kind::dense;
                      o.initial_inv_metric = Eigen::MatrixXd::Identity(2, 2);
                    })),
                    "sample: the initial inverse metric is 2 x 2, the dense metric needs 3 x 3");
  CHECK_THROWS_WITH(maprect::nuts_chain(f, 3, with([](opts& o) {
                      o.metric = maprect::metric_kind::dense;
                      o.initial_inv_metric = -Eigen::MatrixXd::Identity(3, 3);
                    })),
                    "sample: the initial inverse metric is not finite, symmetric and positive definite");
  CHECK_THROWS_WITH(maprect::nuts_chain(f, 3, with([](opts& o) { o.initial_inv_metric = Eigen::VectorXd::Ones(4); })),
                    "sample: the initial inverse metric has 4 x 1 entries, the diagonal metric needs 3 x 1");
  CHECK_THROWS_WITH(maprect::nuts_chain(f, 3, with([](opts& o) {
                      o.initial_inv_metric = Eigen::Vector3d(1, 0, 1);
                    })),
                    "sample: the initial inverse metric has an entry that is not finite and positive");
}

TEST_CASE("Stan CSV: the new arguments in the header, and the dense and unit adaptation blocks") {
  maprect::stan_csv_config c;
  c.model = "normal";
  c.options.thin = 2;
  c.options.save_warmup = true;
  c.options.metric = maprect::metric_kind::dense;
  c.options.stepsize_jitter = 0.25;
  c.options.adapt_engaged = false;
  c.options.window = 30;
  c.metric_file = "m.json";
  std::ostringstream out;
  maprect::write_stan_csv_header(out, c, {"x"});
  const std::string header = out.str();
  for (const char* line : {"#     save_warmup = 1\n", "#     thin = 2\n", "#       engaged = 0\n",
                           "#       init_buffer = 75 (Default)\n", "#       window = 30\n",
                           "#         metric = dense_e\n", "#         metric_file = m.json\n",
                           "#         stepsize = 1 (Default)\n", "#         stepsize_jitter = 0.25\n"}) {
    INFO(line);
    CHECK(header.find(line) != std::string::npos);
  }
  std::ostringstream dense;
  Eigen::MatrixXd m(2, 2);
  m << 2, 0.5, 0.5, 1;
  maprect::write_stan_csv_adaptation(dense, 0.25, maprect::metric_kind::dense, m.diagonal(), m, 17);
  CHECK(dense.str() == "# Adaptation terminated\n# Step size = 0.25\n# Elements of inverse mass matrix:\n"
                       "# 2, 0.5\n# 0.5, 1\n");
  std::ostringstream unit;
  maprect::write_stan_csv_adaptation(unit, 0.5, maprect::metric_kind::unit, Eigen::VectorXd::Ones(2),
                                     Eigen::MatrixXd(), 17);
  CHECK(unit.str() == "# Adaptation terminated\n# Step size = 0.5\n# No free parameters for unit metric\n");
}
