#pragma once
/// \file eight_schools: the non-centred eight schools model (Rubin 1981; Gelman et al., BDA3 5.5), one
/// map_rect job per school. Its posterior is published (posteriordb, eight_schools-eight_schools_noncentered),
/// which makes it the sampler's end-to-end check.
///
/// Model:  mu ~ normal(0, 5),  tau ~ half-Cauchy(0, 5),  theta_tilde_j ~ normal(0, 1),
///         y_j ~ normal(mu + tau * theta_tilde_j, sigma_j),  j = 1..8.
/// Parameters are unconstrained and packed as (mu, log tau, theta_tilde_1..8); the density on log tau carries
/// the Jacobian log tau. Constants are dropped as Stan's `~` drops them, so the log density is Stan's lp__.
/// map_rect: shared phi = (mu, tau), job theta_j = (theta_tilde_j), x_r[j] = (y_j, sigma_j), one output per
/// job: the school's log likelihood.
#include <maprect/map_rect.hpp>

#include <Eigen/Dense>
#include <array>
#include <stdexcept>
#include <string>
#include <vector>

namespace maprect::models {

/// Call site of eight_schools_job (registered in eight_schools.cpp).
inline constexpr int eight_schools_call_id = 3;
/// Number of schools.
inline constexpr int eight_schools_n = 8;
/// Target acceptance statistic `maprect sample` adapts to for this model unless --delta is given. At Stan's 0.8
/// the funnel between tau and theta_tilde still gives about 2 divergent transitions per 10,000 draws, as Stan
/// does; 0.9 takes a smaller step size that makes them about eight times rarer, for about 45% more gradients.
inline constexpr double eight_schools_default_delta = 0.9;
/// Observed treatment effects.
inline constexpr std::array<double, eight_schools_n> eight_schools_y = {28, 8, -3, 7, -1, 1, 18, 12};
/// Their standard errors.
inline constexpr std::array<double, eight_schools_n> eight_schools_sigma = {15, 10, 16, 11, 9, 11, 10, 18};

/// map_rect functor: one school's log likelihood -((y - (mu + tau theta_tilde)) / sigma)^2 / 2.
struct eight_schools_job {
  /// phi = (mu, tau), theta = (theta_tilde), x_r = (y, sigma).
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& /*x_i*/,
                                                                     std::ostream* /*msgs*/) const {
    if (phi.size() != 2 || theta.size() != 1 || x_r.size() != 2)
      throw std::invalid_argument("eight_schools: expected 2 shared, 1 job parameter and 2 reals, got " +
                                  std::to_string(phi.size()) + ", " + std::to_string(theta.size()) + " and " +
                                  std::to_string(x_r.size()));
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
    const auto z = (x_r[0] - (phi(0) + phi(1) * theta(0))) / x_r[1];
    out(0) = -0.5 * z * z;
    return out;
  }
};

/// map_rect rows of eight_schools_job, one per school: (y_j, sigma_j). Throws std::invalid_argument for sizes
/// that differ and for a sigma that is not > 0, naming the school (1-based).
std::vector<std::vector<double>> eight_schools_rows(const std::vector<double>& y, const std::vector<double>& sigma);

/// The model for the sampler: log density, output columns in Stan's naming and their values at a draw.
class eight_schools_model {
 public:
  eight_schools_model();
  /// Number of unconstrained parameters: 10.
  int size() const { return 2 + eight_schools_n; }
  /// Log density (Stan's lp__) at (mu, log tau, theta_tilde_1..8), double or var.
  template <class T>
  T log_density(const Eigen::Matrix<T, Eigen::Dynamic, 1>& params) const;
  /// mu, tau, theta_tilde.1..8, theta.1..8.
  std::vector<std::string> column_names() const;
  /// The columns' values at unconstrained parameters.
  Eigen::VectorXd write_array(const Eigen::VectorXd& params) const;

 private:
  std::vector<std::vector<double>> x_r_;
  std::vector<std::vector<int>> x_i_;
};

template <class T>
T eight_schools_model::log_density(const Eigen::Matrix<T, Eigen::Dynamic, 1>& params) const {
  using std::exp;
  using std::log1p;
  if (params.size() != size())
    throw std::invalid_argument("eight_schools_model: " + std::to_string(params.size()) + " parameters, expected " +
                                std::to_string(size()));
  const T mu = params(0), log_tau = params(1);
  const T tau = exp(log_tau);
  Eigen::Matrix<T, Eigen::Dynamic, 1> phi(2);
  phi << mu, tau;
  std::vector<Eigen::Matrix<T, Eigen::Dynamic, 1>> theta(eight_schools_n);
  for (int j = 0; j < eight_schools_n; ++j) theta[j] = params.segment(2 + j, 1);
  T lp = map_rect<eight_schools_call_id, eight_schools_job>(phi, theta, x_r_, x_i_).sum();
  lp += -0.5 * (mu / 5.0) * (mu / 5.0);                      // mu ~ normal(0, 5)
  lp += -log1p((tau / 5.0) * (tau / 5.0)) + log_tau;         // tau ~ half-Cauchy(0, 5), Jacobian of exp
  for (int j = 0; j < eight_schools_n; ++j) lp += -0.5 * params(2 + j) * params(2 + j);  // theta_tilde ~ N(0, 1)
  return lp;
}

}  // namespace maprect::models
