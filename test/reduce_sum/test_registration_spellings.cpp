// MAPRECT_REGISTER and MAPRECT_REGISTER_REDUCE at namespace scope, with and without a trailing semicolon
// (Stan writes its registration macro without one). This file is compiled with -Wpedantic -Werror: it
// fails to build if either spelling does not compile, or warns.
#include <catch2/catch.hpp>

#include "reduce_sum/functors.hpp"
#include "support/benchmark_model.hpp"

MAPRECT_REGISTER(360, maprect::test::logistic_job)
MAPRECT_REGISTER(361, maprect::test::logistic_job);
MAPRECT_REGISTER_REDUCE(362, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(363, maprect::test::walking_partial);

namespace maprect::test {
MAPRECT_REGISTER_REDUCE(364, maprect::test::walking_partial)
}  // namespace maprect::test

using namespace maprect;

TEST_CASE("registration: both spellings of both macros register their call ids") {
  for (int id : {360, 361}) {
    const detail::functor_entry* e = detail::find_functor(id);
    REQUIRE(e != nullptr);
    CHECK(e->kind == detail::functor_kind::map_rect);
    CHECK(e->name == "maprect::test::logistic_job");
  }
  for (int id : {362, 363, 364}) {
    const detail::functor_entry* e = detail::find_functor(id, "reduce_sum");
    REQUIRE(e != nullptr);
    CHECK(e->kind == detail::functor_kind::reduce_sum);
    CHECK(*e->type == typeid(test::walking_partial));
  }
  // A map_rect request that names a reduce_sum id (a worker cannot check the kind first) is refused.
  const detail::functor_entry* reduce_entry = detail::find_functor(362, "reduce_sum");
  const double no_values[1] = {0};
  const detail::chunk_input none{no_values, 0, no_values, 0, nullptr, nullptr, 0, nullptr};
  detail::block_buffer out;
  int count = 0, cursor = 0;
  CHECK_THROWS_WITH(reduce_entry->run[0](none, out, &count, cursor),
                    "this call id is registered for reduce_sum (MAPRECT_REGISTER_REDUCE), not for map_rect "
                    "(MAPRECT_REGISTER)");
  recover_memory();
  const std::vector<double> terms = {0.5, 1.5};
  const var v = 2.0;
  CHECK(reduce_sum<362, test::walking_partial>(terms, 1, nullptr, v).val() ==
        reduce_sum<363, test::walking_partial>(terms, 1, nullptr, v).val());
  const std::vector<vector_v> theta(1, to_var(Eigen::Vector2d(0.3, 0.4)));
  const std::vector<std::vector<double>> x_r(1, std::vector<double>{1.0});
  const std::vector<std::vector<int>> x_i(1, std::vector<int>{1});
  const vector_v phi = to_var(Eigen::Vector2d(0.1, 0.2));
  CHECK(map_rect<360, test::logistic_job>(phi, theta, x_r, x_i)(0).val() ==
        map_rect<361, test::logistic_job>(phi, theta, x_r, x_i)(0).val());
  recover_memory();
}
