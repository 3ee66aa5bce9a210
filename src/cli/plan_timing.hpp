#pragma once
// The timings `plan` takes of one map_rect call site in process, shared by the built-in sites (maprect plan)
// and a registered model's site (plan in a program of your own): each job alone through its chunk runner,
// the root's per-call and per-output work, and the data check. Times are medians over rounds; in each round
// the contenders of one figure are timed back to back, so that the drift of a shared machine cancels in their
// differences.
#include <maprect/maprect.hpp>
#include <maprect/detail/kept_tapes.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cmath>
#include <vector>

#include "plan_measure.hpp"
#include "spmd.hpp"

namespace maprect::cli {

/// One call site's data and the parameter values it is measured at.
struct site_data {
  std::vector<std::vector<double>> x_r;  ///< J rows of real data
  std::vector<std::vector<int>> x_i;     ///< J rows of integer data
  Eigen::VectorXd phi;                   ///< shared parameter values
  std::vector<Eigen::VectorXd> theta;    ///< each job's parameter values
  /// J.
  int jobs() const { return static_cast<int>(x_r.size()); }
};

/// One in-process gradient through map_rect at call site CallId over the first `n` jobs.
template <int CallId, class F>
void in_process_gradient(const site_data& d, int n) {
  in_process_scope local;
  vector_v phi(d.phi.size());
  for (Eigen::Index s = 0; s < d.phi.size(); ++s) phi(s) = var(d.phi(s));
  std::vector<vector_v> theta(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) {
    theta[j].resize(d.theta[j].size());
    for (Eigen::Index p = 0; p < d.theta[j].size(); ++p) theta[j](p) = var(d.theta[j](p));
  }
  static thread_local std::vector<std::vector<double>> x_r;
  static thread_local std::vector<std::vector<int>> x_i;
  if (static_cast<int>(x_r.size()) != n) {  // one call site, one data set: the same rows every call
    x_r.assign(d.x_r.begin(), d.x_r.begin() + n);
    x_i.assign(d.x_i.begin(), d.x_i.begin() + n);
  }
  var lp = map_rect<CallId, F>(phi, theta, x_r, x_i).sum();
  grad(lp);
  recover_memory();
}

/// The median of `xs` (not empty).
double plan_median(std::vector<double> xs);

/// Seconds per run of `f`, over `batch` runs.
template <class F>
double seconds_per_run(F&& f, int batch) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int b = 0; b < batch; ++b) f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / batch;
}

/// Runs of `f` per batch so that a batch lasts at least ~1 ms (1 to 1000).
template <class F>
int batch_for(F&& f) {
  f();
  const double once = seconds_per_run(f, 1);
  return static_cast<int>(std::clamp(std::ceil(1e-3 / std::max(once, 1e-9)), 1.0, 1000.0));
}

/// Medians over rounds of a whole call, of its jobs alone, and of their difference (timed back to back).
struct call_and_jobs {
  double call_s, jobs_s, overhead_s;
};

/// Times `call` and `jobs` back to back, `repeat` rounds.
template <class C, class R>
call_and_jobs time_call_and_jobs(C&& call, R&& jobs, int repeat) {
  const int batch = batch_for(call);
  std::vector<double> calls, alone, overhead;
  for (int r = 0; r < repeat; ++r) {
    const double c = seconds_per_run(call, batch), j = seconds_per_run(jobs, batch);
    calls.push_back(c);
    alone.push_back(j);
    overhead.push_back(c - j);
  }
  return {plan_median(calls), plan_median(alone), plan_median(overhead)};
}

/// The median over `repeat` rounds of one run of `call`, each round a batch of at least ~1 ms.
template <class C>
double median_call_seconds(C&& call, int repeat) {
  const int batch = batch_for(call);
  std::vector<double> ts;
  for (int r = 0; r < repeat; ++r) ts.push_back(seconds_per_run(call, batch));
  return plan_median(ts);
}

/// A site's job parameters packed as a rank holds them, and the chunk input of a range of its jobs.
class site_jobs {
 public:
  /// Packs `data`'s job parameters; `data` must outlive this.
  explicit site_jobs(const site_data& data);
  /// Jobs [first, first + n), as a chunk runner reads them.
  detail::chunk_input input(int first, int n) const;

 private:
  const site_data& d_;
  std::vector<double> job_params_;
};

/// A chunk runner over jobs [first, first + n) of a site: what a rank does with its share, nothing else.
class chunk_timer {
 public:
  /// The site's jobs through `runner` (a registered functor's chunk runner for the site's parameter kinds).
  chunk_timer(const site_data& data, detail::chunk_runner runner);
  /// Runs jobs [first, first + n).
  void run(int first, int n);
  /// The outputs of each job at the last run (of the jobs it ran).
  const std::vector<int>& counts() const { return counts_; }

 private:
  site_jobs jobs_;
  detail::chunk_runner runner_;
  detail::block_buffer out_;
  std::vector<int> counts_;
};

/// A site's jobs as a deferred call runs them on a rank: forward onto a kept tape, then one sweep of each.
class kept_timer {
 public:
  /// The site's jobs through `runner` (a registered functor's kept chunk runner for the site's parameter kinds).
  kept_timer(const site_data& data, detail::kept_chunk_runner runner);
  /// Runs jobs [first, first + n) forward onto the kept tape, dropping what the last forward kept.
  void forward(int first, int n);
  /// Sweeps every job of the last forward once, from unit adjoints of its outputs.
  void sweep();

 private:
  site_jobs jobs_;
  detail::kept_chunk_runner runner_;
  detail::deferred_call call_;
  std::vector<double> seeds_;
};

/// Each job alone, the fastest of 5 runs (a busy machine only ever adds time, and a spread made of that
/// noise would be charged as imbalance), in job order.
std::vector<double> job_times(chunk_timer& chunks, int jobs);
/// The standard deviation of the per-job times over the jobs.
double spread_of(const std::vector<double>& per_job);
/// The data check's work per job: every row compared with a flat copy, as the root does per call.
double check_seconds_per_job(const site_data& d, int repeat);
/// The root's costs of a site of d's sizes (per call, per output with f.outputs_per_job outputs a job), eager
/// and deferred, from a job that costs next to nothing (call sites 303 and 304): a call minus its jobs, at J
/// jobs and at one.
void measure_root_costs(const site_data& d, int repeat, site_figures& f);
/// The site in process in both reverse modes: one `gradient` and the jobs through `chunks` pinned eager
/// (in_process_s, job_s, outputs_per_job), each job's forward pass onto a kept tape and its sweep through `kept`
/// (forward_job_s, sweep_job_s), and `gradient` pinned deferred (in_process_deferred_s).
void measure_both_modes(const std::function<void()>& gradient, chunk_timer& chunks, kept_timer& kept, int jobs,
                        int repeat, site_figures& f);
/// Scales forward_job_s and sweep_job_s (alike, by kept_gradient_scale) to the jobs' share of the in-process
/// deferred gradient: its time less the root's deferred costs. Leaves them where that share is not positive.
void scale_kept_to_gradient(site_figures& f);

}  // namespace maprect::cli
