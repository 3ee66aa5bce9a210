// logreg on the model interface (--model logreg): the Stan program it transcribes is
//
//   data { int<lower=1> N; int<lower=1> J; array[N] int<lower=1, upper=J> group;
//          array[N] int<lower=0, upper=1> y; vector[N] x; }
//   parameters { real alpha; real beta; array[J] vector[2] effects; }      // effects[j] = (u_j, v_j)
//   model { alpha ~ normal(0, 2.5); beta ~ normal(0, 2.5); for (j in 1:J) effects[j] ~ normal(0, 1);
//           target += sum(map_rect(group_log_likelihood, [alpha, beta]', effects, x_r, x_i)); }
//
// without the normals' constants. --data also takes logreg's CSV (group,y,x), turned into the same variables.
#include <maprect/model.hpp>

#include "logreg.hpp"

namespace maprect::models {

namespace {

/// logreg_data (packed groups) as CmdStan JSON: N, J, group, y, x, and the truth when simulated.
nlohmann::json logreg_json(const logreg_data& d) {
  std::vector<int> group, y;
  std::vector<double> x;
  for (std::size_t j = 0; j < d.x_r.size(); ++j)
    for (int i = 0; i < d.x_i[j][0]; ++i) {
      group.push_back(static_cast<int>(j) + 1);
      y.push_back(d.x_i[j][1 + i]);
      x.push_back(d.x_r[j][i]);
    }
  nlohmann::json out = {{"N", group.size()}, {"J", d.x_r.size()}, {"group", group}, {"y", y}, {"x", x}};
  if (d.true_parameters.size() >= 2)
    out["truth"] = {{"alpha", d.true_parameters(0)}, {"beta", d.true_parameters(1)}};
  return out;
}

/// The points of each group 1..J, in the order of the data; throws data_error for a group without points.
logreg_data logreg_groups(const model_data& data) {
  const int N = data.integer("N", 1), J = data.integer("J", 1);
  // Every group needs a point: more groups than points is an error before J groups are allocated.
  if (J > N)
    throw data_error(data.where("J") + ": " + std::to_string(J) + " groups, but N = " + std::to_string(N) +
                     " points: every group needs at least one");
  const std::vector<int> group = data.integers("group", N, 1, J), y = data.integers("y", N, 0, 1);
  const std::vector<double> x = data.reals("x", N);
  std::vector<std::vector<double>> xs(static_cast<std::size_t>(J));
  std::vector<std::vector<int>> ys(static_cast<std::size_t>(J));
  for (int i = 0; i < N; ++i) xs[group[i] - 1].push_back(x[i]), ys[group[i] - 1].push_back(y[i]);
  for (int j = 0; j < J; ++j)
    if (xs[j].empty()) throw data_error(data.where("group") + ": group " + std::to_string(j + 1) + " has no points");
  return pack_logreg_groups(xs, ys);
}

}  // namespace

/// Hierarchical logistic regression, one map_rect job per group (call id 1, logreg_job).
class logreg {
 public:
  /// Reads N, J, group, y, x and packs the groups as map_rect rows, shipped once (a job_data).
  explicit logreg(const model_data& data) : data_(logreg_groups(data)), jobs_(data_.x_r, data_.x_i) {
    if (data.has("truth"))
      truth_ = data.named_reals("truth");
  }

  /// alpha, beta, effects[J] of (u_j, v_j): their storage order is the standard model's (alpha, beta, u_1, v_1, ...).
  void parameters(parameter_list& p) const {
    p.real("alpha");
    p.real("beta");
    p.vectors("effects", J(), logreg_n_own);
  }

  /// The groups' log likelihood by map_rect, plus the priors.
  template <class T>
  T log_density(const parameter_values<T>& p) const {
    const T alpha = p.real("alpha"), beta = p.real("beta");
    Eigen::Matrix<T, Eigen::Dynamic, 1> phi(logreg_n_shared);
    phi << alpha, beta;
    const std::vector<Eigen::Matrix<T, Eigen::Dynamic, 1>> effects = p.vectors("effects");
    T lp = map_rect<logreg_call_id, logreg_job>(phi, effects, jobs_).sum();
    const double fixed_precision = 1.0 / (logreg_model::prior_fixed_sd * logreg_model::prior_fixed_sd);
    const double effect_precision = 1.0 / (logreg_model::prior_effect_sd * logreg_model::prior_effect_sd);
    lp += -0.5 * fixed_precision * (alpha * alpha + beta * beta);
    T sum_sq = 0;
    for (const auto& e : effects)
      for (Eigen::Index k = 0; k < e.size(); ++k) sum_sq += e(k) * e(k);
    lp += -0.5 * effect_precision * sum_sq;
    return lp;
  }

  /// One line for the report.
  std::string description() const { return std::to_string(J()) + " groups, one map_rect job each"; }
  /// alpha and beta of simulated data.
  std::vector<std::pair<std::string, double>> truth() const { return truth_; }

  /// The embedded simulation: --jobs groups (default 8) of --points points (default 200).
  static nlohmann::json embedded_data(int jobs, int points) {
    return logreg_json(simulate_logreg(jobs > 0 ? jobs : 8, points > 0 ? points : 200));
  }
  /// logreg's CSV (header group,y,x; groups by first appearance) as the same JSON variables.
  static nlohmann::json read_csv(const std::string& path) { return logreg_json(read_logreg_csv(path)); }

 private:
  int J() const { return static_cast<int>(data_.x_r.size()); }
  logreg_data data_;
  job_data jobs_;
  std::vector<std::pair<std::string, double>> truth_;
};

}  // namespace maprect::models

MAPRECT_REGISTER_MODEL(logreg, maprect::models::logreg);
