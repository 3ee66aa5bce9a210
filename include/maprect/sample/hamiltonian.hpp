#pragma once
/// \file Euclidean Hamiltonian with a diagonal or a dense metric, and the leapfrog integrator, as in Stan's
/// diag_e and dense_e (the unit metric is the diagonal one with every entry 1).

#include <Eigen/Dense>

#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

#include "rng.hpp"

namespace maprect {

/// A log density on R^n: returns log p(q) and writes its gradient (std::domain_error counts as log p = -inf).
using log_density_function = std::function<double(const Eigen::VectorXd& q, Eigen::VectorXd& gradient)>;

/// The metric's form, as CmdStan's `metric` argument: unit_e, diag_e or dense_e.
enum class metric_kind { unit, diag, dense };

/// CmdStan's name of the metric: unit_e, diag_e, dense_e.
inline std::string metric_stan_name(metric_kind kind) {
  return kind == metric_kind::unit ? "unit_e" : kind == metric_kind::diag ? "diag_e" : "dense_e";
}

/// A point of phase space: position, momentum, log density and its gradient at the position.
struct phase_point {
  Eigen::VectorXd q;         ///< position (unconstrained parameters)
  Eigen::VectorXd p;         ///< momentum
  Eigen::VectorXd gradient;  ///< gradient of the log density at q
  double log_density = 0;    ///< log density at q (-inf where it cannot be evaluated)
};

/// H(q, p) = -log p(q) + p' M^-1 p / 2 with M^-1 = diag(inv_metric), or a dense symmetric positive-definite
/// M^-1 once set_dense_inv_metric was called.
class euclidean_hamiltonian {
 public:
  /// The log density and the inverse metric's diagonal.
  euclidean_hamiltonian(log_density_function log_density, Eigen::VectorXd inv_metric)
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
  double kinetic(const phase_point& z) const {
    if (dense_) return 0.5 * z.p.dot(dense_inv_metric_ * z.p);
    return 0.5 * z.p.dot(inv_metric_.cwiseProduct(z.p));
  }
  /// Total energy; +inf where the log density is -inf or NaN.
  double energy(const phase_point& z) const {
    const double h = -z.log_density + kinetic(z);
    return std::isnan(h) ? std::numeric_limits<double>::infinity() : h;
  }
  /// Velocity dH/dp = M^-1 p (Stan's p_sharp).
  Eigen::VectorXd velocity(const phase_point& z) const {
    Eigen::VectorXd v;
    velocity(z, v);
    return v;
  }
  /// The same into `out` (no allocation once `out` has the size).
  void velocity(const phase_point& z, Eigen::VectorXd& out) const {
    if (dense_) out.noalias() = dense_inv_metric_ * z.p;
    else out = inv_metric_.cwiseProduct(z.p);
  }
  /// Draws p ~ normal(0, M): with M^-1 = U'U (Cholesky), p = U^-1 u for u ~ normal(0, I), as Stan's dense_e.
  void sample_momentum(phase_point& z, sampler_rng& rng) const {
    z.p.resize(z.q.size());
    if (dense_) {
      for (Eigen::Index i = 0; i < z.p.size(); ++i) z.p(i) = rng.normal();
      upper_.triangularView<Eigen::Upper>().solveInPlace(z.p);
      return;
    }
    for (Eigen::Index i = 0; i < z.p.size(); ++i) z.p(i) = rng.normal() / std::sqrt(inv_metric_(i));
  }
  /// One leapfrog step of size epsilon (negative: backwards in time).
  void leapfrog(phase_point& z, double epsilon) const {
    z.p += 0.5 * epsilon * z.gradient;
    if (dense_) {
      // The velocity first, then its step: the product's own rounding, not one with epsilon folded in.
      Eigen::VectorXd v;
      velocity(z, v);
      z.q += epsilon * v;
    } else {
      z.q += epsilon * inv_metric_.cwiseProduct(z.p);
    }
    update(z);
    z.p += 0.5 * epsilon * z.gradient;
  }
  /// True when the metric is dense.
  bool dense() const { return dense_; }
  /// The inverse metric's diagonal (of the dense matrix too).
  const Eigen::VectorXd& inv_metric() const { return inv_metric_; }
  /// The dense inverse metric (empty while the metric is diagonal).
  const Eigen::MatrixXd& dense_inv_metric() const { return dense_inv_metric_; }
  /// Replaces the inverse metric's diagonal; the metric becomes diagonal.
  void set_inv_metric(Eigen::VectorXd inv_metric) {
    inv_metric_ = std::move(inv_metric);
    dense_ = false;
    dense_inv_metric_.resize(0, 0);
    upper_.resize(0, 0);
  }
  /// Makes the metric dense; throws std::domain_error unless `inv_metric` is symmetric positive definite.
  void set_dense_inv_metric(const Eigen::MatrixXd& inv_metric) {
    const Eigen::LLT<Eigen::MatrixXd> llt(inv_metric);
    if (inv_metric.rows() != inv_metric.cols() || llt.info() != Eigen::Success || !inv_metric.allFinite() ||
        !inv_metric.isApprox(inv_metric.transpose()))
      throw std::domain_error("the dense inverse metric is not a finite symmetric positive-definite matrix");
    dense_inv_metric_ = inv_metric;
    upper_ = llt.matrixU();
    inv_metric_ = inv_metric.diagonal();
    dense_ = true;
  }

 private:
  log_density_function log_density_;
  Eigen::VectorXd inv_metric_;
  bool dense_ = false;
  Eigen::MatrixXd dense_inv_metric_;
  Eigen::MatrixXd upper_;  // U of M^-1 = U'U
};

/// The name the sampler had while it knew only the diagonal metric.
using diag_hamiltonian = euclidean_hamiltonian;

}  // namespace maprect
