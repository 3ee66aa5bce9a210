// map_rect on a thread team gives the bits of the serial in-process call for every thread count, job
// count and double/var kind, ragged and zero-output jobs included; the lowest failing job is the error
// whatever thread fails first; a map_rect inside a job runs on that job's thread; and 10^4 calls with
// random job delays keep their bits.
#include <catch2/catch.hpp>

#include <maprect/maprect.hpp>

#include <chrono>
#include <cstring>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <type_traits>

#include "map_rect/functors.hpp"
#include "support/matchers.hpp"

namespace maprect::test {

/// Busy-waits for x_r.back() microseconds, then the standard model's job on the rest of x_r: a delay that
/// changes no bit.
struct delayed_logistic_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i,
                                                                     std::ostream* msgs) const {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(x_r.back());
    while (std::chrono::steady_clock::now() < until) {
    }
    const std::vector<double> data(x_r.begin(), x_r.end() - 1);
    return logistic_job()(phi, theta, data, x_i, msgs);
  }
};

/// Writes "<j>:<K>;" to msgs (j = x_i[1]), then as ragged_outputs_job; x_i[2] = 1 throws domain_error
/// after writing, x_i[3] microseconds of delay first (so that a later job can fail before it).
struct talking_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i,
                                                                     std::ostream* msgs) const {
    std::this_thread::sleep_for(std::chrono::microseconds(x_i[3]));
    if (msgs) *msgs << x_i[1] << ":" << x_i[0] << ";";
    if (x_i[2] == 1) throw std::domain_error("talking job " + std::to_string(x_i[1]) + " fails");
    if (x_i[2] == 2) throw 42;  // not a standard exception
    return ragged_outputs_job()(phi, theta, x_r, x_i, msgs);
  }
};

/// Calls map_rect over three inner jobs of the standard model and returns their sum and theta0: throws
/// std::logic_error if the inner jobs ran on another thread than this job.
struct nested_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i, std::ostream*) const;
};

/// The inner job of nested_job: counts its runs on this thread.
struct counted_logistic_job {
  static inline thread_local int runs = 0;
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i,
                                                                     std::ostream* msgs) const {
    ++runs;
    return logistic_job()(phi, theta, x_r, x_i, msgs);
  }
};

}  // namespace maprect::test

MAPRECT_REGISTER(230, maprect::test::ragged_outputs_job);
MAPRECT_REGISTER(231, maprect::test::logistic_job);
MAPRECT_REGISTER(232, maprect::test::talking_job);
MAPRECT_REGISTER(233, maprect::test::delayed_logistic_job);
MAPRECT_REGISTER(234, maprect::test::nested_job);
MAPRECT_REGISTER(235, maprect::test::counted_logistic_job);

template <class T1, class T2>
Eigen::Matrix<maprect::return_type_t<T1, T2>, Eigen::Dynamic, 1> maprect::test::nested_job::operator()(
    const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi, const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
    const std::vector<double>& x_r, const std::vector<int>& x_i, std::ostream*) const {
  const std::vector<Eigen::Matrix<T2, Eigen::Dynamic, 1>> inner_theta(3, theta);
  const std::vector<std::vector<double>> inner_x_r(3, x_r);
  const std::vector<std::vector<int>> inner_x_i(3, x_i);
  const int before = counted_logistic_job::runs;
  const auto inner = map_rect<235, counted_logistic_job>(phi, inner_theta, inner_x_r, inner_x_i);
  if (counted_logistic_job::runs != before + 3) throw std::logic_error("inner jobs ran on another thread");
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(2);
  out(0) = inner.sum();
  out(1) = theta(0);
  return out;
}

using namespace maprect;
using test::message_contains;

namespace {

/// A call's parameters and data.
struct problem {
  Eigen::VectorXd phi = Eigen::Vector2d(0.3, -0.5);
  std::vector<Eigen::VectorXd> theta;
  std::vector<std::vector<double>> x_r;
  std::vector<std::vector<int>> x_i;
};

/// J jobs of the standard model with N points each.
problem standard_problem(int J, int N) {
  const test::benchmark_data d(J, N);
  return {d.phi, d.theta, d.x_r, d.x_i};
}

/// J jobs of which job j returns (j * 7) % 4 outputs (zero for every fourth job), or none at all.
problem ragged_problem(int J, bool zero_outputs) {
  problem p;
  for (int j = 0; j < J; ++j) {
    p.theta.push_back(Eigen::Vector2d(0.1 * std::sin(j + 1.0), 0.05 * std::cos(j + 1.0)));
    p.x_r.push_back({0.5 + j, -1.25 * j, std::sqrt(j + 2.0)});
    p.x_i.push_back({zero_outputs ? 0 : (j * 7) % 4, j, 0, 0});
  }
  return p;
}

/// What a call gave: its values, the gradient of a weighted sum of its outputs, and what it added to the tape.
struct outcome {
  std::vector<double> values, gradient;
  std::size_t nodes = 0, bytes = 0;
  std::string messages;
};

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}
bool operator==(const outcome& a, const outcome& b) {
  return same_bits(a.values, b.values) && same_bits(a.gradient, b.gradient) && a.nodes == b.nodes &&
         a.bytes == b.bytes && a.messages == b.messages;
}

template <class T>
Eigen::Matrix<T, Eigen::Dynamic, 1> as(const Eigen::VectorXd& v) {
  if constexpr (std::is_same_v<T, var>) return to_var(v);
  else return v;
}

/// Runs map_rect<Id, F> on p with shared parameters of type TS and job parameters of type TJ, on `team`
/// when given (serially in process otherwise).
template <int Id, class F, class TS, class TJ>
outcome evaluate(const problem& p, thread_team* team) {
  recover_memory();
  std::optional<team_scope> scope;
  if (team != nullptr) scope.emplace(*team);
  const Eigen::Matrix<TS, Eigen::Dynamic, 1> phi = as<TS>(p.phi);
  std::vector<Eigen::Matrix<TJ, Eigen::Dynamic, 1>> theta;
  for (const auto& t : p.theta) theta.push_back(as<TJ>(t));
  std::ostringstream msgs;
  const std::size_t nodes = tape_size(), bytes = tape_bytes();
  const auto y = map_rect<Id, F>(phi, theta, p.x_r, p.x_i, &msgs);
  outcome o;
  o.nodes = tape_size() - nodes;
  o.bytes = tape_bytes() - bytes;
  o.messages = msgs.str();
  for (Eigen::Index k = 0; k < y.size(); ++k) o.values.push_back(value_of(y(k)));
  if constexpr (std::is_same_v<TS, var> || std::is_same_v<TJ, var>) {
    var lp = 0;
    for (Eigen::Index k = 0; k < y.size(); ++k) lp += (0.5 + static_cast<double>(k % 7)) * y(k);
    grad(lp);
    if constexpr (std::is_same_v<TS, var>)
      for (Eigen::Index s = 0; s < phi.size(); ++s) o.gradient.push_back(phi(s).adj());
    if constexpr (std::is_same_v<TJ, var>)
      for (const auto& t : theta)
        for (Eigen::Index q = 0; q < t.size(); ++q) o.gradient.push_back(t(q).adj());
  }
  recover_memory();
  return o;
}

/// Checks every double/var kind of map_rect<Id, F> on p: the team gives the serial call's bits.
template <int Id, class F>
void check_kinds(const problem& p, thread_team& team, int& compared) {
  const auto check = [&](auto ts, auto tj) {
    using TS = decltype(ts);
    using TJ = decltype(tj);
    const outcome serial = evaluate<Id, F, TS, TJ>(p, nullptr);
    const outcome threaded = evaluate<Id, F, TS, TJ>(p, &team);
    INFO("shared " << (std::is_same_v<TS, var> ? "var" : "double") << ", job "
                   << (std::is_same_v<TJ, var> ? "var" : "double"));
    CHECK(threaded == serial);
    ++compared;
  };
  check(double{}, double{});
  check(double{}, var{});
  check(var{}, double{});
  check(var{}, var{});
}

}  // namespace

TEST_CASE("map_rect on a team gives the serial bits for every thread count, job count and kind") {
  int compared = 0;
  for (int T : {1, 2, 3, 4, 7}) {
    thread_team team(T);
    for (int J : {0, 1, T - 1, T + 1, 64, 513}) {
      INFO("T = " << T << ", J = " << J);
      check_kinds<231, test::logistic_job>(standard_problem(J, 20), team, compared);
      check_kinds<230, test::ragged_outputs_job>(ragged_problem(J, false), team, compared);
      check_kinds<230, test::ragged_outputs_job>(ragged_problem(J, true), team, compared);
      check_kinds<232, test::talking_job>(ragged_problem(J, false), team, compared);
    }
  }
  CHECK(compared == 5 * 6 * 4 * 4);
}

TEST_CASE("a team gives the closed-form gradient of the standard model") {
  const test::benchmark_data d(64, 50);
  Eigen::VectorXd expected;
  const double lp_expected = d.closed_form(expected);
  thread_team team(3);
  const team_scope use(team);
  recover_memory();
  const vector_v phi = to_var(d.phi);
  std::vector<vector_v> theta;
  for (const auto& t : d.theta) theta.push_back(to_var(t));
  const var lp = map_rect<231, test::logistic_job>(phi, theta, d.x_r, d.x_i).sum();
  grad(lp);
  CHECK(lp.val() == Approx(lp_expected).epsilon(1e-12));
  CHECK(phi(0).adj() == Approx(expected(0)).epsilon(1e-12));
  CHECK(phi(1).adj() == Approx(expected(1)).epsilon(1e-12));
  for (int j = 0; j < 64; ++j) {
    CHECK(theta[j](0).adj() == Approx(expected(2 + 2 * j)).epsilon(1e-12));
    CHECK(theta[j](1).adj() == Approx(expected(3 + 2 * j)).epsilon(1e-12));
  }
  recover_memory();
}

namespace {
/// The exception of a call: its type and message, and the messages the jobs wrote before it.
struct failure {
  std::string type, what, messages;
  std::size_t nodes_left = 0;
};

template <class TS, class TJ>
failure failing_call(const problem& p, thread_team* team) {
  recover_memory();
  std::optional<team_scope> scope;
  if (team != nullptr) scope.emplace(*team);
  const Eigen::Matrix<TS, Eigen::Dynamic, 1> phi = as<TS>(p.phi);
  std::vector<Eigen::Matrix<TJ, Eigen::Dynamic, 1>> theta;
  for (const auto& t : p.theta) theta.push_back(as<TJ>(t));
  std::ostringstream msgs;
  const std::size_t nodes = tape_size();
  failure f;
  try {
    (void)map_rect<232, test::talking_job>(phi, theta, p.x_r, p.x_i, &msgs);
    f.type = "none";
  } catch (const std::domain_error& e) {
    f.type = "domain_error";
    f.what = e.what();
  } catch (const std::runtime_error& e) {
    f.type = "runtime_error";
    f.what = e.what();
  }
  f.messages = msgs.str();
  f.nodes_left = tape_size() - nodes;
  recover_memory();
  return f;
}
}  // namespace

TEST_CASE("several failing jobs: the lowest is the error for every thread count, and the next call works") {
  // Jobs 5, 17 and 40 fail; job 5 sleeps 3 ms first, so that on a team a later one fails before it.
  problem p = ragged_problem(64, false);
  for (int j : {5, 17, 40}) p.x_i[j][2] = 1;
  p.x_i[5][3] = 3000;
  problem odd = ragged_problem(20, false);  // a non-standard exception in job 9, a standard one in job 12
  odd.x_i[9][2] = 2;
  odd.x_i[12][2] = 1;
  const failure serial = failing_call<var, var>(p, nullptr);
  REQUIRE(serial.type == "domain_error");
  CHECK(serial.what == "map_rect: job 5 failed: talking job 5 fails");
  const failure serial_odd = failing_call<double, var>(odd, nullptr);
  CHECK(serial_odd.type == "runtime_error");
  CHECK(serial_odd.what == "map_rect: job 9 failed: unknown exception");
  for (int T : {1, 2, 3, 4, 7}) {
    INFO("T = " << T);
    thread_team team(T);
    for (int round = 0; round < 3; ++round) {
      const failure threaded = failing_call<var, var>(p, &team);
      CHECK(threaded.type == serial.type);
      CHECK(threaded.what == serial.what);
      CHECK(threaded.messages == serial.messages);
      CHECK(threaded.nodes_left == 0);
      const failure threaded_dd = failing_call<double, double>(p, &team);
      CHECK(threaded_dd.what == serial.what);
      const failure threaded_odd = failing_call<double, var>(odd, &team);
      CHECK(threaded_odd.type == serial_odd.type);
      CHECK(threaded_odd.what == serial_odd.what);
      CHECK(threaded_odd.messages == serial_odd.messages);
      // The team survives: a good call right after gives the serial bits.
      int compared = 0;
      check_kinds<231, test::logistic_job>(standard_problem(33, 5), team, compared);
      CHECK(compared == 4);
    }
  }
}

TEST_CASE("a map_rect inside a job on a team runs serially on the job's thread") {
  const problem p = standard_problem(40, 8);
  const outcome serial = evaluate<234, test::nested_job, var, var>(p, nullptr);
  REQUIRE(serial.values.size() == 80);
  for (int T : {2, 3, 7}) {
    INFO("T = " << T);
    thread_team team(T);
    CHECK(evaluate<234, test::nested_job, var, var>(p, &team) == serial);
    CHECK(evaluate<234, test::nested_job, double, double>(p, &team) ==
          evaluate<234, test::nested_job, double, double>(p, nullptr));
  }
}

TEST_CASE("10^4 calls with random job delays on a team keep their bits") {
  const problem p = standard_problem(12, 6);
  std::mt19937 rng(20261123);
  const std::vector<double> delays = {0, 0, 0, 0, 1, 2, 5, 20};
  std::uniform_int_distribution<std::size_t> pick(0, delays.size() - 1);
  std::vector<std::vector<double>> x_r = p.x_r;
  for (auto& row : x_r) row.push_back(0.0);  // the delay, after the job's data
  const auto gradient_bits = [&] {
    recover_memory();
    const vector_v phi = to_var(p.phi);
    std::vector<vector_v> theta;
    for (const auto& t : p.theta) theta.push_back(to_var(t));
    const var lp = map_rect<233, test::delayed_logistic_job>(phi, theta, x_r, p.x_i).sum();
    grad(lp);
    std::vector<double> bits = {lp.val(), phi(0).adj(), phi(1).adj()};
    for (const auto& t : theta) bits.insert(bits.end(), {t(0).adj(), t(1).adj()});
    return bits;
  };
  const std::vector<double> serial = gradient_bits();
  thread_team team(3);
  const team_scope use(team);
  int changed = 0, team_threads_worked = 0;
  for (int call = 0; call < 10000; ++call) {
    for (auto& row : x_r) row.back() = delays[pick(rng)];
    changed += !same_bits(gradient_bits(), serial);
    team_threads_worked += team.busy_seconds(1) > 0 || team.busy_seconds(2) > 0;
  }
  CHECK(changed == 0);
  INFO("calls in which a team thread ran jobs: " << team_threads_worked);
  CHECK(team_threads_worked > 0);  // the jobs did not all run on the calling thread
  recover_memory();
}
