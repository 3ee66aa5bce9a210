// eight_schools: data layout, output columns.
#include "eight_schools.hpp"

#include <cmath>

MAPRECT_REGISTER(3, maprect::models::eight_schools_job);

namespace maprect::models {

eight_schools_model::eight_schools_model() : x_r_(eight_schools_n), x_i_(eight_schools_n) {
  for (int j = 0; j < eight_schools_n; ++j) x_r_[j] = {eight_schools_y[j], eight_schools_sigma[j]};
}

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
