// logreg: the group kernel in double, data packing, simulation, CSV input, and the model's reports.
#include "logreg.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "csv.hpp"
#include "splitmix64.hpp"

MAPRECT_REGISTER(1, maprect::models::logreg_job);

namespace maprect::models {

double logreg_group_log_likelihood(double a, double b, const double* x, const int* y, int n, double* d_a,
                                   double* d_b) {
  double lp = 0, sum_r = 0, sum_rx = 0;
  for (int i = 0; i < n; ++i) {
    const double eta = a + b * x[i];
    if (y[i]) {
      lp += log_inv_logit(eta);
      // r = 1 - inv_logit(eta) = inv_logit(-eta), exact in the tail where eta is large.
      const double r = inv_logit(-eta);
      sum_r += r;
      sum_rx += r * x[i];
    } else {
      lp += log1m_inv_logit(eta);
      const double r = -inv_logit(eta);
      sum_r += r;
      sum_rx += r * x[i];
    }
  }
  if (d_a) *d_a = sum_r;
  if (d_b) *d_b = sum_rx;
  return lp;
}

void logreg_group_view(logreg_layout layout, const std::vector<double>& x_r, const std::vector<int>& x_i,
                       const double*& x, const int*& y, int& n) {
  if (layout == logreg_layout::standard) {
    if (x_r.size() != x_i.size())
      throw std::invalid_argument("logreg: x_r has " + std::to_string(x_r.size()) + " values but x_i has " +
                                  std::to_string(x_i.size()) + " (one x and one y per point)");
    x = x_r.data();
    y = x_i.data();
    n = static_cast<int>(x_r.size());
    return;
  }
  if (x_i.empty()) throw std::invalid_argument("logreg: x_i is empty; expected (n, y_0, ..., y_{n-1}, padding)");
  n = x_i[0];
  if (n < 0 || static_cast<std::size_t>(n) > x_r.size() || static_cast<std::size_t>(n) + 1 > x_i.size())
    throw std::invalid_argument("logreg: group of " + std::to_string(n) + " points does not fit rows of " +
                                std::to_string(x_r.size()) + " reals and " + std::to_string(x_i.size()) + " ints");
  x = x_r.data();
  y = x_i.data() + 1;
}

logreg_data pack_logreg_groups(const std::vector<std::vector<double>>& x, const std::vector<std::vector<int>>& y,
                               std::vector<std::string> group_names) {
  const std::size_t J = x.size();
  if (J == 0) throw std::invalid_argument("logreg: no groups");
  if (y.size() != J)
    throw std::invalid_argument("logreg: " + std::to_string(J) + " groups of x but " + std::to_string(y.size()) +
                                " of y");
  if (!group_names.empty() && group_names.size() != J)
    throw std::invalid_argument("logreg: " + std::to_string(group_names.size()) + " group names for " +
                                std::to_string(J) + " groups");
  std::size_t width = 0;
  for (std::size_t j = 0; j < J; ++j) {
    if (x[j].size() != y[j].size())
      throw std::invalid_argument("logreg: group " + std::to_string(j) + " has " + std::to_string(x[j].size()) +
                                  " x values but " + std::to_string(y[j].size()) + " y values");
    if (x[j].empty()) throw std::invalid_argument("logreg: group " + std::to_string(j) + " has no points");
    width = std::max(width, x[j].size());
  }
  logreg_data d;
  d.x_r.assign(J, std::vector<double>(width, 0.0));
  d.x_i.assign(J, std::vector<int>(width + 1, 0));
  for (std::size_t j = 0; j < J; ++j) {
    std::copy(x[j].begin(), x[j].end(), d.x_r[j].begin());
    d.x_i[j][0] = static_cast<int>(y[j].size());
    std::copy(y[j].begin(), y[j].end(), d.x_i[j].begin() + 1);
  }
  if (group_names.empty())
    for (std::size_t j = 0; j < J; ++j) group_names.push_back(std::to_string(j));
  d.group_names = std::move(group_names);
  return d;
}

logreg_standard_problem make_logreg_standard_problem(int J, int N) {
  if (J < 1 || N < 1)
    throw std::invalid_argument("logreg: the standard model needs J >= 1 and N >= 1, got " + std::to_string(J) +
                                "x" + std::to_string(N));
  logreg_standard_problem p;
  p.x_r.assign(J, std::vector<double>(N));
  p.x_i.assign(J, std::vector<int>(N));
  p.params.resize(logreg_n_shared + logreg_n_own * J);
  p.params(0) = 0.3;
  p.params(1) = -0.5;
  for (int j = 0; j < J; ++j) {
    for (int i = 0; i < N; ++i) {
      p.x_r[j][i] = std::sin(0.37 * i + j);
      p.x_i[j][i] = (7 * i + 3 * j) % 2;
    }
    p.params(2 + 2 * j) = 0.1 * std::sin(j + 1.0);
    p.params(3 + 2 * j) = 0.05 * std::cos(j + 1.0);
  }
  return p;
}

double logreg_standard_closed_form(const logreg_standard_problem& problem, const Eigen::VectorXd& params,
                                   Eigen::VectorXd& gradient) {
  const int J = static_cast<int>(problem.x_r.size());
  gradient.resize(params.size());
  double lp = 0, d_alpha = 0, d_beta = 0;
  for (int j = 0; j < J; ++j) {
    double d_a = 0, d_b = 0;
    lp += logreg_group_log_likelihood(params(0) + params(2 + 2 * j), params(1) + params(3 + 2 * j),
                                      problem.x_r[j].data(), problem.x_i[j].data(),
                                      static_cast<int>(problem.x_r[j].size()), &d_a, &d_b);
    gradient(2 + 2 * j) = d_a;
    gradient(3 + 2 * j) = d_b;
    d_alpha += d_a;
    d_beta += d_b;
  }
  gradient(0) = d_alpha;
  gradient(1) = d_beta;
  return lp;
}

logreg_data simulate_logreg(int n_groups, int n_points, std::uint64_t seed) {
  if (n_groups < 1 || n_points < 1)
    throw std::invalid_argument("logreg: need at least one group of one point, got " + std::to_string(n_groups) +
                                " groups of " + std::to_string(n_points));
  splitmix64 rng(seed);
  const int J = n_groups;
  Eigen::VectorXd truth(logreg_n_shared + logreg_n_own * J);
  truth(0) = logreg_true_alpha;
  truth(1) = logreg_true_beta;
  // Centred effects: the prior's zero mean then matches the truth, so alpha and beta are recoverable.
  Eigen::VectorXd u(J), v(J);
  for (int j = 0; j < J; ++j) {
    u(j) = rng.uniform(-logreg_true_effect_spread, logreg_true_effect_spread);
    v(j) = rng.uniform(-logreg_true_effect_spread, logreg_true_effect_spread);
  }
  if (J > 1) {
    u.array() -= u.mean();
    v.array() -= v.mean();
  }
  std::vector<std::vector<double>> x(J, std::vector<double>(n_points));
  std::vector<std::vector<int>> y(J, std::vector<int>(n_points));
  for (int j = 0; j < J; ++j) {
    truth(2 + 2 * j) = u(j);
    truth(3 + 2 * j) = v(j);
    for (int i = 0; i < n_points; ++i) {
      x[j][i] = rng.uniform(-2.0, 2.0);
      const double eta = logreg_true_alpha + u(j) + (logreg_true_beta + v(j)) * x[j][i];
      y[j][i] = rng.uniform() < inv_logit(eta) ? 1 : 0;
    }
  }
  logreg_data d = pack_logreg_groups(x, y);
  d.true_parameters = truth;
  return d;
}

logreg_data parse_logreg_csv(std::istream& in, const std::string& source) {
  csv_reader reader(in, source);
  csv_row row;
  if (!reader.next(row))
    throw csv_error(source, reader.line() + 1, 0, "", "empty file, expected a header line 'group,y,x'");
  const std::vector<std::string> names = {"group", "y", "x"};
  const std::vector<int> column = csv_columns(row, names, source);
  const std::size_t n_fields = row.fields.size();

  std::map<std::string, std::size_t> group_index;
  std::vector<std::string> labels;
  std::vector<std::vector<double>> x;
  std::vector<std::vector<int>> y;
  while (reader.next(row)) {
    if (row.fields.size() < n_fields) {
      const int missing = static_cast<int>(row.fields.size());
      std::size_t w = 0;
      while (w < names.size() && column[w] != missing) ++w;
      throw csv_error(source, row.line, missing + 1, names[w],
                      "missing value: " + std::to_string(row.fields.size()) + " fields, expected " +
                          std::to_string(n_fields));
    }
    if (row.fields.size() > n_fields)
      throw csv_error(source, row.line, static_cast<int>(n_fields) + 1, "",
                      "extra field: " + std::to_string(row.fields.size()) + " fields, expected " +
                          std::to_string(n_fields));
    const std::string& label = row.fields[static_cast<std::size_t>(column[0])];
    if (label.empty()) throw csv_error(source, row.line, column[0] + 1, "group", "empty group label");
    const double y_value = csv_double(row, column[1], "y", source);
    if (y_value != 0.0 && y_value != 1.0)
      throw csv_error(source, row.line, column[1] + 1, "y",
                      "y must be 0 or 1, got '" + row.fields[static_cast<std::size_t>(column[1])] + "'");
    const double x_value = csv_double(row, column[2], "x", source);
    auto [it, added] = group_index.try_emplace(label, labels.size());
    if (added) {
      labels.push_back(label);
      x.emplace_back();
      y.emplace_back();
    }
    x[it->second].push_back(x_value);
    y[it->second].push_back(y_value == 1.0 ? 1 : 0);
  }
  if (labels.empty()) throw csv_error(source, reader.line() + 1, 0, "", "no data rows after the header");
  return pack_logreg_groups(x, y, std::move(labels));
}

logreg_data read_logreg_csv(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw std::runtime_error(path + ": is a directory, not a CSV file");
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open (" + std::string(std::strerror(errno)) + ")");
  return parse_logreg_csv(in, path);
}

namespace {
// Groups listed one by one in the estimates; the sds summarise all of them.
constexpr int listed_groups = 4;

std::vector<std::pair<std::string, double>> summarise(const Eigen::VectorXd& params,
                                                      const std::vector<std::string>& group_names) {
  const int J = static_cast<int>(group_names.size());
  std::vector<std::pair<std::string, double>> out = {{"alpha", params(0)}, {"beta", params(1)}};
  if (J > 1) {
    double su = 0, sv = 0, mu = 0, mv = 0;
    for (int j = 0; j < J; ++j) {
      mu += params(2 + 2 * j) / J;
      mv += params(3 + 2 * j) / J;
    }
    for (int j = 0; j < J; ++j) {
      su += (params(2 + 2 * j) - mu) * (params(2 + 2 * j) - mu);
      sv += (params(3 + 2 * j) - mv) * (params(3 + 2 * j) - mv);
    }
    out.emplace_back("sd(u)", std::sqrt(su / (J - 1)));
    out.emplace_back("sd(v)", std::sqrt(sv / (J - 1)));
  }
  for (int j = 0; j < std::min(J, listed_groups); ++j) {
    out.emplace_back("u[" + group_names[j] + "]", params(2 + 2 * j));
    out.emplace_back("v[" + group_names[j] + "]", params(3 + 2 * j));
  }
  return out;
}
}  // namespace

std::vector<std::pair<std::string, double>> logreg_model::estimates(const Eigen::VectorXd& params) const {
  if (params.size() != size())
    throw std::invalid_argument("logreg_model::estimates: " + std::to_string(params.size()) +
                                " parameters, expected " + std::to_string(size()));
  return summarise(params, data_.group_names);
}

std::vector<std::pair<std::string, double>> logreg_model::truth() const {
  if (data_.true_parameters.size() != size()) return {};
  return summarise(data_.true_parameters, data_.group_names);
}

}  // namespace maprect::models
