// eight_schools: data layout, output columns.
#include "eight_schools.hpp"

#include <cmath>

MAPRECT_REGISTER(3, maprect::models::eight_schools_job);

namespace maprect::models {

std::vector<std::vector<double>> eight_schools_rows(const std::vector<double>& y, const std::vector<double>& sigma) {
  if (y.size() != sigma.size())
    throw std::invalid_argument("eight_schools: " + std::to_string(y.size()) + " effects but " +
                                std::to_string(sigma.size()) + " standard errors");
  std::vector<std::vector<double>> rows;
  for (std::size_t j = 0; j < y.size(); ++j) {
    if (!(sigma[j] > 0))
      throw std::invalid_argument("eight_schools: sigma[" + std::to_string(j + 1) + "] = " + std::to_string(sigma[j]) +
                                  " must be > 0");
    rows.push_back({y[j], sigma[j]});
  }
  return rows;
}

eight_schools_model::eight_schools_model()
    : x_r_(eight_schools_rows({eight_schools_y.begin(), eight_schools_y.end()},
                              {eight_schools_sigma.begin(), eight_schools_sigma.end()})),
      x_i_(eight_schools_n) {}

std::vector<std::string> eight_schools_model::column_names() const {
  std::vector<std::string> names = {"mu", "tau"};
  for (int j = 1; j <= eight_schools_n; ++j) names.push_back("theta_tilde." + std::to_string(j));
  for (int j = 1; j <= eight_schools_n; ++j) names.push_back("theta." + std::to_string(j));
  return names;
}

Eigen::VectorXd eight_schools_model::write_array(const Eigen::VectorXd& params) const {
  if (params.size() != size())
    throw std::invalid_argument("eight_schools_model: " + std::to_string(params.size()) + " parameters, expected " +
                                std::to_string(size()));
  Eigen::VectorXd out(2 + 2 * eight_schools_n);
  const double mu = params(0), tau = std::exp(params(1));
  out(0) = mu;
  out(1) = tau;
  for (int j = 0; j < eight_schools_n; ++j) {
    out(2 + j) = params(2 + j);
    out(2 + eight_schools_n + j) = mu + tau * params(2 + j);
  }
  return out;
}

}  // namespace maprect::models
