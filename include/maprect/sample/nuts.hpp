#pragma once
/// \file One NUTS transition: Stan's multinomial No-U-Turn sampler with the generalised no-U-turn criterion
/// (Betancourt 2017), checked across each subtree and across the joins of adjacent subtrees.

#include <Eigen/Dense>

#include <cmath>
#include <limits>

#include "hamiltonian.hpp"
#include "rng.hpp"

namespace maprect {

/// What one transition did: Stan's sampler diagnostics.
struct nuts_diagnostics {
  double accept_stat = 0;  ///< mean Metropolis acceptance over the trajectory
  double step_size = 0;    ///< step size used
  int tree_depth = 0;      ///< depth of the final tree
  int n_leapfrog = 0;      ///< leapfrog steps (gradients) taken
  bool divergent = false;  ///< the energy error exceeded max_delta_h
  double energy = 0;       ///< Hamiltonian at the selected point
};

/// log(exp(a) + exp(b)), with -inf handled.
inline double nuts_log_sum_exp(double a, double b) {
  if (a == -std::numeric_limits<double>::infinity()) return b;
  if (b == -std::numeric_limits<double>::infinity()) return a;
  const double m = a > b ? a : b;
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}

/// Stan's base_nuts transition for a diagonal metric.
class nuts_sampler {
 public:
  /// The Hamiltonian and the RNG are held by reference: both outlive the sampler.
  nuts_sampler(const diag_hamiltonian& hamiltonian, sampler_rng& rng, int max_depth, double max_delta_h = 1000)
      : h_(hamiltonian), rng_(rng), max_depth_(max_depth), max_delta_h_(max_delta_h) {}

  /// One transition from z (with its log density and gradient evaluated) at step size epsilon; z becomes the
  /// selected point.
  nuts_diagnostics transition(phase_point& z, double epsilon);

 private:
  /// Momenta and velocities at one end of a subtree, and its summed momentum.
  struct tree_end {
    Eigen::VectorXd p, p_sharp;
  };
  /// Builds a subtree of 2^depth steps from z in direction sign, as Stan's build_tree.
  bool build_tree(int depth, phase_point& z, phase_point& z_propose, tree_end& beg, tree_end& end,
                  Eigen::VectorXd& rho, double H0, double sign, double& log_sum_weight);
  /// The generalised criterion: both end velocities point along rho.
  static bool no_u_turn(const Eigen::VectorXd& p_sharp_minus, const Eigen::VectorXd& p_sharp_plus,
                        const Eigen::VectorXd& rho) {
    return p_sharp_plus.dot(rho) > 0 && p_sharp_minus.dot(rho) > 0;
  }

  const diag_hamiltonian& h_;
  sampler_rng& rng_;
  int max_depth_;
  double max_delta_h_;
  double epsilon_ = 0;
  int n_leapfrog_ = 0;
  double sum_metro_prob_ = 0;
  bool divergent_ = false;
};

inline bool nuts_sampler::build_tree(int depth, phase_point& z, phase_point& z_propose, tree_end& beg,
                                     tree_end& end, Eigen::VectorXd& rho, double H0, double sign,
                                     double& log_sum_weight) {
  if (depth == 0) {
    h_.leapfrog(z, sign * epsilon_);
    ++n_leapfrog_;
    const double h = h_.energy(z);
    if (h - H0 > max_delta_h_) divergent_ = true;
    log_sum_weight = nuts_log_sum_exp(log_sum_weight, H0 - h);
    sum_metro_prob_ += H0 - h > 0 ? 1.0 : std::exp(H0 - h);
    z_propose = z;
    beg.p = z.p;
    beg.p_sharp = h_.velocity(z);
    end = beg;
    rho += z.p;
    return !divergent_;
  }
  const Eigen::Index n = z.q.size();
  // The first half, from beg to init_end.
  tree_end init_end;
  Eigen::VectorXd rho_init = Eigen::VectorXd::Zero(n);
  double log_sum_weight_init = -std::numeric_limits<double>::infinity();
  if (!build_tree(depth - 1, z, z_propose, beg, init_end, rho_init, H0, sign, log_sum_weight_init)) return false;
  // The second half, from final_beg to end.
  phase_point z_propose_final(z);
  tree_end final_beg;
  Eigen::VectorXd rho_final = Eigen::VectorXd::Zero(n);
  double log_sum_weight_final = -std::numeric_limits<double>::infinity();
  if (!build_tree(depth - 1, z, z_propose_final, final_beg, end, rho_final, H0, sign, log_sum_weight_final))
    return false;
  // Multinomial choice between the halves.
  const double log_sum_weight_subtree = nuts_log_sum_exp(log_sum_weight_init, log_sum_weight_final);
  log_sum_weight = nuts_log_sum_exp(log_sum_weight, log_sum_weight_subtree);
  if (log_sum_weight_final > log_sum_weight_subtree) {
    z_propose = z_propose_final;
  } else if (rng_.uniform() < std::exp(log_sum_weight_final - log_sum_weight_subtree)) {
    z_propose = z_propose_final;
  }
  const Eigen::VectorXd rho_subtree = rho_init + rho_final;
  rho += rho_subtree;
  // The criterion over the subtree and over each half extended by the other's nearest point.
  bool persist = no_u_turn(beg.p_sharp, end.p_sharp, rho_subtree);
  persist = persist && no_u_turn(beg.p_sharp, final_beg.p_sharp, rho_init + final_beg.p);
  persist = persist && no_u_turn(init_end.p_sharp, end.p_sharp, rho_final + init_end.p);
  return persist;
}

inline nuts_diagnostics nuts_sampler::transition(phase_point& z, double epsilon) {
  epsilon_ = epsilon;
  n_leapfrog_ = 0;
  sum_metro_prob_ = 0;
  divergent_ = false;
  h_.sample_momentum(z, rng_);
  phase_point z_fwd(z), z_bck(z), z_sample(z), z_propose(z);
  tree_end fwd_fwd{z.p, h_.velocity(z)};  // forward end of the forward tree
  tree_end fwd_bck = fwd_fwd, bck_fwd = fwd_fwd, bck_bck = fwd_fwd;
  Eigen::VectorXd rho = z.p;
  double log_sum_weight = 0;  // log of exp(H0 - H0)
  const double H0 = h_.energy(z);
  int depth = 0;
  while (depth < max_depth_) {
    const Eigen::Index n = z.q.size();
    Eigen::VectorXd rho_fwd = Eigen::VectorXd::Zero(n), rho_bck = Eigen::VectorXd::Zero(n);
    double log_sum_weight_subtree = -std::numeric_limits<double>::infinity();
    bool valid = false;
    if (rng_.uniform() > 0.5) {
      // Extend forwards from the forward end; the old tree becomes the backward part.
      rho_bck = rho;
      bck_fwd = fwd_bck;
      phase_point z_end(z_fwd);
      valid = build_tree(depth, z_end, z_propose, fwd_bck, fwd_fwd, rho_fwd, H0, 1, log_sum_weight_subtree);
      z_fwd = z_end;
    } else {
      rho_fwd = rho;
      fwd_bck = bck_fwd;
      phase_point z_end(z_bck);
      valid = build_tree(depth, z_end, z_propose, bck_fwd, bck_bck, rho_bck, H0, -1, log_sum_weight_subtree);
      z_bck = z_end;
    }
    if (!valid) break;
    ++depth;
    if (log_sum_weight_subtree > log_sum_weight) {
      z_sample = z_propose;
    } else if (rng_.uniform() < std::exp(log_sum_weight_subtree - log_sum_weight)) {
      z_sample = z_propose;
    }
    log_sum_weight = nuts_log_sum_exp(log_sum_weight, log_sum_weight_subtree);
    rho = rho_bck + rho_fwd;
    bool persist = no_u_turn(bck_bck.p_sharp, fwd_fwd.p_sharp, rho);
    persist = persist && no_u_turn(bck_bck.p_sharp, fwd_bck.p_sharp, rho_bck + fwd_bck.p);
    persist = persist && no_u_turn(bck_fwd.p_sharp, fwd_fwd.p_sharp, rho_fwd + bck_fwd.p);
    if (!persist) break;
  }
  z = z_sample;
  nuts_diagnostics d;
  d.accept_stat = n_leapfrog_ > 0 ? sum_metro_prob_ / n_leapfrog_ : 0.0;
  d.step_size = epsilon;
  d.tree_depth = depth;
  d.n_leapfrog = n_leapfrog_;
  d.divergent = divergent_;
  d.energy = h_.energy(z);
  return d;
}

}  // namespace maprect
