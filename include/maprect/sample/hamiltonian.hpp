#pragma once
/// \file Euclidean Hamiltonian with a diagonal metric, and the leapfrog integrator, as in Stan's diag_e.

#include <Eigen/Dense>

#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <stdexcept>

#include "rng.hpp"

namespace maprect {

/// A log density on R^n: returns log p(q) and writes its gradient (std::domain_error counts as log p = -inf).
using log_density_function = std::function<double(const Eigen::VectorXd& q, Eigen::VectorXd& gradient)>;

/// A point of phase space: position, momentum, log density and its gradient at the position.
struct phase_point {
  Eigen::VectorXd q;         ///< position (unconstrained parameters)
  Eigen::VectorXd p;         ///< momentum
  Eigen::VectorXd gradient;  ///< gradient of the log density at q
  double log_density = 0;    ///< log density at q (-inf where it cannot be evaluated)
};

/// H(q, p) = -log p(q) + p' M^-1 p / 2 with M^-1 = diag(inv_metric).
class diag_hamiltonian {
 public:
  /// The log density and the inverse metric's diagonal.
  diag_hamiltonian(log_density_function log_density, Eigen::VectorXd inv_metric)
      : log_density_(std::move(log_density)), inv_metric_(std::move(inv_metric)) {}

  /// Evaluates the log density and gradient at z.q; a domain error or a non-finite value makes it -inf.
  void update(phase_point& z) const {
    double lp = -std::numeric_limits<double>::infinity();
    try {
      lp = log_density_(z.q, z.gradient);
    } catch (const std::domain_error&) {  // as in Stan: a domain error rejects the point, anything else is a bug
      lp = -std::numeric_limits<double>::infinity();
    }
    if (!std::isfinite(lp) || z.gradient.size() != z.q.size() || !z.gradient.allFinite()) {
      lp = -std::numeric_limits<double>::infinity();
      z.gradient = Eigen::VectorXd::Zero(z.q.size());
    }
    z.log_density = lp;
  }
  /// Kinetic energy p' M^-1 p / 2.
  double kinetic(const phase_point& z) const { return 0.5 * z.p.dot(inv_metric_.cwiseProduct(z.p)); }
  /// Total energy; +inf where the log density is -inf or NaN.
  double energy(const phase_point& z) const {
    const double h = -z.log_density + kinetic(z);
    return std::isnan(h) ? std::numeric_limits<double>::infinity() : h;
  }
  /// Velocity dH/dp = M^-1 p (Stan's p_sharp).
  Eigen::VectorXd velocity(const phase_point& z) const { return inv_metric_.cwiseProduct(z.p); }
  /// The same into `out` (no allocation once `out` has the size).
  void velocity(const phase_point& z, Eigen::VectorXd& out) const { out = inv_metric_.cwiseProduct(z.p); }
  /// Draws p ~ normal(0, M).
  void sample_momentum(phase_point& z, sampler_rng& rng) const {
    z.p.resize(z.q.size());
    for (Eigen::Index i = 0; i < z.p.size(); ++i) z.p(i) = rng.normal() / std::sqrt(inv_metric_(i));
  }
  /// One leapfrog step of size epsilon (negative: backwards in time).
  void leapfrog(phase_point& z, double epsilon) const {
    z.p += 0.5 * epsilon * z.gradient;
    z.q += epsilon * inv_metric_.cwiseProduct(z.p);
    update(z);
    z.p += 0.5 * epsilon * z.gradient;
  }
  /// The inverse metric's diagonal.
  const Eigen::VectorXd& inv_metric() const { return inv_metric_; }
  /// Replaces the inverse metric's diagonal.
  void set_inv_metric(Eigen::VectorXd inv_metric) { inv_metric_ = std::move(inv_metric); }

 private:
  log_density_function log_density_;
  Eigen::VectorXd inv_metric_;
};

}  // namespace maprect
