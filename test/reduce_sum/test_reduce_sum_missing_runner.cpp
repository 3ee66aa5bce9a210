// A worker whose program lacks a reduce_sum call site's slice runner (the last rank forgets it before it
// serves): the call fails with std::invalid_argument naming that rank and the call's signature, on the
// first slice of that rank; the cluster goes on, with other call sites and with the same one again.
#include <catch2/catch.hpp>

#include <maprect/cluster.hpp>
#include <string>
#include <vector>

#include "reduce_sum/functors.hpp"
#include "support/catch_session.hpp"
#include "support/mpi_test.hpp"
#include "src/cluster/test_hooks.hpp"

using namespace maprect;
using namespace maprect::test;

MAPRECT_REGISTER_REDUCE(601, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(602, maprect::test::walking_partial)

namespace maprect::test {
cluster* the_cluster = nullptr;
}

namespace {

const std::vector<double> terms = {0.5, -0.25, 1.5, 2.0, 0.75, -1.0, 0.125, 0.3};

/// The call whose runner the last rank forgets.
var forgotten_call(const var& v) { return reduce_sum<601, walking_partial>(terms, 1, nullptr, v); }

using forgotten_site = detail::reduce_site_registration<601, walking_partial, double, var>;

}  // namespace

TEST_CASE("reduce_sum: a rank without the call site's slice runner fails the call by name; the cluster goes on") {
  recover_memory();
  const int ranks = the_cluster->size();
  const var v = 0.75;
  for (int repeat = 0; repeat < 2; ++repeat) {
    if (ranks == 1) {
      CHECK(forgotten_call(v).val() == fold_over_slices<walking_partial>(1, terms, v).value);
    } else {
      // Eight slices of one term: the last rank's first slice is 8 - 8 / R.
      const int slice = 8 - 8 / ranks;
      const std::string rank = "rank " + std::to_string(ranks - 1);
      const std::string want = "reduce_sum: call id 601, slice " + std::to_string(slice) + " (terms [" +
                               std::to_string(slice) + ", " + std::to_string(slice) + "]) on " + rank + " failed: " +
                               rank + " has no slice runner for call id 601 with functor and arguments " +
                               "std::tuple<maprect::test::walking_partial, std::vector<double, "
                               "std::allocator<double> >, maprect::var>";
      CHECK_THROWS_AS(forgotten_call(v), std::invalid_argument);
      CHECK_THROWS_WITH(forgotten_call(v), Catch::StartsWith(want));
    }
    // Another call site of the same functor and types runs everywhere.
    const var lp = reduce_sum<602, walking_partial>(terms, 3, nullptr, v);
    CHECK(bits(lp.val()) == bits(fold_over_slices<walking_partial>(3, terms, v).value));
  }
  recover_memory();
}

int main(int argc, char** argv) {
  cluster c(argc, argv);
  the_cluster = &c;
  if (!c.is_root()) {
    if (c.rank() == c.size() - 1) detail::forget_reduce_runner(forgotten_site::key());
    c.serve();
    return 0;
  }
  const int failed = run_catch_session(argc, argv);
  c.stop();
  return failed == 0 ? 0 : 1;
}
