// The forward pass of a deferred call by claims by message: every rank runs its chunk of the site's plan from
// the front on kept tapes, and the claims engine (src/balance/) moves batches of unstarted jobs to ranks out of
// work, which keep the tapes of what they ran. A job's tape stays where the job ran: the root learns from the
// results who keeps which jobs, and the reverse command (reverse_call.cpp) scatters each job's seeds there.
// The sizes are the site's last deferred call's: a job whose output count differs ends the claims, and the
// call runs again by the static split, which reports the counts.
#include <algorithm>
#include <climits>
#include <mutex>
#include <maprect/detail/registry.hpp>
#include <numeric>
#include <string>

#include "src/map_rect/claimed_jobs.hpp"
#include "src/map_rect/root_steps.hpp"
#include "src/balance/claims_broker.hpp"
#include "src/worker/worker_steps.hpp"

namespace maprect::detail {

namespace {

/// Puts the kept jobs of `call` in ascending job order: a rank then reports its lowest failure first, and
/// the seeds of its jobs come in that order.
void sort_kept_jobs(deferred_call& call) {
  thread_local std::vector<std::size_t> order;
  thread_local std::vector<deferred_job> jobs;
  thread_local std::vector<int> index;
  order.resize(call.jobs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return call.job_index[a] < call.job_index[b]; });
  jobs.assign(call.jobs.begin(), call.jobs.end());
  index.assign(call.job_index.begin(), call.job_index.end());
  for (std::size_t i = 0; i < order.size(); ++i) {
    call.jobs[i] = jobs[order[i]];
    call.job_index[i] = index[order[i]];
  }
}

/// Runs the `in.n_jobs` jobs from job `first` forward onto the kept tapes of `keep` with `run`, their values
/// appended to `values`. Returns ok, failed (the failing job in `failed_job`, its error in `error`), or
/// counts_changed when a job's output count differs from `planned` (from the first job's).
wire::status run_kept_batch(kept_chunk_runner run, const chunk_input& in, int first, const int* planned,
                            thread_team* team, deferred_call& keep, block_buffer& values, int& failed_job,
                            job_error& error) {
  const std::size_t before = keep.jobs.size();
  const int failed = run(in, keep, team, error);
  for (int i = 0; i < in.n_jobs; ++i) keep.job_index.push_back(first + i);
  if (failed >= 0) {
    failed_job = first + failed;
    return wire::status::failed;
  }
  for (int i = 0; i < in.n_jobs; ++i) {
    const deferred_job& job = keep.jobs[before + static_cast<std::size_t>(i)];
    if (job.count != planned[i]) return wire::status::counts_changed;
    double* out = values.extend(static_cast<std::size_t>(job.count));
    for (int k = 0; k < job.count; ++k) out[k] = job.outputs[k]->val_;
  }
  return wire::status::ok;
}

/// Root: the jobs of one deferred call by claims, for claims_broker: its own batches (own_batch_runner) and
/// the work it brokers (root_claimed_work). Every output's value lands at its job's place in s.call.answers.
class deferred_root_jobs final : public root_claimed_work, public own_batch_runner {
 public:
  deferred_root_jobs(map_rect_context& s, const root_site& site, const call_request& req, deferred_call& keep)
      : s_(s), plan_(site.plan), req_(req), keep_(keep), planned_(site.deferred_counts),
        rows_(s.comm, {req.job_params, req.n_job_params, site.deferred_counts.data(), req.x_r->data(),
                       req.x_i->data(), nullptr}),
        ran_(static_cast<std::size_t>(s.size)) {
    output_at_.assign(static_cast<std::size_t>(plan_.n_jobs) + 1, 0);
    for (int j = 0; j < plan_.n_jobs; ++j) output_at_[j + 1] = output_at_[j] + planned_[j];
    s.call.answers.assign(static_cast<std::size_t>(output_at_.back()), 0.0);
    s.call.worker_ends.assign(static_cast<std::size_t>(s.size), -1);  // -1: its result is not in
    s.call.worker_taken.assign(static_cast<std::size_t>(s.size), 0);
    s.call.worker_taken_in_host.clear();
    s.call.runners.clear();  // until the call succeeds
  }

  int jobs_of(int r) const override { return plan_.jobs(r); }
  void send_batch(int thief, int owner, job_range g) override { rows_.send(thief, plan_.first(owner), g); }
  void finish_sends() override { rows_.finish(); }
  int global_job(int owner, int local) const override { return plan_.first(owner) + local; }
  wire::status run_on_root(int owner, job_range g, int& failed_job) override {
    s_.call.worker_taken[0] += g.size();
    return run_on_root_jobs(plan_.first(owner) + g.begin, g.size(), failed_job);
  }
  double* place_result(int from, const result_head& head, int& n) override;
  wire::status run(job_range g, int& failed_job) override { return run_on_root_jobs(g.begin, g.size(), failed_job); }
  /// The jobs run on their kept tapes, whichever thread runs them; what both threads note is under a lock.
  bool runs_aside() const override { return true; }

  /// Once the claims are over: throws the lowest failing job's error; false when an output count changed;
  /// else true, the kept jobs in job order and who keeps which in `keep`.
  bool finish(int own_end);

 private:
  wire::status run_on_root_jobs(int first, int n, int& failed_job);
  /// `rank`'s outcome `code` of its jobs, failing at `job` (its error in `error` where the root ran it).
  void note_outcome(int rank, wire::status code, int job, job_error* error) {
    const std::lock_guard<std::mutex> lock(outcome_lock_);
    if (outcome_.keep(code, rank, job) && error != nullptr) outcome_.error = std::move(*error);
  }

  map_rect_context& s_;
  const chunk_plan plan_;
  const call_request& req_;
  deferred_call& keep_;
  const std::vector<int>& planned_;
  rows_to_thieves rows_;
  std::vector<long long> output_at_;          ///< where each job's values start, by the planned counts
  std::vector<std::vector<job_range>> ran_;   ///< per rank, the jobs it ran
  block_buffer batch_values_;
  lowest_failure outcome_;  ///< the call's, the root's error kept
  std::mutex outcome_lock_;  ///< a batch the root runs aside notes its outcome while results come in
};

wire::status deferred_root_jobs::run_on_root_jobs(int first, int n, int& failed_job) {
  batch_values_.resize(0);
  job_error error;
  const wire::status code = run_kept_batch(req_.functor->run_kept[static_cast<int>(req_.kinds)],
                                           root_jobs_input(req_, first, n), first, planned_.data() + first,
                                           s_.team.get(), keep_, batch_values_, failed_job, error);
  ran_[0].push_back({first, first + n});
  note_outcome(0, code, failed_job, &error);
  if (code == wire::status::ok)
    std::copy_n(batch_values_.data(), batch_values_.size(), s_.call.answers.data() + output_at_[first]);
  return code;
}

double* deferred_root_jobs::place_result(int from, const result_head& head, int& n) {
  const int owner = head.owner, code = head.code;
  const int first = plan_.first(owner) + head.begin;
  const int end = plan_.first(owner) + head.end;
  note_outcome(from, static_cast<wire::status>(code), head.job, nullptr);
  if (owner == from) s_.call.worker_ends[from] = head.end;
  else if (code != result_head::not_run) s_.call.worker_taken[from] += end - first;
  if (code != result_head::not_run) ran_[from].push_back({first, end});
  // A worker's own values come whatever its status (sized by the plan); a batch's only when it ran through.
  const bool values_follow = owner == from || code == static_cast<int>(wire::status::ok);
  n = values_follow ? static_cast<int>(output_at_[end] - output_at_[first]) : 0;
  return s_.call.answers.data() + output_at_[first];
}

bool deferred_root_jobs::finish(int own_end) {
  s_.call.worker_ends[0] = own_end;
  s_.mid_call = false;  // every worker has heard "none" and every result is in
  if (outcome_.failed() && outcome_.rank == 0) throw_job_error(outcome_.error, outcome_.job, 0);
  if (outcome_.failed()) throw_remote_error(s_, outcome_.rank, outcome_.job);
  if (outcome_.code == wire::status::counts_changed) return false;
  sort_kept_jobs(keep_);
  keep_.ran_first.assign(1, 0);
  keep_.ran_jobs.clear();
  s_.call.runners.assign(static_cast<std::size_t>(plan_.n_jobs), 0);
  for (int r = 0; r < s_.size; ++r) {
    std::sort(ran_[r].begin(), ran_[r].end(), [](job_range a, job_range b) { return a.begin < b.begin; });
    for (const job_range g : ran_[r])
      for (int j = g.begin; j < g.end; ++j) {
        keep_.ran_jobs.push_back(j);
        s_.call.runners[j] = r;
      }
    keep_.ran_first.push_back(static_cast<int>(keep_.ran_jobs.size()));
  }
  return true;
}

/// Worker: its jobs of one deferred call by claims, on kept tapes, for serve_claims.
class deferred_worker_jobs final : public worker_job_batches {
 public:
  deferred_worker_jobs(map_rect_context& s, const worker_site& site, const wire::request& v, const double* shared,
                       deferred_call& keep)
      : worker_job_batches(s, site, v, shared, site.job_params.data()), keep_(keep) {
    values_.resize(0);
  }
  /// A deferred call reports no profile.
  bool reports_times() const override { return false; }
  /// Sized by the plan whatever ran, as the root receives them.
  const double* own_blocks(int end, int& n) override {
    n = std::accumulate(site_.deferred_counts.begin(), site_.deferred_counts.begin() + end, 0);
    values_.resize(static_cast<std::size_t>(n));
    return values_.data();
  }
  /// Publishes its planned output counts behind its job parameters: a deferred call's workers hold only their own.
  void share_with_host() { worker_job_batches::share_with_host(site_.deferred_counts.data()); }

 private:
  wire::status run(const chunk_input& in, int first, const int* planned, block_buffer& values, int& failed_job,
                   job_error& error) override {
    return run_kept_batch(f_->run_kept[v_.kinds], in, first, planned, s_.team.get(), keep_, values, failed_job,
                          error);
  }
  block_buffer& own_out() override { return values_; }
  const int* own_planned() const override { return site_.deferred_counts.data(); }
  /// The owner's planned output counts, behind its parameters (share_with_host).
  const int* host_planned(int owner, job_range got) override {
    const double* counts = s_.host.peer_params(owner) +
                           static_cast<std::ptrdiff_t>(site_.plan.jobs(owner)) * v_.n_job + got.begin;
    host_counts_.assign(counts, counts + got.size());
    return host_counts_.data();
  }

  deferred_call& keep_;
  block_buffer values_;           ///< its own jobs' values
  std::vector<int> host_counts_;  ///< the planned output counts of the batch claimed in host memory last
};

}  // namespace

bool root_deferred_claims(map_rect_context& s, const root_site& site, const call_request& req, deferred_call& keep,
                          call_result& result) {
  deferred_root_jobs work(s, site, req, keep);
  claims_broker broker(claims_of(s), work);
  // A functor's messages reach the caller's stream only from the root: with one, its jobs stay its own.
  broker.reset(site.plan.root_jobs, req.msgs == nullptr);
  // Its own range stays out of its host's memory (published empty, so that its host's ranks start claiming):
  // it grants its jobs by message between its own batches. Claimed in host memory as well, a slow root's
  // deferred calls took 3% longer at 4 ranks of 1 ms jobs, 1.19 of the balanced bound against 1.15.
  if (deferred_host_claims_for(s, site.rows_everywhere, site.plan, req.n_job_params))
    s.host.publish_range(nullptr, 0, 0, s.size, s.sequence, true);
  int failed_job = -1;
  const wire::status own = broker.run_own(work, failed_job);
  std::vector<int> late;
  // Once the root's own jobs failed or changed their counts, nobody runs another batch.
  if (broker.run(own == wire::status::ok, late) < 0) abort_late(s, name_of(req), late);
  broker.traffic().add_to(s.last_traffic);
  s.call.claimed = true;
  s.call.worker_taken_in_host = broker.taken_in_host();
  if (!work.finish(broker.jobs().end())) return false;
  s.call.segments.assign(1, {s.call.answers.data(), 0, site.plan.n_jobs});
  keep.counts = site.deferred_counts;
  keep.n_jobs = site.plan.n_jobs;
  keep.root_jobs = site.plan.root_jobs;
  result = {s.call.segments.data(), 1, keep.counts.data(), 1, static_cast<int>(s.call.answers.size()), 0};
  return true;
}

void serve_deferred_claims(map_rect_context& s, const worker_site& site, const wire::request& v, const double* shared,
                           deferred_call& keep) {
  deferred_worker_jobs work(s, site, v, shared, keep);
  // Any rank holds any job's rows: the ranks of a host claim each other's jobs in host memory.
  if (deferred_host_claims_for(s, site.rows_everywhere, site.plan, v.n_job)) work.share_with_host();
  serve_claims(claims_of(s), work, s.settings.test_held_rank == s.rank);
  sort_kept_jobs(keep);
}

}  // namespace maprect::detail
