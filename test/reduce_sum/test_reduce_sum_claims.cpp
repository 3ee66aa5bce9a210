// reduce_sum by claims: under MAPRECT_BALANCE=hosts (which this test's CTest entries set, with each rank a
// host of its own through MAPRECT_TEST_HOST_RANKS=1) by message, and under auto on one host (the one_host
// variants) through host memory, any rank out of slices takes batches of a slower rank's unstarted slices. The bits stay those of the call in process whoever runs a slice, a slow rank's slices are run by
// the others, and a failing slice keeps the error rules (the lowest failing slice decides, named with the
// rank that ran it, wherever it ran), each error followed by a good call.
#include <catch2/catch.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mpi/compare.hpp"
#include "reduce_sum/functors.hpp"
#include "src/reduce_sum/claimed_slices.hpp"
#include "support/mpi_test.hpp"
#include "src/cluster/test_hooks.hpp"

using namespace maprect;
using namespace maprect::test;

namespace maprect::test {
/// walking_partial's sum of the slice's terms with `scale` shared; on world rank slow[0] each slice first
/// sleeps slow[1] microseconds; a term listed in `failing` throws std::domain_error("bad term <t>"). Whichever
/// rank runs a slice, its value and partials are the same.
struct rank_slowed_partial {
  template <class T_slice, class T_scale>
  reduce_return_t<T_slice, T_scale> operator()(const std::vector<T_slice>& slice, int start, int end,
                                               std::ostream* msgs, const T_scale& scale, const std::vector<int>& slow,
                                               const std::vector<int>& failing) const {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == slow[0]) std::this_thread::sleep_for(std::chrono::microseconds(slow[1]));
    for (int t : failing)
      if (t >= start && t <= end) throw std::domain_error("bad term " + std::to_string(t));
    return walking_partial{}(slice, start, end, msgs, scale);
  }
};
}  // namespace maprect::test

MAPRECT_REGISTER_REDUCE(801, maprect::test::rank_slowed_partial)
MAPRECT_REGISTER_REDUCE(802, maprect::test::rank_slowed_partial)
MAPRECT_REGISTER_REDUCE(803, maprect::test::rank_slowed_partial)
MAPRECT_REGISTER_REDUCE(804, maprect::test::rank_slowed_partial)

namespace {

/// N terms of distinct values.
std::vector<var> terms_of(int n) {
  std::vector<var> out;
  for (int t = 0; t < n; ++t) out.push_back(0.03 * t - 0.4);
  return out;
}

/// The call over the cluster, with its root share fixed at `root_slices` so that the test knows each rank's
/// range: its value and gradient.
template <int Id>
value_and_gradient on_cluster(int root_slices, int G, const std::vector<var>& terms, const var& scale,
                              const std::vector<int>& slow, const std::vector<int>& failing) {
  detail::plan_reduce_root_share(Id, root_slices);
  return gradient_of(reduce_sum<Id, rank_slowed_partial>(terms, G, nullptr, scale, slow, failing),
                     operands_of(terms, scale));
}

/// Whether this run claims by message on every call (MAPRECT_BALANCE=hosts). Under auto on one host the
/// claims go through host memory, on steady calls only: a call that ships the call site's data, or moves
/// the share, runs as planned and reports no claims.
bool every_call_claims() {
  const char* v = std::getenv("MAPRECT_BALANCE");
  return v != nullptr && std::strcmp(v, "hosts") == 0;
}

/// The split of n slices the test fixes: the root's share that of the even split.
detail::reduce_split split_of(int n_slices) { return detail::reduce_split::even(n_slices, the_cluster->size()); }

/// The message of what `call` throws ("" if nothing), checking that it is a std::domain_error.
template <class Call>
std::string domain_error_of(Call&& call) {
  try {
    call();
  } catch (const std::domain_error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not a domain_error: ") + e.what();
  }
  return "";
}

/// The message of slice s (grainsize 1) failing on rank r.
std::string failed_on(int id, int s, int r) {
  return "reduce_sum: call id " + std::to_string(id) + ", slice " + std::to_string(s) + " (terms [" +
         std::to_string(s) + ", " + std::to_string(s) + "]) on rank " + std::to_string(r) +
         " failed: bad term " + std::to_string(s);
}

/// Checks that `what` is the failure of slice s of rank `owner`'s range, named with the rank the last call's
/// report says ran it: the owner when its own slices reached s, else another rank (whichever claimed it).
void check_failure_named(const std::string& what, int s, int owner) {
  const detail::reduce_balance_report b = detail::last_reduce_balance();
  REQUIRE(!b.ends.empty());
  if (s < b.ends[owner]) {
    CHECK(what == failed_on(803, s, owner));
    return;
  }
  bool other = false;
  for (int r = 0; r < the_cluster->size(); ++r) other = other || (r != owner && what == failed_on(803, s, r));
  CHECK(other);
}

/// Every slice of the last call ran exactly once: the slices others ran of each worker's range are the
/// slices the ranks report taking.
void check_conservation(const detail::reduce_balance_report& b, int n_slices) {
  const int R = the_cluster->size();
  REQUIRE(b.firsts.size() == static_cast<std::size_t>(R) + 1);
  CHECK(b.firsts[R] == n_slices);
  int given = 0;  // the root's own slices too: by claims between all ranks of one host others run them
  for (int r = 0; r < R; ++r) {
    CHECK(b.ends[r] >= b.firsts[r]);
    CHECK(b.ends[r] <= b.firsts[r + 1]);
    given += b.firsts[r + 1] - b.ends[r];
  }
  CHECK(std::accumulate(b.taken.begin(), b.taken.end(), 0) == given);
  CHECK(b.taken[0] == the_cluster->last_call_profile().taken_jobs);
}

}  // namespace

TEST_CASE("reduce_sum claims: byte-equal to in process and to the fold, whoever runs the slices") {
  recover_memory();
  const var scale = 1.25;
  const std::vector<int> none;
  for (int N : {1, 7, 64}) {
    const std::vector<var> terms = terms_of(N);
    for (int G : {1, 2, 5, N}) {
      const int n_slices = (N + G - 1) / G;
      for (int slow_us : {0, 500}) {
        INFO("N = " << N << ", grainsize " << G << ", rank 1 sleeping " << slow_us << " us per slice, "
                    << the_cluster->size() << " ranks");
        const std::vector<int> slow = {1, slow_us};
        const value_and_gradient want = fold_over_slices<rank_slowed_partial>(G, terms, scale, slow, none);
        CHECK(in_process([&] { return on_cluster<801>(0, G, terms, scale, slow, none); }) == want);
        for (int call = 0; call < 2; ++call) {
          CHECK(on_cluster<801>(split_of(n_slices).root_slices, G, terms, scale, slow, none) == want);
          // The second call is steady: it went by claims however they travel.
          if (the_cluster->size() > 1 && (call == 1 || every_call_claims()))
            check_conservation(detail::last_reduce_balance(), n_slices);
        }
      }
    }
  }
  recover_memory();
}

TEST_CASE("reduce_sum claims: a slow worker's slices are run by the other ranks") {
  const int R = the_cluster->size();
  if (R == 1) return;
  recover_memory();
  const int N = 40 * (R - 1);
  const std::vector<var> terms = terms_of(N);
  const var scale = 0.75;
  const std::vector<int> slow = {1, 20000}, none;
  const value_and_gradient want = fold_over_slices<rank_slowed_partial>(1, terms, scale, slow, none);
  const detail::reduce_split split = split_of(N);
  const int range = split.first(2) - split.first(1);
  for (int call = 0; call < 3; ++call) {
    INFO("call " << call << ", " << R << " ranks");
    CHECK(on_cluster<802>(split.root_slices, 1, terms, scale, slow, none) == want);
    const detail::reduce_balance_report b = detail::last_reduce_balance();
    if (call == 0 && !every_call_claims()) continue;  // it shipped the data
    check_conservation(b, N);
    // Rank 1 sleeps 20 ms per slice and holds its slices after its first batch until another rank has
    // claimed some (MAPRECT_TEST_HOLD_RANK=1, which this test's CTest entries set): others ran the back of its
    // range in every call by claims. Which of them (the root, the other workers on any host) is the
    // schedule's; check_conservation accounts for each.
    CHECK(b.ends[1] - split.first(1) < range);
  }
  recover_memory();
}

// Run only by the entries that hold the root (MAPRECT_TEST_HOLD_RANK=0): the others hold rank 1.
TEST_CASE("reduce_sum claims: a slow root's slices are run by the workers", "[.][slow_root]") {
  const int R = the_cluster->size();
  if (R == 1) return;
  recover_memory();
  const int N = 12 * R;
  const std::vector<var> terms = terms_of(N);
  const var scale = 0.625;
  const std::vector<int> slow = {0, 20000}, none;
  const value_and_gradient want = fold_over_slices<rank_slowed_partial>(1, terms, scale, slow, none);
  const detail::reduce_split split = split_of(N);
  for (int call = 0; call < 3; ++call) {
    INFO("call " << call << ", " << R << " ranks");
    CHECK(on_cluster<804>(split.root_slices, 1, terms, scale, slow, none) == want);
    const detail::reduce_balance_report b = detail::last_reduce_balance();
    if (call == 0 && !every_call_claims()) continue;  // it shipped the data
    check_conservation(b, N);
    // The root sleeps 20 ms per slice and holds its slices after its first batch until a worker has claimed
    // some: the workers ran the back of its range in every call by claims.
    CHECK(b.ends[0] < split.first(1));
    CHECK(std::accumulate(b.taken.begin() + 1, b.taken.end(), 0) > 0);
  }
  recover_memory();
}

TEST_CASE("reduce_sum claims: a failure inside a taken slice keeps the error rules; then good calls") {
  const int R = the_cluster->size();
  if (R == 1) return;
  recover_memory();
  const int N = 6 * (R - 1);
  const std::vector<var> terms = terms_of(N);
  const var scale = 0.5;
  const std::vector<int> slow = {1, 20000};
  const detail::reduce_split split = split_of(N);
  const int last_of_1 = split.first(2) - 1, first_of_1 = split.first(1);
  // Each call twice: the failing slices are an argument, so the first ships the call site's data anew (and
  // under auto on one host runs as planned); the second is steady, by claims however they travel, and must
  // throw the same.
  auto good_call = [&] {
    const std::vector<int> none;
    for (int twice = 0; twice < 2; ++twice)
      CHECK(on_cluster<803>(split.root_slices, 1, terms, scale, slow, none) ==
            fold_over_slices<rank_slowed_partial>(1, terms, scale, slow, none));
  };
  auto failing_call = [&](const std::vector<int>& failing) {
    const std::string first =
        domain_error_of([&] { on_cluster<803>(split.root_slices, 1, terms, scale, slow, failing); });
    const std::string second =
        domain_error_of([&] { on_cluster<803>(split.root_slices, 1, terms, scale, slow, failing); });
    CHECK(first.substr(0, first.find(" on rank")) == second.substr(0, second.find(" on rank")));
    return second;
  };
  int by_others = 0;
  for (int call = 0; call < 3; ++call) {
    INFO("call " << call << ", " << R << " ranks");
    // The last slice of the slow rank's range: granted from the back, to whichever rank asked first.
    const std::string what = failing_call({last_of_1});
    bool named = false;
    for (int r = 0; r < R; ++r) named = named || what == failed_on(803, last_of_1, r);
    CHECK(named);
    // Where the claims said it ran: by a thief, since rank 1, held after its first batch until others
    // claimed (MAPRECT_TEST_HOLD_RANK=1), grants from the back of its range.
    const detail::reduce_balance_report b = detail::last_reduce_balance();
    REQUIRE(!b.ends.empty());
    if (b.ends[1] <= last_of_1) {
      CHECK(what != failed_on(803, last_of_1, 1));
      ++by_others;
    } else {
      CHECK(what == failed_on(803, last_of_1, 1));
    }
    good_call();
    // Two failures: the lower slice decides, although the thief's came first in time.
    check_failure_named(failing_call({first_of_1, last_of_1}), first_of_1, 1);
    good_call();
    // The root's own slice before a taken one.
    check_failure_named(failing_call({0, last_of_1}), 0, 0);
    good_call();
    if (R > 2) {
      // A taken slice before a failing slice of a later worker's range.
      const std::string first = failing_call({last_of_1, N - 1});
      CHECK(first.find("slice " + std::to_string(last_of_1) + " ") != std::string::npos);
      good_call();
    }
  }
  CHECK(by_others == 3);
  recover_memory();
}
