// The sampler's mechanics: leapfrog, one NUTS tree by hand, the warm-up windows, adaptation, the RNG state,
// checkpoints and Stan CSV, and bad input.
#include <catch2/catch.hpp>
#include <maprect/sample.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "src/sampling/checkpoint.hpp"
#include "src/sampling/stan_csv.hpp"

namespace {

using maprect::phase_point;

/// log p(q) = -sum q_i^2 / (2 s_i^2): a normal with scales s.
maprect::log_density_function diagonal_normal(const Eigen::VectorXd& s) {
  return [s](const Eigen::VectorXd& q, Eigen::VectorXd& g) {
    g = -q.cwiseQuotient(s.cwiseProduct(s));
    return -0.5 * q.cwiseQuotient(s).squaredNorm();
  };
}

phase_point start(const maprect::diag_hamiltonian& h, Eigen::VectorXd q, Eigen::VectorXd p) {
  phase_point z;
  z.q = std::move(q);
  z.p = std::move(p);
  h.update(z);
  return z;
}

std::string temp_path(const std::string& name) { return "sample-test-" + name; }

}  // namespace

TEST_CASE("leapfrog is reversible and conserves energy on a quadratic to second order") {
  const Eigen::VectorXd s = (Eigen::VectorXd(3) << 1.0, 0.5, 3.0).finished();
  const maprect::diag_hamiltonian h(diagonal_normal(s), (Eigen::VectorXd(3) << 1.0, 0.3, 2.0).finished());
  const Eigen::VectorXd q0 = (Eigen::VectorXd(3) << 0.7, -0.2, 1.5).finished();
  const Eigen::VectorXd p0 = (Eigen::VectorXd(3) << -0.4, 1.1, 0.3).finished();
  phase_point z = start(h, q0, p0);
  const double H0 = h.energy(z);
  for (int i = 0; i < 50; ++i) h.leapfrog(z, 0.1);
  CHECK((z.q - q0).norm() > 0.5);  // it went somewhere
  z.p = -z.p;
  for (int i = 0; i < 50; ++i) h.leapfrog(z, 0.1);
  CHECK((z.q - q0).cwiseAbs().maxCoeff() < 1e-12);
  CHECK((z.p + p0).cwiseAbs().maxCoeff() < 1e-12);

  // Energy error: bounded along the trajectory, and four times smaller at half the step (second order).
  auto max_error = [&](double eps, int steps) {
    phase_point w = start(h, q0, p0);
    double worst = 0;
    for (int i = 0; i < steps; ++i) {
      h.leapfrog(w, eps);
      worst = std::max(worst, std::fabs(h.energy(w) - H0));
    }
    return worst;
  };
  const double coarse = max_error(0.1, 100), fine = max_error(0.05, 200);
  CHECK(coarse < 0.02 * H0);
  CHECK(coarse / fine == Approx(4.0).margin(0.4));
}

TEST_CASE("one NUTS transition on a 1-D standard normal at step size 1 matches the tree worked by hand") {
  // From q0 = 0 with momentum a, leapfrog steps of size 1 give (q, p): forward (a, a/2), (a, -a/2), (0, -a);
  // backward (-a, a/2), (-a, -a/2). Energies: H0 = a^2/2 at q0 and at (0, -a), 5a^2/8 at the four others.
  const Eigen::VectorXd one = Eigen::VectorXd::Ones(1);
  const maprect::diag_hamiltonian h(diagonal_normal(one), one);
  int cases_seen = 0;
  std::set<int> depths;
  for (std::uint64_t seed = 1; seed < 60 && cases_seen < 12; ++seed) {
    // The transition's draws, in its order: momentum (2 uniforms), direction 1, the multinomial choice at
    // depth 0 (the new point weighs less than the start), direction 2.
    maprect::sampler_rng replay(seed, 1);
    const double a = replay.normal();
    const bool forward1 = replay.uniform() > 0.5;
    replay.uniform();
    const bool forward2 = replay.uniform() > 0.5;
    if (std::fabs(a) < 0.1) continue;
    maprect::sampler_rng rng(seed, 1);
    maprect::nuts_sampler nuts(h, rng, 10);
    phase_point z = start(h, Eigen::VectorXd::Zero(1), Eigen::VectorXd::Zero(1));
    const maprect::nuts_diagnostics d = nuts.transition(z, 1.0);
    const double w = std::exp(-a * a / 8);  // weight of a point at energy 5a^2/8 against the start
    INFO("seed " << seed << " a " << a << " directions " << forward1 << forward2);
    CHECK(d.n_leapfrog == 3);
    if (forward1 == forward2) {
      // Both ways the same: three steps out, the ends' momenta a and -a sum with the inside to rho = 0: U-turn
      // at depth 2; the weights are 1 (start), w, w, 1 (the point (0, -a) or (0, a)).
      CHECK(d.tree_depth == 2);
      CHECK(d.accept_stat == Approx((1 + 2 * w) / 3).epsilon(1e-12));
    } else {
      // The second subtree turns back on itself (momenta a/2, -a/2): invalid, so depth stays 1 and its points
      // are never chosen; the accept statistic still counts its two steps.
      CHECK(d.tree_depth == 1);
      CHECK(d.accept_stat == Approx(3 * w / 3).epsilon(1e-12));
      const double q_first = forward1 ? a : -a;
      CHECK((z.q(0) == 0.0 || z.q(0) == Approx(q_first).epsilon(1e-14)));
    }
    CHECK_FALSE(d.divergent);
    CHECK(d.energy == Approx(0.5 * z.q(0) * z.q(0) + 0.5 * z.p(0) * z.p(0)).epsilon(1e-14));
    depths.insert(d.tree_depth);
    ++cases_seen;
  }
  CHECK(depths == std::set<int>{1, 2});
}

TEST_CASE("metric windows follow Stan: 75/25/50 at 1000 warm-up, 15%/75%/10% when those do not fit") {
  auto window_ends = [](int warmup) {
    maprect::metric_adaptation m;
    m.windows.configure(warmup);
    m.samples.restart(1);
    Eigen::VectorXd v = Eigen::VectorXd::Ones(1);
    std::vector<int> ends;
    for (int i = 0; i < warmup; ++i)
      if (m.learn(v, Eigen::VectorXd::Constant(1, i % 7))) ends.push_back(i);
    return ends;
  };
  CHECK(window_ends(1000) == std::vector<int>{99, 149, 249, 449, 949});
  // 100 warm-up: init 15, term 10, base window 75 -> one window ending at 89.
  CHECK(window_ends(100) == std::vector<int>{89});
  CHECK(window_ends(19).empty());
  maprect::metric_windows w;
  w.configure(150);
  CHECK(w.init_buffer == 75);
  CHECK(w.term_buffer == 50);
  CHECK(w.base_window == 25);
}

TEST_CASE("the metric estimate is Stan's regularised variance of the window's draws") {
  maprect::metric_adaptation m;
  m.windows.configure(1000);
  m.samples.restart(2);
  Eigen::VectorXd v = Eigen::VectorXd::Ones(2);
  std::vector<Eigen::Vector2d> window;
  for (int i = 0; i < 100; ++i) {
    const Eigen::Vector2d q(std::sin(i * 1.3), 10 * std::cos(i * 0.7));
    if (i >= 75) window.push_back(q);
    m.learn(v, q);
  }
  Eigen::Vector2d mean = Eigen::Vector2d::Zero(), var = Eigen::Vector2d::Zero();
  for (const auto& q : window) mean += q / 25.0;
  for (const auto& q : window) var += (q - mean).cwiseAbs2() / 24.0;
  const Eigen::Vector2d expected = (25.0 / 30.0) * var + Eigen::Vector2d::Constant(1e-3 * 5.0 / 30.0);
  CHECK(v(0) == Approx(expected(0)).epsilon(1e-12));
  CHECK(v(1) == Approx(expected(1)).epsilon(1e-12));
}

TEST_CASE("dual averaging shrinks towards 10x the configured step size, then 10x the one found after each window") {
  // Stan's services set mu = log(10 * stepsize) from the configured step size before init_stepsize runs; only
  // the metric updates re-centre mu, on the step size init_stepsize finds under the new metric.
  maprect::sample_options o;
  o.seed = 5;
  o.initial_step_size = 0.5;
  maprect::nuts_chain chain(diagonal_normal(Eigen::VectorXd::Constant(2, 0.01)), 2, o);
  chain.initialize(Eigen::VectorXd::Constant(2, 0.001));
  CHECK(chain.step_size() < 0.05);  // the search halved its way down to the 0.01 scale
  CHECK(chain.state().step_adapt.mu == std::log(10 * 0.5));
  CHECK(chain.state().step_adapt.counter == 0);
  for (int i = 0; i < 100; ++i) chain.step();  // iteration 99 ends the first metric window
  const maprect::chain_state s = chain.state();
  CHECK(s.step_adapt.counter == 0);
  CHECK(s.step_adapt.mu == std::log(10 * s.step_size));
  CHECK(s.step_adapt.mu != std::log(10 * 0.5));
}

TEST_CASE("warm-up reaches the target acceptance and learns the scales") {
  // From a fixed-size vector: GCC 12 warns that the copy of a comma-initialised VectorXd may read uninitialized data.
  const Eigen::VectorXd s = Eigen::Vector4d(0.1, 1.0, 3.0, 10.0);
  maprect::sample_options o;
  o.seed = 20261123;
  o.samples = 1000;
  for (double target : {0.8, 0.95}) {
    o.delta = target;
    const maprect::sample_result r = maprect::sample_chain(diagonal_normal(s), 4, o);
    INFO("target " << target);
    CHECK(r.warmup_accept_stat == Approx(target).margin(0.05));
    // After warm-up the step size is exp of the averaged iterates, which sits below their last values; in Stan
    // too the acceptance while sampling runs a little above the target.
    CHECK(r.accept_stat.mean() > target - 0.03);
    CHECK(r.accept_stat.mean() < target + 0.5 * (1 - target));
    for (int i = 0; i < 4; ++i) CHECK(std::sqrt(r.inv_metric(i)) == Approx(s(i)).epsilon(0.3));
  }
}

TEST_CASE("the RNG state survives text, and a checkpoint restores a chain to the same bits") {
  const Eigen::VectorXd s = Eigen::Vector3d(1.0, 2.0, 0.5);
  maprect::sample_options o;
  o.seed = 7;
  o.warmup = 200;
  o.samples = 100;
  maprect::nuts_chain straight(diagonal_normal(s), 3, o);
  straight.initialize();
  std::vector<Eigen::VectorXd> expected;
  while (!straight.done()) expected.push_back(straight.step().q);

  maprect::nuts_chain first(diagonal_normal(s), 3, o);
  first.initialize();
  for (int i = 0; i < 137; ++i) first.step();  // inside the third metric window
  maprect::chain_checkpoint c;
  c.fingerprint = "model=normal seed=7";
  c.output_bytes = 12345;
  c.state = first.state();
  const std::string path = temp_path("roundtrip.ckpt");
  maprect::write_checkpoint(path, c);
  const maprect::chain_checkpoint back = maprect::read_checkpoint(path, c.fingerprint);
  CHECK(back.output_bytes == 12345);
  maprect::nuts_chain second(diagonal_normal(s), 3, o);
  second.restore(back.state);
  for (int i = 137; i < 300; ++i) {
    const Eigen::VectorXd q = second.step().q;
    REQUIRE(q == expected[i]);  // bit-identical
  }
  std::remove(path.c_str());
}

TEST_CASE("a damaged or mismatched checkpoint is refused with a clear error") {
  maprect::sample_options o;
  o.warmup = 30;
  o.samples = 10;
  maprect::nuts_chain chain(diagonal_normal(Eigen::VectorXd::Ones(2)), 2, o);
  chain.initialize();
  chain.step();
  maprect::chain_checkpoint c;
  c.fingerprint = "model=eight_schools data=abc seed=1 chain=2";
  c.state = chain.state();
  const std::string path = temp_path("damaged.ckpt");
  maprect::write_checkpoint(path, c);
  CHECK_THROWS_WITH(maprect::read_checkpoint(path, "model=logreg data=abc seed=1 chain=2"),
                    Catch::Contains("belongs to another run") && Catch::Contains("model=eight_schools") &&
                        Catch::Contains("model=logreg"));
  CHECK_THROWS_WITH(maprect::read_checkpoint(path, "model=eight_schools data=abc seed=2 chain=2"),
                    Catch::Contains("seed=1, this run has seed=2"));
  std::string text;
  {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  std::string flipped = text;
  flipped[flipped.find("iteration 1") + 10] = '7';
  std::ofstream(path) << flipped;
  CHECK_THROWS_WITH(maprect::read_checkpoint(path, c.fingerprint), Catch::Contains("checksum does not match"));
  std::ofstream(path) << text.substr(0, text.size() / 2);
  CHECK_THROWS_WITH(maprect::read_checkpoint(path, c.fingerprint), Catch::Contains("damaged checkpoint"));
  CHECK_THROWS_WITH(maprect::read_checkpoint(temp_path("none.ckpt"), c.fingerprint),
                    Catch::Contains("none.ckpt: cannot open the checkpoint"));
  std::remove(path.c_str());
  // A state that reads back but does not fit the chain it is restored into.
  maprect::nuts_chain wider(diagonal_normal(Eigen::VectorXd::Ones(3)), 3, o);
  CHECK_THROWS_MATCHES(wider.restore(c.state), std::invalid_argument,
                       Catch::Matchers::Message("chain 1: the saved state has dimension 2, the model has 3"));
  maprect::chain_state late = c.state;
  late.iteration = o.warmup + o.samples + 1;
  CHECK_THROWS_MATCHES(chain.restore(late), std::invalid_argument,
                       Catch::Matchers::Message("chain 1: the saved state is at iteration 41, outside 0..40"));
  maprect::nuts_chain elsewhere(
      [](const Eigen::VectorXd& q, Eigen::VectorXd& g) {
        g = Eigen::VectorXd::Zero(q.size());
        return q(0) > 100 ? 0.0 : -std::numeric_limits<double>::infinity();
      },
      2, o);
  CHECK_THROWS_MATCHES(elsewhere.restore(c.state), std::domain_error,
                       Catch::Matchers::Message("chain 1: at the saved position the log density is not finite (or "
                                                "its evaluation threw)"));
}

TEST_CASE("bad options and a model that cannot start are clear errors") {
  const auto f = diagonal_normal(Eigen::VectorXd::Ones(2));
  maprect::sample_options o;
  o.samples = 0;
  CHECK_THROWS_WITH(maprect::nuts_chain(f, 2, o), "sample: samples must be >= 1, got 0");
  o = {};
  o.max_depth = 0;
  CHECK_THROWS_WITH(maprect::nuts_chain(f, 2, o), "sample: max_depth must be in 1..30, got 0");
  o = {};
  o.delta = 1.5;
  CHECK_THROWS_WITH(maprect::nuts_chain(f, 2, o), Catch::StartsWith("sample: delta must be in (0, 1)"));
  CHECK_THROWS_WITH(maprect::nuts_chain(f, 0, maprect::sample_options{}),
                    "sample: the model has 0 parameters; need >= 1");

  // -inf everywhere: every random init is rejected.
  maprect::sample_options bad;
  bad.chain = 3;
  maprect::nuts_chain nowhere(
      [](const Eigen::VectorXd& q, Eigen::VectorXd& g) {
        g = Eigen::VectorXd::Zero(q.size());
        return -std::numeric_limits<double>::infinity();
      },
      2, bad);
  CHECK_THROWS_WITH(nowhere.initialize(),
                    "chain 3: initialization between (-2, 2) failed after 100 attempts: the log density is not "
                    "finite (or its evaluation threw)");
  // Finite only for q(0) > 1: random inits are retried until one lands there.
  int evaluations = 0;
  maprect::nuts_chain half(
      [&](const Eigen::VectorXd& q, Eigen::VectorXd& g) {
        ++evaluations;
        if (q(0) <= 1) throw std::domain_error("q0 <= 1");
        g = -(q - Eigen::VectorXd::Constant(q.size(), 1.5));
        return -0.5 * g.squaredNorm();
      },
      2, maprect::sample_options{});
  half.initialize();
  CHECK(half.state().q(0) > 1);
  CHECK(half.state().q.cwiseAbs().maxCoeff() < 2);  // uniform on (-2, 2)
  CHECK(evaluations > 1);
  // Given initial values: no retry.
  CHECK_THROWS_WITH(half.initialize(Eigen::VectorXd::Zero(2)),
                    "chain 1: at the given initial values the log density is not finite (or its evaluation threw)");
  CHECK_THROWS_WITH(half.initialize(Eigen::VectorXd::Zero(3)),
                    "chain 1: initial values have 3 entries, the model has 2 parameters");
  maprect::nuts_chain unready(f, 2, maprect::sample_options{});
  CHECK_THROWS_AS(unready.step(), std::logic_error);
  o = {};
  o.init_radius = -1;
  CHECK_THROWS_WITH(maprect::nuts_chain(f, 2, o), "sample: init_radius must be finite and >= 0, got -1.000000");
  o = {};
  o.initial_step_size = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(maprect::nuts_chain(f, 2, o), "sample: initial_step_size must be finite and > 0, got inf");
  // A flat density: no step is too long, so the search for the first step size doubles it without end.
  maprect::sample_options flat_options;
  flat_options.chain = 2;
  maprect::nuts_chain flat(
      [](const Eigen::VectorXd& q, Eigen::VectorXd& g) {
        g = Eigen::VectorXd::Zero(q.size());
        return 0.0;
      },
      2, flat_options);
  CHECK_THROWS_MATCHES(flat.initialize(), std::domain_error,
                       Catch::Matchers::Message(
                           "chain 2: the posterior is improper (the step size grew beyond 1e7); check the model"));
}

TEST_CASE("Stan CSV: CmdStan's header, columns, adaptation block, draws and timing, read back exactly") {
  maprect::stan_csv_config c;
  c.model = "normal";
  c.output_file = "normal-1.csv";
  c.options.warmup = 50;
  c.options.samples = 20;
  c.options.seed = 99;
  const Eigen::VectorXd s = (Eigen::VectorXd(2) << 1.0, 4.0).finished();
  maprect::nuts_chain chain(diagonal_normal(s), 2, c.options);
  chain.initialize();
  std::ostringstream out;
  maprect::write_stan_csv_header(out, c, {"x.1", "x.2"});
  std::vector<maprect::chain_draw> kept;
  while (!chain.done()) {
    const maprect::chain_draw d = chain.step();
    if (d.warmup) {
      if (d.iteration == c.options.warmup - 1)
        maprect::write_stan_csv_adaptation(out, chain.step_size(), chain.inv_metric(), c.sig_figs);
      continue;
    }
    maprect::write_stan_csv_draw(out, d, d.q, c.sig_figs);
    kept.push_back(d);
  }
  maprect::write_stan_csv_timing(out, 0.5, 0.25);
  const std::string path = temp_path("normal-1.csv");
  std::ofstream(path) << out.str();
  const maprect::stan_csv r = maprect::read_stan_csv(path);
  CHECK(r.config.at("method") == "sample");
  CHECK(r.config.at("num_samples") == "20");
  CHECK(r.config.at("num_warmup") == "50");
  CHECK(r.config.at("save_warmup") == "0");
  CHECK(r.config.at("thin") == "1");
  CHECK(r.config.at("metric") == "diag_e");
  CHECK(r.config.at("engine") == "nuts");
  CHECK(r.config.at("seed") == "99");
  CHECK(r.columns == std::vector<std::string>{"lp__", "accept_stat__", "stepsize__", "treedepth__", "n_leapfrog__",
                                              "divergent__", "energy__", "x.1", "x.2"});
  REQUIRE(r.draws.rows() == 20);
  CHECK(r.step_size == chain.step_size());
  CHECK(r.inv_metric == std::vector<double>{chain.inv_metric()(0), chain.inv_metric()(1)});
  CHECK(r.has_timing);
  for (int i = 0; i < 20; ++i) {
    CHECK(r.draws(i, 0) == kept[i].log_density);  // 17 digits: exact
    CHECK(r.draws(i, 7) == kept[i].q(0));
    CHECK(r.draws(i, 4) == kept[i].diagnostics.n_leapfrog);
  }
  std::remove(path.c_str());
}
