// plan's timings of one map_rect call site in process (see plan_timing.hpp).
#include "plan_timing.hpp"

#include <maprect/detail/deferred_reverse.hpp>

#include <atomic>
#include <functional>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "spmd.hpp"
#include "src/map_rect/data_check.hpp"
#include "src/cluster/test_hooks.hpp"

namespace maprect::cli {

namespace {

/// Outputs of each shape-only job: the site's K, set before its calls are timed.
std::atomic<int> shape_outputs{1};

/// A job that costs next to nothing and has the site's shape: K outputs, each one of its var parameters' leaves
/// (so its tape is empty, and a call of it is almost only the root's work, which is what it measures), with M
/// partials or adjoints per output as the real job's.
struct shape_only_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>&,
                                                                     const std::vector<int>&, std::ostream*) const {
    using R = return_type_t<T1, T2>;
    Eigen::Matrix<R, Eigen::Dynamic, 1> out(shape_outputs.load(std::memory_order_relaxed));
    if (phi.size() > 0 && (is_var_v<T1> || theta.size() == 0)) out.fill(R(phi(0)));
    else if (theta.size() > 0) out.fill(R(theta(0)));
    else out.fill(R(0.0));
    return out;
  }
};

}  // namespace

}  // namespace maprect::cli

// Call sites of their own: the shape-only job at J jobs and at one job.
MAPRECT_REGISTER(303, maprect::cli::shape_only_job);
MAPRECT_REGISTER(304, maprect::cli::shape_only_job);

namespace maprect::cli {

double plan_median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const std::size_t n = xs.size();
  return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

site_jobs::site_jobs(const site_data& data) : d_(data) {
  for (const auto& t : d_.theta) job_params_.insert(job_params_.end(), t.data(), t.data() + t.size());
}

detail::chunk_input site_jobs::input(int first, int n) const {
  const int n_job_params = d_.theta.empty() ? 0 : static_cast<int>(d_.theta[0].size());
  const double* params = job_params_.data() + static_cast<std::size_t>(first) * n_job_params;
  return {d_.phi.data(), static_cast<int>(d_.phi.size()), params, n_job_params, d_.x_r.data() + first,
          d_.x_i.data() + first, n, nullptr};
}

chunk_timer::chunk_timer(const site_data& data, detail::chunk_runner runner)
    : jobs_(data), runner_(runner), counts_(data.x_r.size()) {}

void chunk_timer::run(int first, int n) {
  out_.resize(0);
  int cursor = 0;
  runner_(jobs_.input(first, n), out_, counts_.data() + first, cursor);
}

std::vector<double> job_times(chunk_timer& chunks, int jobs) {
  std::vector<double> per_job(static_cast<std::size_t>(jobs));
  for (int j = 0; j < jobs; ++j) {
    std::vector<double> runs;
    for (int r = 0; r < 5; ++r) runs.push_back(seconds_per_run([&] { chunks.run(j, 1); }, 1));
    per_job[j] = *std::min_element(runs.begin(), runs.end());
  }
  return per_job;
}

double spread_of(const std::vector<double>& per_job) {
  const auto J = static_cast<double>(per_job.size());
  if (per_job.size() < 2) return 0;
  double mean = 0, sq = 0;
  for (double t : per_job) mean += t / J;
  for (double t : per_job) sq += (t - mean) * (t - mean);
  return std::sqrt(sq / (J - 1));
}

double check_seconds_per_job(const site_data& d, int repeat) {
  std::vector<double> flat_r;
  std::vector<int> flat_i;
  for (const auto& r : d.x_r) flat_r.insert(flat_r.end(), r.begin(), r.end());
  for (const auto& r : d.x_i) flat_i.insert(flat_i.end(), r.begin(), r.end());
  bool equal = true;
  auto check = [&] {
    const double* at_r = flat_r.data();
    const int* at_i = flat_i.data();
    for (int j = 0; j < d.jobs(); ++j) {
      equal &= detail::values_equal(d.x_r[j].data(), at_r, d.x_r[j].size());
      equal &= detail::values_equal(d.x_i[j].data(), at_i, d.x_i[j].size());
      at_r += d.x_r[j].size();
      at_i += d.x_i[j].size();
    }
  };
  const int batch = batch_for(check);
  std::vector<double> ts;
  for (int r = 0; r < repeat; ++r) ts.push_back(seconds_per_run(check, batch));
  if (!equal) throw std::logic_error("plan: the data check's copy differs from the data");
  return plan_median(ts) / d.jobs();
}

kept_timer::kept_timer(const site_data& data, detail::kept_chunk_runner runner) : jobs_(data), runner_(runner) {}

void kept_timer::forward(int first, int n) {
  call_.clear();
  detail::job_error error;
  if (runner_(jobs_.input(first, n), call_, nullptr, error) >= 0)
    throw std::runtime_error("plan: a job's forward pass: " + error.message);
  std::size_t outputs = 0;
  for (const detail::deferred_job& job : call_.jobs) outputs += static_cast<std::size_t>(job.count);
  seeds_.assign(outputs, 1.0);
}

void kept_timer::sweep() {
  detail::job_error error;
  if (detail::sweep_kept_jobs(call_, seeds_.data(), nullptr, error) >= 0)
    throw std::runtime_error("plan: a job's sweep: " + error.message);
}

namespace {

/// The outputs per job of the chunk runner's last run over all `jobs` jobs, rounded, at least 1.
int outputs_per_job(const chunk_timer& chunks, int jobs) {
  long long outputs = 0;
  for (int k : chunks.counts()) outputs += k;
  return std::max(1, static_cast<int>(std::lround(static_cast<double>(outputs) / std::max(1, jobs))));
}

/// The root's per-call and per-output costs (a call minus its jobs, at J jobs and at one) under `mode`; `jobs`
/// runs the first n shape-only jobs as a rank does in that mode.
std::pair<double, double> root_costs(const site_data& d, int K, int repeat, const char* mode,
                                     const std::function<void(int n)>& jobs) {
  const detail::reverse_mode_scope reverse(mode);
  const int J = d.jobs();
  const double all = std::max(0.0, time_call_and_jobs([&] { in_process_gradient<303, shape_only_job>(d, J); },
                                                      [&] { jobs(J); }, repeat).overhead_s);
  const double one = std::max(0.0, time_call_and_jobs([&] { in_process_gradient<304, shape_only_job>(d, 1); },
                                                      [&] { jobs(1); }, repeat).overhead_s);
  // What a call costs beyond one job is per output.
  const double per_output = J > 1 ? std::max(0.0, (all - one) / ((J - 1.0) * K)) : 0.0;
  return {std::max(0.0, all - static_cast<double>(J) * K * per_output), per_output};
}

}  // namespace

void measure_root_costs(const site_data& d, int repeat, site_figures& f) {
  const int K = std::max(1, f.outputs_per_job);
  shape_outputs.store(K, std::memory_order_relaxed);
  chunk_timer cheap(d, &detail::run_chunk<shape_only_job, detail::param_kinds::vv>);
  std::tie(f.root_call_s, f.root_output_s) = root_costs(d, K, repeat, "eager", [&](int n) { cheap.run(0, n); });
  kept_timer kept(d, &detail::run_kept_chunk<shape_only_job, detail::param_kinds::vv>);
  std::tie(f.root_deferred_call_s, f.root_deferred_output_s) = root_costs(d, K, repeat, "deferred", [&](int n) {
    kept.forward(0, n);
    kept.sweep();
  });
  f.root_check_s_per_job = check_seconds_per_job(d, repeat);
}

void measure_both_modes(const std::function<void()>& gradient, chunk_timer& chunks, kept_timer& kept, int J,
                        int repeat, site_figures& f) {
  {
    const detail::reverse_mode_scope eager("eager");
    const call_and_jobs timed = time_call_and_jobs(gradient, [&] { chunks.run(0, J); }, repeat);
    f.in_process_s = timed.call_s;
    f.job_s = timed.jobs_s / J;
  }
  f.outputs_per_job = outputs_per_job(chunks, J);
  const int batch = batch_for([&] { kept.forward(0, J); });
  std::vector<double> forward, sweep;
  for (int r = 0; r < repeat; ++r) {
    forward.push_back(seconds_per_run([&] { kept.forward(0, J); }, batch));
    kept.forward(0, J);
    sweep.push_back(seconds_per_run([&] { kept.sweep(); }, batch));
  }
  f.forward_job_s = plan_median(forward) / J;
  f.sweep_job_s = plan_median(sweep) / J;
  const detail::reverse_mode_scope deferred("deferred");
  f.in_process_deferred_s = median_call_seconds(gradient, repeat);
}

// Timed alone, back to back, a job's kept forward and sweep run on warm caches; inside a gradient each job's
// tape follows the other jobs' and the root's work, which at K = 1000 costs them 10-25% more.
void scale_kept_to_gradient(site_figures& f) {
  const double root = f.root_deferred_call_s + static_cast<double>(f.jobs) * f.outputs_per_job *
                      f.root_deferred_output_s;
  const double alone = f.jobs * (f.forward_job_s + f.sweep_job_s);
  const double in_gradient = f.in_process_deferred_s - root;
  f.kept_gradient_scale = alone > 0 && in_gradient > 0 ? in_gradient / alone : 1.0;
  f.forward_job_s *= f.kept_gradient_scale;
  f.sweep_job_s *= f.kept_gradient_scale;
}

}  // namespace maprect::cli
