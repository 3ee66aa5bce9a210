// eight_schools on the model interface (--model eight_schools): the Stan program it transcribes is
//
//   data { int<lower=1> J; array[J] real y; array[J] real<lower=0> sigma; }
//   parameters { real mu; real<lower=0> tau; vector[J] theta_tilde; }
//   model { mu ~ normal(0, 5); tau ~ cauchy(0, 5); theta_tilde ~ normal(0, 1);
//           y ~ normal(mu + tau * theta_tilde, sigma); }         // here: one map_rect job per school
//   generated quantities { vector[J] theta = mu + tau * theta_tilde; }
#include <maprect/model.hpp>

#include "eight_schools.hpp"

namespace maprect::models {

/// The non-centred eight schools model, with its data from JSON (J, y, sigma) or embedded.
/// The reals `name` of `data`, each > 0; throws data_error naming the variable, the element and its value.
inline std::vector<double> positive_reals(const model_data& data, const std::string& name, int n) {
  std::vector<double> values = data.reals(name, n);
  for (std::size_t j = 0; j < values.size(); ++j)
    if (!(values[j] > 0))
      throw data_error(data.where(name) + ": element " + std::to_string(j + 1) + " is " + std::to_string(values[j]) +
                       ", but must be > 0");
  return values;
}

class eight_schools {
 public:
  /// Stan's 0.8 leaves about 2 divergences per 10,000 draws in the funnel; see eight_schools_default_delta.
  static constexpr double adapt_delta = eight_schools_default_delta;

  /// Reads J, y[J] and sigma[J] (> 0); each school's (y, sigma) becomes its map_rect row.
  explicit eight_schools(const model_data& data)
      : J_(data.integer("J", 1)),
        x_r_(eight_schools_rows(data.reals("y", J_), positive_reals(data, "sigma", J_))),
        x_i_(static_cast<std::size_t>(J_)) {}

  /// mu, tau > 0, theta_tilde[J].
  void parameters(parameter_list& p) const {
    p.real("mu");
    p.real("tau").lower(0);
    p.vector("theta_tilde", J_);
  }

  /// Stan's lp__ without the Jacobian (maprect adds log tau): priors, and the schools' likelihood by map_rect.
  template <class T>
  T log_density(const parameter_values<T>& p) const {
    using std::log1p;
    const T mu = p.real("mu"), tau = p.real("tau");
    const Eigen::Matrix<T, Eigen::Dynamic, 1> theta_tilde = p.vector("theta_tilde");
    Eigen::Matrix<T, Eigen::Dynamic, 1> phi(2);
    phi << mu, tau;
    std::vector<Eigen::Matrix<T, Eigen::Dynamic, 1>> jobs(static_cast<std::size_t>(J_));
    for (int j = 0; j < J_; ++j) jobs[j] = theta_tilde.segment(j, 1);
    T lp = map_rect<eight_schools_call_id, eight_schools_job>(phi, jobs, x_r_, x_i_).sum();
    lp += -0.5 * (mu / 5.0) * (mu / 5.0);                // mu ~ normal(0, 5)
    lp += -log1p((tau / 5.0) * (tau / 5.0));             // tau ~ cauchy(0, 5), half by its bound
    for (int j = 0; j < J_; ++j) lp += -0.5 * theta_tilde(j) * theta_tilde(j);  // theta_tilde ~ normal(0, 1)
    return lp;
  }

  /// theta = mu + tau * theta_tilde.
  void generated_quantities(const parameter_values<double>& p, quantity_writer& out) const {
    const Eigen::VectorXd theta = (p.real("tau") * p.vector("theta_tilde")).array() + p.real("mu");
    out.vector("theta", theta);
  }

  /// One line for the report.
  std::string description() const {
    return "non-centred, " + std::to_string(J_) + " schools, one map_rect job each";
  }

  /// Rubin's eight schools (--jobs and --points do not apply).
  static nlohmann::json embedded_data(int jobs, int points) {
    if (jobs > 0) throw std::invalid_argument("--jobs: eight_schools has its 8 schools, one job each");
    if (points > 0) throw std::invalid_argument("--points sets logreg's embedded data, not eight_schools's");
    return {{"J", eight_schools_n},
            {"y", std::vector<double>(eight_schools_y.begin(), eight_schools_y.end())},
            {"sigma", std::vector<double>(eight_schools_sigma.begin(), eight_schools_sigma.end())}};
  }

 private:
  int J_;
  std::vector<std::vector<double>> x_r_;
  std::vector<std::vector<int>> x_i_;
};

}  // namespace maprect::models

MAPRECT_REGISTER_MODEL(eight_schools, maprect::models::eight_schools);
