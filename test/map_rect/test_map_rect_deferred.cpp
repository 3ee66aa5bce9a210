// Deferred reverse mode in process (MAPRECT_REVERSE): gradients against eager and the closed form, the same bits
// for every thread team, nested tapes, grad twice, kept tapes dropped when the caller's tape lets go of the call,
// ragged and empty calls, forward and reverse failures, the setting's errors and auto's choice.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "map_rect/deferred_problem.hpp"
#include "map_rect/functors.hpp"
#include "src/cluster/test_hooks.hpp"

using namespace maprect;
using test::check_close;
using test::reverse_mode_scope;
using test::weight;
using test::wide_problem;

MAPRECT_REGISTER(400, maprect::test::wide_job);
MAPRECT_REGISTER(401, maprect::test::ragged_outputs_job);
MAPRECT_REGISTER(402, maprect::test::throwing_job);
MAPRECT_REGISTER(403, maprect::test::reverse_throwing_job);
MAPRECT_REGISTER(404, maprect::test::logistic_job);
MAPRECT_REGISTER(405, maprect::test::wide_job);
MAPRECT_REGISTER(406, maprect::test::inner_sweep_job);

namespace {

/// Uniform: K outputs for each of J jobs.
std::vector<int> same_counts(int J, int K) { return std::vector<int>(static_cast<std::size_t>(J), K); }

/// Values and gradient (phi's, then every theta's) of sum_k weight(k) y_k.
struct outcome {
  std::vector<double> values, gradient;
};

/// Runs map_rect<Id, F> on p with var parameters under MAPRECT_REVERSE = mode, on `team` when given.
template <int Id, class F>
outcome evaluate(const wide_problem& p, const char* mode, thread_team* team = nullptr) {
  const reverse_mode_scope reverse(mode);
  std::optional<team_scope> scope;
  if (team != nullptr) scope.emplace(*team);
  recover_memory();
  const vector_v phi = to_var(p.phi);
  std::vector<vector_v> theta;
  for (const auto& t : p.theta) theta.push_back(to_var(t));
  const vector_v y = map_rect<Id, F>(phi, theta, p.x_r, p.x_i);
  outcome o;
  var lp = 0;
  for (Eigen::Index k = 0; k < y.size(); ++k) {
    o.values.push_back(y(k).val());
    lp += weight(k) * y(k);
  }
  grad(lp);
  for (Eigen::Index s = 0; s < phi.size(); ++s) o.gradient.push_back(phi(s).adj());
  for (const auto& t : theta)
    for (Eigen::Index q = 0; q < t.size(); ++q) o.gradient.push_back(t(q).adj());
  recover_memory();
  return o;
}

/// wide_job's gradient in closed form, laid out as outcome::gradient.
std::vector<double> closed_form(const wide_problem& p) {
  std::vector<double> g(2, 0.0);
  Eigen::Index k_all = 0;
  for (std::size_t j = 0; j < p.theta.size(); ++j) {
    const Eigen::Index P = p.theta[j].size();
    std::vector<double> own(static_cast<std::size_t>(P), 0.0);
    for (int k = 0; k < p.x_i[j][0]; ++k, ++k_all) {
      double z = 0;
      for (Eigen::Index q = 0; q < P; ++q) z += p.theta[j](q) * p.x_r[j][static_cast<std::size_t>(k * P + q)];
      const double w = weight(k_all);
      g[0] += w * std::exp(z);
      g[1] += w * (k + 1.0);
      for (Eigen::Index q = 0; q < P; ++q)
        own[static_cast<std::size_t>(q)] += w * p.phi(0) * std::exp(z) * p.x_r[j][static_cast<std::size_t>(k * P + q)];
    }
    g.insert(g.end(), own.begin(), own.end());
  }
  return g;
}

}  // namespace

TEST_CASE("deferred gives eager's gradient within 1e-12 and the closed form") {
  const std::vector<std::array<int, 3>> shapes{{1, 1, 4}, {7, 50, 18}, {13, 3, 1}, {64, 20, 6}};
  for (const std::array<int, 3>& shape : shapes) {
    const int J = shape[0], K = shape[1], P = shape[2];
    INFO("J = " << J << ", K = " << K << ", P = " << P);
    const wide_problem p(same_counts(J, K), P);
    const outcome eager = evaluate<400, test::wide_job>(p, "eager");
    const outcome deferred = evaluate<400, test::wide_job>(p, "deferred");
    CHECK(deferred.values == eager.values);
    check_close(deferred.gradient, eager.gradient, 1e-12);
    check_close(deferred.gradient, closed_form(p), 1e-10);
    CHECK(detail::kept_tapes_of_thread().live_calls == 0);
  }
}

TEST_CASE("deferred gives the same bits for 1, 2 and 3 threads, and its team sweeps match eager") {
  const wide_problem p({5, 0, 17, 1, 30, 2, 9, 40, 3, 11, 25, 7, 1, 0, 19, 33, 4}, 9);
  const outcome serial = evaluate<400, test::wide_job>(p, "deferred");
  for (int T : {1, 2, 3}) {
    INFO("T = " << T);
    thread_team team(T);
    const outcome threaded = evaluate<400, test::wide_job>(p, "deferred", &team);
    CHECK(threaded.values == serial.values);
    CHECK(threaded.gradient == serial.gradient);
    check_close(threaded.gradient, evaluate<400, test::wide_job>(p, "eager", &team).gradient, 1e-12);
  }
}

TEST_CASE("deferred: the standard model and a job with an inner sweep agree with eager") {
  const test::benchmark_data d(40, 30);
  const auto run = [&](const char* mode) {
    const reverse_mode_scope reverse(mode);
    recover_memory();
    const vector_v phi = to_var(d.phi);
    std::vector<vector_v> theta;
    for (const auto& t : d.theta) theta.push_back(to_var(t));
    var lp = map_rect<404, test::logistic_job>(phi, theta, d.x_r, d.x_i).sum();
    lp += map_rect<406, test::inner_sweep_job>(phi, theta, d.x_r, d.x_i).sum();
    grad(lp);
    std::vector<double> g{lp.val(), phi(0).adj(), phi(1).adj()};
    for (const auto& t : theta) g.insert(g.end(), {t(0).adj(), t(1).adj()});
    recover_memory();
    return g;
  };
  check_close(run("deferred"), run("eager"), 1e-12);
}

TEST_CASE("deferred inside a nested tape, swept before the outer call") {
  const reverse_mode_scope reverse("deferred");
  const wide_problem p(same_counts(6, 10), 5);
  const outcome expected = evaluate<400, test::wide_job>(p, "deferred");
  recover_memory();
  const vector_v phi = to_var(p.phi);
  std::vector<vector_v> theta;
  for (const auto& t : p.theta) theta.push_back(to_var(t));
  const vector_v outer = map_rect<400, test::wide_job>(phi, theta, p.x_r, p.x_i);
  CHECK(detail::kept_tapes_of_thread().live_calls == 1);
  test::check_nested_sweep<400, test::wide_job>(p, phi, theta, outer, expected.gradient);
}

TEST_CASE("deferred: grad twice after set_zero_all_adjoints gives the same bits") {
  const reverse_mode_scope reverse("deferred");
  thread_team team(2);
  const team_scope use(team);
  const wide_problem p(same_counts(9, 12), 7);
  recover_memory();
  const vector_v phi = to_var(p.phi);
  std::vector<vector_v> theta;
  for (const auto& t : p.theta) theta.push_back(to_var(t));
  const vector_v y = map_rect<400, test::wide_job>(phi, theta, p.x_r, p.x_i);
  const var lp = y.sum() * y(3);
  const auto gradient = [&] {
    grad(lp);
    std::vector<double> g{phi(0).adj(), phi(1).adj()};
    for (const auto& t : theta) g.push_back(t(2).adj());
    return g;
  };
  const std::vector<double> first = gradient();
  set_zero_all_adjoints();
  CHECK(gradient() == first);
  recover_memory();
}

TEST_CASE("deferred: kept tapes are dropped when the caller's tape lets go of the call") {
  const reverse_mode_scope reverse("deferred");
  const wide_problem p(same_counts(8, 20), 6);
  const auto call = [&] {
    const vector_v phi = to_var(p.phi);
    std::vector<vector_v> theta;
    for (const auto& t : p.theta) theta.push_back(to_var(t));
    return map_rect<400, test::wide_job>(phi, theta, p.x_r, p.x_i).sum().val();
  };
  recover_memory();
  std::size_t capacity = 0;
  for (int i = 0; i < 1000; ++i) {  // recover_memory without grad
    recover_memory();
    call();
    const detail::kept_tapes_stats s = detail::kept_tapes_of_thread();
    CHECK(s.live_calls == 1);
    if (i == 10) capacity = s.capacity_bytes;
    if (i > 10 && s.capacity_bytes != capacity) FAIL("kept tape memory grew at call " << i);
  }
  recover_memory();
  CHECK(detail::kept_tapes_of_thread().live_calls == 0);
  for (int i = 0; i < 1000; ++i) {  // nested regions, and rewinds the next call notices
    { nested_tape region; call(); }
    const tape_mark m = tape::current().mark();
    call();
    tape::current().rewind(m);
  }
  const detail::kept_tapes_stats s = detail::kept_tapes_of_thread();
  CHECK(s.live_calls <= 1);
  CHECK(s.spare_calls <= 3);
  CHECK(s.capacity_bytes <= 4 * capacity);
  recover_memory();
  CHECK(detail::kept_tapes_of_thread().live_calls == 0);
}

TEST_CASE("deferred: zero outputs, J = 0 and unequal output counts") {
  const outcome none = evaluate<400, test::wide_job>(wide_problem(same_counts(5, 0), 4), "deferred");
  CHECK(none.values.empty());
  CHECK(none.gradient == std::vector<double>(2 + 5 * 4, 0.0));
  CHECK(detail::kept_tapes_of_thread().live_calls == 0);
  CHECK(evaluate<400, test::wide_job>(wide_problem({}, 4), "deferred").values.empty());
  const wide_problem ragged({0, 3, 1, 0, 8, 2}, 5);
  const outcome deferred = evaluate<400, test::wide_job>(ragged, "deferred");
  CHECK(deferred.values == evaluate<400, test::wide_job>(ragged, "eager").values);
  check_close(deferred.gradient, closed_form(ragged), 1e-10);
  // ragged_outputs_job: shared and job parameters of every kind mix
  const std::vector<std::vector<double>> x_r(4, std::vector<double>{0.5, -1.0, 2.0});
  const std::vector<std::vector<int>> x_i{{2}, {0}, {3}, {1}};
  const auto run = [&](const char* mode) {
    const reverse_mode_scope reverse(mode);
    recover_memory();
    const vector_v phi = to_var(Eigen::Vector2d(1.5, -0.5));
    const std::vector<Eigen::VectorXd> theta(4, Eigen::Vector2d(0.25, 2.0));
    const var lp = map_rect<401, test::ragged_outputs_job>(phi, theta, x_r, x_i).sum();
    grad(lp);
    return std::vector<double>{lp.val(), phi(0).adj(), phi(1).adj()};
  };
  check_close(run("deferred"), run("eager"), 1e-12);
}

TEST_CASE("deferred: a job whose forward pass throws fails the call as eager does") {
  const std::vector<std::vector<double>> x_r(5);
  const std::vector<std::vector<int>> x_i{{0, 0}, {0, 1}, {2, 2}, {1, 3}, {0, 4}};
  recover_memory();
  const vector_v phi = to_var(Eigen::Vector2d(1.0, 2.0));
  const std::vector<vector_v> theta(5, to_var(Eigen::Vector2d(3.0, 4.0)));
  for (int T : {1, 3}) {
    thread_team team(T);
    const team_scope use(team);
    const reverse_mode_scope reverse("deferred");
    const std::size_t nodes = tape_size();
    CHECK_THROWS_MATCHES((map_rect<402, test::throwing_job>(phi, theta, x_r, x_i)), std::invalid_argument,
                         Catch::Matchers::Message("map_rect: job 2 failed: bad job 2"));
    CHECK(tape_size() == nodes);
    CHECK(detail::kept_tapes_of_thread().live_calls == 0);
  }
}

TEST_CASE("deferred: a job whose reverse pass throws fails grad with its type and message, and the tape lives on") {
  const std::vector<std::vector<double>> x_r(6);
  const std::vector<std::vector<int>> x_i{{0}, {0}, {0}, {1}, {0}, {1}};
  for (int T : {1, 2, 3}) {
    INFO("T = " << T);
    thread_team team(T);
    const team_scope use(team);
    const reverse_mode_scope reverse("deferred");
    recover_memory();
    const vector_v phi = to_var(Eigen::Vector2d(1.0, 2.0));
    const std::vector<vector_v> theta(6, to_var(Eigen::Vector2d(3.0, 4.0)));
    const var lp = map_rect<403, test::reverse_throwing_job>(phi, theta, x_r, x_i).sum();
    CHECK(lp.val() == 18.0);
    CHECK_THROWS_MATCHES(grad(lp), std::domain_error,
                         Catch::Matchers::Message("map_rect: job 3 failed: reverse of a job failed"));
    set_zero_all_adjoints();
    CHECK_THROWS_AS(grad(lp), std::domain_error);
    recover_memory();
    const vector_v phi2 = to_var(Eigen::Vector2d(1.0, 2.0));
    const std::vector<vector_v> theta2(6, to_var(Eigen::Vector2d(3.0, 4.0)));
    const std::vector<std::vector<int>> fine(6, std::vector<int>{0});
    const var ok = map_rect<403, test::reverse_throwing_job>(phi2, theta2, x_r, fine).sum();
    grad(ok);
    CHECK(phi2(0).adj() == 18.0);
  }
  recover_memory();
}

TEST_CASE("MAPRECT_REVERSE: a bad value names the variable and the value") {
  CHECK_THROWS_MATCHES(detail::set_reverse_mode_for_tests("x"), std::invalid_argument,
                       Catch::Matchers::Message("MAPRECT_REVERSE must be auto, eager or deferred, not 'x'"));
  ::setenv("MAPRECT_REVERSE", "lazy", 1);
  detail::set_reverse_mode_for_tests(nullptr);
  const wide_problem p(same_counts(2, 2), 4);
  CHECK_THROWS_MATCHES((evaluate<400, test::wide_job>(p, nullptr)), std::invalid_argument,
                       Catch::Matchers::Message("MAPRECT_REVERSE must be auto, eager or deferred, not 'lazy'"));
  ::unsetenv("MAPRECT_REVERSE");
  detail::set_reverse_mode_for_tests(nullptr);
  CHECK(detail::reverse_setting() == detail::reverse_mode::automatic);
  recover_memory();
}

TEST_CASE("MAPRECT_REVERSE=auto: the rule, and each call site choosing by its last call's shape") {
  CHECK_FALSE(detail::deferred_pays(64, 64, 4));     // K = 1, M = 4: 5 against 12
  CHECK_FALSE(detail::deferred_pays(64 * 7, 64, 3));  // K/J = 7, M = 3: neither bytes nor sweeps pay
  CHECK_FALSE(detail::deferred_pays(16 * 10, 16, 3));  // 1,440 node visits saved, below a round trip's 16,384
  CHECK(detail::deferred_pays(16 * 100, 16, 3));       // 158,400 saved
  CHECK(detail::deferred_pays(2 * 92, 2, 1));          // the least K at J = 2, M = 1: 184 x 91 >= 16,384
  CHECK_FALSE(detail::deferred_pays(2 * 91, 2, 1));    // 182 x 90 = 16,380
  CHECK(detail::deferred_pays(50 * 64, 64, 20));      // K = 50, M = 20: 1050 against 240
  CHECK(detail::deferred_pays(1LL << 22, 1, 31));     // eager's partials: 1 GiB, the most auto keeps
  CHECK_FALSE(detail::deferred_pays((1LL << 22) + 1, 1, 31));
  const test::benchmark_data d(16, 10);
  const auto made = [] { return detail::kept_tapes_of_thread().calls_made; };
  const std::uint64_t before = made();
  for (int i = 0; i < 3; ++i) {  // the standard model: K = 1, eager call after call
    recover_memory();
    const reverse_mode_scope reverse("auto");
    vector_v phi = to_var(d.phi);
    std::vector<vector_v> theta;
    for (const auto& t : d.theta) theta.push_back(to_var(t));
    map_rect<404, test::logistic_job>(phi, theta, d.x_r, d.x_i);
  }
  CHECK(made() == before);
  const wide_problem p(same_counts(4, 50), 18);  // M = 2 + 18, K = 50 per job: deferred pays
  const outcome eager = evaluate<405, test::wide_job>(p, "eager");
  const outcome deferred = evaluate<405, test::wide_job>(p, "deferred");
  check_close(deferred.gradient, eager.gradient, 1e-12);
  const wide_problem q(same_counts(5, 50), 18);  // another J: a shape the site has not seen
  CHECK(evaluate<405, test::wide_job>(q, "eager").gradient.size() == 2 + 5 * 18);
  const std::uint64_t kept = made();
  const outcome first = evaluate<405, test::wide_job>(p, "auto");  // outputs not known yet: eager
  CHECK(made() == kept);
  CHECK(first.gradient == eager.gradient);
  const outcome second = evaluate<405, test::wide_job>(p, "auto");  // the first call's outputs chose deferred
  CHECK(made() == kept + 1);
  CHECK(second.gradient == deferred.gradient);
  CHECK(detail::reverse_site_of<405>.last_ran_deferred());
  const wide_problem narrow(same_counts(4, 1), 18);  // the same J and M, one output per job: back to eager
  evaluate<405, test::wide_job>(narrow, "auto");
  CHECK(made() == kept + 2);  // chosen by the previous call's 50 outputs per job
  evaluate<405, test::wide_job>(narrow, "auto");
  CHECK(made() == kept + 2);
  CHECK_FALSE(detail::reverse_site_of<405>.last_ran_deferred());
}
