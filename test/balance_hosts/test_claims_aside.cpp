// An owner whose jobs last milliseconds runs them aside and answers the claims meanwhile
// (src/balance/batch_aside.hpp): under MAPRECT_BALANCE=hosts, which this test's CTest entries set, a job (or a
// reduce_sum slice) of rank 1 that waits until another rank ran one of rank 1's ends, and the call has the
// in-process bits.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <maprect/reduce_sum.hpp>
#include <string>
#include <vector>

#include "balance_hosts/functors.hpp"
#include "mpi/compare.hpp"
#include "support/claims_always_pay.hpp"
#include "src/balance/claims_engine.hpp"
#include "src/reduce_sum/claimed_slices.hpp"
#include "src/cluster/test_hooks.hpp"
#include "support/mpi_test.hpp"

using namespace maprect;

MAPRECT_REGISTER(616, test::relieved_job);
MAPRECT_REGISTER_REDUCE(617, maprect::test::relieved_partial)

namespace {

/// Values and gradient of the sum of map_rect<616> with var parameters.
std::vector<double> evaluate_relieved(const Eigen::VectorXd& phi, const std::vector<Eigen::VectorXd>& theta,
                                      const std::vector<std::vector<double>>& x_r,
                                      const std::vector<std::vector<int>>& x_i) {
  return test::evaluate<616, test::relieved_job, var, var>(phi, theta, x_r, x_i);
}

/// This run claims by message: on one host `auto` claims in host memory, with no owner's help.
void require_claims_by_message() {
  const char* balance = std::getenv("MAPRECT_BALANCE");
  REQUIRE(balance != nullptr);
  REQUIRE(std::string(balance) == "hosts");
}

/// The steady call `evaluate()` over the cluster, whose waiting job or slice must be relieved, has the bits of
/// the same call in process. The in-process call marks relieved_mark(token), so the mark goes before the
/// cluster's call, and after it for the next test.
template <class Evaluate>
void check_relieved_call(int token, Evaluate&& evaluate) {
  const auto serial = test::in_process(evaluate);
  std::remove(test::relieved_mark(token).c_str());
  const auto distributed = evaluate();
  std::remove(test::relieved_mark(token).c_str());
  test::check_same_bits(distributed, serial);
}

}  // namespace

TEST_CASE("an owner whose job waits to be relieved answers asks while that job runs") {
  require_claims_by_message();
  const int R = test::the_cluster->size();
  if (R < 2) return;
  const int per_rank = 12, J = per_rank * R, token = static_cast<int>(getpid());
  std::vector<std::vector<double>> x_r;
  std::vector<std::vector<int>> x_i;
  std::vector<Eigen::VectorXd> theta;
  for (int j = 0; j < J; ++j) {
    const bool of_rank_1 = j >= per_rank && j < 2 * per_rank;
    // 3 ms a job: rank 1's first batch (a job a thread) times its batches long enough to run the next ones
    // aside, and its third job, in its second or third batch, waits. The others' asks then find rank 1 in the
    // waiting job, where only an answer given aside relieves it. The root's jobs cost the same. grant_for
    // refuses a thief that would end one job no sooner than the owner ends all it has left, so 12 jobs a rank
    // leave rank 1 at least 6 unstarted while it waits: only a thief timed over 6 times slower is refused them,
    // where with 6 a rank one timed 2.5 times slower on a loaded machine would have left the wait unrelieved.
    x_i.push_back({of_rank_1 ? 1 : -1, j == per_rank + 2 ? 1 : 0, token, 3000, 0});
    x_r.push_back({0.5 * j + 0.125});
    theta.push_back(Eigen::VectorXd::LinSpaced(2, 0.1 * j, 1.0 - 0.1 * j));
  }
  detail::plan_root_share(616, per_rank);
  Eigen::VectorXd phi(2);
  phi << 0.25, 0.25;
  evaluate_relieved(phi, theta, x_r, x_i);  // the first call plans by the static split: nobody waits
  phi(1) = 0.75;
  check_relieved_call(token, [&] { return evaluate_relieved(phi, theta, x_r, x_i); });
  // Rank 1's waiting job ended: another rank ran some of rank 1's jobs during it.
  const detail::balance_report b = detail::last_call_balance();
  REQUIRE(static_cast<int>(b.ends.size()) == R);
  CHECK(b.ends[1] < per_rank);
}

TEST_CASE("a reduce_sum owner whose slice waits to be relieved answers asks while that slice runs") {
  require_claims_by_message();
  const int R = test::the_cluster->size();
  if (R < 2) return;
  // One term a slice, 12 a rank (the even split's root share); rank 1's third slice waits, as above.
  const int per_rank = 12, N = per_rank * R, token = static_cast<int>(getpid()) + 1;
  const std::vector<int> info = {1, per_rank, 2 * per_rank, per_rank + 2, token, 3000, 0};
  std::vector<var> terms;
  for (int k = 0; k < N; ++k) terms.push_back(0.03 * k - 0.4);
  std::vector<var> phi = {0.25, 0.25};
  const auto evaluate = [&] { return test::relieved_sum_and_adjoints<617>(terms, phi, info); };
  detail::plan_reduce_root_share(617, per_rank);
  evaluate();  // the first call ships the call site's data
  phi[1] = 0.75;
  check_relieved_call(token, evaluate);
  const detail::reduce_balance_report b = detail::last_reduce_balance();
  REQUIRE(static_cast<int>(b.ends.size()) == R);
  CHECK(b.ends[1] < 2 * per_rank);  // global slice index: others ran the back of rank 1's range
}
