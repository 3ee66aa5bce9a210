#pragma once
/// \file logreg: hierarchical logistic regression, one map_rect job per group; also the job functors of the
/// standard benchmark model (docs/benchmark-model.md), which is the same likelihood on equal-sized groups.
///
/// Model. Group j has points (x_ji, y_ji), y in {0, 1}:
///   eta_ji = (alpha + u_j) + (beta + v_j) * x_ji,   y_ji ~ Bernoulli(inv_logit(eta_ji))
///   alpha, beta ~ Normal(0, 2.5),   u_j, v_j ~ Normal(0, 1)
/// Parameters are packed as (alpha, beta, u_0, v_0, u_1, v_1, ...), the gradient order of the standard model.
/// map_rect: shared phi = (alpha, beta), job theta_j = (u_j, v_j), one output per job: the group's log
/// likelihood. Priors are logreg_model's.
///
/// Ragged groups (data layout of logreg_job). map_rect needs rows of equal length, so every group is padded to
/// the widest group's size M:
///   x_i[j] = (n_j, y_0, ..., y_{n_j - 1}, 0, ..., 0)    1 + M ints
///   x_r[j] = (x_0, ..., x_{n_j - 1}, 0, ..., 0)         M reals
/// Only the first n_j points count. Padding keeps one call site with one plan for any group sizes; it costs
/// (M - n_j) idle values per group in the data shipped once to the workers, never per call.
///
/// Kernels. scalar: a loop of scalar AD operations, four tape nodes per point. vector: the group's whole log
/// likelihood computed in double with its hand-derived gradient (d/d(alpha + u) = sum r, d/d(beta + v) =
/// sum r x with r = y - inv_logit(eta)), as one precomputed-gradients node.
#include <maprect/map_rect.hpp>

#include <Eigen/Dense>
#include <cstdint>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace maprect::models {

/// Call site of logreg_job (registered in logreg.cpp).
inline constexpr int logreg_call_id = 1;
/// Shared parameters per call: alpha, beta.
inline constexpr int logreg_n_shared = 2;
/// Job parameters per group: u_j, v_j.
inline constexpr int logreg_n_own = 2;

/// How a functor differentiates a group's log likelihood.
enum class logreg_kernel {
  scalar,  ///< per-point scalar AD operations (about four nodes per point)
  vector,  ///< one node per group with the hand-derived gradient
};

/// Where a functor finds a group's points in (x_r, x_i).
enum class logreg_layout {
  ragged,    ///< x_i = (n, y..., padding), x_r = (x..., padding): logreg_job
  standard,  ///< x_i = y, x_r = x, all points count: the standard benchmark model
};

/// Log likelihood of n points at intercept a = alpha + u and slope b = beta + v, in double. If d_a and d_b are
/// not null, writes the partials with respect to a and b there. y values other than 0 count as 1.
double logreg_group_log_likelihood(double a, double b, const double* x, const int* y, int n, double* d_a,
                                   double* d_b);

/// The same log likelihood as a loop of scalar operations on T (double or var).
template <class T>
T logreg_group_log_likelihood_scalar(const T& a, const T& b, const double* x, const int* y, int n) {
  T lp = 0;
  for (int i = 0; i < n; ++i) {
    const T eta = a + b * x[i];
    lp += y[i] ? log_inv_logit(eta) : log1m_inv_logit(eta);
  }
  return lp;
}

/// The points of one job in a given layout: pointers into (x_r, x_i) and their count. Throws
/// std::invalid_argument for rows that do not fit the layout.
void logreg_group_view(logreg_layout layout, const std::vector<double>& x_r, const std::vector<int>& x_i,
                       const double*& x, const int*& y, int& n);

/// map_rect functor of the logistic likelihood: one output per job, the group's log likelihood at
/// phi = (alpha, beta) and theta = (u, v).
template <logreg_kernel Kernel, logreg_layout Layout>
struct logreg_functor {
  /// Log likelihood of the group in (x_r, x_i).
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i,
                                                                     std::ostream* /*msgs*/) const {
    using R = return_type_t<T1, T2>;
    if (phi.size() != logreg_n_shared || theta.size() != logreg_n_own)
      throw std::invalid_argument("logreg: expected 2 shared and 2 job parameters, got " +
                                  std::to_string(phi.size()) + " and " + std::to_string(theta.size()));
    const double* x = nullptr;
    const int* y = nullptr;
    int n = 0;
    logreg_group_view(Layout, x_r, x_i, x, y, n);
    Eigen::Matrix<R, Eigen::Dynamic, 1> out(1);
    if constexpr (Kernel == logreg_kernel::scalar || std::is_same_v<R, double>) {
      const R a = phi(0) + theta(0);
      const R b = phi(1) + theta(1);
      if constexpr (std::is_same_v<R, double>)
        out(0) = logreg_group_log_likelihood(a, b, x, y, n, nullptr, nullptr);
      else
        out(0) = logreg_group_log_likelihood_scalar(a, b, x, y, n);
    } else {
      double d_a = 0, d_b = 0;
      const double lp = logreg_group_log_likelihood(value_of(phi(0)) + value_of(theta(0)),
                                                    value_of(phi(1)) + value_of(theta(1)), x, y, n, &d_a, &d_b);
      // Reused per thread: a steady-state call allocates only on the tape.
      static thread_local std::vector<var> operands;
      static thread_local std::vector<double> partials;
      operands.clear();
      partials.clear();
      if constexpr (is_var_v<T1>) {
        operands.insert(operands.end(), {phi(0), phi(1)});
        partials.insert(partials.end(), {d_a, d_b});
      }
      if constexpr (is_var_v<T2>) {
        operands.insert(operands.end(), {theta(0), theta(1)});
        partials.insert(partials.end(), {d_a, d_b});
      }
      out(0) = precomputed_gradients(lp, operands, partials);
    }
    return out;
  }
};

/// The functor of call site 1: vector kernel on the ragged layout.
using logreg_job = logreg_functor<logreg_kernel::vector, logreg_layout::ragged>;
/// Standard benchmark model, scalar kernel (register it under a call id of your own).
using logreg_standard_scalar_job = logreg_functor<logreg_kernel::scalar, logreg_layout::standard>;
/// Standard benchmark model, vector kernel (register it under a call id of your own).
using logreg_standard_vector_job = logreg_functor<logreg_kernel::vector, logreg_layout::standard>;

/// The standard benchmark model at J jobs of N points (docs/benchmark-model.md): data in the standard
/// layout and the parameter values every implementation measures at.
struct logreg_standard_problem {
  std::vector<std::vector<double>> x_r;  ///< x_r[j][i] = sin(0.37 i + j)
  std::vector<std::vector<int>> x_i;     ///< x_i[j][i] = (7 i + 3 j) % 2
  Eigen::VectorXd params;                ///< packed (alpha, beta, u_0, v_0, ...) = (0.3, -0.5, 0.1 sin(j+1), 0.05 cos(j+1))
};

/// The standard benchmark model at J jobs of N points.
logreg_standard_problem make_logreg_standard_problem(int J, int N);

/// Closed-form log likelihood of a standard-layout problem at packed params; writes the gradient (same order).
double logreg_standard_closed_form(const logreg_standard_problem& problem, const Eigen::VectorXd& params,
                                   Eigen::VectorXd& gradient);

/// Groups of a logistic regression in logreg_job's layout, with their names and, for simulated data, the truth.
struct logreg_data {
  std::vector<std::vector<double>> x_r;  ///< per group: x values, zero-padded to the widest group
  std::vector<std::vector<int>> x_i;     ///< per group: point count, y values, zero-padded
  std::vector<std::string> group_names;  ///< per group: its label (CSV) or its index (simulated)
  Eigen::VectorXd true_parameters;       ///< packed parameters the data came from; empty when unknown
};

/// Packs groups of points (x[j], y[j] of equal length per group) into logreg_job's padded layout. Throws
/// std::invalid_argument on mismatched sizes, no groups, or an empty group.
logreg_data pack_logreg_groups(const std::vector<std::vector<double>>& x, const std::vector<std::vector<int>>& y,
                               std::vector<std::string> group_names = {});

/// Seed of the embedded data.
inline constexpr std::uint64_t logreg_default_seed = 0x10c5e6d00d5ull;
/// True alpha and beta of the embedded data.
inline constexpr double logreg_true_alpha = 0.3, logreg_true_beta = -0.5;
/// Group effects of the embedded data are drawn uniform on (-spread, spread), then centred.
inline constexpr double logreg_true_effect_spread = 0.8;

/// Simulates n_groups groups of n_points points: x uniform on (-2, 2), truths as above, y ~ Bernoulli.
/// Deterministic (splitmix64 and plain arithmetic): equal arguments give equal data on every platform.
logreg_data simulate_logreg(int n_groups, int n_points, std::uint64_t seed = logreg_default_seed);

/// Reads a CSV with a header naming the columns group, y, x (any order) and one point per row. Groups are
/// labels, ordered by first appearance, of any sizes, in any row order. Throws csv_error (see csv.hpp) naming
/// line and column for malformed content, std::runtime_error for a file that cannot be read.
logreg_data read_logreg_csv(const std::string& path);
/// The same from a stream; `source` names it in error messages.
logreg_data parse_logreg_csv(std::istream& in, const std::string& source);

/// The full model for a fit: log density = sum of the groups' log likelihoods by map_rect (call id 1) plus
/// the priors in the file comment. All parameters are unconstrained.
class logreg_model {
 public:
  /// The model of the embedded data: n_groups groups of n_points points.
  explicit logreg_model(int n_groups = 8, int n_points = 200) : logreg_model(simulate_logreg(n_groups, n_points)) {}
  /// The model of given data.
  explicit logreg_model(logreg_data data) : data_(std::move(data)), jobs_(data_.x_r, data_.x_i) {}

  /// Number of groups J.
  int n_groups() const { return static_cast<int>(data_.x_r.size()); }
  /// Number of parameters, 2 + 2 J.
  int size() const { return logreg_n_shared + logreg_n_own * n_groups(); }
  /// The data.
  const logreg_data& data() const { return data_; }

  /// Starting point: all zero.
  Eigen::VectorXd initial() const { return Eigen::VectorXd::Zero(size()); }
  /// Log density at packed parameters (double or var).
  template <class T>
  T log_density(const Eigen::Matrix<T, Eigen::Dynamic, 1>& params) const;

  /// alpha, beta, the sds of the group effects u and v, and u, v of the first few groups.
  std::vector<std::pair<std::string, double>> estimates(const Eigen::VectorXd& params) const;
  /// The same names with the values the data were simulated from; empty when unknown (CSV data).
  std::vector<std::pair<std::string, double>> truth() const;

  /// Prior sd of alpha and beta.
  static constexpr double prior_fixed_sd = 2.5;
  /// Prior sd of u_j and v_j.
  static constexpr double prior_effect_sd = 1.0;

 private:
  logreg_data data_;
  job_data jobs_;  ///< the rows of data_, built once: the cluster ships them once and never checks them
};

template <class T>
T logreg_model::log_density(const Eigen::Matrix<T, Eigen::Dynamic, 1>& params) const {
  if (params.size() != size())
    throw std::invalid_argument("logreg_model: " + std::to_string(params.size()) + " parameters, expected " +
                                std::to_string(size()));
  const int J = n_groups();
  const Eigen::Matrix<T, Eigen::Dynamic, 1> phi = params.head(logreg_n_shared);
  std::vector<Eigen::Matrix<T, Eigen::Dynamic, 1>> theta(static_cast<std::size_t>(J));
  for (int j = 0; j < J; ++j) theta[j] = params.segment(logreg_n_shared + logreg_n_own * j, logreg_n_own);

  T lp = map_rect<logreg_call_id, logreg_job>(phi, theta, jobs_).sum();
  // Normal log densities without their constants: a fit needs none.
  const double fixed_precision = 1.0 / (prior_fixed_sd * prior_fixed_sd);
  const double effect_precision = 1.0 / (prior_effect_sd * prior_effect_sd);
  lp += -0.5 * fixed_precision * (params(0) * params(0) + params(1) * params(1));
  T sum_sq = 0;
  for (Eigen::Index i = logreg_n_shared; i < params.size(); ++i) sum_sq += params(i) * params(i);
  lp += -0.5 * effect_precision * sum_sq;
  return lp;
}

}  // namespace maprect::models
