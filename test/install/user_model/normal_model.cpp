// A user's model with a closed-form posterior, written as a Stan user would write
//
//   data { int<lower=1> G; int<lower=1> n; array[G, n] real y; real<lower=0> sigma;
//          int<lower=1> K; array[K] int<lower=0, upper=1> z; int<lower=1> M; array[M] int<lower=0> c; }
//   parameters { real mu; real<lower=0, upper=1> p; real<lower=0> lambda; }
//   model { mu ~ normal(0, 10); target += sum(map_rect(group_normal, [mu]', none, y, no_ints));  // y ~ normal(mu, sigma)
//           target += reduce_sum(bernoulli_terms, z, 5, p);                                      // z ~ bernoulli(p)
//           lambda ~ gamma(2, 1); c ~ poisson(lambda); }
//   generated quantities { real log_odds = logit(p); }
//
// Posterior: mu normal, p beta(1 + sum z, 1 + K - sum z), lambda gamma(2 + sum c, 1 + M).
#include <maprect/maprect.hpp>
#include <maprect/model.hpp>

#include <cmath>
#include <vector>

/// One group's log likelihood of y ~ normal(mu, sigma), x_r = (sigma, y_1, ..., y_n), without constants.
struct group_normal {
  template <class T1, class T2>
  Eigen::Matrix<maprect::return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(
      const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi, const Eigen::Matrix<T2, Eigen::Dynamic, 1>& /*none*/,
      const std::vector<double>& x_r, const std::vector<int>& /*x_i*/, std::ostream* /*msgs*/) const {
    Eigen::Matrix<maprect::return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
    out(0) = 0;
    for (std::size_t i = 1; i < x_r.size(); ++i) out(0) -= 0.5 * maprect::square((x_r[i] - phi(0)) / x_r[0]);
    return out;
  }
};

/// Bernoulli log likelihood of the outcomes in one slice.
struct bernoulli_terms {
  template <class T>
  T operator()(const std::vector<double>& z, int /*start*/, int /*end*/, std::ostream* /*msgs*/, const T& p) const {
    using std::log;
    T sum = 0;
    for (double z_i : z) sum += z_i != 0 ? log(p) : log(1 - p);
    return sum;
  }
};

MAPRECT_REGISTER(1, group_normal);
MAPRECT_REGISTER_REDUCE(2, bernoulli_terms);

/// The model: data block in the constructor, parameters block, model block, generated quantities.
class normal_model {
 public:
  explicit normal_model(const maprect::model_data& data)
      : sigma_(data.real("sigma")),
        z_(data.reals("z", data.integer("K", 1))),
        c_(data.integers("c", data.integer("M", 1), 0)) {
    const int G = data.integer("G", 1), n = data.integer("n", 1);
    const std::vector<double> y = data.values("y", {G, n});  // array[G, n] real, row by row
    for (int g = 0; g < G; ++g) {
      x_r_.push_back({sigma_});
      x_r_.back().insert(x_r_.back().end(), y.begin() + g * n, y.begin() + (g + 1) * n);
    }
    x_i_.assign(static_cast<std::size_t>(G), {});
    none_.assign(static_cast<std::size_t>(G), Eigen::VectorXd(0));
  }

  void parameters(maprect::parameter_list& p) const {
    p.real("mu");
    p.real("p").bounds(0, 1);
    p.real("lambda").lower(0);
  }

  template <class T>
  T log_density(const maprect::parameter_values<T>& p) const {
    using std::log;
    const T mu = p.real("mu"), prob = p.real("p"), lambda = p.real("lambda");
    Eigen::Matrix<T, Eigen::Dynamic, 1> phi(1);
    phi << mu;
    T lp = maprect::map_rect<1, group_normal>(phi, none_, x_r_, x_i_).sum();
    lp += -0.5 * (mu / 10.0) * (mu / 10.0);
    lp += maprect::reduce_sum<2, bernoulli_terms>(z_, 5, nullptr, prob);
    double count = 0;
    for (int c : c_) count += c;
    lp += (2.0 - 1.0 + count) * log(lambda) - (1.0 + static_cast<double>(c_.size())) * lambda;
    return lp;
  }

  void generated_quantities(const maprect::parameter_values<double>& p, maprect::quantity_writer& out) const {
    out.real("log_odds", std::log(p.real("p") / (1 - p.real("p"))));
  }

  std::string description() const { return std::to_string(x_r_.size()) + " groups by map_rect, outcomes by reduce_sum"; }

 private:
  double sigma_;
  std::vector<double> z_;
  std::vector<int> c_;
  std::vector<std::vector<double>> x_r_;
  std::vector<std::vector<int>> x_i_;
  std::vector<Eigen::VectorXd> none_;
};

MAPRECT_REGISTER_MODEL(normal_model, normal_model);
