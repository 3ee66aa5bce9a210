// maprect bench's timing method: interleaved rounds and medians (see bench_harness.hpp).
#include "bench_harness.hpp"

#include <maprect/maprect.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "bench_backends.hpp"
#include "spmd.hpp"
#include "src/cluster/clock.hpp"
#include "src/cluster/test_hooks.hpp"

namespace maprect::cli {

namespace {

using bench_clock = std::chrono::steady_clock;

using detail::seconds_since;

/// Warms every contender up; returns the seconds of one gradient of the slowest.
double warm_up(std::vector<contender>& cs, int repeat) {
  const int warm_up_gradients = std::clamp(repeat / 10, 2, 20);
  double slowest = 0;
  for (auto& c : cs) {
    for (int i = 0; i < warm_up_gradients; ++i) run_gradient(c);
    const auto t0 = bench_clock::now();
    run_gradient(c);
    slowest = std::max(slowest, seconds_since(t0));
    if (c.root_work != nullptr)
      for (int i = 0; i < warm_up_gradients; ++i) c.root_work(*c.root_work_w);
  }
  return slowest;
}

void clear_samples(contender& c) {
  c.us.clear();
  c.cpu_us.clear();
  c.root_us_per_job.clear();
  c.worker_us_per_job.clear();
  c.check_us.clear();
  c.thread_slowest_us.clear();
  c.thread_fastest_us.clear();
  c.worker_thread_slowest_us.clear();
  c.worker_thread_fastest_us.clear();
  c.root_work_samples.clear();
}

/// What the cluster's last call of a sample reports: the work per job on each side, and the data check.
void record_profile(contender& c) {
  const cluster::profile p = c.remote->last_call_profile();
  if (p.root_jobs > 0) c.root_us_per_job.push_back(1e6 * p.root_seconds / p.root_jobs);
  if (p.worker_jobs > 0) c.worker_us_per_job.push_back(1e6 * p.worker_seconds / p.worker_jobs);
  c.check_us.push_back(1e6 * p.check_seconds);
  c.thread_slowest_us.push_back(1e6 * p.slowest_thread_seconds);
  c.thread_fastest_us.push_back(1e6 * p.fastest_thread_seconds);
  c.worker_thread_slowest_us.push_back(1e6 * p.worker_slowest_thread_seconds);
  c.worker_thread_fastest_us.push_back(1e6 * p.worker_fastest_thread_seconds);
}

/// Measures the waits of the calls made in its lifetime: each then reads the thread's CPU clock twice more.
struct root_waits_timed {
  root_waits_timed() { detail::time_root_waits(true); }
  ~root_waits_timed() { detail::time_root_waits(false); }
  root_waits_timed(const root_waits_timed&) = delete;
  root_waits_timed& operator=(const root_waits_timed&) = delete;
};

/// One root-work call of `c`, kept if it was a steady call (a call planned anew has no profile).
void sample_root_work(contender& c) {
  {
    root_waits_timed timed;
    c.root_work(*c.root_work_w);
  }
  const cluster::profile p = c.remote->last_call_profile();
  if (waits_timed(p)) c.root_work_samples.push_back(root_work_of(c.root_work_w->call_cpu_us, p));
}

}  // namespace

double median_of(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const std::size_t n = xs.size();
  return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

timing summarise_samples(const std::vector<double>& us) {
  double sum = 0;
  for (double t : us) sum += t;
  return {median_of(us), *std::min_element(us.begin(), us.end()), sum / static_cast<double>(us.size())};
}

void run_gradient(const contender& c) {
  if (c.in_process) {
    in_process_scope local;
    c.f(*c.w);
  } else {
    c.f(*c.w);
  }
}

// A sample of short gradients follows one untimed gradient of the same contender, so that each is timed as one
// of a stream of gradients (as in a fit), not cold after the other contenders' turns.
void sample_interleaved(std::vector<contender>& cs, int repeat) {
  const double slowest = warm_up(cs, repeat);
  // Samples of at least ~100 us, so that the clock's resolution and the loop do not count.
  const int batch = static_cast<int>(std::clamp(std::ceil(100e-6 / std::max(slowest, 1e-9)), 1.0, 1000.0));
  const bool lead_in = slowest < 5e-3;
  const std::size_t n = cs.size();
  for (auto& c : cs) clear_samples(c);
  for (int r = 0; r < repeat; ++r)
    for (std::size_t i = 0; i < n; ++i) {
      contender& c = cs[interleaved_index(i, r, n)];
      if (lead_in) run_gradient(c);
      // The in-process call's CPU time too (the root's serial work is a share of it); not the others', whose
      // shortest samples two clock reads, a system call each, would weigh on.
      const auto t0 = bench_clock::now();
      const double cpu0 = c.in_process ? thread_cpu_us() : 0.0;
      for (int b = 0; b < batch; ++b) run_gradient(c);
      if (c.in_process) c.cpu_us.push_back((thread_cpu_us() - cpu0) / batch);
      c.us.push_back(1e6 * seconds_since(t0) / batch);
      if (c.remote != nullptr) record_profile(c);
      if (c.root_work != nullptr) sample_root_work(c);
    }
}

double paired_ratio(const contender& a, const contender& b) {
  std::vector<double> r(a.us.size());
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = a.us[i] / b.us[i];
  return median_of(r);
}

double paired_difference_per_job(const contender& a, const contender& b, int J) {
  std::vector<double> d(a.us.size());
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = (a.us[i] - b.us[i]) / J;
  return median_of(d);
}

std::pair<double, double> sample_first_calls(const std::vector<gradient_fn>& first_calls, bench_workspace& w) {
  constexpr int steady = 5;
  std::vector<double> firsts, ratios;
  for (gradient_fn f : first_calls) {
    auto t0 = bench_clock::now();
    f(w);
    const double first = seconds_since(t0);
    std::vector<double> after;
    for (int i = 0; i < steady; ++i) {
      t0 = bench_clock::now();
      f(w);
      after.push_back(seconds_since(t0));
    }
    firsts.push_back(1e6 * first);
    ratios.push_back(first / median_of(after));
  }
  return {median_of(firsts), median_of(ratios)};
}

}  // namespace maprect::cli
