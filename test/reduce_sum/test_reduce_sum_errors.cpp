// reduce_sum's failures in one process: each is an exception of a stated type naming what was wrong, leaves
// the caller's tape as it was, and is followed by a good call.
#include <catch2/catch.hpp>

#include <maprect/thread_team.hpp>

#include "reduce_sum/functors.hpp"
#include "support/benchmark_model.hpp"
#include "support/matchers.hpp"

using namespace maprect;
using namespace maprect::test;

namespace maprect::test {
/// A partial sum whose every slice calls an inner reduce_sum of throwing_partial over its own terms.
struct nested_throwing_partial {
  template <class T>
  T operator()(const std::vector<int>& slice, int, int, std::ostream*, const T& scale) const {
    return reduce_sum<402, throwing_partial>(slice, 1, nullptr, scale);
  }
};
/// Another functor, for a call id registered for walking_partial.
struct other_partial : walking_partial {};
}  // namespace maprect::test

MAPRECT_REGISTER_REDUCE(400, maprect::test::throwing_partial)
MAPRECT_REGISTER_REDUCE(401, maprect::test::throwing_partial)
MAPRECT_REGISTER_REDUCE(402, maprect::test::throwing_partial)
MAPRECT_REGISTER_REDUCE(403, maprect::test::nested_throwing_partial)
MAPRECT_REGISTER_REDUCE(410, maprect::test::walking_partial)
MAPRECT_REGISTER(420, maprect::test::logistic_job)
MAPRECT_REGISTER_REDUCE(421, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(430, maprect::test::walking_partial)
MAPRECT_REGISTER(430, maprect::test::logistic_job)
MAPRECT_REGISTER_REDUCE(440, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(441, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(450, maprect::test::throwing_partial)
MAPRECT_REGISTER_REDUCE(451, maprect::test::throwing_partial)

namespace {

const std::vector<double> good_terms = {0.5, -0.25, 1.5, 2.0};

/// A good call of call site 410, checked against the test-side fold.
void good_call() {
  const var v = 0.75;
  const var lp = reduce_sum<410, walking_partial>(good_terms, 2, nullptr, v);
  CHECK(bits(lp.val()) == bits(fold_over_slices<walking_partial>(2, good_terms, v).value));
}

/// Runs `call` expecting exception type E with every piece in its message; the tape must be unchanged.
template <class E, class Call>
void check_throws(Call&& call, std::vector<std::string> pieces) {
  const std::size_t size = tape_size();
  CHECK_THROWS_MATCHES(call(), E, message_contains(pieces));
  CHECK(tape_size() == size);
  CHECK(tape::current().nests.empty());
}

}  // namespace

TEST_CASE("reduce_sum: a grainsize below 1 is refused, naming the value") {
  recover_memory();
  const var v = 0.75;
  for (int G : {0, -1, -1000}) {
    const std::string got = "grainsize must be at least 1, got " + std::to_string(G);
    check_throws<std::invalid_argument>([&] { return reduce_sum<410, walking_partial>(good_terms, G, nullptr, v); },
                                        {"reduce_sum: call id 410", got});
    const std::vector<double> none;
    check_throws<std::invalid_argument>([&] { return reduce_sum<410, walking_partial>(none, G, nullptr, v); }, {got});
    good_call();
  }
  recover_memory();
}

TEST_CASE("reduce_sum: N = 0 gives 0 and adds no node") {
  recover_memory();
  const var v = 0.75;
  const std::size_t nodes = tape::current().stack.size();
  const var lp = reduce_sum<410, walking_partial>(std::vector<double>{}, 3, nullptr, v);
  CHECK(lp.val() == 0.0);
  CHECK(tape::current().stack.size() == nodes);
  CHECK(reduce_sum<441, walking_partial>(std::vector<double>{}, 3, nullptr, 0.75) == 0.0);
  good_call();
  recover_memory();
}

TEST_CASE("reduce_sum: a throwing functor: the first failing slice in slice order, its type and message") {
  recover_memory();
  const var scale = 2.0;
  // Terms 5 and 9 fail (invalid_argument, then domain_error); with G = 3 they lie in slices 1 and 3.
  const std::vector<int> terms = {0, 4, 5, 4, 4, 2, 6, 7, 4, 1, 4};
  check_throws<std::invalid_argument>(
      [&] { return reduce_sum<400, throwing_partial>(terms, 3, nullptr, scale); },
      {"reduce_sum: call id 400, slice 1 (terms [3, 5]) in process failed: bad term 5"});
  check_throws<std::invalid_argument>([&] { return reduce_sum<400, throwing_partial>(terms, 1, nullptr, scale); },
                                      {"call id 400, slice 5 (terms [5, 5]) in process failed: bad term 5"});
  const std::vector<int> domain = {4, 4, 4, 4, 1};
  check_throws<std::domain_error>([&] { return reduce_sum<400, throwing_partial>(domain, 2, nullptr, scale); },
                                  {"call id 400, slice 2 (terms [4, 4]) in process failed: bad term 4"});
  const std::vector<int> odd = {4, 3};
  check_throws<std::runtime_error>([&] { return reduce_sum<400, throwing_partial>(odd, 5, nullptr, scale); },
                                   {"call id 400, slice 0 (terms [0, 1]) in process failed: unknown exception"});
  // Doubles throw the same way, with no tape at all.
  check_throws<std::invalid_argument>([&] { return reduce_sum<401, throwing_partial>(terms, 4, nullptr, 2.0); },
                                      {"call id 401, slice 1 (terms [4, 7]) in process failed: bad term 5"});
  // Then good calls, on the same call sites too.
  const std::vector<int> fine = {4, 6, 7, 8};
  const var lp = reduce_sum<400, throwing_partial>(fine, 3, nullptr, scale);
  CHECK(lp.val() == 2.0 * (4 + 6 + 7 + 8));
  CHECK(reduce_sum<401, throwing_partial>(fine, 3, nullptr, 2.0) == 2.0 * (4 + 6 + 7 + 8));
  good_call();
  recover_memory();
}

TEST_CASE("reduce_sum: a throw inside a nested reduce_sum names both calls") {
  recover_memory();
  const var scale = 2.0;
  const std::vector<int> terms = {4, 4, 4, 4, 4, 2};
  check_throws<std::invalid_argument>(
      [&] { return reduce_sum<403, nested_throwing_partial>(terms, 4, nullptr, scale); },
      {"reduce_sum: call id 403, slice 1 (terms [4, 5]) in process failed: reduce_sum: call id 402, slice 1 (terms "
       "[1, 1]) in process failed: bad term 1"});
  const std::vector<int> fine = {4, 4, 4, 4, 4, 4};
  CHECK(reduce_sum<403, nested_throwing_partial>(fine, 4, nullptr, scale).val() == 48.0);
  good_call();
  recover_memory();
}

TEST_CASE("reduce_sum: a call id of map_rect used with reduce_sum, and the reverse, name the id and both kinds") {
  recover_memory();
  const var v = 0.75;
  check_throws<std::invalid_argument>(
      [&] { return reduce_sum<420, walking_partial>(good_terms, 1, nullptr, v); },
      {"reduce_sum: call id 420 is registered for map_rect (MAPRECT_REGISTER) with functor "
       "maprect::test::logistic_job, not for reduce_sum (MAPRECT_REGISTER_REDUCE)"});
  good_call();
  const vector_v phi = to_var(Eigen::Vector2d(0.1, 0.2));
  const std::vector<vector_v> theta(1, to_var(Eigen::Vector2d(0.3, 0.4)));
  const std::vector<std::vector<double>> x_r(1, std::vector<double>{1.0});
  const std::vector<std::vector<int>> x_i(1, std::vector<int>{1});
  check_throws<std::invalid_argument>(
      [&] { return map_rect<421, logistic_job>(phi, theta, x_r, x_i); },
      {"map_rect: call id 421 is registered for reduce_sum (MAPRECT_REGISTER_REDUCE) with functor "
       "maprect::test::walking_partial, not for map_rect (MAPRECT_REGISTER)"});
  good_call();
  // One id registered with both macros: refused by either front door, naming both.
  check_throws<std::invalid_argument>(
      [&] { return reduce_sum<430, walking_partial>(good_terms, 1, nullptr, v); },
      {"reduce_sum: call id 430 is registered for reduce_sum (MAPRECT_REGISTER_REDUCE) with functor "
       "maprect::test::walking_partial and for map_rect (MAPRECT_REGISTER) with functor maprect::test::logistic_job"});
  check_throws<std::invalid_argument>([&] { return map_rect<430, logistic_job>(phi, theta, x_r, x_i); },
                                      {"map_rect: call id 430 is registered for reduce_sum", "and for map_rect"});
  good_call();
  recover_memory();
}

TEST_CASE("reduce_sum: an unregistered id, or a functor other than the registered one, is refused by id") {
  recover_memory();
  const var v = 0.75;
  check_throws<std::invalid_argument>(
      [&] { return reduce_sum<498, walking_partial>(good_terms, 1, nullptr, v); },
      {"reduce_sum: call id 498 is not registered; add MAPRECT_REGISTER_REDUCE(498, YourFunctor) at namespace scope"});
  check_throws<std::invalid_argument>(
      [&] { return reduce_sum<410, other_partial>(good_terms, 1, nullptr, v); },
      {"reduce_sum: call id 410 is registered for maprect::test::walking_partial, not for the functor of this call "
       "(maprect::test::other_partial)"});
  good_call();
  recover_memory();
}

TEST_CASE("reduce_sum: argument counts or types that change between calls of one call site are refused") {
  recover_memory();
  const var v = 0.75;
  const vector_v w = to_var(Eigen::Vector2d(0.5, 1.5));
  CHECK(reduce_sum<440, walking_partial>(good_terms, 2, nullptr, v).val() ==
        fold_over_slices<walking_partial>(2, good_terms, v).value);
  check_throws<std::invalid_argument>(
      [&] { return reduce_sum<440, walking_partial>(good_terms, 2, nullptr, w); },
      {"reduce_sum: call id 440 was called with arguments (std::vector<double, std::allocator<double> >, maprect::var) "
       "and now with (std::vector<double, std::allocator<double> >, Eigen::Matrix<maprect::var, -1, 1, 0, -1, 1>)"});
  check_throws<std::invalid_argument>([&] { return reduce_sum<440, walking_partial>(good_terms, 2, nullptr, v, 3); },
                                      {"call id 440 was called with arguments", ", maprect::var, int)"});
  check_throws<std::invalid_argument>(
      [&] { return reduce_sum<440, walking_partial>(good_terms, 2, nullptr, 0.75); },
      {"call id 440", "now with (std::vector<double, std::allocator<double> >, double)"});
  // The call site's own types still work.
  CHECK(reduce_sum<440, walking_partial>(good_terms, 3, nullptr, v).val() ==
        fold_over_slices<walking_partial>(3, good_terms, v).value);
  good_call();
  recover_memory();
}

TEST_CASE("reduce_sum on a team: the first failing slice in slice order, then good calls on the same team") {
  recover_memory();
  const var scale = 2.0;
  // Every team size reports slice order's first failing slice, as serially.
  std::vector<int> terms = failing_terms();
  const std::vector<int> fine(40, 4);
  for (int T : {1, 2, 3, 4, 7}) {
    INFO(T << " threads");
    thread_team team(T);
    const team_scope scope(team);
    check_throws<std::invalid_argument>(
        [&] { return reduce_sum<450, throwing_partial>(terms, 1, nullptr, scale); },
        {"reduce_sum: call id 450, slice 5 (terms [5, 5]) in process failed: bad term 5"});
    check_throws<std::invalid_argument>([&] { return reduce_sum<450, throwing_partial>(terms, 3, nullptr, scale); },
                                        {"call id 450, slice 1 (terms [3, 5]) in process failed: bad term 5"});
    terms[5] = 4;
    check_throws<std::domain_error>([&] { return reduce_sum<451, throwing_partial>(terms, 2, nullptr, 2.0); },
                                    {"call id 451, slice 4 (terms [8, 9]) in process failed: bad term 9"});
    terms[9] = 4;
    check_throws<std::runtime_error>([&] { return reduce_sum<450, throwing_partial>(terms, 4, nullptr, scale); },
                                     {"call id 450, slice 4 (terms [16, 19]) in process failed: unknown exception"});
    terms[5] = 2;
    terms[9] = 1;
    CHECK(reduce_sum<450, throwing_partial>(fine, 3, nullptr, scale).val() == 2.0 * 4 * 40);
    CHECK(reduce_sum<451, throwing_partial>(fine, 1, nullptr, 2.0) == 2.0 * 4 * 40);
    good_call();
  }
  recover_memory();
}
