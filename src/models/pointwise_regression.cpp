// pointwise_regression: the group kernel in double, the simulation, and the closed forms the tests and the
// benchmark check against.
#include "pointwise_regression.hpp"

#include <cmath>

#include "splitmix64.hpp"

MAPRECT_REGISTER(4, maprect::models::pointwise_regression_job);

namespace maprect::models {

namespace {

constexpr double half_log_two_pi = 0.91893853320467274178;

void check_sizes(const pointwise_regression_data& d, const Eigen::VectorXd& params) {
  if (params.size() != pointwise_regression_size(d))
    throw std::invalid_argument("pointwise_regression: " + std::to_string(params.size()) + " parameters, expected " +
                                std::to_string(pointwise_regression_size(d)));
}

}  // namespace

int pointwise_regression_points(const std::vector<double>& row, int C) {
  const std::size_t width = 1 + static_cast<std::size_t>(C);
  if (row.size() < 1 + width || (row.size() - 1) % width != 0)
    throw std::invalid_argument("pointwise_regression: a row of " + std::to_string(row.size()) +
                                " reals is not (sigma, K responses, K x " + std::to_string(C) + " covariates)");
  if (!(row[0] > 0))
    throw std::invalid_argument("pointwise_regression: sigma must be > 0, got " + std::to_string(row[0]));
  return static_cast<int>((row.size() - 1) / width);
}

void pointwise_regression_group(double a, const double* beta, int C, const std::vector<double>& row, int K,
                                double* lp, double* d_eta) {
  const double sigma = row[0];
  const double log_sigma = std::log(sigma), precision = 1.0 / (sigma * sigma);
  const double* y = row.data() + 1;
  const double* x = y + K;
  for (int k = 0; k < K; ++k) {
    double eta = a;
    for (int c = 0; c < C; ++c) eta += x[static_cast<std::size_t>(k) * C + c] * beta[c];
    const double r = y[k] - eta;
    lp[k] = -0.5 * r * r * precision - log_sigma - half_log_two_pi;
    if (d_eta) d_eta[k] = r * precision;
  }
}

pointwise_regression_data simulate_pointwise_regression(int G, int K, int C, double sigma, double tau,
                                                        std::uint64_t seed) {
  if (G < 1 || K < 1 || C < 1)
    throw std::invalid_argument("pointwise_regression: need at least one group, observation and covariate, got G = " +
                                std::to_string(G) + ", K = " + std::to_string(K) + ", C = " + std::to_string(C));
  splitmix64 rng(seed);
  pointwise_regression_data d;
  d.G = G, d.K = K, d.C = C, d.sigma = sigma, d.tau = tau;
  d.true_parameters.resize(pointwise_regression_size(d));
  d.true_parameters(0) = 0.5;
  for (int c = 0; c < C; ++c) d.true_parameters(1 + c) = std::cos(1.7 * c + 0.3);
  Eigen::VectorXd alpha(G);
  for (int g = 0; g < G; ++g) alpha(g) = tau * rng.normal();
  // Centred: the prior's zero mean then matches the truth, so mu is recoverable from few groups.
  if (G > 1) alpha.array() -= alpha.mean();
  d.true_parameters.tail(G) = alpha;
  const int N = G * K;
  d.x.resize(N, C);
  d.y.resize(N);
  for (int n = 0; n < N; ++n) {
    for (int c = 0; c < C; ++c) d.x(n, c) = std::sin(0.37 * n + 1.1 * c + 0.5);
    const double eta = d.true_parameters(0) + alpha(n / K) + d.x.row(n).dot(d.true_parameters.segment(1, C));
    d.y(n) = eta + sigma * rng.normal();
  }
  return d;
}

std::vector<std::vector<double>> pointwise_regression_rows(const pointwise_regression_data& d) {
  std::vector<std::vector<double>> rows(static_cast<std::size_t>(d.G));
  for (int g = 0; g < d.G; ++g) {
    std::vector<double>& row = rows[g];
    row.reserve(1 + static_cast<std::size_t>(d.K) * (1 + d.C));
    row.push_back(d.sigma);
    for (int k = 0; k < d.K; ++k) row.push_back(d.y(g * d.K + k));
    for (int k = 0; k < d.K; ++k)
      for (int c = 0; c < d.C; ++c) row.push_back(d.x(g * d.K + k, c));
  }
  return rows;
}

Eigen::VectorXd pointwise_regression_bench_point(const pointwise_regression_data& d) {
  Eigen::VectorXd params = d.true_parameters;
  for (Eigen::Index i = 0; i < params.size(); ++i) params(i) += 0.01 * std::sin(1.0 + i);
  return params;
}

Eigen::VectorXd pointwise_regression_log_lik(const pointwise_regression_data& d, const Eigen::VectorXd& params) {
  check_sizes(d, params);
  const std::vector<std::vector<double>> rows = pointwise_regression_rows(d);
  const std::vector<double> beta(params.data() + 1, params.data() + 1 + d.C);
  Eigen::VectorXd out(d.G * d.K);
  for (int g = 0; g < d.G; ++g)
    pointwise_regression_group(params(0) + params(1 + d.C + g), beta.data(), d.C, rows[g], d.K,
                               out.data() + static_cast<Eigen::Index>(g) * d.K, nullptr);
  return out;
}

double pointwise_regression_closed_form(const pointwise_regression_data& d, const Eigen::VectorXd& params,
                                        Eigen::VectorXd& gradient) {
  check_sizes(d, params);
  const int C = d.C;
  const double precision = 1.0 / (d.sigma * d.sigma);
  gradient = Eigen::VectorXd::Zero(params.size());
  double lp = 0;
  for (int n = 0; n < d.G * d.K; ++n) {
    const int g = n / d.K;
    const double r = d.y(n) - params(0) - params(1 + C + g) - d.x.row(n).dot(params.segment(1, C));
    lp += -0.5 * r * r * precision - std::log(d.sigma) - half_log_two_pi;
    gradient(0) += r * precision;
    gradient.segment(1, C) += r * precision * d.x.row(n).transpose();
    gradient(1 + C + g) += r * precision;
  }
  const double mu_precision = 1.0 / (pointwise_regression_mu_sd * pointwise_regression_mu_sd);
  const double beta_precision = 1.0 / (pointwise_regression_beta_sd * pointwise_regression_beta_sd);
  const double alpha_precision = 1.0 / (d.tau * d.tau);
  lp += -0.5 * mu_precision * params(0) * params(0) - 0.5 * beta_precision * params.segment(1, C).squaredNorm() -
        0.5 * alpha_precision * params.tail(d.G).squaredNorm();
  gradient(0) -= mu_precision * params(0);
  gradient.segment(1, C) -= beta_precision * params.segment(1, C);
  gradient.tail(d.G) -= alpha_precision * params.tail(d.G);
  return lp;
}

gaussian_posterior pointwise_regression_posterior(const pointwise_regression_data& d) {
  const int P = pointwise_regression_size(d), N = d.G * d.K;
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(N, P);
  A.col(0).setOnes();
  A.middleCols(1, d.C) = d.x;
  for (int n = 0; n < N; ++n) A(n, 1 + d.C + n / d.K) = 1;
  Eigen::VectorXd prior(P);
  prior(0) = 1.0 / (pointwise_regression_mu_sd * pointwise_regression_mu_sd);
  prior.segment(1, d.C).setConstant(1.0 / (pointwise_regression_beta_sd * pointwise_regression_beta_sd));
  prior.tail(d.G).setConstant(1.0 / (d.tau * d.tau));
  const double precision = 1.0 / (d.sigma * d.sigma);
  Eigen::MatrixXd Q = precision * A.transpose() * A;
  Q.diagonal() += prior;
  const Eigen::LDLT<Eigen::MatrixXd> ldlt(Q);
  gaussian_posterior out;
  out.mean = ldlt.solve(precision * A.transpose() * d.y);
  out.sd = ldlt.solve(Eigen::MatrixXd::Identity(P, P)).diagonal().cwiseSqrt();
  return out;
}

}  // namespace maprect::models
