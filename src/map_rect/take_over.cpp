// The root's take-over on its host: once its own jobs are done it runs its host's workers' unstarted jobs
// from the back of their chunks, and makes their output nodes as their blocks come in.
#include <chrono>
#include <maprect/detail/thread_parking.hpp>

#include "src/map_rect/root_steps.hpp"

namespace maprect::detail {

namespace {

/// Runs one batch of worker r's jobs that nobody has started yet, from the back of its chunk, and writes
/// their blocks where the worker's would land in `buffer`. Returns the number of jobs claimed (0: none were
/// left); on a failure records it in `failure`.
int take_over_batch(cluster_state& s, const root_site& site, const call_request& req, double* buffer, int r,
                    taken_failure& failure) {
  const job_range got = s.host.claims.claim_back(r);
  if (got.empty()) return 0;
  run_batch_on_root(s, site, req, answer_blocks(buffer, site, r), r, got, failure);
  return got.size();
}

}  // namespace

int worker_end(const cluster_state& s, const root_site& site, int r) {
  if (claims_this_call(s, site)) return s.call.worker_ends.empty() ? site.plan.jobs(r) : s.call.worker_ends[r];
  return s.settings.take_over && s.host.claims.shared_with(r) ? s.host.claims.worker_end(r) : site.plan.jobs(r);
}

int take_over_jobs(cluster_state& s, const root_site& site, const call_request& req, double* buffer,
                   taken_failure& failure) {
  int taken = 0;
  for (bool any = true; any;) {
    any = false;
    for (int r = 1; r < s.size; ++r) {
      if (!s.host.claims.shared_with(r)) continue;
      const int n = take_over_batch(s, site, req, buffer, r, failure);
      if (failure.code != wire::status::ok) return taken;
      any = any || n > 0;
      taken += n;
    }
  }
  return taken;
}

bool make_ready_nodes(cluster_state& s, const root_site& site, const call_request& req, const double* buffer) {
  while (s.call.making < s.size && !s.call.making_stopped) {
    const int r = s.call.making, first = site.plan.first(r), jobs = site.plan.jobs(r);
    const job_progress p = s.host.claims.progress(r);
    int& made = s.call.nodes_made[r];
    if (p.done > made) {
      const double* blocks = slot_blocks(s, site, req, r) + site.block_at[first + made];
      req.session->drain(blocks, first + made, first + p.done, site.counts.data());
      s.call.node_jobs += p.done - made;
      made = p.done;
    }
    if (!p.finished) return false;
    const int end = s.host.claims.worker_end(r);
    if (made < end) {
      s.call.making_stopped = true;
      return false;
    }
    if (end < jobs) {
      const double* taken = answer_blocks(buffer, site, r) + site.block_at[first + end];
      req.session->drain(taken, first + end, first + jobs, site.counts.data());
      s.call.node_jobs += jobs - end;
      made = jobs;
    }
    ++s.call.making;
  }
  return s.call.making >= s.size;
}

void node_poller::poll() {
  if (!s_.call.time_nodes) {
    make_ready_nodes(s_, site_, req_, buffer_);
    return;
  }
  // Timed only when there is something to make: the clock costs about what a tiny job does.
  if (s_.call.making >= s_.size || s_.call.making_stopped) return;
  const job_progress next = s_.host.claims.progress(s_.call.making);
  if (next.done <= s_.call.nodes_made[s_.call.making] && !next.finished) return;
  const auto start = std::chrono::steady_clock::now();
  const int before = s_.call.node_jobs;
  make_ready_nodes(s_, site_, req_, buffer_);
  s_.call.node_seconds += seconds_since(start);
  s_.call.node_jobs_timed += s_.call.node_jobs - before;
}

int make_nodes_and_take_over(cluster_state& s, const root_site& site, const call_request& req, double* buffer,
                             taken_failure& failure) {
  int taken = 0;
  for (unsigned spins = 1; !make_ready_nodes(s, site, req, buffer) && !s.call.making_stopped; ++spins) {
    int n = 0;
    for (int r = s.call.making; r < s.size && n == 0; ++r) n = take_over_batch(s, site, req, buffer, r, failure);
    taken += n;
    if (failure.code != wire::status::ok) break;
    if (n > 0) continue;
    if (s.settings.policy == wait_policy::sleep) break;
    if (s.settings.timeout > 0 && spins % 1024 == 0 && std::chrono::steady_clock::now() >= s.call.deadline) break;
    spin_pause();
  }
  return taken;
}

}  // namespace maprect::detail
