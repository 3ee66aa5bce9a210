#pragma once
/// \file pk2cmt: population two-compartment pharmacokinetics with first-order absorption, one map_rect
/// job per subject.
///
/// Model. States: gut A_g, central A_c, peripheral A_p (amounts). Per-subject PK parameters
/// p = (CL, Q, V1, V2, ka) with rate constants k10 = CL/V1, k12 = Q/V1, k21 = Q/V2:
///   dA_g/dt = -ka A_g
///   dA_c/dt =  ka A_g - (k10 + k12) A_c + k21 A_p
///   dA_p/dt =  k12 A_c - k21 A_p
/// One dose D into the gut at t = 0 (A_g(0) = D, A_c(0) = A_p(0) = 0). Concentration C = A_c / V1,
/// observed with proportional (log-normal) error: log y ~ Normal(log C, sigma).
///
/// Parameterisation (centred):
///   phi (11 shared) = (mu_CL, mu_Q, mu_V1, mu_V2, mu_ka,            population log-medians
///                      log_omega_CL, ..., log_omega_ka,              log sd of the random effects
///                      log_sigma)                                    log sd of the observation error
///   theta_j (5)     = log(CL, Q, V1, V2, ka) of subject j, with theta_jk ~ Normal(mu_k, omega_k).
/// The job's one output is, for subject j with H_j = diag(1 / omega^2) + G_j^T G_j / sigma^2 and G_j the
/// n x 5 matrix d log C_ji / d theta_j:
///   log p(y_j | theta_j, sigma)                  log-normal likelihood, a density of y (with -log y)
///   + sum_k log Normal(theta_jk | mu_k, omega_k)  random effects, -log omega_k terms included
///   - 1/2 log det H_j                             Laplace (Gauss-Newton) term
/// so that everything a subject contributes stays inside map_rect and the partials with respect to mu,
/// log omega and log sigma come from the job. Why the Laplace term: the joint density alone has its
/// supremum at omega_k -> 0 with every theta_jk = mu_k, and a local mode near the truth only where each
/// subject's data pin theta_jk to well within omega_k (roughly SE^2 < omega^2 / 3 in the linear-Gaussian
/// case). With 9 log-normal observations at sigma 0.15 the per-subject standard errors of log Q, V1, V2, ka
/// are 0.5-0.8: without the term, L-BFGS drove three omegas to ~1e-4 from initial() and two even from the
/// truth, never converging. Adding
/// -1/2 log det H_j turns the joint density into the Laplace approximation of the marginal density of phi
/// (exact for a linear model), which is bounded as omega -> 0. The non-centred form (log p = mu + omega eta)
/// fails the other way: without a -log omega term, omega grows until its prior stops it. Priors on phi are
/// the caller's: pk2cmt_model adds them.
///
/// Data of job j (see pk2cmt_pack_subject): x_r[j] = (D, t_1..t_M, y_1..y_M), x_i[j] = (n). Only the first
/// n <= M observations count; the rest is padding, so that subjects with different numbers of
/// observations share one x_r width M as map_rect requires. Times are strictly increasing and > 0.
///
/// Gradients come from forward sensitivities: the 3 amounts are integrated together with their 15 first and
/// 45 distinct second derivatives with respect to theta_j = log(CL, Q, V1, V2, ka) (the Laplace term's
/// gradient in theta needs d G / d theta), all in double, by an adaptive Dormand-Prince 5(4) scheme
/// (Boost.Odeint dense output, abs and rel tolerance 1e-10); outputs with var inputs are single
/// precomputed-gradient nodes, and the partials in mu, log omega, log sigma are closed-form given G. Values
/// alone are solved with all sensitivities too, so that double and var calls take the same steps and agree
/// exactly.
#include <maprect/map_rect.hpp>

#include <Eigen/Dense>
#include <array>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace maprect::models {

/// Call site of pk2cmt_job (registered in pk2cmt.cpp).
inline constexpr int pk2cmt_call_id = 2;
/// Per-subject PK parameters: CL, Q, V1, V2, ka.
inline constexpr int pk2cmt_n_pk = 5;
/// Size of phi: 5 log-medians, 5 log omegas, log sigma.
inline constexpr int pk2cmt_n_shared = 2 * pk2cmt_n_pk + 1;
/// Index of log_sigma in phi.
inline constexpr int pk2cmt_log_sigma_index = 2 * pk2cmt_n_pk;
/// Names of the PK parameters, in parameter order.
inline const std::array<const char*, pk2cmt_n_pk> pk2cmt_pk_names = {"CL", "Q", "V1", "V2", "ka"};

/// Number of pairs k <= l of PK parameters: the distinct second derivatives.
inline constexpr int pk2cmt_n_pairs = pk2cmt_n_pk * (pk2cmt_n_pk + 1) / 2;

/// Index of the pair (k, l), k <= l, in pk2cmt_solution::second_order (row-major upper triangle).
constexpr int pk2cmt_pair_index(int k, int l) { return k * pk2cmt_n_pk - k * (k - 1) / 2 + (l - k); }

/// Amounts (A_g, A_c, A_p) at requested times and, if asked, their first and second derivatives with respect
/// to log p = log(CL, Q, V1, V2, ka): sensitivities[i][3 * k + s] = d A_s(t_i) / d log p_k and
/// second_order[i][3 * pk2cmt_pair_index(k, l) + s] = d^2 A_s(t_i) / d log p_k d log p_l.
struct pk2cmt_solution {
  std::vector<std::array<double, 3>> amounts;         ///< one row per time
  std::vector<std::array<double, 15>> sensitivities;  ///< one row per time; empty if order < 1
  std::vector<std::array<double, 3 * pk2cmt_n_pairs>> second_order;  ///< one row per time; empty if order < 2
};

/// Integrates the ODEs from A = (dose, 0, 0) at t = 0 to the given times (> 0, strictly increasing), with
/// PK parameters pk = (CL, Q, V1, V2, ka), with derivatives up to `order` (0, 1 or 2). Throws
/// std::domain_error if the solver makes no progress.
pk2cmt_solution pk2cmt_solve(const std::array<double, pk2cmt_n_pk>& pk, double dose, const std::vector<double>& times,
                             int order);

/// The job's output from plain values: the subject's log likelihood plus its random-effect log density at
/// phi (11) and theta (5), data as in the file comment. If d_phi and d_theta are not null, writes the gradient
/// with respect to phi (11) and theta (5) there. Throws std::invalid_argument on malformed data and
/// std::domain_error on non-finite parameters or ones the solver cannot handle.
double pk2cmt_subject_log_density(const double* phi, const double* theta, const std::vector<double>& x_r,
                                  const std::vector<int>& x_i, double* d_phi, double* d_theta);

/// Job data of one subject: x_r = (dose, times padded to width, concentrations padded to width), x_i = (n).
std::pair<std::vector<double>, std::vector<int>> pk2cmt_pack_subject(double dose, const std::vector<double>& times,
                                                                     const std::vector<double>& concentrations,
                                                                     int width);

/// map_rect functor: one subject's log likelihood plus random-effect log density (one output); see the file
/// comment for the layout.
struct pk2cmt_job {
  /// Log density of the subject with data (x_r, x_i) at shared params phi and its log PK parameters theta.
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i,
                                                                     std::ostream* /*msgs*/) const {
    if (phi.size() != pk2cmt_n_shared || theta.size() != pk2cmt_n_pk)
      throw std::invalid_argument("pk2cmt_job: expected 11 shared and 5 job parameters, got " +
                                  std::to_string(phi.size()) + " and " + std::to_string(theta.size()));
    double phi_v[pk2cmt_n_shared];
    double theta_v[pk2cmt_n_pk];
    for (int k = 0; k < pk2cmt_n_shared; ++k) phi_v[k] = value_of(phi(k));
    for (int k = 0; k < pk2cmt_n_pk; ++k) theta_v[k] = value_of(theta(k));
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
    if constexpr (!is_var_v<T1> && !is_var_v<T2>) {
      out(0) = pk2cmt_subject_log_density(phi_v, theta_v, x_r, x_i, nullptr, nullptr);
    } else {
      double d_phi[pk2cmt_n_shared];
      double d_theta[pk2cmt_n_pk];
      const double lp = pk2cmt_subject_log_density(phi_v, theta_v, x_r, x_i, d_phi, d_theta);
      std::vector<var> operands;
      std::vector<double> gradients;
      if constexpr (is_var_v<T1>) {
        operands.insert(operands.end(), phi.data(), phi.data() + pk2cmt_n_shared);
        gradients.insert(gradients.end(), d_phi, d_phi + pk2cmt_n_shared);
      }
      if constexpr (is_var_v<T2>) {
        operands.insert(operands.end(), theta.data(), theta.data() + pk2cmt_n_pk);
        gradients.insert(gradients.end(), d_theta, d_theta + pk2cmt_n_pk);
      }
      out(0) = precomputed_gradients(lp, operands, gradients);
    }
    return out;
  }
};

/// Simulated study: job data for map_rect plus the parameters it was drawn from.
struct pk2cmt_data {
  std::vector<std::vector<double>> x_r;  ///< one row per subject (pk2cmt_pack_subject layout)
  std::vector<std::vector<int>> x_i;     ///< one row per subject: (number of observations)
  Eigen::VectorXd true_phi;                ///< the phi the data were drawn from
  std::vector<Eigen::VectorXd> true_eta;   ///< standardized random effects: theta_j = mu + omega * eta_j
  std::vector<Eigen::VectorXd> true_theta; ///< the subjects' log PK parameters the data were drawn from
};

/// Seed of the default simulated study.
inline constexpr std::uint64_t pk2cmt_default_seed = 0x5eed2c317a11ull;
/// Sampling schedule of the simulated study, in hours after the dose.
inline const std::vector<double> pk2cmt_schedule = {0.25, 0.5, 1, 2, 4, 6, 8, 12, 24};
/// Population values the study is simulated from: medians of CL (L/h), Q (L/h), V1 (L), V2 (L), ka (1/h).
inline constexpr std::array<double, pk2cmt_n_pk> pk2cmt_true_medians = {5.0, 8.0, 30.0, 60.0, 1.2};
/// Random-effect sds (log scale) the study is simulated from, in parameter order.
inline constexpr std::array<double, pk2cmt_n_pk> pk2cmt_true_omegas = {0.3, 0.3, 0.25, 0.25, 0.4};
/// Proportional error sd (log scale) the study is simulated from.
inline constexpr double pk2cmt_true_sigma = 0.15;

/// Simulates n_subjects subjects: eta_j ~ Normal(0, 1), theta_j = mu + omega * eta_j, doses cycling
/// 50/100/200 mg, the full schedule, y = C exp(sigma eps). Deterministic: splitmix64 plus Box-Muller, so
/// equal seeds give equal data.
pk2cmt_data simulate_pk2cmt(int n_subjects = 16, std::uint64_t seed = pk2cmt_default_seed);

/// Log density of Normal(mean, sd) at x.
template <class T>
T normal_log_density(const T& x, double mean, double sd) {
  const T z = (x - mean) / sd;
  return -0.5 * z * z - std::log(sd) - 0.9189385332046727418;
}

/// The full model for a fit: parameters packed as (phi (11), theta_1 (5), ..., theta_S (5)), log density =
/// sum of the subjects' jobs by map_rect (call id 2: likelihood, theta_j ~ Normal(mu, omega), Laplace term)
/// + priors:
///   mu_k ~ Normal(log c_k, 2) with rough centres c = (CL 4, Q 4, V1 20, V2 40, ka 1),
///   log_omega_k ~ Normal(log 0.3, 1), log_sigma ~ Normal(log 0.2, 1).
/// All parameters are unconstrained, so no Jacobian terms are needed.
class pk2cmt_model {
 public:
  /// The model of the default simulated study with n_subjects subjects.
  explicit pk2cmt_model(int n_subjects = 16) : pk2cmt_model(simulate_pk2cmt(n_subjects)) {}
  /// The model of given data (true_phi, true_eta and true_theta may be empty when unknown).
  explicit pk2cmt_model(pk2cmt_data data) : data_(std::move(data)), jobs_(data_.x_r, data_.x_i) {}

  /// Number of subjects S.
  int n_subjects() const { return static_cast<int>(data_.x_r.size()); }
  /// Number of parameters, 11 + 5 S.
  int size() const { return pk2cmt_n_shared + pk2cmt_n_pk * n_subjects(); }
  /// The data.
  const pk2cmt_data& data() const { return data_; }
  /// The data as map_rect rows, shipped once.
  const job_data& jobs() const { return jobs_; }

  /// Starting point: mu and sigma at the prior centres, omega = 0.5, every theta_j = mu.
  Eigen::VectorXd initial() const;
  /// The packed parameters the data were simulated from (throws std::logic_error if unknown).
  Eigen::VectorXd true_parameters() const;

  /// Log density at packed parameters (double or var).
  template <class T>
  T log_density(const Eigen::Matrix<T, Eigen::Dynamic, 1>& params) const;
  /// Log density at x and its gradient, on a nested region of the thread's tape.
  double log_density_gradient(const Eigen::VectorXd& x, Eigen::VectorXd& gradient) const;

  /// Population estimates on the natural scale: CL, Q, V1, V2, ka (medians), omega_*, sigma.
  std::vector<std::pair<std::string, double>> estimates(const Eigen::VectorXd& params) const;
  /// The same names with the values the data were simulated from.
  std::vector<std::pair<std::string, double>> truth() const;

  /// Prior centres of the population medians.
  static constexpr std::array<double, pk2cmt_n_pk> prior_medians = {4.0, 4.0, 20.0, 40.0, 1.0};
  /// Prior sd of the log-medians.
  static constexpr double prior_mu_sd = 2.0;
  /// Prior centre of the omegas and of sigma.
  static constexpr double prior_omega = 0.3, prior_sigma = 0.2;
  /// Prior sd of log omega and log sigma.
  static constexpr double prior_log_scale_sd = 1.0;
  /// Omega of the starting point.
  static constexpr double initial_omega = 0.5;

 private:
  pk2cmt_data data_;
  job_data jobs_;  ///< the rows of data_, built once: the cluster ships them once and never checks them
};

template <class T>
T pk2cmt_model::log_density(const Eigen::Matrix<T, Eigen::Dynamic, 1>& params) const {
  if (params.size() != size())
    throw std::invalid_argument("pk2cmt_model: " + std::to_string(params.size()) + " parameters, expected " +
                                std::to_string(size()));
  const int S = n_subjects();
  const Eigen::Matrix<T, Eigen::Dynamic, 1> phi = params.head(pk2cmt_n_shared);
  std::vector<Eigen::Matrix<T, Eigen::Dynamic, 1>> theta(static_cast<std::size_t>(S));
  for (int j = 0; j < S; ++j) theta[j] = params.segment(pk2cmt_n_shared + pk2cmt_n_pk * j, pk2cmt_n_pk);

  T lp = map_rect<pk2cmt_call_id, pk2cmt_job>(phi, theta, jobs_).sum();
  for (int k = 0; k < pk2cmt_n_pk; ++k) {
    lp += normal_log_density(phi(k), std::log(prior_medians[k]), prior_mu_sd);
    lp += normal_log_density(phi(pk2cmt_n_pk + k), std::log(prior_omega), prior_log_scale_sd);
  }
  lp += normal_log_density(phi(pk2cmt_log_sigma_index), std::log(prior_sigma), prior_log_scale_sd);
  return lp;
}

}  // namespace maprect::models
