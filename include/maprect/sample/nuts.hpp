#pragma once
/// \file One NUTS transition: Stan's multinomial No-U-Turn sampler with the generalised no-U-turn criterion
/// (Betancourt 2017), checked across each subtree and across the joins of adjacent subtrees.

#include <Eigen/Dense>

#include <cmath>
#include <limits>
#include <vector>

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

/// Stan's base_nuts transition for a Euclidean metric (diagonal or dense).
class nuts_sampler {
 public:
  /// The Hamiltonian and the RNG are held by reference: both outlive the sampler.
  nuts_sampler(const euclidean_hamiltonian& hamiltonian, sampler_rng& rng, int max_depth, double max_delta_h = 1000)
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
  /// The generalised criterion: both end velocities point along rho (an expression: no temporary).
  template <class Rho>
  static bool no_u_turn(const Eigen::VectorXd& p_sharp_minus, const Eigen::VectorXd& p_sharp_plus,
                        const Eigen::MatrixBase<Rho>& rho) {
    return p_sharp_plus.dot(rho) > 0 && p_sharp_minus.dot(rho) > 0;
  }
  /// What one level of the recursion needs besides its arguments, kept between transitions so that a
  /// steady-state tree allocates nothing.
  struct level {
    tree_end init_end, final_beg;
    Eigen::VectorXd rho_init, rho_final;
    phase_point z_propose_final;
  };
  /// Workspace of recursion depth `depth`.
  level& workspace(int depth) {
    if (static_cast<int>(levels_.size()) <= depth) levels_.resize(static_cast<std::size_t>(depth) + 1);
    return levels_[static_cast<std::size_t>(depth)];
  }

  const euclidean_hamiltonian& h_;
  sampler_rng& rng_;
  int max_depth_;
  double max_delta_h_;
  double epsilon_ = 0;
  int n_leapfrog_ = 0;
  double sum_metro_prob_ = 0;
  bool divergent_ = false;
  std::vector<level> levels_;
  phase_point z_fwd_, z_bck_, z_sample_, z_propose_, z_end_;
  Eigen::VectorXd rho_, rho_fwd_, rho_bck_;
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
    h_.velocity(z, beg.p_sharp);
    end.p = beg.p;
    end.p_sharp = beg.p_sharp;
    rho += z.p;
    return !divergent_;
  }
  level& w = workspace(depth);
  // The first half, from beg to init_end.
  w.rho_init.setZero(z.q.size());
  double log_sum_weight_init = -std::numeric_limits<double>::infinity();
  if (!build_tree(depth - 1, z, z_propose, beg, w.init_end, w.rho_init, H0, sign, log_sum_weight_init)) return false;
  // The second half, from final_beg to end.
  w.z_propose_final = z;
  w.rho_final.setZero(z.q.size());
  double log_sum_weight_final = -std::numeric_limits<double>::infinity();
  if (!build_tree(depth - 1, z, w.z_propose_final, w.final_beg, end, w.rho_final, H0, sign, log_sum_weight_final))
    return false;
  // Multinomial choice between the halves.
  const double log_sum_weight_subtree = nuts_log_sum_exp(log_sum_weight_init, log_sum_weight_final);
  log_sum_weight = nuts_log_sum_exp(log_sum_weight, log_sum_weight_subtree);
  if (log_sum_weight_final > log_sum_weight_subtree) {
    z_propose = w.z_propose_final;
  } else if (rng_.uniform() < std::exp(log_sum_weight_final - log_sum_weight_subtree)) {
    z_propose = w.z_propose_final;
  }
  rho += w.rho_init + w.rho_final;
  // The criterion over the subtree and over each half extended by the other's nearest point.
  bool persist = no_u_turn(beg.p_sharp, end.p_sharp, w.rho_init + w.rho_final);
  persist = persist && no_u_turn(beg.p_sharp, w.final_beg.p_sharp, w.rho_init + w.final_beg.p);
  persist = persist && no_u_turn(w.init_end.p_sharp, end.p_sharp, w.rho_final + w.init_end.p);
  return persist;
}

inline nuts_diagnostics nuts_sampler::transition(phase_point& z, double epsilon) {
  epsilon_ = epsilon;
  n_leapfrog_ = 0;
  sum_metro_prob_ = 0;
  divergent_ = false;
  h_.sample_momentum(z, rng_);
  z_fwd_ = z;
  z_bck_ = z;
  z_sample_ = z;
  z_propose_ = z;
  tree_end fwd_fwd{z.p, h_.velocity(z)};  // forward end of the forward tree
  tree_end fwd_bck = fwd_fwd, bck_fwd = fwd_fwd, bck_bck = fwd_fwd;
  rho_ = z.p;
  double log_sum_weight = 0;  // log of exp(H0 - H0)
  const double H0 = h_.energy(z);
  int depth = 0;
  while (depth < max_depth_) {
    rho_fwd_.setZero(z.q.size());
    rho_bck_.setZero(z.q.size());
    double log_sum_weight_subtree = -std::numeric_limits<double>::infinity();
    bool valid = false;
    if (rng_.uniform() > 0.5) {
      // Extend forwards from the forward end; the old trajectory becomes the backward part, so its forward
      // end (not the backward end of its last forward subtree) is the backward part's forward end.
      rho_bck_ = rho_;
      bck_fwd = fwd_fwd;
      z_end_ = z_fwd_;
      valid = build_tree(depth, z_end_, z_propose_, fwd_bck, fwd_fwd, rho_fwd_, H0, 1, log_sum_weight_subtree);
      z_fwd_ = z_end_;
    } else {
      rho_fwd_ = rho_;
      fwd_bck = bck_bck;
      z_end_ = z_bck_;
      valid = build_tree(depth, z_end_, z_propose_, bck_fwd, bck_bck, rho_bck_, H0, -1, log_sum_weight_subtree);
      z_bck_ = z_end_;
    }
    if (!valid) break;
    ++depth;
    if (log_sum_weight_subtree > log_sum_weight) {
      z_sample_ = z_propose_;
    } else if (rng_.uniform() < std::exp(log_sum_weight_subtree - log_sum_weight)) {
      z_sample_ = z_propose_;
    }
    log_sum_weight = nuts_log_sum_exp(log_sum_weight, log_sum_weight_subtree);
    rho_ = rho_bck_ + rho_fwd_;
    bool persist = no_u_turn(bck_bck.p_sharp, fwd_fwd.p_sharp, rho_);
    persist = persist && no_u_turn(bck_bck.p_sharp, fwd_bck.p_sharp, rho_bck_ + fwd_bck.p);
    persist = persist && no_u_turn(bck_fwd.p_sharp, fwd_fwd.p_sharp, rho_fwd_ + bck_fwd.p);
    if (!persist) break;
  }
  z = z_sample_;
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
