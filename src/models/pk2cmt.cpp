// pk2cmt: ODE solve with forward sensitivities, the job's log density, simulation, and the fit model.
//
// Why forward sensitivities rather than differentiating through the solver on the tape: measured on the
// default study (16 subjects x 9 observations, Release, -O2, one shared core), one subject's var/var
// gradient took 0.07-0.11 ms with sensitivities against 0.7-1.0 ms with odeint run on var states, whose
// tape held ~73k nodes per subject (the stepper's arithmetic, error estimates included) against one node
// here. Against the closed-form solution's gradient the largest relative error was 1.5e-9 with
// sensitivities and 1.0e-8 on the tape (its error control sees the amounts only). The job's Laplace term
// also needs second-order sensitivities (63 states): 0.74 ms per subject against 0.10 ms for the first
// order alone, still one tape node per subject.
#include "pk2cmt.hpp"

#include <boost/numeric/odeint.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "splitmix64.hpp"

MAPRECT_REGISTER(2, maprect::models::pk2cmt_job);

namespace maprect::models {
namespace {

namespace odeint = boost::numeric::odeint;

// Tight tolerances: the gradient is checked against finite differences and the closed form, and L-BFGS
// needs gradients consistent with the values it sees.
constexpr double solver_abs_tol = 1e-10;
constexpr double solver_rel_tol = 1e-10;
// Steps allowed between two observation times before giving up (stiff or absurd parameters).
constexpr int solver_max_steps = 100000;
constexpr double half_log_two_pi = 0.9189385332046727418;

struct rate_constants {
  double ka, k10, k12, k21;
  explicit rate_constants(const std::array<double, pk2cmt_n_pk>& pk)
      : ka(pk[4]), k10(pk[0] / pk[2]), k12(pk[1] / pk[2]), k21(pk[1] / pk[3]) {}
};

using amounts_state = std::array<double, 3>;
// Amounts, then d(amounts)/d log p_k for k = CL, Q, V1, V2, ka.
using sensitivity_state = std::array<double, 18>;
// Amounts, first derivatives, then d^2(amounts)/d log p_k d log p_l for the pairs k <= l.
using second_order_state = std::array<double, 3 + 3 * pk2cmt_n_pk + 3 * pk2cmt_n_pairs>;

struct amounts_rhs {
  rate_constants r;
  void operator()(const amounts_state& a, amounts_state& d, double /*t*/) const {
    d[0] = -r.ka * a[0];
    d[1] = r.ka * a[0] - (r.k10 + r.k12) * a[1] + r.k21 * a[2];
    d[2] = r.k12 * a[1] - r.k21 * a[2];
  }
};

struct sensitivity_rhs {
  rate_constants r;
  void operator()(const sensitivity_state& x, sensitivity_state& d, double /*t*/) const {
    const double ag = x[0], ac = x[1], ap = x[2];
    d[0] = -r.ka * ag;
    d[1] = r.ka * ag - (r.k10 + r.k12) * ac + r.k21 * ap;
    d[2] = r.k12 * ac - r.k21 * ap;
    // d/d log p_k of the right-hand side at fixed amounts: log p_k scales the rate constants it enters.
    const double central_out = r.k12 * ac - r.k21 * ap;  // net flow central -> peripheral
    const double forcing[pk2cmt_n_pk][3] = {
        {0, -r.k10 * ac, 0},                           // CL: k10
        {0, -central_out, central_out},                // Q: k12 and k21
        {0, (r.k10 + r.k12) * ac, -r.k12 * ac},        // V1: k10 and k12 go as 1/V1
        {0, -r.k21 * ap, r.k21 * ap},                  // V2: k21 goes as 1/V2
        {-r.ka * ag, r.ka * ag, 0}};                   // ka
    for (int k = 0; k < pk2cmt_n_pk; ++k) {
      const double* s = &x[3 + 3 * k];
      double* ds = &d[3 + 3 * k];
      ds[0] = -r.ka * s[0] + forcing[k][0];
      ds[1] = r.ka * s[0] - (r.k10 + r.k12) * s[1] + r.k21 * s[2] + forcing[k][1];
      ds[2] = r.k12 * s[1] - r.k21 * s[2] + forcing[k][2];
    }
  }
};

// The system written as a sum over the four rate constants, rate_m = exp(a_m . log p) times a fixed flow
// E_m, so that every derivative of the right-hand side in log p is a_m-weighted flows:
//   dA/dt = sum_m r_m E_m A,   ds_k/dt = sum_m r_m E_m s_k + a_mk r_m E_m A,
//   ds_kl/dt = sum_m r_m E_m s_kl + a_ml r_m E_m s_k + a_mk r_m E_m s_l + a_mk a_ml r_m E_m A.
struct second_order_rhs {
  using matrix3 = std::array<std::array<double, 3>, 3>;
  static constexpr int n_rates = 4;  // ka, k10, k12, k21
  static constexpr int exponent[n_rates][pk2cmt_n_pk] = {
      {0, 0, 0, 0, 1}, {1, 0, -1, 0, 0}, {0, 1, -1, 0, 0}, {0, 1, 0, -1, 0}};
  // Flow matrices E_m: absorption gut -> central, elimination, central -> peripheral, peripheral -> central.
  static constexpr double flow[n_rates][3][3] = {{{-1, 0, 0}, {1, 0, 0}, {0, 0, 0}},
                                                 {{0, 0, 0}, {0, -1, 0}, {0, 0, 0}},
                                                 {{0, 0, 0}, {0, -1, 0}, {0, 1, 0}},
                                                 {{0, 0, 0}, {0, 0, 1}, {0, 0, -1}}};
  // Matrices summed once per solve: M = sum_m r_m E_m and its first and second derivatives in log p.
  matrix3 m{};
  std::array<matrix3, pk2cmt_n_pk> dm{};
  std::array<matrix3, pk2cmt_n_pairs> d2m{};

  explicit second_order_rhs(const rate_constants& r) {
    const double rate[n_rates] = {r.ka, r.k10, r.k12, r.k21};
    for (int q = 0; q < n_rates; ++q)
      for (int i = 0; i < 3; ++i)
        for (int c = 0; c < 3; ++c) {
          const double w = rate[q] * flow[q][i][c];
          m[i][c] += w;
          for (int k = 0; k < pk2cmt_n_pk; ++k) {
            dm[k][i][c] += exponent[q][k] * w;
            for (int l = k; l < pk2cmt_n_pk; ++l)
              d2m[pk2cmt_pair_index(k, l)][i][c] += exponent[q][k] * exponent[q][l] * w;
          }
        }
  }

  // out = a x (+ out if accumulate).
  static void apply(const matrix3& a, const double* x, double* out, bool accumulate) {
    for (int i = 0; i < 3; ++i) {
      const double v = a[i][0] * x[0] + a[i][1] * x[1] + a[i][2] * x[2];
      out[i] = accumulate ? out[i] + v : v;
    }
  }

  void operator()(const second_order_state& x, second_order_state& d, double /*t*/) const {
    const double* a = x.data();
    const double* s = a + 3;
    const double* s2 = s + 3 * pk2cmt_n_pk;
    double* da = d.data();
    double* ds = da + 3;
    double* ds2 = ds + 3 * pk2cmt_n_pk;
    apply(m, a, da, false);
    for (int k = 0; k < pk2cmt_n_pk; ++k) {
      apply(m, s + 3 * k, ds + 3 * k, false);
      apply(dm[k], a, ds + 3 * k, true);
      for (int l = k; l < pk2cmt_n_pk; ++l) {
        const int p = pk2cmt_pair_index(k, l);
        double* out = ds2 + 3 * p;
        apply(m, s2 + 3 * p, out, false);
        apply(dm[l], s + 3 * k, out, true);
        apply(dm[k], s + 3 * l, out, true);
        apply(d2m[p], a, out, true);
      }
    }
  }
};

// States at each of `times` (the start time 0 is prepended and its state dropped).
template <class State, class System>
std::vector<State> integrate_to(const System& system, State start, const std::vector<double>& times) {
  std::vector<double> grid;
  grid.reserve(times.size() + 1);
  grid.push_back(0.0);
  grid.insert(grid.end(), times.begin(), times.end());
  std::vector<State> out;
  out.reserve(grid.size());
  auto stepper = odeint::make_dense_output(solver_abs_tol, solver_rel_tol, odeint::runge_kutta_dopri5<State>());
  const double first_step = std::min(1e-2, 0.1 * times.front());
  try {
    odeint::integrate_times(stepper, system, start, grid.begin(), grid.end(), first_step,
                            [&out](const State& x, double) { out.push_back(x); },
                            odeint::max_step_checker(solver_max_steps));
  } catch (const odeint::step_adjustment_error& e) {
    throw std::domain_error(std::string("pk2cmt: ODE solver failed: ") + e.what());
  } catch (const odeint::no_progress_error& e) {
    throw std::domain_error(std::string("pk2cmt: ODE solver made no progress: ") + e.what());
  }
  out.erase(out.begin());
  return out;
}

void check_pk(const std::array<double, pk2cmt_n_pk>& pk) {
  for (int k = 0; k < pk2cmt_n_pk; ++k)
    if (!(pk[k] > 0) || !std::isfinite(pk[k]))
      throw std::domain_error(std::string("pk2cmt: ") + pk2cmt_pk_names[k] + " = " + std::to_string(pk[k]) +
                              " is not a positive finite number");
}

}  // namespace

pk2cmt_solution pk2cmt_solve(const std::array<double, pk2cmt_n_pk>& pk, double dose, const std::vector<double>& times,
                             int order) {
  check_pk(pk);
  if (order < 0 || order > 2) throw std::invalid_argument("pk2cmt_solve: order must be 0, 1 or 2");
  pk2cmt_solution sol;
  if (times.empty()) return sol;
  const rate_constants r(pk);
  if (order == 0) {
    sol.amounts = integrate_to(amounts_rhs{r}, amounts_state{dose, 0, 0}, times);
    return sol;
  }
  if (order == 2) {
    second_order_state start{};
    start[0] = dose;
    const std::vector<second_order_state> states = integrate_to(second_order_rhs(r), start, times);
    sol.amounts.resize(states.size());
    sol.sensitivities.resize(states.size());
    sol.second_order.resize(states.size());
    for (std::size_t i = 0; i < states.size(); ++i) {
      const auto first = states[i].begin() + 3, second = first + 3 * pk2cmt_n_pk;
      std::copy(states[i].begin(), first, sol.amounts[i].begin());
      std::copy(first, second, sol.sensitivities[i].begin());
      std::copy(second, states[i].end(), sol.second_order[i].begin());
    }
    return sol;
  }
  sensitivity_state start{};
  start[0] = dose;
  const std::vector<sensitivity_state> states = integrate_to(sensitivity_rhs{r}, start, times);
  sol.amounts.resize(states.size());
  sol.sensitivities.resize(states.size());
  for (std::size_t i = 0; i < states.size(); ++i) {
    std::copy(states[i].begin(), states[i].begin() + 3, sol.amounts[i].begin());
    std::copy(states[i].begin() + 3, states[i].end(), sol.sensitivities[i].begin());
  }
  return sol;
}

namespace {

using vector5 = Eigen::Matrix<double, pk2cmt_n_pk, 1>;
using matrix5 = Eigen::Matrix<double, pk2cmt_n_pk, pk2cmt_n_pk>;

/// A subject's row, checked: its dose, observation times and concentrations.
struct subject_row {
  double dose;
  std::vector<double> times;
  const double* y;
};

/// Reads x_r = (dose, M times, M concentrations), x_i = (n); throws std::invalid_argument naming what is wrong.
subject_row checked_subject_row(const std::vector<double>& x_r, const std::vector<int>& x_i) {
  if (x_i.empty() || x_r.empty() || x_r.size() % 2 == 0)
    throw std::invalid_argument("pk2cmt: job data must be x_r = (dose, M times, M concentrations), x_i = (n); got " +
                                std::to_string(x_r.size()) + " reals and " + std::to_string(x_i.size()) + " ints");
  const int width = static_cast<int>(x_r.size() / 2);
  const int n = x_i[0];
  if (n < 0 || n > width)
    throw std::invalid_argument("pk2cmt: " + std::to_string(n) + " observations in a row of width " +
                                std::to_string(width));
  const double dose = x_r[0];
  if (!(dose > 0)) throw std::invalid_argument("pk2cmt: dose must be positive, got " + std::to_string(dose));
  subject_row row{dose, std::vector<double>(x_r.begin() + 1, x_r.begin() + 1 + n), x_r.data() + 1 + width};
  for (int i = 0; i < n; ++i) {
    if (!(row.times[i] > (i == 0 ? 0.0 : row.times[i - 1])) || !std::isfinite(row.times[i]))
      throw std::invalid_argument("pk2cmt: observation times must be positive and strictly increasing (time " +
                                  std::to_string(i) + " is " + std::to_string(row.times[i]) + ")");
    if (!(row.y[i] > 0) || !std::isfinite(row.y[i]))
      throw std::invalid_argument("pk2cmt: concentration " + std::to_string(i) + " is " + std::to_string(row.y[i]) +
                                  ", must be positive");
  }
  return row;
}

/// The observations' part: log y_i ~ Normal(log C_i, sigma), with g_i = d log C_i / d theta.
struct observation_terms {
  double ll = 0;
  vector5 d_ll = vector5::Zero();
  double d_log_sigma = 0;
  matrix5 fisher = matrix5::Zero();  ///< sum_i g_i g_i^T; J = fisher / sigma^2
  std::vector<vector5> g;
};

observation_terms observe(const subject_row& row, const pk2cmt_solution& sol, const std::array<double, pk2cmt_n_pk>& pk,
                          double log_sigma, double sigma, bool want_gradient) {
  const int n = static_cast<int>(row.times.size());
  observation_terms o;
  o.g.resize(static_cast<std::size_t>(n));
  const double log_v1 = std::log(pk[2]);
  for (int i = 0; i < n; ++i) {
    const double central = sol.amounts[i][1];
    if (!(central > 0))
      throw std::domain_error("pk2cmt: central amount " + std::to_string(central) + " at t = " +
                              std::to_string(row.times[i]) + " is not positive");
    for (int k = 0; k < pk2cmt_n_pk; ++k)
      o.g[i](k) = sol.sensitivities[i][3 * k + 1] / central - (k == 2 ? 1.0 : 0.0);
    const double log_y = std::log(row.y[i]);
    const double z = (log_y - (std::log(central) - log_v1)) / sigma;
    o.ll += -0.5 * z * z - log_sigma - log_y - half_log_two_pi;
    o.fisher.noalias() += o.g[i] * o.g[i].transpose();
    if (want_gradient) {
      o.d_log_sigma += z * z - 1;
      o.d_ll += (z / sigma) * o.g[i];
    }
  }
  return o;
}

/// d/d theta of the Laplace term: -sum_i (d g_i / d theta_l) . (W g_i) / sigma^2, where
/// d g_ik / d theta_l = s_kl / A_c - s_k s_l / A_c^2 (central compartment), subtracted from d_theta.
void laplace_theta_partials(const pk2cmt_solution& sol, const observation_terms& o, const matrix5& h_inverse,
                            double sigma, vector5& d_theta) {
  for (std::size_t i = 0; i < o.g.size(); ++i) {
    const vector5 w_g = h_inverse * o.g[i];
    const double central = sol.amounts[i][1];
    for (int l = 0; l < pk2cmt_n_pk; ++l) {
      const double s_l = sol.sensitivities[i][3 * l + 1];
      double dot = 0;
      for (int k = 0; k < pk2cmt_n_pk; ++k) {
        const double s_kl = sol.second_order[i][3 * pk2cmt_pair_index(std::min(k, l), std::max(k, l)) + 1];
        const double s_k = sol.sensitivities[i][3 * k + 1];
        dot += (s_kl / central - s_k * s_l / (central * central)) * w_g(k);
      }
      d_theta(l) -= dot / (sigma * sigma);
    }
  }
}

}  // namespace

double pk2cmt_subject_log_density(const double* phi, const double* theta, const std::vector<double>& x_r,
                                  const std::vector<int>& x_i, double* d_phi, double* d_theta) {
  const subject_row row = checked_subject_row(x_r, x_i);
  // An infinite mu or log omega would give a -inf or NaN value instead of an error.
  for (int k = 0; k < pk2cmt_n_shared; ++k)
    if (!std::isfinite(phi[k]))
      throw std::domain_error("pk2cmt: shared parameter " + std::to_string(k) + " is " + std::to_string(phi[k]));
  std::array<double, pk2cmt_n_pk> pk;
  for (int k = 0; k < pk2cmt_n_pk; ++k) pk[k] = std::exp(theta[k]);
  const double log_sigma = phi[pk2cmt_log_sigma_index];
  const double sigma = std::exp(log_sigma);
  const bool want_gradient = d_phi != nullptr || d_theta != nullptr;
  // Second-order sensitivities are integrated even for a value alone: the Laplace term needs the first
  // order, and all of them take part in step-size control, so a smaller system would change the steps and
  // the value (by ~1e-10) and a double call would disagree with a var call.
  const pk2cmt_solution sol = pk2cmt_solve(pk, row.dose, row.times, 2);
  observation_terms o = observe(row, sol, pk, log_sigma, sigma, want_gradient);

  // Random effect theta_jk ~ Normal(mu_k, omega_k): closed-form partials, no chain rule through the ODE.
  double lp = o.ll;
  vector5 omega, d_theta_v = o.d_ll;
  for (int k = 0; k < pk2cmt_n_pk; ++k) {
    const double log_omega = phi[pk2cmt_n_pk + k];
    omega(k) = std::exp(log_omega);
    const double z = (theta[k] - phi[k]) / omega(k);
    lp += -0.5 * z * z - log_omega - half_log_two_pi;
    if (d_phi != nullptr) {
      d_phi[k] = z / omega(k);
      d_phi[pk2cmt_n_pk + k] = z * z - 1;
    }
    d_theta_v(k) -= z / omega(k);
  }

  // Laplace term -1/2 log det H, H = diag(1 / omega^2) + J: the Gauss-Newton curvature of the subject's
  // joint density in theta. See the file comment for why the fit needs it.
  matrix5 h = o.fisher / (sigma * sigma);
  h.diagonal() += omega.cwiseInverse().cwiseAbs2();
  const Eigen::LLT<matrix5> llt(h);
  if (llt.info() != Eigen::Success) throw std::domain_error("pk2cmt: Laplace curvature is not positive definite");
  const matrix5 h_inverse = llt.solve(matrix5::Identity());
  lp -= llt.matrixL().toDenseMatrix().diagonal().array().log().sum();
  if (want_gradient) {
    // d/d log omega_k of -1/2 log det H = W_kk / omega_k^2 and d/d log sigma = tr(W J), W = H^-1.
    if (d_phi != nullptr) {
      for (int k = 0; k < pk2cmt_n_pk; ++k) d_phi[pk2cmt_n_pk + k] += h_inverse(k, k) / (omega(k) * omega(k));
      o.d_log_sigma += (h_inverse * o.fisher).trace() / (sigma * sigma);
    }
    laplace_theta_partials(sol, o, h_inverse, sigma, d_theta_v);
  }
  if (d_phi != nullptr) d_phi[pk2cmt_log_sigma_index] = o.d_log_sigma;
  if (d_theta != nullptr)
    for (int k = 0; k < pk2cmt_n_pk; ++k) d_theta[k] = d_theta_v(k);
  return lp;
}

std::pair<std::vector<double>, std::vector<int>> pk2cmt_pack_subject(double dose, const std::vector<double>& times,
                                                                     const std::vector<double>& concentrations,
                                                                     int width) {
  const int n = static_cast<int>(times.size());
  if (concentrations.size() != times.size() || n > width)
    throw std::invalid_argument("pk2cmt_pack_subject: " + std::to_string(times.size()) + " times, " +
                                std::to_string(concentrations.size()) + " concentrations, width " +
                                std::to_string(width));
  // Padding repeats a harmless valid value; it is never read as data since x_i[0] = n.
  std::vector<double> x_r(1 + 2 * static_cast<std::size_t>(width), 1.0);
  x_r[0] = dose;
  std::copy(times.begin(), times.end(), x_r.begin() + 1);
  std::copy(concentrations.begin(), concentrations.end(), x_r.begin() + 1 + width);
  return {std::move(x_r), std::vector<int>{n}};
}

pk2cmt_data simulate_pk2cmt(int n_subjects, std::uint64_t seed) {
  if (n_subjects < 0) throw std::invalid_argument("simulate_pk2cmt: negative number of subjects");
  pk2cmt_data d;
  d.true_phi.resize(pk2cmt_n_shared);
  for (int k = 0; k < pk2cmt_n_pk; ++k) {
    d.true_phi(k) = std::log(pk2cmt_true_medians[k]);
    d.true_phi(pk2cmt_n_pk + k) = std::log(pk2cmt_true_omegas[k]);
  }
  d.true_phi(pk2cmt_log_sigma_index) = std::log(pk2cmt_true_sigma);

  static constexpr double doses[] = {50.0, 100.0, 200.0};
  const int width = static_cast<int>(pk2cmt_schedule.size());
  splitmix64 rng(seed);
  for (int j = 0; j < n_subjects; ++j) {
    Eigen::VectorXd eta(pk2cmt_n_pk), theta(pk2cmt_n_pk);
    std::array<double, pk2cmt_n_pk> pk;
    for (int k = 0; k < pk2cmt_n_pk; ++k) {
      eta(k) = rng.normal();
      theta(k) = d.true_phi(k) + pk2cmt_true_omegas[k] * eta(k);
      pk[k] = std::exp(theta(k));
    }
    const double dose = doses[j % 3];
    const pk2cmt_solution sol = pk2cmt_solve(pk, dose, pk2cmt_schedule, 0);
    std::vector<double> observed(pk2cmt_schedule.size());
    for (std::size_t i = 0; i < observed.size(); ++i)
      observed[i] = sol.amounts[i][1] / pk[2] * std::exp(pk2cmt_true_sigma * rng.normal());
    auto [x_r, x_i] = pk2cmt_pack_subject(dose, pk2cmt_schedule, observed, width);
    d.x_r.push_back(std::move(x_r));
    d.x_i.push_back(std::move(x_i));
    d.true_eta.push_back(std::move(eta));
    d.true_theta.push_back(std::move(theta));
  }
  return d;
}

Eigen::VectorXd pk2cmt_model::initial() const {
  Eigen::VectorXd x(size());
  for (int k = 0; k < pk2cmt_n_pk; ++k) {
    x(k) = std::log(prior_medians[k]);
    x(pk2cmt_n_pk + k) = std::log(initial_omega);
  }
  x(pk2cmt_log_sigma_index) = std::log(prior_sigma);
  for (int j = 0; j < n_subjects(); ++j)
    x.segment(pk2cmt_n_shared + pk2cmt_n_pk * j, pk2cmt_n_pk) = x.head(pk2cmt_n_pk);
  return x;
}

Eigen::VectorXd pk2cmt_model::true_parameters() const {
  if (data_.true_phi.size() != pk2cmt_n_shared || static_cast<int>(data_.true_theta.size()) != n_subjects())
    throw std::logic_error("pk2cmt_model: the true parameters of these data are unknown");
  Eigen::VectorXd x(size());
  x.head(pk2cmt_n_shared) = data_.true_phi;
  for (int j = 0; j < n_subjects(); ++j)
    x.segment(pk2cmt_n_shared + pk2cmt_n_pk * j, pk2cmt_n_pk) = data_.true_theta[j];
  return x;
}

double pk2cmt_model::log_density_gradient(const Eigen::VectorXd& x, Eigen::VectorXd& gradient) const {
  double fx = 0;
  maprect::gradient([this](const vector_v& v) { return log_density(v); }, x, fx, gradient);
  return fx;
}

namespace {
std::vector<std::pair<std::string, double>> natural_scale(const Eigen::VectorXd& phi) {
  std::vector<std::pair<std::string, double>> out;
  for (int k = 0; k < pk2cmt_n_pk; ++k) out.emplace_back(pk2cmt_pk_names[k], std::exp(phi(k)));
  for (int k = 0; k < pk2cmt_n_pk; ++k)
    out.emplace_back(std::string("omega_") + pk2cmt_pk_names[k], std::exp(phi(pk2cmt_n_pk + k)));
  out.emplace_back("sigma", std::exp(phi(pk2cmt_log_sigma_index)));
  return out;
}
}  // namespace

std::vector<std::pair<std::string, double>> pk2cmt_model::estimates(const Eigen::VectorXd& params) const {
  if (params.size() < pk2cmt_n_shared)
    throw std::invalid_argument("pk2cmt_model::estimates: " + std::to_string(params.size()) + " parameters");
  return natural_scale(params.head(pk2cmt_n_shared));
}

std::vector<std::pair<std::string, double>> pk2cmt_model::truth() const {
  if (data_.true_phi.size() != pk2cmt_n_shared)
    throw std::logic_error("pk2cmt_model: the true parameters of these data are unknown");
  return natural_scale(data_.true_phi);
}

}  // namespace maprect::models
