// In-process map_rect: the four parameter-type combinations against the closed form of the standard
// model, bit-equal values across them, ragged outputs, J = 0 and J = 1, one tape node per output with
// nothing of the job's graph left on the caller's tape, nested calls, and concurrent threads.
#include <catch2/catch.hpp>

#include <sstream>
#include <thread>

#include "map_rect/functors.hpp"

using namespace maprect;

namespace maprect::test {
/// The standard model's job computed by an inner map_rect over the two halves of the job's points.
struct split_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i, std::ostream*) const;
};
/// split_job one level further down: three levels of map_rect in all.
struct split_twice_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i, std::ostream*) const;
};
}  // namespace maprect::test

MAPRECT_REGISTER(100, maprect::test::logistic_job);
MAPRECT_REGISTER(101, maprect::test::ragged_outputs_job);
MAPRECT_REGISTER(102, maprect::test::split_job);
MAPRECT_REGISTER(103, maprect::test::parameters_job);
MAPRECT_REGISTER(104, maprect::test::split_twice_job);
MAPRECT_REGISTER(105, maprect::test::inner_sweep_job);

namespace maprect::test {
namespace {
/// Splits one job's data row in two halves (an odd point goes to the second).
template <class T>
std::vector<std::vector<T>> halves(const std::vector<T>& row) {
  const std::size_t mid = row.size() / 2;
  return {std::vector<T>(row.begin(), row.begin() + mid), std::vector<T>(row.begin() + mid, row.end())};
}
}  // namespace

template <class T1, class T2>
Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> split_job::operator()(
    const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi, const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
    const std::vector<double>& x_r, const std::vector<int>& x_i, std::ostream*) const {
  const std::vector<Eigen::Matrix<T2, Eigen::Dynamic, 1>> both(2, theta);
  const auto parts = map_rect<100, logistic_job>(phi, both, halves(x_r), halves(x_i));
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
  out(0) = parts(0) + parts(1);
  return out;
}

template <class T1, class T2>
Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> split_twice_job::operator()(
    const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi, const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
    const std::vector<double>& x_r, const std::vector<int>& x_i, std::ostream*) const {
  const std::vector<Eigen::Matrix<T2, Eigen::Dynamic, 1>> both(2, theta);
  const auto parts = map_rect<102, split_job>(phi, both, halves(x_r), halves(x_i));
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
  out(0) = parts(0) + parts(1);
  return out;
}
}  // namespace maprect::test

namespace {

/// Parameters as T (double or var) from the benchmark's values.
template <class T>
Eigen::Matrix<T, Eigen::Dynamic, 1> params_as(const Eigen::VectorXd& v) {
  if constexpr (std::is_same_v<T, var>)
    return to_var(v);
  else
    return v;
}

/// Result of one call of the standard model: output values and, where parameters are var, the gradient
/// of their sum in the order (alpha, beta, u_0, v_0, ...) with zeros for double parameters.
struct model_result {
  Eigen::VectorXd outputs;
  Eigen::VectorXd gradient;
};

template <int CallId, class F, class T_shared, class T_job>
model_result run_model(const test::benchmark_data& d) {
  recover_memory();
  const int J = static_cast<int>(d.theta.size());
  auto phi = params_as<T_shared>(d.phi);
  std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>> theta;
  for (const auto& t : d.theta) theta.push_back(params_as<T_job>(t));
  const auto out = map_rect<CallId, F>(phi, theta, d.x_r, d.x_i);
  model_result r{value_of(out), Eigen::VectorXd::Zero(2 + 2 * J)};
  if constexpr (std::is_same_v<return_type_t<T_shared, T_job>, var>) {
    var lp = out.sum();
    grad(lp);
    if constexpr (std::is_same_v<T_shared, var>) r.gradient.head(2) = adjoint_of(phi);
    if constexpr (std::is_same_v<T_job, var>)
      for (int j = 0; j < J; ++j) r.gradient.segment(2 + 2 * j, 2) = adjoint_of(theta[j]);
  }
  recover_memory();
  return r;
}

void check_gradient(const Eigen::VectorXd& got, const Eigen::VectorXd& expected, bool shared_var, bool job_var) {
  REQUIRE(got.size() == expected.size());
  for (Eigen::Index k = 0; k < got.size(); ++k) {
    INFO("gradient entry " << k);
    const bool is_var = k < 2 ? shared_var : job_var;
    if (is_var)
      CHECK(got(k) == Approx(expected(k)).epsilon(1e-12).margin(1e-12));
    else
      CHECK(got(k) == 0.0);
  }
}

template <int CallId, class F>
void check_all_combinations(const test::benchmark_data& d) {
  Eigen::VectorXd expected;
  const double lp = d.closed_form(expected);
  const auto dd = run_model<CallId, F, double, double>(d);
  const auto dv = run_model<CallId, F, double, var>(d);
  const auto vd = run_model<CallId, F, var, double>(d);
  const auto vv = run_model<CallId, F, var, var>(d);
  REQUIRE(dd.outputs.size() == static_cast<Eigen::Index>(d.theta.size()));
  CHECK(dd.outputs.sum() == Approx(lp).epsilon(1e-13));
  // The same job code runs on the same values whatever carries derivatives: identical bits.
  for (Eigen::Index j = 0; j < dd.outputs.size(); ++j) {
    INFO("job " << j);
    CHECK(dv.outputs(j) == dd.outputs(j));
    CHECK(vd.outputs(j) == dd.outputs(j));
    CHECK(vv.outputs(j) == dd.outputs(j));
  }
  check_gradient(vv.gradient, expected, true, true);
  check_gradient(vd.gradient, expected, true, false);
  check_gradient(dv.gradient, expected, false, true);
}

}  // namespace

TEST_CASE("map_rect: all four type combinations against the closed form of the standard model") {
  for (auto [J, N] : {std::pair{8, 20}, std::pair{1, 50}, std::pair{3, 1}, std::pair{64, 10}}) {
    INFO("J = " << J << ", N = " << N);
    check_all_combinations<100, test::logistic_job>(test::benchmark_data(J, N));
  }
}

TEST_CASE("map_rect: jobs with no data points give 0 with zero gradient") {
  test::benchmark_data d(3, 0);
  const auto vv = run_model<100, test::logistic_job, var, var>(d);
  CHECK(vv.outputs == Eigen::VectorXd::Zero(3));
  CHECK(vv.gradient == Eigen::VectorXd::Zero(8));
}

TEST_CASE("map_rect: a functor that itself calls map_rect, two and three levels deep") {
  for (auto [J, N] : {std::pair{5, 20}, std::pair{1, 8}}) {  // N splits in four equal rows
    INFO("J = " << J << ", N = " << N);
    const test::benchmark_data d(J, N);
    check_all_combinations<102, test::split_job>(d);
    check_all_combinations<104, test::split_twice_job>(d);
  }
  // The nested call's bookkeeping is gone afterwards: a plain call still works and leaves no region.
  const test::benchmark_data d(4, 9);
  Eigen::VectorXd expected;
  d.closed_form(expected);
  check_gradient(run_model<100, test::logistic_job, var, var>(d).gradient, expected, true, true);
  CHECK(tape::current().nests.empty());
  CHECK(detail::functor_depth == 0);
}

namespace {

/// Ragged data: job j has counts[j] outputs and x_r rows of the largest count.
struct ragged_data {
  std::vector<int> counts;
  std::vector<std::vector<double>> x_r;
  std::vector<std::vector<int>> x_i;
  Eigen::VectorXd phi = Eigen::Vector2d(0.7, -1.3);
  std::vector<Eigen::VectorXd> theta;
  explicit ragged_data(std::vector<int> c) : counts(std::move(c)) {
    const int width = std::max(1, *std::max_element(counts.begin(), counts.end()));
    for (std::size_t j = 0; j < counts.size(); ++j) {
      std::vector<double> row(width);
      for (int k = 0; k < width; ++k) row[k] = std::cos(1.0 + k + 3.0 * j);
      x_r.push_back(row);
      x_i.push_back({counts[j]});
      theta.push_back(Eigen::Vector2d(0.2 + 0.1 * j, -0.4 + 0.05 * j));
    }
  }
};

/// Ragged outputs for one type combination: values, every output's full Jacobian row, and the tape
/// growing by exactly one job_output_vari per output.
template <class T_shared, class T_job>
void check_ragged(const ragged_data& d) {
  constexpr bool shared_var = std::is_same_v<T_shared, var>, job_var = std::is_same_v<T_job, var>;
  constexpr bool result_var = shared_var || job_var;
  recover_memory();
  auto phi = params_as<T_shared>(d.phi);
  std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>> theta;
  for (const auto& t : d.theta) theta.push_back(params_as<T_job>(t));
  const std::size_t size_before = tape_size();
  const std::size_t stack_before = tape::current().stack.size();
  const std::size_t bytes_before = tape_bytes();

  const auto out = map_rect<101, test::ragged_outputs_job>(phi, theta, d.x_r, d.x_i);

  const int J = static_cast<int>(d.counts.size());
  int n_outputs = 0;
  for (int c : d.counts) n_outputs += c;
  REQUIRE(out.size() == n_outputs);
  if constexpr (!result_var) {
    CHECK(tape_size() == size_before);
    CHECK(tape_bytes() == bytes_before);
  } else {
    // Exactly one node per output, in output order, each a job_output_vari.
    REQUIRE(tape_size() == size_before + static_cast<std::size_t>(n_outputs));
    for (int k = 0; k < n_outputs; ++k) {
      CHECK(tape::current().stack[stack_before + k] == out(k).vi_);
      CHECK(dynamic_cast<const detail::job_output_vari*>(out(k).vi_) != nullptr);
    }
    // Memory: the call's record with its shared operands and, per job with outputs, a record with its
    // own operands followed by each output's node and partials; the job's own graph is not there.
    const std::size_t S = shared_var ? 2 : 0, P = job_var ? 2 : 0;
    auto rounded = [](std::size_t b) { return (b + arena::alignment - 1) / arena::alignment * arena::alignment; };
    std::size_t expected = rounded(sizeof(detail::call_operands) + S * sizeof(vari*));
    for (int c : d.counts)
      if (c > 0)
        expected += rounded(sizeof(detail::job_operands) + P * sizeof(vari*) +
                            c * (sizeof(detail::job_output_vari) + (S + P) * sizeof(double)));
    CHECK(tape_bytes() - bytes_before == expected);
  }
  CHECK(tape::current().nests.empty());

  int k = 0;
  for (int j = 0; j < J; ++j)
    for (int c = 0; c < d.counts[j]; ++c, ++k) {
      INFO("job " << j << ", output " << c);
      const double p0 = d.phi(0), p1 = d.phi(1), t0 = d.theta[j](0), t1 = d.theta[j](1), x = d.x_r[j][c];
      CHECK(value_of(out(k)) == (c + 1.0) * p0 * t0 + p1 * x + t1 * t1);
      if constexpr (result_var) {
        set_zero_all_adjoints();
        grad(out(k));
        if constexpr (shared_var) {
          CHECK(phi(0).adj() == Approx((c + 1.0) * t0).epsilon(1e-15));
          CHECK(phi(1).adj() == Approx(x).epsilon(1e-15));
        }
        if constexpr (job_var)
          for (int i = 0; i < J; ++i) {
            INFO("theta of job " << i);
            CHECK(theta[i](0).adj() == (i == j ? Approx((c + 1.0) * p0).epsilon(1e-15) : Approx(0.0)));
            CHECK(theta[i](1).adj() == (i == j ? Approx(2 * t1).epsilon(1e-15) : Approx(0.0)));
          }
      }
    }
  recover_memory();
}

template <class T_shared, class T_job>
void check_empty_call() {
  recover_memory();
  auto phi = params_as<T_shared>(Eigen::Vector2d(1, 2));
  const std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>> no_jobs;
  const std::size_t size_before = tape_size();
  const auto out = map_rect<100, test::logistic_job>(phi, no_jobs, {}, {});
  CHECK(out.size() == 0);
  CHECK(tape_size() == size_before);
  recover_memory();
}

}  // namespace

TEST_CASE("map_rect: ragged outputs, zero-output jobs, one node per output") {
  for (const auto& counts : {std::vector<int>{2, 0, 3, 0, 1}, std::vector<int>{0, 0, 0}, std::vector<int>{4},
                             std::vector<int>{0}, std::vector<int>{0, 5}, std::vector<int>{1, 1, 1, 1, 1, 1, 1}}) {
    const ragged_data d(counts);
    INFO("J = " << counts.size());
    check_ragged<double, double>(d);
    check_ragged<double, var>(d);
    check_ragged<var, double>(d);
    check_ragged<var, var>(d);
  }
}

TEST_CASE("map_rect: J = 0 returns an empty result and leaves the tape alone") {
  check_empty_call<double, double>();
  check_empty_call<double, var>();
  check_empty_call<var, double>();
  check_empty_call<var, var>();
}

TEST_CASE("map_rect: the job's graph never reaches the caller's tape") {
  recover_memory();
  const test::benchmark_data d(4, 200);
  // What one job's graph costs when built on the caller's tape directly.
  vector_v phi = to_var(d.phi);
  std::vector<vector_v> theta;
  for (const auto& t : d.theta) theta.push_back(to_var(t));
  const std::size_t size_before = tape_size();
  std::size_t direct_nodes = 0;
  {
    nested_tape region;
    const std::size_t start = tape_size();
    (void)test::logistic_job{}(phi, theta[0], d.x_r[0], d.x_i[0], nullptr);
    direct_nodes = tape_size() - start;
  }
  CHECK(direct_nodes > 200);
  const std::size_t leaves_before = tape::current().leaves.size();
  const std::size_t bytes_before = tape_bytes();
  const auto out = map_rect<100, test::logistic_job>(phi, theta, d.x_r, d.x_i);
  CHECK(tape_size() == size_before + 4);
  CHECK(tape::current().leaves.size() == leaves_before);  // the jobs' parameter leaves are gone
  CHECK(tape_bytes() - bytes_before < 1024);  // four outputs' worth, not 200 points' graphs
  // The outputs reach the caller's parameters directly.
  var lp = out.sum();
  grad(lp);
  for (int j = 0; j < 4; ++j) CHECK(theta[j](0).adj() != 0.0);
  CHECK(phi(0).adj() == Approx(theta[0](0).adj() + theta[1](0).adj() + theta[2](0).adj() + theta[3](0).adj()));
  recover_memory();
}

TEST_CASE("map_rect: outputs that are the job's parameters themselves; msgs reaches the functor") {
  recover_memory();
  vector_v phi = to_var(Eigen::Vector2d(3.0, 4.0));
  std::vector<vector_v> theta = {to_var(Eigen::Vector3d(1, 2, 3)), to_var(Eigen::Vector3d(4, 5, 6))};
  const std::vector<std::vector<double>> x_r(2);
  const std::vector<std::vector<int>> x_i(2);
  std::ostringstream msgs;
  const vector_v out = map_rect<103, test::parameters_job>(phi, theta, x_r, x_i, &msgs);
  REQUIRE(out.size() == 8);
  CHECK(value_of(out) == (Eigen::VectorXd(8) << 1, 2, 3, 3, 4, 5, 6, 3).finished());
  CHECK(msgs.str() == "job sees 3 parameters;job sees 3 parameters;");
  for (int k = 0; k < 8; ++k) {
    INFO("output " << k);
    set_zero_all_adjoints();
    grad(out(k));
    const int job = k / 4, slot = k % 4;
    for (int j = 0; j < 2; ++j)
      for (int p = 0; p < 3; ++p) CHECK(theta[j](p).adj() == (j == job && p == slot ? 1.0 : 0.0));
    CHECK(phi(0).adj() == (slot == 3 ? 1.0 : 0.0));
    CHECK(phi(1).adj() == 0.0);
  }
  recover_memory();
}

namespace {

template <class T_shared, class T_job>
void check_inner_sweep() {
  recover_memory();
  const Eigen::Vector2d phi_d(1.5, 0.0);
  const std::vector<Eigen::Vector2d> theta_d = {Eigen::Vector2d(0.5, -2.0), Eigen::Vector2d(-3.0, 4.0)};
  auto phi = params_as<T_shared>(phi_d);
  std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>> theta;
  for (const auto& t : theta_d) theta.push_back(params_as<T_job>(t));
  const std::vector<std::vector<double>> x_r(2);
  const std::vector<std::vector<int>> x_i(2);
  const auto out = map_rect<105, test::inner_sweep_job>(phi, theta, x_r, x_i);
  REQUIRE(out.size() == 4);
  for (int j = 0; j < 2; ++j) {
    INFO("job " << j);
    const double p0 = phi_d(0), t0 = theta_d[j](0), t1 = theta_d[j](1);
    CHECK(value_of(out(2 * j)) == p0 * t0 * t0);
    CHECK(value_of(out(2 * j + 1)) == t0 + t1);
    set_zero_all_adjoints();
    grad(out(2 * j));
    if constexpr (is_var_v<T_shared>) CHECK(phi(0).adj() == t0 * t0);
    if constexpr (is_var_v<T_job>) {
      CHECK(theta[j](0).adj() == 2 * p0 * t0);
      CHECK(theta[j](1).adj() == 0.0);
    }
    set_zero_all_adjoints();
    grad(out(2 * j + 1));
    if constexpr (is_var_v<T_shared>) CHECK(phi(0).adj() == 0.0);
    if constexpr (is_var_v<T_job>) {
      CHECK(theta[j](0).adj() == 1.0);
      CHECK(theta[j](1).adj() == 1.0);
    }
  }
  recover_memory();
}

}  // namespace

TEST_CASE("map_rect: a functor's own reverse sweeps do not leak into its outputs' partials") {
  check_inner_sweep<double, var>();
  check_inner_sweep<var, double>();
  check_inner_sweep<var, var>();
}

TEST_CASE("map_rect: concurrent threads reproduce the single-threaded result bit for bit") {
  const test::benchmark_data d(16, 30);
  const auto expected = run_model<100, test::logistic_job, var, var>(d);
  constexpr int n_threads = 3;
  std::vector<int> mismatches(n_threads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < n_threads; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 50; ++k) {
        const auto r = run_model<100, test::logistic_job, var, var>(d);
        if (r.outputs != expected.outputs || r.gradient != expected.gradient) ++mismatches[t];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < n_threads; ++t) CHECK(mismatches[t] == 0);
}

TEST_CASE("map_rect: repeated calls keep the caller's memory flat") {
  const test::benchmark_data d(8, 20);
  for (int i = 0; i < 100; ++i) run_model<100, test::logistic_job, var, var>(d);
  const std::size_t capacity = tape::current().memory.capacity();
  for (int i = 0; i < 10000; ++i) run_model<100, test::logistic_job, var, var>(d);
  CHECK(tape::current().memory.capacity() == capacity);
}
