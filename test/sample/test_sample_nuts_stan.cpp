// The NUTS transition against a literal transcription of Stan's base_nuts::transition and build_tree
// (stan/mcmc/hmc/nuts/base_nuts.hpp): same Hamiltonian, same random stream, so the same bits, over trees deep
// enough that every one of the criterion's cross-subtree checks matters, and over divergent trajectories.
#include <catch2/catch.hpp>
#include <maprect/sample.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

namespace {

using Eigen::VectorXd;
using maprect::phase_point;

/// Stan's math::log_sum_exp of two doubles.
double stan_log_sum_exp(double a, double b) {
  if (a == -std::numeric_limits<double>::infinity()) return b;
  if (a > b) return a + std::log1p(std::exp(b - a));
  return b + std::log1p(std::exp(a - b));
}

/// Stan's base_nuts with its own variable names, fresh vectors at every level and no workspace: the reference.
class stan_nuts {
 public:
  stan_nuts(const maprect::diag_hamiltonian& h, maprect::sampler_rng& rng, int max_depth)
      : h_(h), rng_(rng), max_depth_(max_depth) {}

  /// base_nuts::transition from z at step size epsilon; z becomes the selected point.
  maprect::nuts_diagnostics transition(phase_point& z, double epsilon);

 private:
  static bool compute_criterion(const VectorXd& p_sharp_minus, const VectorXd& p_sharp_plus, const VectorXd& rho) {
    return p_sharp_plus.dot(rho) > 0 && p_sharp_minus.dot(rho) > 0;
  }
  bool build_tree(int depth, phase_point& z_propose, VectorXd& p_sharp_beg, VectorXd& p_sharp_end, VectorXd& rho,
                  VectorXd& p_beg, VectorXd& p_end, double H0, double sign, double& log_sum_weight);
  double H() const { return h_.energy(z_); }

  const maprect::diag_hamiltonian& h_;
  maprect::sampler_rng& rng_;
  int max_depth_;
  double max_deltaH_ = 1000;
  double epsilon_ = 0;
  int n_leapfrog_ = 0;
  double sum_metro_prob_ = 0;
  bool divergent_ = false;
  phase_point z_;
};

bool stan_nuts::build_tree(int depth, phase_point& z_propose, VectorXd& p_sharp_beg, VectorXd& p_sharp_end,
                           VectorXd& rho, VectorXd& p_beg, VectorXd& p_end, double H0, double sign,
                           double& log_sum_weight) {
  if (depth == 0) {
    h_.leapfrog(z_, sign * epsilon_);
    ++n_leapfrog_;
    const double h = H();
    if ((h - H0) > max_deltaH_) divergent_ = true;
    log_sum_weight = stan_log_sum_exp(log_sum_weight, H0 - h);
    sum_metro_prob_ += H0 - h > 0 ? 1 : std::exp(H0 - h);
    z_propose = z_;
    p_sharp_beg = h_.velocity(z_);
    p_sharp_end = p_sharp_beg;
    rho += z_.p;
    p_beg = z_.p;
    p_end = p_beg;
    return !divergent_;
  }
  double log_sum_weight_init = -std::numeric_limits<double>::infinity();
  VectorXd p_init_end(z_.p.size()), p_sharp_init_end(z_.p.size());
  VectorXd rho_init = VectorXd::Zero(rho.size());
  if (!build_tree(depth - 1, z_propose, p_sharp_beg, p_sharp_init_end, rho_init, p_beg, p_init_end, H0, sign,
                  log_sum_weight_init))
    return false;
  phase_point z_propose_final(z_);
  double log_sum_weight_final = -std::numeric_limits<double>::infinity();
  VectorXd p_final_beg(z_.p.size()), p_sharp_final_beg(z_.p.size());
  VectorXd rho_final = VectorXd::Zero(rho.size());
  if (!build_tree(depth - 1, z_propose_final, p_sharp_final_beg, p_sharp_end, rho_final, p_final_beg, p_end, H0,
                  sign, log_sum_weight_final))
    return false;
  const double log_sum_weight_subtree = stan_log_sum_exp(log_sum_weight_init, log_sum_weight_final);
  log_sum_weight = stan_log_sum_exp(log_sum_weight, log_sum_weight_subtree);
  if (log_sum_weight_final > log_sum_weight_subtree) {
    z_propose = z_propose_final;
  } else if (rng_.uniform() < std::exp(log_sum_weight_final - log_sum_weight_subtree)) {
    z_propose = z_propose_final;
  }
  VectorXd rho_subtree = rho_init + rho_final;
  rho += rho_subtree;
  bool persist_criterion = compute_criterion(p_sharp_beg, p_sharp_end, rho_subtree);
  rho_subtree = rho_init + p_final_beg;
  persist_criterion &= compute_criterion(p_sharp_beg, p_sharp_final_beg, rho_subtree);
  rho_subtree = rho_final + p_init_end;
  persist_criterion &= compute_criterion(p_sharp_init_end, p_sharp_end, rho_subtree);
  return persist_criterion;
}

maprect::nuts_diagnostics stan_nuts::transition(phase_point& z, double epsilon) {
  epsilon_ = epsilon;
  z_ = z;
  h_.sample_momentum(z_, rng_);
  phase_point z_fwd(z_), z_bck(z_), z_sample(z_), z_propose(z_);
  VectorXd p_fwd_fwd = z_.p, p_sharp_fwd_fwd = h_.velocity(z_);
  VectorXd p_fwd_bck = z_.p, p_sharp_fwd_bck = p_sharp_fwd_fwd;
  VectorXd p_bck_fwd = z_.p, p_sharp_bck_fwd = p_sharp_fwd_fwd;
  VectorXd p_bck_bck = z_.p, p_sharp_bck_bck = p_sharp_fwd_fwd;
  VectorXd rho = z_.p;
  double log_sum_weight = 0;
  const double H0 = H();
  n_leapfrog_ = 0;
  sum_metro_prob_ = 0;
  int depth = 0;
  divergent_ = false;
  while (depth < max_depth_) {
    VectorXd rho_fwd = VectorXd::Zero(rho.size()), rho_bck = VectorXd::Zero(rho.size());
    bool valid_subtree = false;
    double log_sum_weight_subtree = -std::numeric_limits<double>::infinity();
    if (rng_.uniform() > 0.5) {
      z_ = z_fwd;
      rho_bck = rho;
      p_bck_fwd = p_fwd_fwd;
      p_sharp_bck_fwd = p_sharp_fwd_fwd;
      valid_subtree = build_tree(depth, z_propose, p_sharp_fwd_bck, p_sharp_fwd_fwd, rho_fwd, p_fwd_bck, p_fwd_fwd,
                                 H0, 1, log_sum_weight_subtree);
      z_fwd = z_;
    } else {
      z_ = z_bck;
      rho_fwd = rho;
      p_fwd_bck = p_bck_bck;
      p_sharp_fwd_bck = p_sharp_bck_bck;
      valid_subtree = build_tree(depth, z_propose, p_sharp_bck_fwd, p_sharp_bck_bck, rho_bck, p_bck_fwd, p_bck_bck,
                                 H0, -1, log_sum_weight_subtree);
      z_bck = z_;
    }
    if (!valid_subtree) break;
    ++depth;
    if (log_sum_weight_subtree > log_sum_weight) {
      z_sample = z_propose;
    } else if (rng_.uniform() < std::exp(log_sum_weight_subtree - log_sum_weight)) {
      z_sample = z_propose;
    }
    log_sum_weight = stan_log_sum_exp(log_sum_weight, log_sum_weight_subtree);
    rho = rho_bck + rho_fwd;
    bool persist_criterion = compute_criterion(p_sharp_bck_bck, p_sharp_fwd_fwd, rho);
    persist_criterion &= compute_criterion(p_sharp_bck_bck, p_sharp_fwd_bck, VectorXd(rho_bck + p_fwd_bck));
    persist_criterion &= compute_criterion(p_sharp_bck_fwd, p_sharp_fwd_fwd, VectorXd(rho_fwd + p_bck_fwd));
    if (!persist_criterion) break;
  }
  z = z_sample;
  maprect::nuts_diagnostics d;
  d.accept_stat = sum_metro_prob_ / n_leapfrog_;
  d.step_size = epsilon;
  d.tree_depth = depth;
  d.n_leapfrog = n_leapfrog_;
  d.divergent = divergent_;
  d.energy = h_.energy(z);
  return d;
}

/// Runs `n` transitions of maprect's sampler and of the transcription side by side from q0, each with its own
/// copy of one random stream; returns how many were divergent and the deepest tree, and checks every
/// transition's bits.
std::pair<int, int> compare_chains(const maprect::diag_hamiltonian& h, const VectorXd& q0, double epsilon, int n,
                                   std::uint64_t seed, int max_depth) {
  maprect::sampler_rng rng_ours(seed, 1), rng_stan(seed, 1);
  maprect::nuts_sampler ours(h, rng_ours, max_depth);
  stan_nuts stan(h, rng_stan, max_depth);
  phase_point z_ours, z_stan;
  z_ours.q = q0;
  h.update(z_ours);
  z_stan = z_ours;
  int divergent = 0, deepest = 0;
  for (int i = 0; i < n; ++i) {
    const maprect::nuts_diagnostics a = ours.transition(z_ours, epsilon);
    const maprect::nuts_diagnostics b = stan.transition(z_stan, epsilon);
    INFO("seed " << seed << " transition " << i << " depth " << b.tree_depth);
    REQUIRE(a.tree_depth == b.tree_depth);
    REQUIRE(a.n_leapfrog == b.n_leapfrog);
    REQUIRE(a.divergent == b.divergent);
    REQUIRE(a.accept_stat == b.accept_stat);
    REQUIRE(a.energy == b.energy);
    REQUIRE(z_ours.q == z_stan.q);
    REQUIRE(rng_ours == rng_stan);
    divergent += b.divergent;
    deepest = std::max(deepest, b.tree_depth);
  }
  return {divergent, deepest};
}

}  // namespace

TEST_CASE("NUTS transitions equal Stan's base_nuts bit for bit on a correlated normal (trees to depth 6+)") {
  // A 3-d normal with scales 1, 0.2 and 5 and correlation 0.95 between the first two, under a unit metric and
  // a small step: long trajectories whose subtrees are unequal, so a wrong end in any criterion check changes
  // where a tree stops.
  Eigen::Matrix3d cov;
  cov << 1, 0.95 * 0.2, 0, 0.95 * 0.2, 0.04, 0, 0, 0, 25;
  const Eigen::Matrix3d precision = cov.inverse();
  const maprect::diag_hamiltonian h(
      [precision](const VectorXd& q, VectorXd& g) {
        g = -precision * q;
        return 0.5 * q.dot(g);
      },
      VectorXd::Ones(3));
  int deepest = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed)
    deepest = std::max(deepest, compare_chains(h, VectorXd::Constant(3, 0.5), 0.05, 100, seed, 10).second);
  CHECK(deepest >= 6);
}

TEST_CASE("NUTS transitions equal Stan's base_nuts bit for bit in a funnel, divergences and max depth included") {
  // Neal's funnel in 3-d, v ~ normal(0, 3), x_i ~ normal(0, exp(v / 2)): at step size 0.6 the neck diverges.
  const maprect::diag_hamiltonian h(
      [](const VectorXd& q, VectorXd& g) {
        const double v = q(0);
        const VectorXd x = q.tail(2);
        g.resize(3);
        g(0) = -v / 9 - 1 + 0.5 * x.squaredNorm() * std::exp(-v);
        g.tail(2) = -x * std::exp(-v);
        return -v * v / 18 - v - 0.5 * x.squaredNorm() * std::exp(-v);
      },
      VectorXd::Ones(3));
  int divergent = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed)
    divergent += compare_chains(h, (VectorXd(3) << -1.0, 0.3, -0.2).finished(), 0.6, 200, seed, 4).first;
  CHECK(divergent > 0);
}
