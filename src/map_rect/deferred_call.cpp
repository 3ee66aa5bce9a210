// The root's backend of a deferred call over the cluster: whether the workers hold current rows, and the
// forward pass (first_call.cpp's steps, on kept tapes). Its reverse pass is reverse_call.cpp's command.
#include <algorithm>
#include <chrono>
#include <climits>
#include <maprect/detail/reverse_mode.hpp>
#include <string>

#include "src/map_rect/root_steps.hpp"

namespace maprect::detail {

namespace {

/// Whether the workers hold the rows of call `req` under the site's plan: rows of the same sizes, laid out for
/// the same job parameters, and the same data (the job_data, or rows equal to the copy shipped).
bool rows_current(map_rect_context& s, const root_site& site, const call_request& req, int row_real, int row_int) {
  if (!site.rows_held || site.plan.n_jobs != req.n_jobs || site.n_job_params != req.n_job_params ||
      site.row_real != row_real || site.row_int != row_int || other_data(site, req))
    return false;
  int checked_rows = 0;
  return workers_data_current(s, site, req, checked_rows);
}

/// Whether deferred call `req` goes by claims by message: with the site's rows held by the workers (`current`)
/// under the plan and the sizes of its last deferred call, when its last forward pass says claims pay.
bool deferred_claims_apply(map_rect_context& s, const root_site& site, const call_request& req, bool current) {
  const chunk_plan& p = site.plan;
  const chunk_plan& last = site.deferred_plan;
  return current && site.next_root_jobs < 0 && static_cast<int>(site.deferred_counts.size()) == req.n_jobs &&
         p.n_jobs == last.n_jobs && p.ranks == last.ranks && p.root_jobs == last.root_jobs &&
         claims_by_message_pay(claims_of(s), site.deferred_forward_s);
}

}  // namespace

int kept_calls_back(map_rect_context& s, deferred_call& keep) {
  keep.remote_id = ++s.root.deferred_calls;
  keep.cluster = s.root.serial;
  const std::uint64_t oldest = kept_calls::of_thread().oldest_remote_id(keep.remote_id, keep.cluster);
  return static_cast<int>(std::min<std::uint64_t>(keep.remote_id - oldest, INT_MAX));
}

call_result root_deferred_call(const call_request& req, deferred_call& keep) {
  map_rect_context& s = *live_root;
  s.last_traffic = {};
  s.last_profile = {};
  root_site& site = s.root.site(req.call_id);
  const std::pair<int, int> rows = row_sizes(req);
  const int row_real = rows.first, row_int = rows.second;
  const bool current = rows_current(s, site, req, row_real, row_int);
  int root_jobs = site.plan.root_jobs;
  if (site.next_root_jobs >= 0) root_jobs = std::min(site.next_root_jobs, req.n_jobs);
  else if (!current && site.plan.n_jobs != req.n_jobs) root_jobs = chunk_plan::even(req.n_jobs, s.size).root_jobs;
  keep.call_id = req.call_id;
  keep.kinds = static_cast<int>(req.kinds);
  const bool rows_follow = !current || site.next_root_jobs >= 0;
  const bool claims = deferred_claims_apply(s, site, req, current);
  const auto start = std::chrono::steady_clock::now();
  return run_root_call(s, req, [&] {
    call_result result;
    if (claims && deferred_forward_claimed(s, site, req, keep, result)) {
      s.last_profile.root_jobs = keep.root_jobs;
      site.deferred_forward_s = seconds_since(start);
      return result;
    }
    if (claims) {  // an output count changed: what ran is dropped, and the call runs by the static split
      keep.clear();
      s.last_traffic = {};
    }
    result = deferred_forward(s, site, req, row_real, row_int, root_jobs, rows_follow, keep);
    s.last_profile.root_jobs = keep.root_jobs;
    site.deferred_forward_s = seconds_since(start);
    return result;
  });
}

}  // namespace maprect::detail
