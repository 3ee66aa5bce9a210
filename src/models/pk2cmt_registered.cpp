// pk2cmt on the model interface (--model pk2cmt): the population two-compartment model of pk2cmt.hpp. Data:
//
//   data { int<lower=1> S; int<lower=1> N; vector<lower=0>[S] dose; array[N] int<lower=1, upper=S> subject;
//          vector<lower=0>[N] time; vector<lower=0>[N] conc; }      // observations in time order per subject
//   parameters { real mu_CL; ... real mu_ka; real log_omega_CL; ... real log_omega_ka; real log_sigma;
//                array[S] vector[5] theta; }                        // theta[j] = log(CL, Q, V1, V2, ka)
//   generated quantities { real CL = exp(mu_CL); ...; real omega_CL = exp(log_omega_CL); ...; real sigma; }
#include <maprect/model.hpp>

#include <algorithm>

#include "pk2cmt.hpp"

namespace maprect::models {

namespace {

/// Names of phi's 11 values, in order: mu_CL ... mu_ka, log_omega_CL ... log_omega_ka, log_sigma.
std::vector<std::string> pk2cmt_phi_names() {
  std::vector<std::string> names;
  for (const char* prefix : {"mu_", "log_omega_"})
    for (const char* pk : pk2cmt_pk_names) names.push_back(std::string(prefix) + pk);
  names.push_back("log_sigma");
  return names;
}

/// A simulated study as CmdStan JSON, with the true population values on the natural scale.
nlohmann::json pk2cmt_json(const pk2cmt_data& d, const std::vector<std::pair<std::string, double>>& truth) {
  std::vector<double> dose, time, conc;
  std::vector<int> subject;
  for (std::size_t j = 0; j < d.x_r.size(); ++j) {
    const int n = d.x_i[j][0], width = static_cast<int>((d.x_r[j].size() - 1) / 2);
    dose.push_back(d.x_r[j][0]);
    for (int i = 0; i < n; ++i) {
      subject.push_back(static_cast<int>(j) + 1);
      time.push_back(d.x_r[j][1 + i]);
      conc.push_back(d.x_r[j][1 + width + i]);
    }
  }
  nlohmann::json out = {{"S", dose.size()}, {"N", subject.size()}, {"dose", dose},
                        {"subject", subject}, {"time", time}, {"conc", conc}};
  for (const auto& [name, value] : truth) out["truth"][name] = value;
  return out;
}

/// Each subject's observations as a map_rect row (pk2cmt_pack_subject), padded to the largest subject's count.
pk2cmt_data pk2cmt_subjects(const model_data& data) {
  const int S = data.integer("S", 1), N = data.integer("N", 1);
  const std::vector<double> dose = data.reals("dose", S), time = data.reals("time", N), conc = data.reals("conc", N);
  const std::vector<int> subject = data.integers("subject", N, 1, S);
  std::vector<std::vector<double>> times(static_cast<std::size_t>(S)), concs(static_cast<std::size_t>(S));
  for (int i = 0; i < N; ++i) times[subject[i] - 1].push_back(time[i]), concs[subject[i] - 1].push_back(conc[i]);
  std::size_t width = 0;
  for (int j = 0; j < S; ++j) {
    if (times[j].empty()) throw data_error(data.where("subject") + ": subject " + std::to_string(j + 1) + " has no observations");
    if (!std::is_sorted(times[j].begin(), times[j].end()) || !(times[j][0] > 0))
      throw data_error(data.where("time") + ": subject " + std::to_string(j + 1) + "'s times must be > 0 and increasing");
    width = std::max(width, times[j].size());
  }
  pk2cmt_data d;
  for (int j = 0; j < S; ++j) {
    auto [x_r, x_i] = pk2cmt_pack_subject(dose[j], times[j], concs[j], static_cast<int>(width));
    d.x_r.push_back(std::move(x_r));
    d.x_i.push_back(std::move(x_i));
  }
  return d;
}

}  // namespace

/// Population two-compartment PK, one map_rect job per subject (call id 2, pk2cmt_job).
class pk2cmt {
 public:
  /// Reads S, N, dose, subject, time, conc.
  explicit pk2cmt(const model_data& data) : model_(pk2cmt_subjects(data)) {
    if (data.has("truth"))
      truth_ = data.named_reals("truth");
  }

  /// phi's 11 reals, then theta[S] of 5: the packing of pk2cmt_model.
  void parameters(parameter_list& p) const {
    for (const std::string& name : pk2cmt_phi_names()) p.real(name);
    p.vectors("theta", model_.n_subjects(), pk2cmt_n_pk);
  }

  /// The subjects by map_rect (likelihood, random effects, Laplace term), plus the priors of pk2cmt_model.
  template <class T>
  T log_density(const parameter_values<T>& p) const {
    const std::vector<std::string> names = pk2cmt_phi_names();
    Eigen::Matrix<T, Eigen::Dynamic, 1> phi(pk2cmt_n_shared);
    for (int k = 0; k < pk2cmt_n_shared; ++k) phi(k) = p.real(names[k]);
    T lp = map_rect<pk2cmt_call_id, pk2cmt_job>(phi, p.vectors("theta"), model_.jobs()).sum();
    for (int k = 0; k < pk2cmt_n_pk; ++k) {
      lp += normal_log_density(phi(k), std::log(pk2cmt_model::prior_medians[k]), pk2cmt_model::prior_mu_sd);
      lp += normal_log_density(phi(pk2cmt_n_pk + k), std::log(pk2cmt_model::prior_omega),
                               pk2cmt_model::prior_log_scale_sd);
    }
    lp += normal_log_density(phi(pk2cmt_log_sigma_index), std::log(pk2cmt_model::prior_sigma),
                             pk2cmt_model::prior_log_scale_sd);
    return lp;
  }

  /// The population values on the natural scale: CL ... ka, omega_CL ... omega_ka, sigma.
  void generated_quantities(const parameter_values<double>& p, quantity_writer& out) const {
    const std::vector<std::string> names = pk2cmt_phi_names();
    Eigen::VectorXd phi(pk2cmt_n_shared);
    for (int k = 0; k < pk2cmt_n_shared; ++k) phi(k) = p.real(names[k]);
    for (const auto& [name, value] : model_.estimates(phi)) out.real(name, value);
  }

  /// One line for the report.
  std::string description() const {
    return std::to_string(model_.n_subjects()) + " subjects, one map_rect job each";
  }
  /// The population values of simulated data.
  std::vector<std::pair<std::string, double>> truth() const { return truth_; }
  /// The fit's start: the priors' centres, omega 0.5, every subject at the medians.
  nlohmann::json initial_values() const {
    const Eigen::VectorXd x = model_.initial();
    const std::vector<std::string> names = pk2cmt_phi_names();
    nlohmann::json out;
    for (int k = 0; k < pk2cmt_n_shared; ++k) out[names[k]] = x(k);
    for (int j = 0; j < model_.n_subjects(); ++j) {
      const Eigen::VectorXd theta = x.segment(pk2cmt_n_shared + pk2cmt_n_pk * j, pk2cmt_n_pk);
      out["theta"].push_back(std::vector<double>(theta.data(), theta.data() + theta.size()));
    }
    return out;
  }

  /// The embedded study: --jobs subjects (default 16) on the fixed schedule.
  static nlohmann::json embedded_data(int jobs, int points) {
    if (points > 0) throw std::invalid_argument("--points sets logreg's embedded data, not pk2cmt's");
    const pk2cmt_model study(jobs > 0 ? jobs : 16);
    return pk2cmt_json(study.data(), study.truth());
  }

 private:
  pk2cmt_model model_;
  std::vector<std::pair<std::string, double>> truth_;
};

}  // namespace maprect::models

MAPRECT_REGISTER_MODEL(pk2cmt, maprect::models::pk2cmt);
