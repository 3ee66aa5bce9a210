// The root's own jobs of a call: its chunk in one go, or in batches that the workers may claim from the back.
#include <algorithm>
#include <chrono>

#include "src/map_rect/root_steps.hpp"

namespace maprect::detail {

bool own_jobs_on_team(const cluster_state& s, const call_request& req, int n) {
  return s.team != nullptr && n > 1 && req.msgs == nullptr;
}

rank_status run_own_chunk(cluster_state& s, const call_request& req, int n, int status_slots, job_error& error,
                          job_poller* poller) {
  s.call.own_out.assign(static_cast<std::size_t>(status_slots), 0.0);
  s.call.own_counts.assign(static_cast<std::size_t>(n), 0);
  int cursor = 0;
  try {
    if (req.session != nullptr && !own_jobs_on_team(s, req, n)) {
      // Without a team the call's own timing (root_part::own_untimed) is this thread's busy time.
      const bool timed = s.team != nullptr;
      const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      req.session->begin(n, s.call.own_counts.data(), cursor, poller);
      if (timed) s.chunks.add_alone(seconds_since(start));
    } else {
      if (req.session != nullptr) req.session->begin(0, s.call.own_counts.data(), cursor, nullptr);
      const chunk_input in = root_jobs_input(req, 0, n);
      s.chunks.run(s.team.get(), req.functor->run[static_cast<int>(req.kinds)], in, s.call.own_out,
                   s.call.own_counts.data(), cursor);
      if (req.session != nullptr)
        req.session->drain(s.call.own_out.data() + status_slots, 0, n, s.call.own_counts.data());
    }
  } catch (...) {
    error = current_job_error();
    return {wire::status::failed, cursor};
  }
  return {};
}

void run_own_batch(cluster_state& s, const call_request& req, job_range got, bool in_place, int& cursor) {
  int* counts = s.call.own_counts.data();
  if (in_place) {
    req.session->run(got.begin, got.end, counts, cursor);
    return;
  }
  s.chunks.run(s.team.get(), req.functor->run[static_cast<int>(req.kinds)], root_jobs_input(req, got.begin, got.size()),
               s.call.own_out, counts + got.begin, cursor);
}

rank_status run_own_claimable(cluster_state& s, const root_site& site, const call_request& req,
                              claims_broker& own, job_error& error) {
  const int n = site.plan.root_jobs;
  s.call.own_out.assign(static_cast<std::size_t>(wire::status_doubles), 0.0);
  s.call.own_counts.assign(static_cast<std::size_t>(n), 0);
  const bool in_place = req.session != nullptr && !own_jobs_on_team(s, req, n);
  int first = 0, cursor = 0;
  try {
    if (req.session != nullptr) req.session->begin(0, s.call.own_counts.data(), cursor, nullptr);
    for (job_range got = own.jobs().take_front(s.settings.threads); !got.empty();
         got = own.jobs().take_front(s.settings.threads, own.least_own_batch())) {
      first = got.begin;
      const auto start = std::chrono::steady_clock::now();
      run_own_batch(s, req, got, in_place, cursor);
      const double seconds = seconds_since(start);
      if (in_place && s.team != nullptr) s.chunks.add_alone(seconds);
      if (!std::equal(s.call.own_counts.begin() + got.begin, s.call.own_counts.begin() + got.end,
                      site.counts.begin() + got.begin)) {
        own.jobs().drop_rest();  // the blocks no longer fit the plan
        return {wire::status::counts_changed, -1};
      }
      own.timed_batch(seconds, got.size());
      own.serve_asks();
      own.after_batch(got.end, own.jobs().left());
    }
  } catch (...) {
    error = current_job_error();
    own.jobs().drop_rest();
    return {wire::status::failed, first + cursor};
  }
  if (req.session != nullptr && !in_place)
    req.session->drain(s.call.own_out.data() + wire::status_doubles, 0, own.jobs().end(), s.call.own_counts.data());
  return {};
}

}  // namespace maprect::detail
