// The root's map_rect backend: plans a call site anew (first call) or runs a steady call, and
// ends the job when the root fails between a call's collectives.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "src/map_rect/root_steps.hpp"
#include "src/cluster/test_hooks.hpp"

namespace maprect::detail {

thread_local map_rect_context* live_root = nullptr;

namespace {

/// Call `req` by the command its site needs: a first call for a new site, sizes or data, or a root share asked
/// for (plan_root_share), else a steady call; a changed output count plans the call anew.
call_result plan_or_call(map_rect_context& s, const call_request& req) {
  s.last_traffic = {};
  root_site& site = s.root.site(req.call_id);
  const std::pair<int, int> rows = row_sizes(req);
  const int row_real = rows.first, row_int = rows.second;
  // A new plan: on the first call, for new sizes or data, or for changed output counts.
  auto plan_anew = [&](int root_jobs) {
    s.last_profile = {};
    return first_call(s, site, req, row_real, row_int, root_jobs);
  };
  const int asked = site.next_root_jobs >= 0 ? std::min(site.next_root_jobs, req.n_jobs) : -1;
  if (!same_shape(site, req, row_real, row_int))
    return plan_anew(asked >= 0 ? asked : chunk_plan::even(req.n_jobs, s.size).root_jobs);
  if (other_data(site, req)) return plan_anew(asked >= 0 ? asked : site.plan.root_jobs);
  if (asked >= 0) return plan_anew(asked);
  call_result result;
  const steady_outcome outcome = steady_call(s, site, req, result);
  if (outcome == steady_outcome::done) return result;
  // New data, or a job's output count changed: the same call again, planned anew with the same share.
  return plan_anew(site.plan.root_jobs);
}

}  // namespace

std::pair<int, int> row_sizes(const call_request& req) {
  const long long n_real = static_cast<long long>((*req.x_r)[0].size()) * req.n_jobs;
  const long long n_int = static_cast<long long>((*req.x_i)[0].size()) * req.n_jobs;
  if (!fits_one_message(n_real)) throw_too_large_for_message(n_real, "x_r of call id " + std::to_string(req.call_id));
  if (!fits_one_message(n_int)) throw_too_large_for_message(n_int, "x_i of call id " + std::to_string(req.call_id));
  return {static_cast<int>((*req.x_r)[0].size()), static_cast<int>((*req.x_i)[0].size())};
}

call_result root_call(const call_request& req) {
  map_rect_context& s = *live_root;
  s.chunks.reset_busy();
  // A steady call writes the whole profile when it ends; a first call, or one that fails, leaves it zero.
  return run_root_call(s, req, [&] {
    const auto start = std::chrono::steady_clock::now();
    const call_result result = plan_or_call(s, req);
    s.root.site(req.call_id).last_call_s = seconds_since(start);  // whether the next call's claims pay
    return result;
  });
}

void plan_root_share(int call_id, int root_jobs) {
  if (live_root != nullptr) live_root->root.site(call_id).next_root_jobs = std::max(0, root_jobs);
}

void judge_claims_at_round_trip(double seconds) {
  if (live_root != nullptr) live_root->judged_round_trip = seconds;
}

void time_root_waits(bool on) {
  if (live_root != nullptr) live_root->root.time_waits = on;
}


}  // namespace maprect::detail
