#pragma once
/// \file pointwise_regression: a hierarchical linear regression whose map_rect jobs return each observation's
/// log likelihood, not their sum: K outputs per job, as a model that reports the pointwise log likelihood for
/// LOO needs (Stan's `log_lik` in generated quantities).
///
/// Model. G groups of K observations, C covariates; observation (g, k) has covariates x_gk (a row of C) and
/// response y_gk:
///   y_gk ~ normal(mu + alpha_g + x_gk beta, sigma)
///   mu ~ normal(0, 5),  beta_c ~ normal(0, 2.5),  alpha_g ~ normal(0, tau)
/// with sigma and tau known (data), so the posterior is Gaussian and its mean and sds are in closed form
/// (pointwise_regression_posterior): the sampler's check. Parameters are packed as (mu, beta_1..C,
/// alpha_1..G). Priors drop their constants as Stan's `~` does; each output keeps normal_lpdf's constants,
/// so that it is the observation's log likelihood.
///
/// map_rect: shared phi = (mu, beta) (C + 1 values), job theta_g = (alpha_g), so M = C + 2 parameters reach
/// each job; x_r[g] = (sigma, y_g1..y_gK, x_g1, ..., x_gK) (1 + K + K C reals, covariates row by row), x_i[g]
/// empty. Each output is one node with its M hand-derived partials: d/d(mu) = d/d(alpha_g) = r / sigma^2 and
/// d/d(beta_c) = r x_c / sigma^2, with r = y - eta.
#include <maprect/map_rect.hpp>

#include <Eigen/Dense>
#include <cstdint>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace maprect::models {

/// Call site of pointwise_regression_job (registered in pointwise_regression.cpp).
inline constexpr int pointwise_regression_call_id = 4;
/// Prior sd of mu.
inline constexpr double pointwise_regression_mu_sd = 5.0;
/// Prior sd of each beta_c.
inline constexpr double pointwise_regression_beta_sd = 2.5;

/// One group's outputs in double: writes K log likelihoods to `lp` and, when `d_eta` is not null, each
/// observation's d lp / d eta there, where eta = a + x beta is its linear predictor and a = mu + alpha_g.
/// `row` is the group's x_r row: (sigma, y..., x...) of K observations and C covariates.
void pointwise_regression_group(double a, const double* beta, int C, const std::vector<double>& row, int K,
                                double* lp, double* d_eta);

/// The observations per group in a row of x_r for C covariates; throws std::invalid_argument for a row whose
/// length is not 1 + K (1 + C) with K >= 1, or whose sigma is not > 0.
int pointwise_regression_points(const std::vector<double>& row, int C);

/// map_rect functor: K outputs per job, each observation's normal log likelihood.
struct pointwise_regression_job {
  /// phi = (mu, beta_1..C), theta = (alpha_g), x_r = the group's row (file comment).
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& /*x_i*/,
                                                                     std::ostream* /*msgs*/) const {
    using R = return_type_t<T1, T2>;
    if (phi.size() < 1 || theta.size() != 1)
      throw std::invalid_argument("pointwise_regression: expected 1 + C shared and 1 job parameter, got " +
                                  std::to_string(phi.size()) + " and " + std::to_string(theta.size()));
    const int C = static_cast<int>(phi.size()) - 1;
    const int K = pointwise_regression_points(x_r, C);
    // Reused per thread: a steady call allocates only on the tape.
    static thread_local std::vector<double> beta, lp, d_eta, partials;
    static thread_local std::vector<var> operands;
    beta.resize(static_cast<std::size_t>(C));
    for (int c = 0; c < C; ++c) beta[c] = value_of(phi(c + 1));
    lp.resize(static_cast<std::size_t>(K));
    d_eta.resize(static_cast<std::size_t>(K));
    const bool any_var = !std::is_same_v<R, double>;
    pointwise_regression_group(value_of(phi(0)) + value_of(theta(0)), beta.data(), C, x_r, K, lp.data(),
                               any_var ? d_eta.data() : nullptr);
    Eigen::Matrix<R, Eigen::Dynamic, 1> out(K);
    if constexpr (std::is_same_v<R, double>) {
      for (int k = 0; k < K; ++k) out(k) = lp[k];
    } else {
      operands.clear();
      if constexpr (is_var_v<T1>)
        for (int c = 0; c <= C; ++c) operands.push_back(phi(c));
      if constexpr (is_var_v<T2>) operands.push_back(theta(0));
      const double* x = x_r.data() + 1 + K;
      for (int k = 0; k < K; ++k) {
        partials.clear();
        if constexpr (is_var_v<T1>) {
          partials.push_back(d_eta[k]);
          for (int c = 0; c < C; ++c) partials.push_back(d_eta[k] * x[static_cast<std::size_t>(k) * C + c]);
        }
        if constexpr (is_var_v<T2>) partials.push_back(d_eta[k]);
        out(k) = precomputed_gradients(lp[k], operands, partials);
      }
    }
    return out;
  }
};

/// A pointwise regression's data, as the model's JSON holds them, and for simulated data the truth.
struct pointwise_regression_data {
  int G = 0, K = 0, C = 0;   ///< groups, observations per group, covariates
  Eigen::MatrixXd x;         ///< G K x C covariates; observation n (0-based) is in group n / K
  Eigen::VectorXd y;         ///< G K responses
  double sigma = 1;          ///< the observations' sd
  double tau = 0.5;          ///< the group intercepts' sd
  Eigen::VectorXd true_parameters;  ///< packed (mu, beta, alpha) the data came from; empty when unknown
};

/// Seed of the embedded data.
inline constexpr std::uint64_t pointwise_regression_seed = 0x5eed9017ull;

/// Simulates G groups of K observations with C covariates: x_gkc = sin(0.37 (g K + k) + 1.1 c + 0.5), mu =
/// 0.5, beta_c = cos(1.7 c + 0.3), alpha_g ~ normal(0, tau) centred, y from the model (splitmix64 and
/// Box-Muller: equal arguments give equal data on every platform). Throws std::invalid_argument for sizes < 1.
pointwise_regression_data simulate_pointwise_regression(int G, int K, int C, double sigma = 1, double tau = 0.5,
                                                        std::uint64_t seed = pointwise_regression_seed);

/// The map_rect rows x_r of the data, one per group (file comment).
std::vector<std::vector<double>> pointwise_regression_rows(const pointwise_regression_data& d);

/// The point `maprect bench` and `maprect plan` differentiate at: the truth moved by 0.01 sin(1 + i), so that no
/// partial is zero by symmetry.
Eigen::VectorXd pointwise_regression_bench_point(const pointwise_regression_data& d);

/// Packed parameters: 1 + C + G.
inline int pointwise_regression_size(const pointwise_regression_data& d) { return 1 + d.C + d.G; }

/// Every observation's log likelihood at packed parameters, in double, in observation order: the values of
/// the map_rect outputs, bit for bit (the same kernel).
Eigen::VectorXd pointwise_regression_log_lik(const pointwise_regression_data& d, const Eigen::VectorXd& params);

/// The model's log density (sum of log_lik plus the priors) and its gradient, in closed form, in double.
double pointwise_regression_closed_form(const pointwise_regression_data& d, const Eigen::VectorXd& params,
                                        Eigen::VectorXd& gradient);

/// The model's log density at packed parameters (double or var): the observations' log likelihoods by
/// map_rect on `rows` (the data's rows, as a job_data the cluster ships once), summed, plus the priors.
template <class T>
T pointwise_regression_log_density(const pointwise_regression_data& d, const job_data& rows,
                                   const Eigen::Matrix<T, Eigen::Dynamic, 1>& params) {
  using vector_t = Eigen::Matrix<T, Eigen::Dynamic, 1>;
  if (params.size() != pointwise_regression_size(d))
    throw std::invalid_argument("pointwise_regression: " + std::to_string(params.size()) + " parameters, expected " +
                                std::to_string(pointwise_regression_size(d)));
  const vector_t phi = params.head(1 + d.C);
  std::vector<vector_t> groups(static_cast<std::size_t>(d.G));
  for (int g = 0; g < d.G; ++g) groups[g] = params.segment(1 + d.C + g, 1);
  T lp = map_rect<pointwise_regression_call_id, pointwise_regression_job>(phi, groups, rows).sum();
  const double mu_precision = 1.0 / (pointwise_regression_mu_sd * pointwise_regression_mu_sd);
  const double beta_precision = 1.0 / (pointwise_regression_beta_sd * pointwise_regression_beta_sd);
  const double alpha_precision = 1.0 / (d.tau * d.tau);
  lp += -0.5 * mu_precision * params(0) * params(0);
  T sum_sq = 0;
  for (int c = 1; c <= d.C; ++c) sum_sq += params(c) * params(c);
  lp += -0.5 * beta_precision * sum_sq;
  sum_sq = 0;
  for (Eigen::Index i = 1 + d.C; i < params.size(); ++i) sum_sq += params(i) * params(i);
  lp += -0.5 * alpha_precision * sum_sq;
  return lp;
}

/// map_rect's rows of the data as a job_data (x_i: an empty row per group).
inline job_data pointwise_regression_job_data(const pointwise_regression_data& d) {
  return job_data(pointwise_regression_rows(d), std::vector<std::vector<int>>(static_cast<std::size_t>(d.G)));
}

/// The Gaussian posterior of the packed parameters: its mean and marginal sds.
struct gaussian_posterior {
  Eigen::VectorXd mean;  ///< posterior mean, packed
  Eigen::VectorXd sd;    ///< marginal posterior sds, packed
};

/// The exact posterior: precision Q = A'A / sigma^2 + prior precisions, mean Q^-1 A'y / sigma^2, where row n
/// of A is (1, x_n, the indicator of n's group).
gaussian_posterior pointwise_regression_posterior(const pointwise_regression_data& d);

}  // namespace maprect::models
