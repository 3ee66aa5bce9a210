#pragma once
/// \file One NUTS chain with Stan's warm-up, driven iteration by iteration so that a caller can write each
/// draw, report progress and checkpoint the chain's full state between iterations.

#include <Eigen/Dense>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "adaptation.hpp"
#include "hamiltonian.hpp"
#include "nuts.hpp"
#include "rng.hpp"

namespace maprect {

/// Settings of one chain (Stan's defaults).
struct sample_options {
  int warmup = 1000;             ///< warm-up iterations (adaptation), not returned as draws
  int samples = 1000;            ///< sampling iterations
  int max_depth = 10;            ///< largest tree depth (at most 2^max_depth - 1 leapfrog steps)
  double delta = 0.8;            ///< target acceptance statistic of step-size adaptation
  double init_radius = 2;        ///< random inits are uniform on (-init_radius, init_radius)
  int init_tries = 100;          ///< random inits tried before giving up
  double initial_step_size = 1;  ///< step size the first search starts from
  std::uint64_t seed = 0;        ///< random seed, shared by all chains of a run
  int chain = 1;                 ///< chain number (1-based): with the seed, fixes the random stream
  int thin = 1;                  ///< keep every thin-th iteration of each phase (Stan's thin)
  bool save_warmup = false;      ///< warm-up draws are written too (Stan's save_warmup; output only)
  metric_kind metric = metric_kind::diag;  ///< unit_e, diag_e or dense_e
  Eigen::MatrixXd initial_inv_metric;      ///< empty: identity; diag: a column of dim entries; dense: dim x dim
  double stepsize_jitter = 0;    ///< each transition's step size is uniform on (1 -/+ jitter) x the nominal one
  bool adapt_engaged = true;     ///< false: warm-up runs at the given step size and metric, nothing adapts
  int init_buffer = 75;          ///< Stan's adapt init_buffer: step-size-only iterations before the first window
  int term_buffer = 50;          ///< Stan's adapt term_buffer: step-size-only iterations after the last window
  int window = 25;               ///< Stan's adapt window: length of the first metric window
};

/// Throws std::invalid_argument naming the first option out of range.
inline void check_sample_options(const sample_options& o) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("sample: " + what); };
  if (o.warmup < 0) fail("warmup must be >= 0, got " + std::to_string(o.warmup));
  if (o.samples < 1) fail("samples must be >= 1, got " + std::to_string(o.samples));
  if (o.max_depth < 1 || o.max_depth > 30) fail("max_depth must be in 1..30, got " + std::to_string(o.max_depth));
  if (!(o.delta > 0 && o.delta < 1)) fail("delta must be in (0, 1), got " + std::to_string(o.delta));
  if (!(o.init_radius >= 0) || !std::isfinite(o.init_radius))
    fail("init_radius must be finite and >= 0, got " + std::to_string(o.init_radius));
  if (o.init_tries < 1) fail("init_tries must be >= 1, got " + std::to_string(o.init_tries));
  if (!(o.initial_step_size > 0) || !std::isfinite(o.initial_step_size))
    fail("initial_step_size must be finite and > 0, got " + std::to_string(o.initial_step_size));
  if (o.chain < 1) fail("chain must be >= 1, got " + std::to_string(o.chain));
  if (o.thin < 1) fail("thin must be >= 1, got " + std::to_string(o.thin));
  if (!(o.stepsize_jitter >= 0 && o.stepsize_jitter <= 1))
    fail("stepsize_jitter must be in [0, 1], got " + std::to_string(o.stepsize_jitter));
  if (o.init_buffer < 0) fail("init_buffer must be >= 0, got " + std::to_string(o.init_buffer));
  if (o.term_buffer < 0) fail("term_buffer must be >= 0, got " + std::to_string(o.term_buffer));
  if (o.window < 1) fail("window must be >= 1, got " + std::to_string(o.window));
}

/// Everything a chain needs to continue exactly where it was: what a checkpoint holds.
struct chain_state {
  int iteration = 0;                  ///< iterations done, warm-up included
  Eigen::VectorXd q;                  ///< current position
  std::string rng;                    ///< the RNG's state (sampler_rng::state)
  double step_size = 0;               ///< current step size
  Eigen::VectorXd inv_metric;         ///< current inverse metric diagonal
  Eigen::MatrixXd dense_inv_metric;   ///< current dense inverse metric (empty unless the metric is dense)
  step_size_adaptation step_adapt;    ///< dual averaging state
  metric_adaptation metric_adapt;     ///< window schedule and the current window's estimator
};

/// One iteration's result: the position and Stan's sampler diagnostics.
struct chain_draw {
  int iteration = 0;       ///< 0-based iteration, warm-up included
  bool warmup = false;     ///< drawn during warm-up
  double log_density = 0;  ///< lp__ at the draw
  Eigen::VectorXd q;       ///< the draw (unconstrained)
  nuts_diagnostics diagnostics;  ///< accept_stat__, stepsize__, treedepth__, n_leapfrog__, divergent__, energy__
};

/// A NUTS chain: construct, initialise (or restore), then step() until done().
class nuts_chain {
 public:
  /// The log density over R^dim and the options (checked).
  nuts_chain(log_density_function log_density, int dim, sample_options options)
      : options_((check_sample_options(options), options)),
        rng_(options.seed, options.chain),
        hamiltonian_(std::move(log_density), Eigen::VectorXd::Ones(check_dim(dim))),
        nuts_(hamiltonian_, rng_, options.max_depth) {
    set_initial_metric(dim);
    step_adapt_.delta = options_.delta;
    if (options_.adapt_engaged && options_.metric != metric_kind::unit)
      metric_adapt_.windows.configure(options_.warmup, options_.init_buffer, options_.term_buffer, options_.window);
    else
      metric_adapt_.windows.configure(0);  // no window ever ends
    metric_adapt_.samples.restart(dim);
    if (options_.metric == metric_kind::dense) metric_adapt_.covariance.restart(dim);
  }
  nuts_chain(const nuts_chain&) = delete;  // the sampler holds references to members
  nuts_chain& operator=(const nuts_chain&) = delete;

  /// Starts at `init` (or at random inits, retried as Stan does) and searches the first step size.
  void initialize(const std::optional<Eigen::VectorXd>& init = std::nullopt);
  /// Continues from a saved state (of a chain with the same model and options).
  void restore(const chain_state& s);
  /// The full state after the last iteration.
  chain_state state() const;
  /// True when warm-up and sampling are done.
  bool done() const { return iteration_ >= options_.warmup + options_.samples; }
  /// Iterations done, warm-up included.
  int iteration() const { return iteration_; }
  /// One iteration: a NUTS transition, then adaptation during warm-up.
  chain_draw step();
  /// Current step size.
  double step_size() const { return step_size_; }
  /// Current inverse metric diagonal (of the dense metric too).
  const Eigen::VectorXd& inv_metric() const { return hamiltonian_.inv_metric(); }
  /// Current dense inverse metric (empty unless the metric is dense).
  const Eigen::MatrixXd& dense_inv_metric() const { return hamiltonian_.dense_inv_metric(); }
  /// The options.
  const sample_options& options() const { return options_; }

 private:
  static int check_dim(int dim) {
    if (dim < 1) throw std::invalid_argument("sample: the model has " + std::to_string(dim) + " parameters; need >= 1");
    return dim;
  }
  /// Stan's init_stepsize: doubles or halves the step size until one leapfrog step's acceptance crosses 0.8.
  void find_step_size();
  /// Evaluates z at q; returns why it is not a valid start, or an empty string.
  std::string evaluate_start(const Eigen::VectorXd& q);
  /// The metric of the options: identity, or initial_inv_metric after checking its shape and values.
  void set_initial_metric(int dim);
  /// Stan's sample_stepsize: the nominal step size, jittered when stepsize_jitter > 0.
  double transition_step_size() {
    if (options_.stepsize_jitter == 0) return step_size_;
    return step_size_ * (1.0 + options_.stepsize_jitter * (2.0 * rng_.uniform() - 1.0));
  }
  /// Warm-up adaptation after one transition: the step size, then the metric at the end of a window.
  void adapt(double accept_stat);

  sample_options options_;
  sampler_rng rng_;
  diag_hamiltonian hamiltonian_;
  nuts_sampler nuts_;
  phase_point z_;
  double step_size_ = 0;
  int iteration_ = 0;
  step_size_adaptation step_adapt_;
  metric_adaptation metric_adapt_;
  bool ready_ = false;
};

inline std::string nuts_chain::evaluate_start(const Eigen::VectorXd& q) {
  z_.q = q;
  z_.gradient = Eigen::VectorXd::Zero(q.size());
  hamiltonian_.update(z_);
  if (!std::isfinite(z_.log_density)) return "the log density is not finite (or its evaluation threw)";
  return {};
}

inline void nuts_chain::set_initial_metric(int dim) {
  const Eigen::MatrixXd& m = options_.initial_inv_metric;
  const std::string where = "sample: the initial inverse metric ";
  if (options_.metric == metric_kind::unit || m.size() == 0) {
    if (m.size() != 0) throw std::invalid_argument(where + "is given, but the unit metric takes none");
    if (options_.metric == metric_kind::dense) hamiltonian_.set_dense_inv_metric(Eigen::MatrixXd::Identity(dim, dim));
    return;
  }
  if (options_.metric == metric_kind::diag) {
    if (m.cols() != 1 || m.rows() != dim)
      throw std::invalid_argument(where + "has " + std::to_string(m.rows()) + " x " + std::to_string(m.cols()) +
                                  " entries, the diagonal metric needs " + std::to_string(dim) + " x 1");
    if (!m.allFinite() || !(m.minCoeff() > 0))
      throw std::invalid_argument(where + "has an entry that is not finite and positive");
    hamiltonian_.set_inv_metric(m.col(0));
    return;
  }
  if (m.rows() != dim || m.cols() != dim)
    throw std::invalid_argument(where + "is " + std::to_string(m.rows()) + " x " + std::to_string(m.cols()) +
                                ", the dense metric needs " + std::to_string(dim) + " x " + std::to_string(dim));
  try {
    hamiltonian_.set_dense_inv_metric(m);
  } catch (const std::domain_error& e) {
    throw std::invalid_argument(where + "is not finite, symmetric and positive definite");
  }
}

inline void nuts_chain::initialize(const std::optional<Eigen::VectorXd>& init) {
  const Eigen::Index dim = hamiltonian_.inv_metric().size();
  const std::string chain = "chain " + std::to_string(options_.chain) + ": ";
  if (init) {
    if (init->size() != dim)
      throw std::invalid_argument(chain + "initial values have " + std::to_string(init->size()) +
                                  " entries, the model has " + std::to_string(dim) + " parameters");
    const std::string why = evaluate_start(*init);
    if (!why.empty()) throw std::domain_error(chain + "at the given initial values " + why);
  } else {
    std::string why = "no attempt";
    int attempt = 0;
    for (; attempt < options_.init_tries; ++attempt) {
      Eigen::VectorXd q(dim);
      for (Eigen::Index i = 0; i < dim; ++i) q(i) = rng_.uniform(-options_.init_radius, options_.init_radius);
      why = evaluate_start(q);
      if (why.empty()) break;
    }
    if (attempt == options_.init_tries) {
      std::ostringstream msg;
      msg << chain << "initialization between (" << -options_.init_radius << ", " << options_.init_radius
          << ") failed after " << options_.init_tries << " attempts: " << why;
      throw std::domain_error(msg.str());
    }
  }
  step_size_ = options_.initial_step_size;
  iteration_ = 0;
  ready_ = true;
  if (!options_.adapt_engaged) return;  // as Stan's services without adaptation: no step size search
  find_step_size();
  // As Stan's services: the first windows shrink towards ten times the configured step size, not the one
  // found; only the metric updates re-centre mu on the step size found after them.
  step_adapt_.mu = std::log(10 * options_.initial_step_size);
  step_adapt_.restart();
}

inline void nuts_chain::find_step_size() {
  if (step_size_ == 0 || step_size_ > 1e7 || std::isnan(step_size_)) return;
  const phase_point z_init = z_;
  auto delta_h = [&] {
    z_ = z_init;
    hamiltonian_.sample_momentum(z_, rng_);
    const double H0 = hamiltonian_.energy(z_);
    hamiltonian_.leapfrog(z_, step_size_);
    return H0 - hamiltonian_.energy(z_);
  };
  const double log_target = std::log(0.8);
  const int direction = delta_h() > log_target ? 1 : -1;
  while (true) {
    const double dh = delta_h();
    if (direction == 1 && !(dh > log_target)) break;
    if (direction == -1 && !(dh < log_target)) break;
    step_size_ = direction == 1 ? 2 * step_size_ : 0.5 * step_size_;
    if (step_size_ > 1e7)
      throw std::domain_error("chain " + std::to_string(options_.chain) +
                              ": the posterior is improper (the step size grew beyond 1e7); check the model");
    if (step_size_ == 0)
      throw std::domain_error("chain " + std::to_string(options_.chain) +
                              ": no acceptably small step size (the log density is not smooth here)");
  }
  z_ = z_init;
}

inline chain_draw nuts_chain::step() {
  if (!ready_) throw std::logic_error("nuts_chain::step: call initialize() or restore() first");
  if (done()) throw std::logic_error("nuts_chain::step: the chain has done all its iterations");
  chain_draw d;
  d.iteration = iteration_;
  d.warmup = iteration_ < options_.warmup;
  d.diagnostics = nuts_.transition(z_, transition_step_size());
  d.q = z_.q;
  d.log_density = z_.log_density;
  if (d.warmup && options_.adapt_engaged) adapt(d.diagnostics.accept_stat);
  ++iteration_;
  return d;
}

inline void nuts_chain::adapt(double accept_stat) {
  step_size_ = step_adapt_.learn(accept_stat);
  bool updated = false;
  if (options_.metric == metric_kind::diag) {
    Eigen::VectorXd inv_metric = hamiltonian_.inv_metric();
    updated = metric_adapt_.learn(inv_metric, z_.q);
    if (updated) hamiltonian_.set_inv_metric(inv_metric);
  } else if (options_.metric == metric_kind::dense) {
    Eigen::MatrixXd inv_metric = hamiltonian_.dense_inv_metric();
    updated = metric_adapt_.learn(inv_metric, z_.q);
    if (updated) hamiltonian_.set_dense_inv_metric(inv_metric);
  }
  if (updated) {
    find_step_size();
    step_adapt_.mu = std::log(10 * step_size_);
    step_adapt_.restart();
  }
  if (iteration_ == options_.warmup - 1) step_size_ = step_adapt_.final_step_size();
}

inline chain_state nuts_chain::state() const {
  chain_state s;
  s.iteration = iteration_;
  s.q = z_.q;
  s.rng = rng_.state();
  s.step_size = step_size_;
  s.inv_metric = hamiltonian_.inv_metric();
  s.dense_inv_metric = hamiltonian_.dense_inv_metric();
  s.step_adapt = step_adapt_;
  s.metric_adapt = metric_adapt_;
  return s;
}

inline void nuts_chain::restore(const chain_state& s) {
  const Eigen::Index dim = hamiltonian_.inv_metric().size();
  if (s.q.size() != dim || s.inv_metric.size() != dim || s.metric_adapt.samples.m.size() != dim ||
      s.metric_adapt.samples.m2.size() != dim ||
      (options_.metric == metric_kind::dense &&
       (s.dense_inv_metric.rows() != dim || s.dense_inv_metric.cols() != dim ||
        s.metric_adapt.covariance.m.size() != dim || s.metric_adapt.covariance.m2.rows() != dim ||
        s.metric_adapt.covariance.m2.cols() != dim)))
    throw std::invalid_argument("chain " + std::to_string(options_.chain) + ": the saved state has dimension " +
                                std::to_string(s.q.size()) + ", the model has " + std::to_string(dim));
  if (s.iteration < 0 || s.iteration > options_.warmup + options_.samples)
    throw std::invalid_argument("chain " + std::to_string(options_.chain) + ": the saved state is at iteration " +
                                std::to_string(s.iteration) + ", outside 0.." +
                                std::to_string(options_.warmup + options_.samples));
  rng_.set_state(s.rng);
  if (options_.metric == metric_kind::dense) hamiltonian_.set_dense_inv_metric(s.dense_inv_metric);
  else hamiltonian_.set_inv_metric(s.inv_metric);
  step_size_ = s.step_size;
  step_adapt_ = s.step_adapt;
  metric_adapt_ = s.metric_adapt;
  iteration_ = s.iteration;
  // Twice: a map_rect call site under MAPRECT_REVERSE=auto chooses its mode by its last call, so the second
  // gradient runs in the mode the uninterrupted chain's did, and the resumed draws are its bits.
  evaluate_start(s.q);
  const std::string why = evaluate_start(s.q);
  if (!why.empty())
    throw std::domain_error("chain " + std::to_string(options_.chain) + ": at the saved position " + why);
  ready_ = true;
}

/// Draws and diagnostics of a finished chain.
struct sample_result {
  Eigen::MatrixXd draws;           ///< kept draws x dim, unconstrained positions after warm-up (thinned)
  Eigen::VectorXd log_density;     ///< lp__ per draw
  Eigen::VectorXd accept_stat;     ///< accept_stat__ per draw
  Eigen::VectorXi tree_depth;      ///< treedepth__ per draw
  Eigen::VectorXi n_leapfrog;      ///< n_leapfrog__ per draw
  Eigen::VectorXi divergent;       ///< divergent__ per draw (0 or 1)
  Eigen::VectorXd energy;          ///< energy__ per draw
  double step_size = 0;            ///< step size after warm-up
  Eigen::VectorXd inv_metric;      ///< inverse metric diagonal after warm-up
  Eigen::MatrixXd dense_inv_metric;  ///< dense inverse metric after warm-up (empty unless dense)
  long gradients = 0;              ///< leapfrog steps (gradients) of the post-warm-up transitions, thinned or not
  double warmup_accept_stat = 0;   ///< mean accept_stat__ over the second half of warm-up
};

/// Post-warm-up draws kept at `thin`: iterations 0, thin, 2 thin, ... of the sampling phase, as Stan keeps.
inline int kept_draws(int samples, int thin) { return (samples + thin - 1) / thin; }

/// Runs one chain to the end and keeps its post-warm-up draws (every options.thin-th).
inline sample_result sample_chain(log_density_function log_density, int dim, const sample_options& options,
                                  const std::optional<Eigen::VectorXd>& init = std::nullopt) {
  nuts_chain chain(std::move(log_density), dim, options);
  chain.initialize(init);
  sample_result r;
  const int S = kept_draws(options.samples, options.thin);
  r.draws.resize(S, dim);
  r.log_density.resize(S);
  r.accept_stat.resize(S);
  r.tree_depth.resize(S);
  r.n_leapfrog.resize(S);
  r.divergent.resize(S);
  r.energy.resize(S);
  double warm_sum = 0;
  int warm_n = 0;
  while (!chain.done()) {
    const chain_draw d = chain.step();
    if (d.warmup) {
      if (d.iteration >= options.warmup / 2) warm_sum += d.diagnostics.accept_stat, ++warm_n;
      if (d.iteration == options.warmup - 1)
        r.step_size = chain.step_size(), r.inv_metric = chain.inv_metric(),
        r.dense_inv_metric = chain.dense_inv_metric();
      continue;
    }
    r.gradients += d.diagnostics.n_leapfrog;
    if ((d.iteration - options.warmup) % options.thin != 0) continue;
    const int s = (d.iteration - options.warmup) / options.thin;
    r.draws.row(s) = d.q.transpose();
    r.log_density(s) = d.log_density;
    r.accept_stat(s) = d.diagnostics.accept_stat;
    r.tree_depth(s) = d.diagnostics.tree_depth;
    r.n_leapfrog(s) = d.diagnostics.n_leapfrog;
    r.divergent(s) = d.diagnostics.divergent ? 1 : 0;
    r.energy(s) = d.diagnostics.energy;
  }
  if (options.warmup == 0)
    r.step_size = chain.step_size(), r.inv_metric = chain.inv_metric(), r.dense_inv_metric = chain.dense_inv_metric();
  r.warmup_accept_stat = warm_n > 0 ? warm_sum / warm_n : 0.0;
  return r;
}

}  // namespace maprect
