// maprect plan's measurements of the built-in call sites (see plan_measure.hpp), with the timings of
// plan_timing.hpp.
#include "plan_measure.hpp"

#include <maprect/maprect.hpp>

#include <sys/prctl.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "logreg.hpp"
#include "pk2cmt.hpp"
#include "pointwise_regression.hpp"
#include "plan_timing.hpp"
#include "spmd.hpp"

namespace maprect::cli {

namespace {

/// What --model may name.
const std::string expected_models = "expected logreg, pk2cmt, sleep or pointwise_regression";

/// The sleep model's job length, milliseconds (set from --job-ms before any job runs).
double sleep_job_ms = 1;

/// maprect-bench-unequal's job: a sleep (no CPU, so ranks keep their speeds with more ranks than cores) and
/// phi0 * theta0 * x + sin(phi1 + theta1), so that the call has the bench's shape.
struct sleep_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>&, std::ostream*) const {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(sleep_job_ms));
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
    out(0) = phi(0) * theta(0) * x_r[0] + sin(phi(1) + theta(1));
    return out;
  }
};

}  // namespace

}  // namespace maprect::cli

// Call sites of their own: the model at the planned J (303 and 304 are plan_timing's shape-only job).
MAPRECT_REGISTER(300, maprect::models::logreg_standard_scalar_job);
MAPRECT_REGISTER(301, maprect::models::logreg_standard_vector_job);
MAPRECT_REGISTER(302, maprect::models::pk2cmt_job);
MAPRECT_REGISTER(305, maprect::models::logreg_functor<maprect::models::logreg_kernel::scalar,
                                                      maprect::models::logreg_layout::ragged>);
MAPRECT_REGISTER(306, maprect::models::logreg_job);
MAPRECT_REGISTER(307, maprect::cli::sleep_job);
MAPRECT_REGISTER(308, maprect::models::pointwise_regression_job);

namespace maprect::cli {

namespace {

site_data logreg_site(int J, int N) {
  const models::logreg_standard_problem p = models::make_logreg_standard_problem(J, N);
  site_data d{p.x_r, p.x_i, p.params.head(2), {}};
  for (int j = 0; j < J; ++j) d.theta.push_back(p.params.segment(2 + 2 * j, 2));
  return d;
}

/// The standard model with skewed group sizes: group j has N (1 + (dear - 1) [j >= 0.9 J]) points, in the
/// ragged layout (rows padded to the largest group), the standard data and parameter values otherwise.
site_data skewed_logreg_site(int J, int N, int dear) {
  std::vector<std::vector<double>> x(static_cast<std::size_t>(J));
  std::vector<std::vector<int>> y(static_cast<std::size_t>(J));
  for (int j = 0; j < J; ++j) {
    const int points = 10 * j >= 9 * J ? dear * N : N;
    for (int i = 0; i < points; ++i) {
      x[j].push_back(std::sin(0.37 * i + j));
      y[j].push_back((7 * i + 3 * j) % 2);
    }
  }
  models::logreg_data packed = models::pack_logreg_groups(x, y);
  const models::logreg_standard_problem p = models::make_logreg_standard_problem(J, 1);
  site_data d{std::move(packed.x_r), std::move(packed.x_i), p.params.head(2), {}};
  for (int j = 0; j < J; ++j) d.theta.push_back(p.params.segment(2 + 2 * j, 2));
  return d;
}

site_data pk2cmt_site(int J) {
  const models::pk2cmt_data p = models::simulate_pk2cmt(J);
  return {p.x_r, p.x_i, p.true_phi, p.true_theta};
}

/// maprect-bench-unequal's data: phi = (0.7, -0.3), theta_j = (0.1 sin(j + 1), 0.2 cos(j + 1)), x_j = cos(0.37 j).
site_data sleep_site(int J) {
  site_data d{std::vector<std::vector<double>>(J), std::vector<std::vector<int>>(J), Eigen::Vector2d(0.7, -0.3), {}};
  for (int j = 0; j < J; ++j) {
    d.theta.push_back(Eigen::Vector2d(0.1 * std::sin(j + 1.0), 0.2 * std::cos(j + 1.0)));
    d.x_r[j] = {std::cos(0.37 * j)};
  }
  return d;
}

/// pointwise_regression's site as maprect bench times it: G groups of K observations, C covariates, at its
/// parameter values off the truth.
site_data pointwise_site(int G, int K, int C) {
  const models::pointwise_regression_data p = models::simulate_pointwise_regression(G, K, C);
  const Eigen::VectorXd params = models::pointwise_regression_bench_point(p);
  site_data d{models::pointwise_regression_rows(p), std::vector<std::vector<int>>(static_cast<std::size_t>(G)),
              params.head(1 + C), {}};
  for (int g = 0; g < G; ++g) d.theta.push_back(params.segment(1 + C + g, 1));
  return d;
}

/// The figures of functor F at call site Site on `d`.
template <int Site, class F>
site_figures measure_figures(const site_data& d, int repeat) {
  const int J = d.jobs();
  site_figures f;
  f.jobs = J;
  f.shared_params = static_cast<int>(d.phi.size());
  f.job_params = static_cast<int>(d.theta[0].size());
  chunk_timer chunks(d, &detail::run_chunk<F, detail::param_kinds::vv>);
  kept_timer kept(d, &detail::run_kept_chunk<F, detail::param_kinds::vv>);
  measure_both_modes([&] { in_process_gradient<Site, F>(d, J); }, chunks, kept, J, repeat, f);
  measure_root_costs(d, repeat, f);
  scale_kept_to_gradient(f);
  f.job_times_s = job_times(chunks, J);
  f.job_spread_s = spread_of(f.job_times_s);
  return f;
}

/// Call site Site of functor F on `d`: its jobs for every rank's timing, its figures for rank 0's.
template <int Site, class F>
plan_call_site call_site(site_data d, int repeat, std::string description) {
  auto data = std::make_shared<const site_data>(std::move(d));
  auto chunks = std::make_shared<chunk_timer>(*data, &detail::run_chunk<F, detail::param_kinds::vv>);
  plan_call_site s;
  s.jobs = data->jobs();
  s.run_jobs = [data, chunks](int first, int n) { chunks->run(first, n); };
  s.measure = [data, repeat, description] {
    site_figures f = measure_figures<Site, F>(*data, repeat);
    f.description = description;
    return f;
  };
  return s;
}

}  // namespace

plan_call_site make_site(const plan_site& s) {
  if (s.repeat < 1) throw std::invalid_argument("--repeat: " + std::to_string(s.repeat) + ", must be >= 1");
  if (s.jobs < 0) throw std::invalid_argument("--jobs: " + std::to_string(s.jobs) + ", must be >= 1");
  if (s.points < 0) throw std::invalid_argument("--points: " + std::to_string(s.points) + ", must be >= 1");
  if (s.model == "pk2cmt") {
    const int J = s.jobs > 0 ? s.jobs : 16;
    return call_site<302, models::pk2cmt_job>(pk2cmt_site(J), s.repeat,
                                               "pk2cmt, " + std::to_string(J) + " simulated subjects");
  }
  if (s.model == "sleep") {
    const int J = s.jobs > 0 ? s.jobs : 48;
    sleep_job_ms = s.job_ms;
    char what[96];
    std::snprintf(what, sizeof what, "sleep, %d jobs of %g ms (maprect-bench-unequal's)", J, s.job_ms);
    return call_site<307, sleep_job>(sleep_site(J), s.repeat, what);
  }
  if (s.model == "pointwise_regression") {
    const int G = s.jobs > 0 ? s.jobs : 16, K = s.points > 0 ? s.points : 100;
    if (s.covariates < 1)
      throw std::invalid_argument("--covariates: " + std::to_string(s.covariates) + ", must be >= 1");
    const std::string what = "pointwise_regression " + std::to_string(G) + "x" + std::to_string(K) + ", " +
                             std::to_string(s.covariates) + " covariates";
    return call_site<308, models::pointwise_regression_job>(pointwise_site(G, K, s.covariates), s.repeat, what);
  }
  if (s.model != "logreg") throw std::invalid_argument("--model: '" + s.model + "', " + expected_models);
  const int J = s.jobs > 0 ? s.jobs : 256, N = s.points > 0 ? s.points : 1000;
  if (s.kernel != "scalar" && s.kernel != "vector")
    throw std::invalid_argument("--kernel: '" + s.kernel + "', expected scalar or vector");
  if (s.skew < 1) throw std::invalid_argument("--skew: " + std::to_string(s.skew) + ", must be >= 1");
  const bool scalar = s.kernel == "scalar";
  const std::string size = "logreg standard model " + std::to_string(J) + "x" + std::to_string(N);
  if (s.skew > 1) {
    const std::string what = size + ", groups j >= 0.9 J with " + std::to_string(s.skew) + " x the points, " + s.kernel + " kernel";
    site_data d = skewed_logreg_site(J, N, s.skew);
    using ragged_scalar = models::logreg_functor<models::logreg_kernel::scalar, models::logreg_layout::ragged>;
    return scalar ? call_site<305, ragged_scalar>(std::move(d), s.repeat, what)
                  : call_site<306, models::logreg_job>(std::move(d), s.repeat, what);
  }
  site_data d = logreg_site(J, N);
  const std::string what = size + ", " + s.kernel + " kernel";
  return scalar ? call_site<300, models::logreg_standard_scalar_job>(std::move(d), s.repeat, what)
                : call_site<301, models::logreg_standard_vector_job>(std::move(d), s.repeat, what);
}

int run_plan(const plan_options& o, const std::string& invocation) {
  if (o.model != "logreg" && o.model != "pk2cmt" && o.model != "sleep" && o.model != "pointwise_regression")
    throw std::invalid_argument("--model: '" + o.model + "', " + expected_models);
  if (o.kernel != "scalar" && o.kernel != "vector")
    throw std::invalid_argument("--kernel: '" + o.kernel + "', expected scalar or vector");
  if (o.skew != 1 && o.model != "logreg")
    throw std::invalid_argument("--skew: " + std::to_string(o.skew) + " applies to --model logreg only");
  // Linux lets a sleep overrun by the timer slack (50 us by default); maprect-bench-unequal sets 1 ns too.
  if (o.model == "sleep" || o.slow_rank >= 0) prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  return run_plan_with(o, invocation, [&] {
    return make_site({o.model, o.kernel, o.jobs, o.points, o.skew, o.job_ms, o.repeat, o.covariates});
  });
}

}  // namespace maprect::cli
