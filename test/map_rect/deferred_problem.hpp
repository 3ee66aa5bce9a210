#pragma once
// What the tests of deferred reverse mode share, in process and over the cluster: the setting pinned for a
// scope, a problem of wide_job's with any output counts, the weights of the scalar they differentiate, a
// relative comparison, and the sweep of a deferred call inside a nested tape.
#include <catch2/catch.hpp>
#include <maprect/map_rect.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
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

/// The weighted sum of `out` that the tests differentiate.
inline var weighted_sum(const vector_v& out) {
  var lp = 0;
  for (Eigen::Index k = 0; k < out.size(); ++k) lp += weight(k) * out(k);
  return lp;
}

/// Checks a deferred call inside a nested tape: beside `outer`, a deferred call of map_rect<Id, F> on the same
/// parameters made on the caller's tape, the same call in a nested_tape region is swept there with the first
/// and last partials of `gradient` (bit for bit) while both calls' tapes are kept; the region drops its call;
/// then the outer call's sweep gives all of `gradient`, bit for bit.
template <int Id, class F>
void check_nested_sweep(const wide_problem& p, const vector_v& phi, const std::vector<vector_v>& theta,
                        const vector_v& outer, const std::vector<double>& gradient) {
  const auto same_bits = [](double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; };
  {
    nested_tape region;
    grad(weighted_sum(map_rect<Id, F>(phi, theta, p.x_r, p.x_i)));
    CHECK(same_bits(phi(0).adj(), gradient.front()));
    CHECK(same_bits(theta.back()(theta.back().size() - 1).adj(), gradient.back()));
    CHECK(detail::kept_tapes_of_thread().live_calls == 2);
    set_zero_all_adjoints();
  }
  CHECK(detail::kept_tapes_of_thread().live_calls == 1);  // the region's call was dropped with it
  grad(weighted_sum(outer));
  std::vector<double> g{phi(0).adj(), phi(1).adj()};
  for (const auto& t : theta)
    for (Eigen::Index q = 0; q < t.size(); ++q) g.push_back(t(q).adj());
  REQUIRE(g.size() == gradient.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO("partial " << i);
    CHECK(same_bits(g[i], gradient[i]));
  }
  recover_memory();
}

}  // namespace maprect::test
