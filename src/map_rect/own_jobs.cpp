// The root's own jobs of a call: its chunk in one go, or in batches that the workers may claim from the back.
#include <algorithm>
#include <chrono>

#include "src/map_rect/root_steps.hpp"

namespace maprect::detail {

bool own_jobs_on_team(const map_rect_context& s, const call_request& req, int n) {
  return s.team != nullptr && n > 1 && req.msgs == nullptr;
}

rank_status run_own_chunk(map_rect_context& s, const call_request& req, int n, int status_slots, job_error& error,
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

void run_own_batch(map_rect_context& s, const call_request& req, job_range got, bool in_place, int& cursor) {
  int* counts = s.call.own_counts.data();
  if (in_place) {
    req.session->run(got.begin, got.end, counts, cursor);
    return;
  }
  s.chunks.run(s.team.get(), req.functor->run[static_cast<int>(req.kinds)], root_jobs_input(req, got.begin, got.size()),
               s.call.own_out, counts + got.begin, cursor);
}

namespace {

/// map_rect's batches of the root's own jobs under claims by message: run in place by the front door's
/// session, or on the team into s.call.own_out. A batch whose output counts left the plan's stops them.
class own_claimable_batches final : public own_batch_runner {
 public:
  own_claimable_batches(map_rect_context& s, const root_site& site, const call_request& req, bool in_place,
                        job_error& error)
      : s_(s), site_(site), req_(req), in_place_(in_place), error_(error) {}
  /// Runs the batch; a job's exception is its failure, kept in `error`.
  wire::status run(job_range got, int& failed_job) override {
    try {
      run_own_batch(s_, req_, got, in_place_, cursor);
    } catch (...) {
      error_ = current_job_error();
      failed_job = got.begin + cursor;
      return wire::status::failed;
    }
    const auto counts = s_.call.own_counts.begin();
    return std::equal(counts + got.begin, counts + got.end, site_.counts.begin() + got.begin)
               ? wire::status::ok
               : wire::status::counts_changed;
  }
  /// Run in place on this thread, the batch is busy time that the team's chunks did not see.
  void ran_for(double seconds) override {
    if (in_place_) s_.chunks.add_alone(seconds);  // in place only beside a team (run_own_claimable)
  }
  /// In place, the jobs' outputs become nodes on this thread's tape as they run.
  bool runs_aside() const override { return !in_place_; }

  int cursor = 0;  ///< the session's or the chunks' place in the batch under way

 private:
  map_rect_context& s_;
  const root_site& site_;
  const call_request& req_;
  bool in_place_;
  job_error& error_;
};

}  // namespace

rank_status run_own_claimable(map_rect_context& s, const root_site& site, const call_request& req,
                              claims_broker& own, job_error& error) {
  const int n = site.plan.root_jobs;
  s.call.own_out.assign(static_cast<std::size_t>(wire::status_doubles), 0.0);
  s.call.own_counts.assign(static_cast<std::size_t>(n), 0);
  // Without a team the batches go into own_out, so that a long one can run aside while this thread answers.
  const bool in_place = req.session != nullptr && s.team != nullptr && !own_jobs_on_team(s, req, n);
  own_claimable_batches batches(s, site, req, in_place, error);
  // Begins the session with none of its jobs, which runs no functor: it only takes back what an earlier begin
  // of this call made. The batches then run the jobs.
  if (req.session != nullptr) req.session->begin(0, s.call.own_counts.data(), batches.cursor, nullptr);
  int failed_job = -1;
  const wire::status code = own.run_own(batches, failed_job);
  if (code != wire::status::ok) return {code, code == wire::status::failed ? failed_job : -1};
  if (req.session != nullptr && !in_place)
    req.session->drain(s.call.own_out.data() + wire::status_doubles, 0, own.jobs().end(), s.call.own_counts.data());
  return {};
}

}  // namespace maprect::detail
