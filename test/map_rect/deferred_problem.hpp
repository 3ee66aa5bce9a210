#pragma once
// What the tests of deferred reverse mode share, in process and over the cluster: the setting pinned for a
// scope, a problem of wide_job's with any output counts, the weights of the scalar they differentiate, and a
// relative comparison.
#include <catch2/catch.hpp>
#include <maprect/map_rect.hpp>

#include <algorithm>
#include <cmath>
#include <vector>
#include "src/cluster/test_hooks.hpp"

namespace maprect::test {

/// Runs its scope with MAPRECT_REVERSE as `value`, then restores the setting.
using detail::reverse_mode_scope;

/// J jobs of wide_job: S = 2 shared parameters, P job parameters, counts[j] outputs for job j.
struct wide_problem {
  Eigen::VectorXd phi{2};
  std::vector<Eigen::VectorXd> theta;
  std::vector<std::vector<double>> x_r;
  std::vector<std::vector<int>> x_i;

  wide_problem(const std::vector<int>& counts, int P) {
    phi << 0.7, -0.3;
    const int K_max = counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());  // rows of one size
    for (std::size_t j = 0; j < counts.size(); ++j) {
      Eigen::VectorXd t(P);
      for (int p = 0; p < P; ++p) t(p) = 0.1 * std::sin(1.0 + p + 3.0 * j);
      theta.push_back(t);
      std::vector<double> row(static_cast<std::size_t>(K_max * P));
      for (std::size_t i = 0; i < row.size(); ++i) row[i] = std::cos(0.37 * i + j);
      x_r.push_back(row);
      x_i.push_back({counts[j]});
    }
  }
};

/// The weight of output k in the scalar the tests differentiate.
inline double weight(Eigen::Index k) { return 0.5 + static_cast<double>(k % 7); }

/// Checks that a and b agree within `relative` of the larger magnitude, entry by entry.
inline void check_close(const std::vector<double>& a, const std::vector<double>& b, double relative) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("entry " << i);
    CHECK(std::abs(a[i] - b[i]) <= relative * std::max({std::abs(a[i]), std::abs(b[i]), 1e-300}));
  }
}

}  // namespace maprect::test
