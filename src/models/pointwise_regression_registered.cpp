// pointwise_regression on the model interface (--model pointwise_regression): the Stan program it transcribes is
//
//   data { int<lower=1> G; int<lower=1> K; int<lower=1> C; matrix[G * K, C] x; vector[G * K] y;
//          real<lower=0> sigma; real<lower=0> tau; }
//   parameters { real mu; vector[C] beta; vector[G] alpha; }
//   model { mu ~ normal(0, 5); beta ~ normal(0, 2.5); alpha ~ normal(0, tau);
//           target += sum(map_rect(observation_log_liks, append_row(mu, beta), alpha_g, x_r, x_i)); }
//   generated quantities { vector[G * K] log_lik;     // observation n is in group (n - 1) %/% K + 1
//     for (n in 1:G * K) log_lik[n] = normal_lpdf(y[n] | mu + alpha[(n - 1) %/% K + 1] + x[n] * beta, sigma); }
//
// without the priors' constants. log_lik is computed by the jobs' own kernel, so it equals the map_rect
// outputs bit for bit.
#include <maprect/model.hpp>

#include <limits>

#include "pointwise_regression.hpp"

namespace maprect::models {

namespace {

/// Covariates of the embedded data: `maprect sample` and `fit` size it by --jobs and --points only.
constexpr int embedded_covariates = 4;

/// The data as CmdStan JSON, with the truth (mu and beta) when simulated.
nlohmann::json pointwise_regression_json(const pointwise_regression_data& d) {
  std::vector<std::vector<double>> x(static_cast<std::size_t>(d.x.rows()));
  for (Eigen::Index n = 0; n < d.x.rows(); ++n)
    for (Eigen::Index c = 0; c < d.x.cols(); ++c) x[n].push_back(d.x(n, c));
  nlohmann::json out = {{"G", d.G}, {"K", d.K}, {"C", d.C}, {"x", x},
                        {"y", std::vector<double>(d.y.data(), d.y.data() + d.y.size())},
                        {"sigma", d.sigma}, {"tau", d.tau}};
  if (d.true_parameters.size() > 0) {
    nlohmann::json truth = {{"mu", d.true_parameters(0)}};
    for (int c = 0; c < d.C; ++c) truth["beta." + std::to_string(c + 1)] = d.true_parameters(1 + c);
    out["truth"] = truth;
  }
  return out;
}

/// A real `name` of `data` that must be > 0; throws data_error naming it.
double positive_real(const model_data& data, const std::string& name) {
  const double v = data.real(name);
  if (!(v > 0)) throw data_error(data.where(name) + ": " + std::to_string(v) + ", but must be > 0");
  return v;
}

/// G, K, C, x[G K, C], y[G K], sigma > 0, tau > 0.
pointwise_regression_data read_data(const model_data& data) {
  pointwise_regression_data d;
  d.G = data.integer("G", 1);
  d.K = data.integer("K", 1);
  d.C = data.integer("C", 1);
  const long N = static_cast<long>(d.G) * d.K;
  if (N > std::numeric_limits<int>::max())
    throw data_error(data.where("K") + ": G * K = " + std::to_string(N) + " observations is too many");
  d.x = data.matrix("x", static_cast<int>(N), d.C);
  d.y = data.vector("y", static_cast<int>(N));
  d.sigma = positive_real(data, "sigma");
  d.tau = positive_real(data, "tau");
  return d;
}

}  // namespace

/// Hierarchical linear regression with each observation's log likelihood as a map_rect output (call id 4).
class pointwise_regression {
 public:
  /// Reads the data and packs each group as a map_rect row, shipped once (a job_data).
  explicit pointwise_regression(const model_data& data)
      : data_(read_data(data)), jobs_(pointwise_regression_job_data(data_)) {
    if (data.has("truth")) truth_ = data.named_reals("truth");
  }

  /// mu, beta[C], alpha[G]: the packed order of the closed forms.
  void parameters(parameter_list& p) const {
    p.real("mu");
    p.vector("beta", data_.C);
    p.vector("alpha", data_.G);
  }

  /// The observations' log likelihoods by map_rect (K outputs per group), summed, plus the priors.
  template <class T>
  T log_density(const parameter_values<T>& p) const {
    return pointwise_regression_log_density(data_, jobs_, p.all());
  }

  /// log_lik[G K]: each observation's log likelihood at the draw, for LOO.
  void generated_quantities(const parameter_values<double>& p, quantity_writer& out) const {
    out.vector("log_lik", pointwise_regression_log_lik(data_, p.all()));
  }

  /// One line for the report.
  std::string description() const {
    return std::to_string(data_.G) + " groups of " + std::to_string(data_.K) + " observations, " +
           std::to_string(data_.C) + " covariates, one map_rect job of " + std::to_string(data_.K) +
           " outputs per group";
  }
  /// mu and beta of simulated data.
  std::vector<std::pair<std::string, double>> truth() const { return truth_; }

  /// The simulation: --jobs groups (default 8) of --points observations (default 50), 4 covariates.
  static nlohmann::json embedded_data(int jobs, int points) {
    return pointwise_regression_json(
        simulate_pointwise_regression(jobs > 0 ? jobs : 8, points > 0 ? points : 50, embedded_covariates));
  }

 private:
  pointwise_regression_data data_;
  job_data jobs_;
  std::vector<std::pair<std::string, double>> truth_;
};

}  // namespace maprect::models

MAPRECT_REGISTER_MODEL(pointwise_regression, maprect::models::pointwise_regression);
