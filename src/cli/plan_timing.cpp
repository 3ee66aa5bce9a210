// plan's timings of one map_rect call site in process (see plan_timing.hpp).
#include "plan_timing.hpp"

#include <stdexcept>

#include "spmd.hpp"
#include "src/map_rect/data_check.hpp"

namespace maprect::cli {

namespace {

/// A job that costs next to nothing and has the site's shape (one output depending on every parameter, so
/// M partials): a call of it is almost only the root's work, which is what it measures.
struct shape_only_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>&,
                                                                     const std::vector<int>&, std::ostream*) const {
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
    out(0) = phi.sum() + theta.sum();
    return out;
  }
};

}  // namespace

}  // namespace maprect::cli

// Call sites of their own: the shape-only job at J jobs and at one job.
MAPRECT_REGISTER(303, maprect::cli::shape_only_job);
MAPRECT_REGISTER(304, maprect::cli::shape_only_job);

namespace maprect::cli {

namespace {

}  // namespace

double plan_median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const std::size_t n = xs.size();
  return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

chunk_timer::chunk_timer(const site_data& data, detail::chunk_runner runner)
    : d_(data), runner_(runner), counts_(data.x_r.size()) {
  for (const auto& t : d_.theta) job_params_.insert(job_params_.end(), t.data(), t.data() + t.size());
}

void chunk_timer::run(int first, int n) {
  const int n_job_params = d_.theta.empty() ? 0 : static_cast<int>(d_.theta[0].size());
  const detail::chunk_input in{d_.phi.data(), static_cast<int>(d_.phi.size()),
                               job_params_.data() + static_cast<std::size_t>(first) * n_job_params, n_job_params,
                               d_.x_r.data() + first, d_.x_i.data() + first, n, nullptr};
  out_.resize(0);
  int cursor = 0;
  runner_(in, out_, counts_.data() + first, cursor);
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

void measure_root_costs(const site_data& d, int repeat, site_figures& f) {
  const int J = d.jobs();
  chunk_timer cheap(d, &detail::run_chunk<shape_only_job, detail::param_kinds::vv>);
  const double all = std::max(0.0, time_call_and_jobs([&] { in_process_gradient<303, shape_only_job>(d, J); },
                                                      [&] { cheap.run(0, J); }, repeat).overhead_s);
  const double one = std::max(0.0, time_call_and_jobs([&] { in_process_gradient<304, shape_only_job>(d, 1); },
                                                      [&] { cheap.run(0, 1); }, repeat).overhead_s);
  // The shape-only job has one output: what a call costs beyond one job is per output.
  f.root_output_s = J > 1 ? std::max(0.0, (all - one) / (J - 1.0)) : 0.0;
  f.root_call_s = std::max(0.0, all - J * f.root_output_s);
  f.root_check_s_per_job = check_seconds_per_job(d, repeat);
}

}  // namespace maprect::cli
