// maprect plan's measurements of the built-in call sites (see plan_measure.hpp), with the timings of
// plan_timing.hpp.
#include "plan_measure.hpp"

#include <maprect/maprect.hpp>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "logreg.hpp"
#include "pk2cmt.hpp"
#include "plan_timing.hpp"
#include "spmd.hpp"

// Call sites of their own: the model at the planned J (303 and 304 are plan_timing's shape-only job).
MAPRECT_REGISTER(300, maprect::models::logreg_standard_scalar_job);
MAPRECT_REGISTER(301, maprect::models::logreg_standard_vector_job);
MAPRECT_REGISTER(302, maprect::models::pk2cmt_job);
MAPRECT_REGISTER(305, maprect::models::logreg_functor<maprect::models::logreg_kernel::scalar,
                                                      maprect::models::logreg_layout::ragged>);
MAPRECT_REGISTER(306, maprect::models::logreg_job);

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

/// The figures of functor F at call site Site on `d`.
template <int Site, class F>
site_figures measure_figures(const site_data& d, int repeat) {
  const int J = d.jobs();
  site_figures f;
  f.jobs = J;
  f.outputs_per_job = 1;
  f.shared_params = static_cast<int>(d.phi.size());
  f.job_params = static_cast<int>(d.theta[0].size());
  chunk_timer chunks(d, &detail::run_chunk<F, detail::param_kinds::vv>);
  const call_and_jobs model = time_call_and_jobs([&] { in_process_gradient<Site, F>(d, J); },
                                                 [&] { chunks.run(0, J); }, repeat);
  f.in_process_s = model.call_s;
  f.job_s = model.jobs_s / J;
  measure_root_costs(d, repeat, f);
  f.job_times_s = job_times(chunks, J);
  f.job_spread_s = spread_of(f.job_times_s);
  return f;
}

}  // namespace

site_figures measure_site(const plan_site& s) {
  if (s.repeat < 1) throw std::invalid_argument("--repeat: " + std::to_string(s.repeat) + ", must be >= 1");
  if (s.jobs < 0) throw std::invalid_argument("--jobs: " + std::to_string(s.jobs) + ", must be >= 1");
  if (s.points < 0) throw std::invalid_argument("--points: " + std::to_string(s.points) + ", must be >= 1");
  if (s.model == "pk2cmt") {
    const int J = s.jobs > 0 ? s.jobs : 16;
    site_figures f = measure_figures<302, models::pk2cmt_job>(pk2cmt_site(J), s.repeat);
    f.description = "pk2cmt, " + std::to_string(J) + " simulated subjects";
    return f;
  }
  if (s.model != "logreg") throw std::invalid_argument("--model: '" + s.model + "', expected logreg or pk2cmt");
  const int J = s.jobs > 0 ? s.jobs : 256, N = s.points > 0 ? s.points : 1000;
  if (s.kernel != "scalar" && s.kernel != "vector")
    throw std::invalid_argument("--kernel: '" + s.kernel + "', expected scalar or vector");
  if (s.skew < 1) throw std::invalid_argument("--skew: " + std::to_string(s.skew) + ", must be >= 1");
  const bool scalar = s.kernel == "scalar";
  site_figures f;
  if (s.skew > 1) {
    const site_data d = skewed_logreg_site(J, N, s.skew);
    f = scalar ? measure_figures<305, models::logreg_functor<models::logreg_kernel::scalar, models::logreg_layout::ragged>>(
                     d, s.repeat)
               : measure_figures<306, models::logreg_job>(d, s.repeat);
    f.description = "logreg standard model " + std::to_string(J) + "x" + std::to_string(N) + ", groups j >= 0.9 J with " +
                    std::to_string(s.skew) + " x the points, " + s.kernel + " kernel";
    return f;
  }
  const site_data d = logreg_site(J, N);
  f = scalar ? measure_figures<300, models::logreg_standard_scalar_job>(d, s.repeat)
             : measure_figures<301, models::logreg_standard_vector_job>(d, s.repeat);
  f.description = "logreg standard model " + std::to_string(J) + "x" + std::to_string(N) + ", " + s.kernel + " kernel";
  return f;
}

int run_plan(const plan_options& o, const std::string& invocation) {
  if (o.model != "logreg" && o.model != "pk2cmt")
    throw std::invalid_argument("--model: '" + o.model + "', expected logreg or pk2cmt");
  if (o.kernel != "scalar" && o.kernel != "vector")
    throw std::invalid_argument("--kernel: '" + o.kernel + "', expected scalar or vector");
  if (o.skew != 1 && o.model != "logreg")
    throw std::invalid_argument("--skew: " + std::to_string(o.skew) + " applies to --model logreg only");
  return run_plan_with(o, invocation,
                       [&] { return measure_site({o.model, o.kernel, o.jobs, o.points, o.skew, o.repeat}); });
}

}  // namespace maprect::cli
