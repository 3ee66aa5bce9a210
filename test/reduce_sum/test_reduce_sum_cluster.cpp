// reduce_sum over the cluster's ranks (1 to 4, each on 1 to 3 threads through MAPRECT_THREADS): value and
// every partial byte-equal to the same call in process and to the test-side fold over slices, for every
// double/var mix; one node on the root's tape; closed forms and finite differences; the first failing slice
// in slice order, naming its rank, then good calls; data changed between calls never stale, and data that
// did not change not sent again.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mpi/compare.hpp"
#include "reduce_sum/functors.hpp"
#include "reduce_sum/models.hpp"
#include "support/benchmark_model.hpp"
#include "support/claims_always_pay.hpp"
#include "support/mpi_test.hpp"
#include "src/reduce_sum/claimed_slices.hpp"
#include "src/cluster/test_hooks.hpp"

using namespace maprect;
using namespace maprect::test;

MAPRECT_REGISTER_REDUCE(501, maprect::test::logistic_partial)
MAPRECT_REGISTER_REDUCE(502, maprect::test::logistic_partial)
MAPRECT_REGISTER_REDUCE(503, maprect::test::logistic_partial)
MAPRECT_REGISTER_REDUCE(504, maprect::test::logistic_partial)
MAPRECT_REGISTER_REDUCE(510, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(511, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(512, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(513, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(514, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(515, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(516, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(517, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(520, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(521, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(522, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(523, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(524, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(525, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(530, maprect::test::throwing_partial)
MAPRECT_REGISTER_REDUCE(531, maprect::test::throwing_partial)
MAPRECT_REGISTER_REDUCE(540, maprect::test::logistic_partial)
MAPRECT_REGISTER_REDUCE(541, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(542, maprect::test::walking_partial)
MAPRECT_REGISTER(543, maprect::test::logistic_job)
MAPRECT_REGISTER_REDUCE(550, maprect::test::standard_partial)
MAPRECT_REGISTER(551, maprect::test::logistic_job)

namespace maprect::test {
/// F, slowed down on the workers (2 ms per slice on ranks other than 0 of MPI_COMM_WORLD, as Open MPI's
/// launcher tells each process): others finish first and take over theirs. A slice is worth more than a round
/// trip then, under valgrind too, so a held worker's slices are always worth a claim.
template <class F>
struct slow_on_workers {
  template <class T_slice, class... Args>
  auto operator()(const std::vector<T_slice>& slice, int start, int end, std::ostream* msgs,
                  const Args&... args) const {
    static const bool on_worker = [] {
      const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
      return rank != nullptr && std::atoi(rank) != 0;
    }();
    if (on_worker) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return F{}(slice, start, end, msgs, args...);
  }
};
}  // namespace maprect::test

MAPRECT_REGISTER_REDUCE(560, maprect::test::slow_on_workers<maprect::test::walking_partial>)
MAPRECT_REGISTER_REDUCE(561, maprect::test::slow_on_workers<maprect::test::throwing_partial>)
MAPRECT_REGISTER_REDUCE(571, maprect::test::walking_partial)

namespace {

/// reduce_sum<Id, F> as its value and gradient w.r.t. every var of the arguments: over the cluster, or in
/// process with the cluster's backend switched off. Checks that the call adds one node to the tape (none
/// without vars).
template <int Id, class F, class T_slice, class... Args>
value_and_gradient run_call(bool on_cluster, int G, const std::vector<T_slice>& sliced, const Args&... args) {
  const std::size_t nodes = tape::current().stack.size();
  auto call = [&] { return reduce_sum<Id, F>(sliced, G, nullptr, args...); };
  const auto result = on_cluster ? call() : in_process(call);
  CHECK(tape::current().stack.size() == nodes + (is_var_v<decltype(result)> ? 1 : 0));
  return gradient_of(result, operands_of(sliced, args...));
}

/// For each grainsize: the cluster's bits are those of the call in process and of the test-side fold.
template <int Id, class F, class T_slice, class... Args>
void check_bits(const std::vector<int>& grainsizes, const std::vector<T_slice>& sliced, const Args&... args) {
  for (int G : grainsizes) {
    INFO("N = " << sliced.size() << ", grainsize " << G << ", " << the_cluster->size() << " ranks x "
                << the_cluster->threads() << " threads");
    const value_and_gradient local = run_call<Id, F>(false, G, sliced, args...);
    const value_and_gradient ranks = run_call<Id, F>(true, G, sliced, args...);
    CHECK(ranks == local);
    CHECK(ranks == fold_over_slices<F>(G, sliced, args...));
    // Again: the call site's data are cached on the workers now.
    CHECK(run_call<Id, F>(true, G, sliced, args...) == local);
  }
}

/// Where slice s of a call of n_slices runs: "in process" on one rank, else "on rank r" (contiguous ranges of
/// slices in rank order, as even as whole slices allow, the larger first).
std::string where_slice_runs(int n_slices, int s) {
  const int ranks = the_cluster->size();
  if (ranks == 1) return "in process";
  int r = 0;
  while (n_slices - n_slices * (ranks - r - 1) / ranks <= s) ++r;
  return "on rank " + std::to_string(r);
}

/// Whether environment variable `name` is `value`.
bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, value) == 0;
}

/// Whether this run's steady calls claim slices between all ranks in host memory: MAPRECT_BALANCE auto, every
/// rank on one node (not split into test hosts), and the shared-memory transport.
bool taking_over() {
  const char* v = std::getenv("MAPRECT_BALANCE");
  return through_host_memory() && (v == nullptr || v[0] == '\0' || std::strcmp(v, "auto") == 0);
}

/// Whether this run's steady calls claim slices by message: under MAPRECT_BALANCE=hosts, and under auto where
/// the ranks cannot claim in host memory. Any rank may then run any worker's slice.
bool claiming() {
  if (the_cluster->size() == 1 || env_is("MAPRECT_BALANCE", "static") || env_is("MAPRECT_BALANCE", "even")) return false;
  return !taking_over();
}

/// The messages of slice s of n_slices failing: "<head> on rank r failed: <tail>" with its planned rank, and
/// under claims (MAPRECT_BALANCE=hosts, or auto's between all ranks of one host) with any rank.
std::vector<std::string> failed_messages(const std::string& head, int n_slices, int s, const std::string& tail) {
  std::vector<std::string> out = {head + " " + where_slice_runs(n_slices, s) + " failed: " + tail};
  if (claiming() || taking_over())
    for (int r = 0; r < the_cluster->size(); ++r) out.push_back(head + " on rank " + std::to_string(r) + " failed: " + tail);
  return out;
}

/// The message of what `call` throws ("" if nothing).
template <class Call>
std::string thrown_by(Call&& call) {
  try {
    call();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("reduce_sum over the cluster: every kind of argument, byte-equal to in process and to the fold") {
  recover_memory();
  for (int N : {1, 5, 29}) {
    const nested_arguments a(N);
    check_bits<520, walking_partial>({1, 2, 3, 7, N, N + 3}, a.sliced, a.m, a.scalars, a.x, a.k, a.data);
  }
  const nested_arguments a(17);
  std::vector<double> data_slices;
  for (int t = 0; t < 17; ++t) data_slices.push_back(0.1 * t - 0.7);
  check_bits<521, walking_partial>({1, 4, 17}, data_slices, a.m, a.scalars);
  check_bits<522, walking_partial>({1, 5}, a.sliced, a.x, a.data);
  const std::vector<int> int_slices = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5};
  check_bits<523, walking_partial>({1, 2, 11}, int_slices, a.x, a.data, a.k);  // no var: a double
  const std::vector<var> no_vars;
  check_bits<524, walking_partial>({3}, int_slices, no_vars);  // a var with no operands
  // More shared vars than the request carries inline: the rest follow in a second broadcast.
  const vector_v wide = to_var(Eigen::VectorXd::LinSpaced(30, -1, 1));
  check_bits<525, walking_partial>({1, 4}, a.sliced, wide, a.scalars);
  recover_memory();
}

TEST_CASE("reduce_sum over the cluster: logistic regression, every double/var mix, closed form and bits") {
  recover_memory();
  const logistic_data d(61, 3);
  for (int G : {1, 4, 16, 61}) {
    INFO("grainsize " << G);
    check_logistic<501, double, double>(d, G);
    check_logistic<502, double, var>(d, G);
    check_logistic<503, var, double>(d, G);
    check_logistic<504, var, var>(d, G);
  }
  const vector_v beta = to_var(d.beta);
  const var alpha = d.alpha;
  check_bits<504, logistic_partial>({1, 4, 16, 61}, d.y, d.X, beta, alpha);
  check_bits<502, logistic_partial>({7}, d.y, d.X, d.beta, alpha);
  const logistic_data small(23, 2);
  const vector_v small_beta = to_var(small.beta);
  for (int G : {1, 5, 23}) check_finite_differences<504, logistic_partial>(G, small.y, small.X, small_beta, alpha);
  recover_memory();
}

TEST_CASE("reduce_sum over the cluster: hierarchical model, every double/var mix, closed form and bits") {
  recover_memory();
  const hierarchical_data d(21);
  for (int G : {1, 2, 7, 21}) {
    INFO("grainsize " << G);
    check_hierarchical<510, double, double, double>(d, G);
    check_hierarchical<511, double, double, var>(d, G);
    check_hierarchical<512, double, var, double>(d, G);
    check_hierarchical<513, double, var, var>(d, G);
    check_hierarchical<514, var, double, double>(d, G);
    check_hierarchical<515, var, double, var>(d, G);
    check_hierarchical<516, var, var, double>(d, G);
    check_hierarchical<517, var, var, var>(d, G);
  }
  std::vector<vector_v> groups;
  for (const auto& g : d.groups) groups.push_back(to_var(g));
  const var mu = d.mu, log_tau = d.log_tau;
  check_bits<517, hierarchical_partial>({1, 3, 8, 21}, groups, d.y, mu, log_tau);
  const hierarchical_data small(9);
  std::vector<vector_v> small_groups;
  for (const auto& g : small.groups) small_groups.push_back(to_var(g));
  for (int G : {1, 4, 9}) check_finite_differences<517, hierarchical_partial>(G, small_groups, small.y, mu, log_tau);
  recover_memory();
}

TEST_CASE("reduce_sum over the cluster: the first failing slice in slice order names its rank; then good calls") {
  recover_memory();
  const var scale = 2.0;
  std::vector<int> terms = failing_terms();
  const std::vector<int> fine(40, 4);
  auto expect = [&](auto&& call, const std::vector<std::string>& allowed) {
    const std::size_t size = tape_size();
    const std::string what = thrown_by(call);
    INFO("thrown: " << what);
    CHECK(std::find(allowed.begin(), allowed.end(), what) != allowed.end());
    CHECK(tape_size() == size);
    CHECK(reduce_sum<530, throwing_partial>(fine, 3, nullptr, scale).val() == 2.0 * 4 * 40);
  };
  expect([&] { return reduce_sum<530, throwing_partial>(terms, 1, nullptr, scale); },
         failed_messages("reduce_sum: call id 530, slice 5 (terms [5, 5])", 40, 5, "bad term 5"));
  CHECK_THROWS_AS((reduce_sum<530, throwing_partial>(terms, 1, nullptr, scale)), std::invalid_argument);
  terms[5] = 4;
  expect([&] { return reduce_sum<530, throwing_partial>(terms, 3, nullptr, scale); },
         failed_messages("reduce_sum: call id 530, slice 3 (terms [9, 11])", 14, 3, "bad term 9"));
  CHECK_THROWS_AS((reduce_sum<531, throwing_partial>(terms, 2, nullptr, 2.0)), std::domain_error);
  terms[9] = 4;
  expect([&] { return reduce_sum<530, throwing_partial>(terms, 4, nullptr, scale); },
         failed_messages("reduce_sum: call id 530, slice 4 (terms [16, 19])", 10, 4, "unknown exception"));
  terms[17] = 4;
  // Only the last slices fail: on the last rank, or on the root that took them over.
  expect([&] { return reduce_sum<531, throwing_partial>(terms, 1, nullptr, 2.0); },
         failed_messages("reduce_sum: call id 531, slice 30 (terms [30, 30])", 40, 30, "bad term 30"));
  CHECK_THROWS_AS((reduce_sum<531, throwing_partial>(terms, 1, nullptr, 2.0)), std::domain_error);
  CHECK(reduce_sum<531, throwing_partial>(fine, 1, nullptr, 2.0) == 2.0 * 4 * 40);
  recover_memory();
}

TEST_CASE("reduce_sum over the cluster: data changed between calls is never stale; unchanged data is not resent") {
  recover_memory();
  logistic_data d(37, 2);
  const vector_v beta = to_var(d.beta);
  const var alpha = d.alpha;
  const bool ranks = the_cluster->size() > 1;
  std::uint64_t first_sent = 0;
  for (int round = 0; round < 4; ++round) {
    INFO("round " << round);
    if (round == 2) {  // only the data change: the same shapes, a covariate and an observation
      d.X(3, 1) += 0.5;
      d.y[20] = 1 - d.y[20];
    }
    if (round == 3) {  // fewer observations: new shapes
      d.X.conservativeResize(30, 2);
      d.y.resize(30);
    }
    const var lp = reduce_sum<540, logistic_partial>(d.y, 4, nullptr, d.X, beta, alpha);
    const std::uint64_t sent = the_cluster->last_call_traffic().sent;
    CHECK(gradient_of(lp, operands_of(d.y, d.X, beta, alpha)) ==
          fold_over_slices<logistic_partial>(4, d.y, d.X, beta, alpha));
    CHECK(close(lp.val(), d.exact().value, 1e-13));
    if (round == 0) first_sent = sent;
    // The data (X alone is 37 x 2 doubles) go out with the first call and each change, never in between.
    if (ranks && round == 1) CHECK(sent + 37 * 2 * sizeof(double) < first_sent);
    if (ranks && round >= 2) CHECK(sent > 37 * 2 * sizeof(double) / 2);
  }
  // Sliced parameters whose shapes change: the hierarchical model with a group more.
  for (int J : {8, 9}) {
    hierarchical_data grown(J);
    std::vector<vector_v> groups;
    for (const auto& g : grown.groups) groups.push_back(to_var(g));
    const var mu = grown.mu, log_tau = grown.log_tau;
    const var lp = reduce_sum<541, hierarchical_partial>(groups, 3, nullptr, grown.y, mu, log_tau);
    CHECK(gradient_of(lp, operands_of(groups, grown.y, mu, log_tau)) ==
          fold_over_slices<hierarchical_partial>(3, groups, grown.y, mu, log_tau));
  }
  recover_memory();
}

TEST_CASE("reduce_sum over the cluster: the standard model, between map_rect calls of the same cluster") {
  recover_memory();
  const benchmark_data d(29, 13);
  Eigen::VectorXd want_gradient;
  const double want = d.closed_form(want_gradient);
  const vector_v phi = to_var(d.phi);
  std::vector<vector_v> theta;
  for (const auto& t : d.theta) theta.push_back(to_var(t));
  const std::vector<vari*> ops = operands_of(theta, phi, d.x_r, d.x_i);
  for (int round = 0; round < 2; ++round) {
    for (int G : {1, 8, 29}) {
      INFO("round " << round << ", grainsize " << G);
      // map_rect's outputs (one per job) folded in job order: the value of reduce_sum with grainsize 1.
      const vector_v outputs = map_rect<551, logistic_job>(phi, theta, d.x_r, d.x_i);
      double fold = 0.0;
      for (Eigen::Index j = 0; j < outputs.size(); ++j) fold += outputs(j).val();
      const var lp = reduce_sum<550, standard_partial>(theta, G, nullptr, phi, d.x_r, d.x_i);
      const value_and_gradient got = gradient_of(lp, ops);
      CHECK(close(got.value, want, 1e-13));
      if (G == 1) CHECK(bits(got.value) == bits(fold));
      for (Eigen::Index k = 0; k < want_gradient.size(); ++k) CHECK(close(got.gradient[k], want_gradient(k), 1e-12));
      CHECK(got == in_process([&] {
              return gradient_of(reduce_sum<550, standard_partial>(theta, G, nullptr, phi, d.x_r, d.x_i), ops);
            }));
    }
  }
  recover_memory();
}

TEST_CASE("reduce_sum over the cluster: others take over slow workers' slices, with the same bits") {
  recover_memory();
  const nested_arguments a(48);
  // Who takes what is the schedule's, unless rank 1 holds its slices until another rank has claimed some
  // (MAPRECT_TEST_HOLD_RANK=1, which the *_held entries set): then others take some in every steady call.
  const char* held_rank = std::getenv("MAPRECT_TEST_HOLD_RANK");
  const bool held = held_rank != nullptr && std::strcmp(held_rank, "1") == 0 && the_cluster->size() > 1;
  int taken = 0;
  for (int G : {1, 3}) {
    const int n_slices = (48 + G - 1) / G;
    for (int call = 0; call < 3; ++call) {
      INFO("grainsize " << G << ", call " << call << ", " << the_cluster->size() << " ranks");
      using slow = slow_on_workers<walking_partial>;
      const value_and_gradient local = run_call<560, slow>(false, G, a.sliced, a.m, a.scalars, a.x, a.data);
      CHECK(run_call<560, slow>(true, G, a.sliced, a.m, a.scalars, a.x, a.data) == local);
      CHECK(local == fold_over_slices<walking_partial>(G, a.sliced, a.m, a.scalars, a.x, a.data));
      const cluster::profile p = the_cluster->last_call_profile();
      CHECK(p.taken_jobs >= 0);
      CHECK(p.taken_jobs <= n_slices - p.root_jobs);
      taken += p.taken_jobs;
      const detail::reduce_balance_report b = detail::last_reduce_balance();
      int by_others = 0;  // slices of other ranks' ranges that any rank ran
      for (int t : b.taken) by_others += t;
      if (held && call > 0) CHECK(by_others > 0);
    }
  }
  if (!taking_over() && !claiming()) CHECK(taken == 0);
  // A failing slice at the end of the last worker's range: run there, or by the root that took it over.
  std::vector<int> terms(40, 4);
  terms[39] = 1;
  const var scale = 2.0;
  for (int call = 0; call < 3; ++call) {
    const std::vector<std::string> allowed =
        failed_messages("reduce_sum: call id 561, slice 39 (terms [39, 39])", 40, 39, "bad term 39");
    const std::string what =
        thrown_by([&] { return reduce_sum<561, slow_on_workers<throwing_partial>>(terms, 1, nullptr, scale); });
    INFO("thrown: " << what);
    CHECK(std::find(allowed.begin(), allowed.end(), what) != allowed.end());
    CHECK_THROWS_AS((reduce_sum<561, slow_on_workers<throwing_partial>>(terms, 1, nullptr, scale)), std::domain_error);
    const std::vector<int> fine(40, 4);
    CHECK(reduce_sum<561, slow_on_workers<throwing_partial>>(fine, 1, nullptr, scale).val() == 2.0 * 4 * 40);
  }
  recover_memory();
}

TEST_CASE("reduce_sum over the cluster: bad input is refused before any message, and the next call works") {
  recover_memory();
  const std::vector<double> terms = {0.5, -0.25, 1.5, 2.0, 0.75};
  const var v = 0.75;
  const vector_v w = to_var(Eigen::Vector2d(0.5, 1.5));
  auto good_call = [&] {
    CHECK(run_call<542, walking_partial>(true, 2, terms, v) == fold_over_slices<walking_partial>(2, terms, v));
  };
  good_call();
  const std::size_t nodes = tape::current().stack.size();
  CHECK_THROWS_WITH((reduce_sum<542, walking_partial>(terms, 0, nullptr, v)),
                    "reduce_sum: call id 542: grainsize must be at least 1, got 0");
  good_call();
  CHECK(reduce_sum<542, walking_partial>(std::vector<double>{}, 2, nullptr, v).val() == 0.0);
  CHECK(tape::current().stack.size() == nodes + 1);  // the good call's node only
  CHECK_THROWS_AS((reduce_sum<542, walking_partial>(terms, 2, nullptr, w)), std::invalid_argument);
  good_call();
  CHECK_THROWS_WITH((reduce_sum<543, walking_partial>(terms, 2, nullptr, v)),
                    Catch::StartsWith("reduce_sum: call id 543 is registered for map_rect (MAPRECT_REGISTER)"));
  good_call();
  recover_memory();
}

MAPRECT_REGISTER_REDUCE(570, maprect::test::walking_partial)

/// Whether reduce_sum's values and blocks go through the host slots: the cluster's data do, and no claims go
/// by message (every answer then goes by message).
bool reduce_through_host_memory() { return through_host_memory() && !claiming(); }

/// Whether a steady call's statuses go through host memory too (claims between all ranks): then the call
/// sends no message but its request.
bool status_through_host_memory() { return reduce_through_host_memory() && taking_over(); }

TEST_CASE("reduce_sum over the cluster: traffic per call matches the message plan, through host memory on one host") {
  recover_memory();
  std::vector<var> terms;
  for (int t = 0; t < 12; ++t) terms.push_back(0.1 * t - 0.4);
  const var scale = 0.8;
  const int R = the_cluster->size(), slices = 6;  // grainsize 2
  const int root_slices = slices - slices * (R - 1) / R;
  const value_and_gradient want = fold_over_slices<walking_partial>(2, terms, scale);
  CHECK(run_call<570, walking_partial>(true, 2, terms, scale) == want);  // ships the call site's data
  CHECK(the_cluster->last_call_traffic().through_memory == 0);
  for (int call = 0; call < 3; ++call) {
    INFO("steady call " << call);
    CHECK(run_call<570, walking_partial>(true, 2, terms, scale) == want);
    const cluster::traffic t = the_cluster->last_call_traffic();
    if (R == 1) {
      CHECK(t.sent + t.received + t.through_memory == 0);
      continue;
    }
    // The request to each worker and the workers' term values out; back, each worker's status and a block of
    // 1 + 1 + 2 doubles (value, the shared var's partial, its two terms' partials) per slice it ran.
    // By message the root sends a worker thief the values of every slice it is granted, from any rank's range
    // (2 terms each; a slice claimed in host memory, none); the status and blocks of each result come to the
    // root as a flat gather would bring them (the asks, the grants and the heads that say whose blocks follow
    // are counted apart: at least each worker's last ask, the root's "none" and its own slices' head).
    // Who ran what is the schedule's: the call reports it (by claims, the root's own slices that others ran).
    const int taken = the_cluster->last_call_profile().taken_jobs;
    const detail::reduce_balance_report b = detail::last_reduce_balance();
    const int root_ran = b.ends.empty() ? root_slices + taken : b.ends[0] + b.taken[0];
    const std::uint64_t values = 8u * (12 - 2 * root_slices), blocks = 8u * 4 * (slices - root_ran);
    int thieves_ran = 0;  // slices the workers ran of other ranks' ranges, granted by message
    if (claiming())
      for (int r = 1; r < R; ++r) thieves_ran += b.taken[r] - (b.taken_in_host.empty() ? 0 : b.taken_in_host[r]);
    CHECK(t.sent == 8u * 32 * (R - 1) + values + 8u * 2 * thieves_ran);
    CHECK(t.received == 8u * 5 * (R - 1) + blocks);
    if (claiming())
      CHECK(t.claims_messages >= 3u * (R - 1));
    else
      CHECK(t.claims_messages + t.claims_bytes == 0);
    // On one host the values and blocks go through the workers' slots; the request by message, and the status
    // too unless the claims between all ranks carry it.
    const std::uint64_t statuses = status_through_host_memory() ? 8u * 5 * (R - 1) : 0u;
    CHECK(t.through_memory == (reduce_through_host_memory() ? values + blocks + statuses : 0u));
  }
  recover_memory();
}

TEST_CASE("reduce_sum over the cluster: any root share of the slices gives the same bits, and a moved share keeps "
          "the host slots") {
  recover_memory();
  std::vector<var> terms;
  for (int t = 0; t < 24; ++t) terms.push_back(0.05 * t - 0.6);
  const var scale = 1.3;
  const int R = the_cluster->size(), slices = 8;  // grainsize 3
  const value_and_gradient want = fold_over_slices<walking_partial>(3, terms, scale);
  CHECK(run_call<571, walking_partial>(true, 3, terms, scale) == want);  // ships the call site's data
  int root_runs = slices - slices * (R - 1) / R;
  for (int share : {0, 1, slices / 2, slices - 1, slices, slices + 5}) {
    INFO("root share " << share << ", " << R << " ranks");
    detail::plan_reduce_root_share(571, share);
    const bool moved = std::min(share, slices) != root_runs;
    root_runs = std::min(share, slices);
    CHECK(run_call<571, walking_partial>(true, 3, terms, scale) == want);
    // A share that moves resizes the slots after the call, so the call itself goes by message.
    if (moved) CHECK(the_cluster->last_call_traffic().through_memory == 0);
    if (R > 1) CHECK(the_cluster->last_call_profile().root_jobs == root_runs);
    for (int call = 0; call < 2; ++call) {
      CHECK(run_call<571, walking_partial>(true, 3, terms, scale) == want);
      const cluster::profile p = the_cluster->last_call_profile();
      const cluster::traffic t = the_cluster->last_call_traffic();
      if (R == 1) continue;
      CHECK(p.root_jobs == root_runs);
      // The workers' values and blocks still fit their slots: through memory on one host.
      CHECK((t.through_memory > 0) == (status_through_host_memory() ||
                                       (reduce_through_host_memory() && root_runs < slices)));
    }
  }
  recover_memory();
}
