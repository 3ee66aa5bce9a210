// reduce_sum on a thread team in one process: for every team size, grainsize and double/var mix, the value
// and every partial are byte-equal to the serial call and to the test-side fold over slices; the functor's
// messages arrive in slice order.
#include <catch2/catch.hpp>

#include <optional>
#include <sstream>

#include <maprect/thread_team.hpp>

#include "reduce_sum/functors.hpp"
#include "reduce_sum/models.hpp"

using namespace maprect;
using namespace maprect::test;

MAPRECT_REGISTER_REDUCE(340, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(341, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(342, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(343, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(344, maprect::test::logistic_partial)
MAPRECT_REGISTER_REDUCE(345, maprect::test::logistic_partial)
MAPRECT_REGISTER_REDUCE(346, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(347, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(348, maprect::test::walking_partial)

namespace {

const int team_sizes[] = {1, 2, 3, 4, 7};

/// reduce_sum<Id, F> with `team` installed on this thread (null: none), as its value and its gradient
/// w.r.t. every var of the arguments.
template <int Id, class F, class T_slice, class... Args>
value_and_gradient run_with(thread_team* team, int G, const std::vector<T_slice>& sliced, const Args&... args) {
  std::optional<team_scope> scope;
  if (team != nullptr) scope.emplace(*team);
  return gradient_of(reduce_sum<Id, F>(sliced, G, nullptr, args...), operands_of(sliced, args...));
}

/// For every team size and grainsize: the team's bits are the serial call's and the test-side fold's.
template <int Id, class F, class T_slice, class... Args>
void check_teams(const std::vector<int>& grainsizes, const std::vector<T_slice>& sliced, const Args&... args) {
  for (int G : grainsizes) {
    const value_and_gradient serial = run_with<Id, F>(nullptr, G, sliced, args...);
    const value_and_gradient folded = fold_over_slices<F>(G, sliced, args...);
    CHECK(serial == folded);
    for (int T : team_sizes) {
      INFO("N = " << sliced.size() << ", grainsize " << G << ", " << T << " threads");
      thread_team team(T);
      CHECK(run_with<Id, F>(&team, G, sliced, args...) == serial);
    }
  }
}

}  // namespace

TEST_CASE("reduce_sum on a team: var slices and every kind of shared argument, byte-equal to serial") {
  recover_memory();
  for (int N : {1, 2, 13, 40}) {
    const nested_arguments a(N);
    check_teams<340, walking_partial>({1, 3, 7, N, N + 5}, a.sliced, a.m, a.scalars, a.x, a.k, a.data);
  }
  recover_memory();
}

TEST_CASE("reduce_sum on a team: data slices with var shared arguments, var slices with data, doubles only") {
  recover_memory();
  const nested_arguments a(23);
  std::vector<double> data_slices;
  for (int t = 0; t < 23; ++t) data_slices.push_back(0.1 * t - 0.7);
  check_teams<341, walking_partial>({1, 2, 5, 23}, data_slices, a.m, a.scalars);
  check_teams<342, walking_partial>({1, 4, 9}, a.sliced, a.x, a.data);
  const std::vector<int> int_slices = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5};
  check_teams<343, walking_partial>({1, 2, 3, 11}, int_slices, a.x, a.data, a.k);
  recover_memory();
}

TEST_CASE("reduce_sum on a team: logistic regression and hierarchical model, byte-equal to serial") {
  recover_memory();
  const logistic_data d(57, 3);
  const vector_v beta = to_var(d.beta);
  const var alpha = d.alpha;
  check_teams<344, logistic_partial>({1, 4, 10, 57}, d.y, d.X, beta, alpha);
  check_teams<345, logistic_partial>({1, 8}, d.y, d.X, d.beta, alpha);
  const hierarchical_data h(31);
  std::vector<vector_v> groups;
  for (const auto& g : h.groups) groups.push_back(to_var(g));
  const var mu = h.mu, log_tau = h.log_tau;
  check_teams<346, hierarchical_partial>({1, 3, 8, 31}, groups, h.y, mu, log_tau);
  check_teams<347, hierarchical_partial>({2, 5}, h.groups, h.y, mu, h.log_tau);
  recover_memory();
}

TEST_CASE("reduce_sum on a team: the functor's messages arrive in slice order") {
  recover_memory();
  const std::vector<double> sliced(7, 0.5);
  const var v = 1.5;
  for (int T : team_sizes) {
    thread_team team(T);
    const team_scope scope(team);
    std::ostringstream msgs;
    reduce_sum<348, walking_partial>(sliced, 3, &msgs, v);
    CHECK(msgs.str() == "[0,2][3,5][6,6]");
    msgs.str("");
    reduce_sum<348, walking_partial>(sliced, 1, &msgs, v);
    CHECK(msgs.str() == "[0,0][1,1][2,2][3,3][4,4][5,5][6,6]");
  }
  recover_memory();
}
