// Tuning the root's share of a call site's jobs from the timings of its steady-state calls.
#include "src/balance/share_tuner.hpp"

#include <algorithm>
#include <cstdlib>

namespace maprect::detail {

double median_of(std::vector<double> xs) {
  std::nth_element(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(xs.size() / 2), xs.end());
  return xs[xs.size() / 2];
}

void share_tuner::forget_window() {
  for (auto* xs : {&check_, &own_per_job_, &worker_per_job_, &latency_, &arrival_}) xs->clear();
  node_timed_ = false;
}

void share_tuner::restart(double move_seconds, bool fresh_data) {
  warmed_ = false;
  candidate_ = -1;
  node_job_ = 0;
  if (fresh_data) proposals_ = 0;
  move_seconds_ = move_seconds;
  forget_window();
}

void share_tuner::record(const chunk_plan& plan, const call_timing& t) {
  if (proposals_ >= max_proposals) return;
  if (!warmed_) {
    warmed_ = true;
    return;
  }
  if (t.node_job > 0) {
    node_job_ = t.node_job;
    node_timed_ = true;
  }
  check_.push_back(t.check);
  arrival_.push_back(t.arrival);
  // The root's jobs alone: the node making between them, at the latest timing, comes off.
  if (plan.root_jobs > 0)
    own_per_job_.push_back(std::max(0.0, t.own - t.nodes_during_own * node_job_) / plan.root_jobs);
  double busy = 0, slowest = 0;
  int jobs = 0;
  for (int r = 1; r < plan.ranks; ++r) {
    busy += t.worker_busy[r];
    slowest = std::max(slowest, t.worker_busy[r]);
    jobs += r < static_cast<int>(t.worker_jobs.size()) ? t.worker_jobs[r] : plan.jobs(r);
  }
  if (jobs > 0) worker_per_job_.push_back(busy / jobs);
  // Only when the root waited does the answers' arrival tell how long the messages took.
  if (t.waited > 1e-6 && t.arrival > slowest) latency_.push_back(t.arrival - slowest);
}

int share_tuner::proposal(const chunk_plan& plan, bool take_over) {
  if (static_cast<int>(check_.size()) < window || plan.ranks < 2) return -1;
  auto least = [](const std::vector<double>& xs) { return *std::min_element(xs.begin(), xs.end()); };
  const bool root_known = !own_per_job_.empty(), workers_known = !worker_per_job_.empty();
  const double check = least(check_);
  const double root_job = root_known ? least(own_per_job_) : workers_known ? least(worker_per_job_) : 0;
  const double worker_job = workers_known ? least(worker_per_job_) : root_job;
  const double latency = latency_.empty() ? 0.0 : least(latency_);
  const double call = median_of(arrival_);
  const double node_job = node_job_;
  forget_window();
  const int J = plan.n_jobs, workers = plan.ranks - 1;
  // The call ends when the slower side does: the root with its check and jobs, or the most loaded worker
  // plus the messages' time. With take-over, a root that finishes first runs the workers' remaining jobs
  // alongside them (which start after the messages' time), so that all ranks end together: every share
  // up to that balance predicts the same time, and the tuner keeps the plan it has.
  // When the root makes the workers' nodes while they run, it makes one job's worth per job it leaves them.
  auto predicted = [&](int root_jobs) {
    const double root_done = check + root_jobs * root_job + (J - root_jobs) * node_job;
    const int most = (J - root_jobs + workers - 1) / workers;
    const double workers_done = latency + most * worker_job;
    if (!take_over || root_done >= workers_done || worker_job <= 0 || root_job <= 0)
      return std::max(root_done, workers_done);
    const double left = (J - root_jobs) - workers * (root_done - latency) / worker_job;
    return root_done + std::max(0.0, left) / (workers / worker_job + 1 / root_job);
  };
  const double now = predicted(plan.root_jobs);
  int best = plan.root_jobs;
  double best_time = now;
  const int most_root_jobs = take_over ? chunk_plan::even(J, plan.ranks).root_jobs : J;
  for (int n = 0; n <= most_root_jobs; ++n) {
    // Predictions that differ by rounding only are equal: the share nearest the plan's wins.
    const double p = predicted(n), tie = 1e-9 * best_time;
    if (p < best_time - tie ||
        (p <= best_time + tie && std::abs(n - plan.root_jobs) < std::abs(best - plan.root_jobs))) {
      best = n;
      best_time = p;
    }
  }
  // Moving the share costs what a call with a move costs beyond a steady one.
  const double move_cost = std::max(0.0, move_seconds_ - call);
  auto pays = [&](int n) {
    const double gain = now - predicted(n);
    return n != plan.root_jobs && gain >= min_gain * now && gain * horizon >= move_cost;
  };
  const bool worth = pays(best);
  const int previous = candidate_;
  candidate_ = worth ? best : -1;
  // A second window in a row must agree: the share the first one named must pay by this one's timings
  // too. Not the same share: timings that differ by their noise move the best share by a few jobs.
  if (!worth || previous < 0 || !pays(previous)) return -1;
  ++proposals_;
  return best;
}

}  // namespace maprect::detail
