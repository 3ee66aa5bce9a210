// The scatters and gathers of a call run as MAPRECT_COLLECTIVES says (flat, tree, or hierarchical through the
// hosts that MAPRECT_TEST_HOST_RANKS makes on one machine): the kind that ran, the ranks the root heard from
// directly, the same bits as in process, and a job's error with its type and message.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "mpi/compare.hpp"
#include "mpi/functors.hpp"
#include "reduce_sum/functors.hpp"
#include "support/benchmark_model.hpp"
#include "src/balance/claims_engine.hpp"
#include "support/claims_always_pay.hpp"
#include "support/mpi_test.hpp"

using namespace maprect;

MAPRECT_REGISTER(811, test::ragged_job);
MAPRECT_REGISTER(812, test::logistic_job);
MAPRECT_REGISTER(813, test::throwing_job);
MAPRECT_REGISTER_REDUCE(814, maprect::test::walking_partial)

namespace {

std::string setting(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

/// Ranks per host of the collectives: MAPRECT_TEST_HOST_RANKS, or all of them (every test rank shares a node).
int host_ranks() {
  const int R = test::the_cluster->size();
  const std::string k = setting("MAPRECT_TEST_HOST_RANKS");
  return k.empty() ? R : std::min(R, std::atoi(k.c_str()));
}

/// The kind a gather of this run must take: the forced one, flat under a timeout or (auto) on one host; ""
/// where the cost model decides (auto across test hosts).
std::string expected_kind() {
  const std::string forced = setting("MAPRECT_COLLECTIVES"), timeout = setting("MAPRECT_TIMEOUT");
  if (!timeout.empty() && std::atof(timeout.c_str()) > 0) return "flat";
  if (!forced.empty() && forced != "auto") return forced;
  return host_ranks() == test::the_cluster->size() ? "flat" : "";
}

/// Checks the kind of the last call's gather and the ranks the root received it from directly.
void check_gather(const cluster::traffic& t, const std::string& expected) {
  const int R = test::the_cluster->size(), k = host_ranks();
  const std::string ran = t.collective;
  INFO("ranks " << R << ", hosts of " << k << ", gathered by '" << ran << "', expected '" << expected << "'");
  if (expected.empty()) {
    CHECK((ran == "flat" || ran == "tree" || ran == "hierarchical"));
  } else {
    CHECK(ran == expected);
  }
  const int hosts = (R + k - 1) / k;
  CHECK(t.gather_peers == (ran == "hierarchical" ? (k - 1) + (hosts - 1) : R - 1));
}

}  // namespace

TEST_CASE("map_rect: the steady call gathers by the kind asked for, with the bits of the call in process") {
  const int R = test::the_cluster->size();
  if (R == 1) return;
  // By claims (hosts, or auto across the test hosts) every worker answers the root by message: a flat gather.
  auto claimed = [](int) { return !detail::last_call_balance().ends.empty(); };
  for (int J : {1, 2, 5, 16, 33}) {
    INFO("J = " << J);
    // Ragged: 0 to 3 outputs per job, so that the workers' answers differ in size and are padded.
    std::vector<std::vector<double>> x_r(J, std::vector<double>{0.5, -1.5, 2.5});
    std::vector<std::vector<int>> x_i(J, std::vector<int>{0});
    for (int j = 0; j < J; ++j) x_i[j][0] = (j * 7 + J) % 4;
    Eigen::VectorXd phi(1);
    phi << 0.3;
    std::vector<Eigen::VectorXd> theta(J, Eigen::VectorXd::Constant(2, 0.7));
    for (int j = 0; j < J; ++j) theta[j](1) = 0.1 * j;
    test::check_bit_equal<811, test::ragged_job, var, var>(phi, theta, x_r, x_i);
    test::check_bit_equal<811, test::ragged_job, double, var>(phi, theta, x_r, x_i);
    if (!test::reports_through_host_memory())
      check_gather(test::the_cluster->last_call_traffic(), claimed(811) ? "flat" : expected_kind());
  }
  test::benchmark_data d(40, 30);
  test::check_bit_equal<812, test::logistic_job, var, var>(d.phi, d.theta, d.x_r, d.x_i);
  if (!test::reports_through_host_memory())
    check_gather(test::the_cluster->last_call_traffic(), claimed(812) ? "flat" : expected_kind());
}

TEST_CASE("reduce_sum: the call gathers by the kind asked for, with the bits of the call in process") {
  const int R = test::the_cluster->size();
  if (R == 1) return;
  std::vector<var> sliced;
  for (int t = 0; t < 37; ++t) sliced.emplace_back(0.25 * t - 3);
  const var scale = 1.5;
  for (int G : {1, 4, 40}) {
    INFO("grainsize " << G);
    auto call = [&] { return reduce_sum<814, test::walking_partial>(sliced, G, nullptr, scale); };
    const double local = test::in_process(call).val();
    const var on_ranks = call();
    INFO("in process " << local << ", over the ranks " << on_ranks.val());
    CHECK(test::bit_equal(on_ranks.val(), local));
    // By claims by message (hosts, or auto where the ranks cannot claim in host memory) every worker answers
    // the root by message, as a flat gather would.
    const std::string balance = setting("MAPRECT_BALANCE");
    const bool by_message = balance != "static" && balance != "even" && !test::through_host_memory();
    check_gather(test::the_cluster->last_call_traffic(), by_message ? "flat" : expected_kind());
  }
  recover_memory();  // the arguments' vars live on the tape until here
}

TEST_CASE("map_rect: a job's error comes back with its type and message whatever the collectives") {
  const int J = 11;
  Eigen::VectorXd phi(1);
  phi << 2;
  std::vector<Eigen::VectorXd> theta(J, Eigen::VectorXd::Constant(1, 1.0));
  std::vector<std::vector<double>> x_r(J, std::vector<double>{1.0});
  std::vector<std::vector<int>> x_i(J, std::vector<int>{0, 0});
  for (int j = 0; j < J; ++j) x_i[j][1] = j;
  CHECK(map_rect<813, test::throwing_job>(phi, theta, x_r, x_i).sum() == 2.0 * J);  // planned, then steady
  CHECK(map_rect<813, test::throwing_job>(phi, theta, x_r, x_i).sum() == 2.0 * J);
  x_i[J - 1][0] = 4;  // the last job, on the last rank: std::range_error
  try {
    map_rect<813, test::throwing_job>(phi, theta, x_r, x_i);
    FAIL("no exception");
  } catch (const std::range_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("boom at 10"));
  }
  x_i[J - 1][0] = 0;
  CHECK(map_rect<813, test::throwing_job>(phi, theta, x_r, x_i).sum() == 2.0 * J);
  recover_memory();
}
