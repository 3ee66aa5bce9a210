// The reverse command of a deferred call, as the steps every rank runs in one order: the request naming the
// call, the outputs' adjoints scattered to the ranks that ran the jobs, each rank's sweep of its kept tapes, and
// every job's parameters' adjoints gathered. The root then adds them to the caller's nodes in job order, as a
// call in process does, so that the bits do not depend on the ranks or threads.
#include <cstdio>
#include <maprect/detail/deferred_reverse.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/map_rect/root_steps.hpp"
#include "src/protocol/call_timeout.hpp"
#include "src/worker/worker_steps.hpp"

namespace maprect::detail {

namespace {

/// Doubles ahead of a rank's adjoints in its answer: status code and failing job.
constexpr int answer_head = 2;

/// One reverse pass of one deferred call on one rank (run()).
class reverse_command {
 public:
  /// The root's side: the reverse pass of `call`, whose outputs' adjoints are on the caller's tape.
  reverse_command(map_rect_context& s, deferred_call& call)
      : s_(s), root_(true), call_(&call) {
    header_.cmd = command::reverse;
    header_.call_id = call.call_id;
    header_.kinds = call.kinds;
    header_.n_jobs = call.n_jobs;
    header_.root_jobs = call.root_jobs;
    header_.arg = static_cast<int>(s.root.deferred_calls - call.remote_id);
    header_.n_shared = call.n_shared_var;  // no shared values follow a reverse request: these are counts
    header_.n_job = call.n_job_var;
  }

  /// A worker's side of request `v`.
  reverse_command(map_rect_context& s, const wire::request& v)
      : s_(s), header_(v), call_(s.worker.kept.find(s.worker.kept.newest() - static_cast<std::uint64_t>(v.arg))) {
    if (call_ != nullptr) return;
    // The root sweeps only calls it keeps, and a worker keeps every call the root keeps: the two disagree.
    std::fprintf(stderr, "maprect: rank %d was asked to sweep deferred call %d back, which it does not keep; "
                 "aborting\n", s.rank, v.arg);
    abort_job(s, 3);
  }

  /// Every step, in order.
  void run() {
    request();
    seeds();
    sweep();
    answers();
  }

  /// The root, once run() has returned: throws the lowest failing job's error, else adds every job's
  /// parameters' adjoints to the caller's nodes in job order.
  void finish();

 private:
  void request();
  void seeds();
  void sweep();
  void answers();
  /// Adjoints a job returns: its var parameters', shared ones first.
  int per_job() const { return header_.n_shared + header_.n_job; }
  /// Jobs this rank keeps.
  int kept() const { return static_cast<int>(call_->jobs.size()); }
  /// The outputs of the jobs this rank keeps.
  long long kept_outputs() const {
    long long n = 0;
    for (const deferred_job& job : call_->jobs) n += job.count;
    return n;
  }
  /// The root: rank r's kept jobs, by index, in the order it keeps them (ascending).
  const int* ran_by(int r) const { return call_->ran_jobs.data() + call_->ran_first[r]; }
  int ran_count(int r) const { return call_->ran_first[r + 1] - call_->ran_first[r]; }

  map_rect_context& s_;
  bool root_ = false;
  wire::request header_;
  deferred_call* call_;  ///< this rank's kept jobs of the call
  std::vector<double> seeds_;    ///< the outputs' adjoints: the root's for every job, a worker's for its own
  std::vector<double> answer_;   ///< status, then per job its parameters' adjoints: the root's for every rank
  rank_layout answers_;          ///< the root: each rank's part of answer_
  job_error error_;              ///< this rank's lowest failing job's error
  MPI_Request done_ = MPI_REQUEST_NULL;
};

void reverse_command::request() {
  if (!root_) return;
  s_.mid_call = true;
  s_.last_traffic = {};
  send_request(s_, header_);
  start_timeout(s_);
}

void reverse_command::seeds() {
  const endpoint e = s_.ends();
  if (!root_) {
    const int mine = static_cast<int>(kept_outputs());
    seeds_.resize(static_cast<std::size_t>(mine));
    post_parameters(e, collective{}, nullptr, {}, seeds_.data(), mine);
    return;
  }
  // Where each job's outputs start among the caller's, and each rank's seeds in the order it keeps its jobs.
  std::vector<long long> output_at(static_cast<std::size_t>(call_->n_jobs) + 1, 0);
  for (int j = 0; j < call_->n_jobs; ++j) output_at[j + 1] = output_at[j] + call_->counts[j];
  rank_layout layout;
  layout.counts.assign(static_cast<std::size_t>(s_.size), 0);
  layout.displs.assign(static_cast<std::size_t>(s_.size), 0);
  seeds_.resize(static_cast<std::size_t>(output_at.back()));
  std::size_t at = 0;
  for (int r = 0; r < s_.size; ++r) {
    layout.displs[r] = static_cast<int>(at);
    for (int i = 0; i < ran_count(r); ++i) {
      const int j = ran_by(r)[i];
      for (long long k = output_at[j]; k < output_at[j + 1]; ++k) seeds_[at++] = call_->caller_outputs[k].adj_;
    }
    layout.counts[r] = static_cast<int>(at) - layout.displs[r];
  }
  post_parameters(e, collective{}, seeds_.data(), layout, nullptr, 0);
  s_.last_traffic.sent += sizeof(double) * static_cast<std::uint64_t>(at - layout.counts[0]);
}

void reverse_command::sweep() {
  const int n = kept();
  const int failed = sweep_kept_jobs(*call_, seeds_.data(), s_.team.get(), error_);
  std::vector<double>& out = root_ ? answer_ : seeds_;  // a worker's seeds are spent: its answer reuses them
  if (!root_) {
    out.assign(static_cast<std::size_t>(answer_head + n * per_job()), 0.0);
  } else {
    answers_.counts.assign(static_cast<std::size_t>(s_.size), 0);
    answers_.displs.assign(static_cast<std::size_t>(s_.size), 0);
    for (int r = 0; r < s_.size; ++r) {
      answers_.displs[r] = r == 0 ? 0 : answers_.displs[r - 1] + answers_.counts[r - 1];
      answers_.counts[r] = answer_head + ran_count(r) * per_job();
    }
    out.assign(static_cast<std::size_t>(answers_.displs[s_.size - 1] + answers_.counts[s_.size - 1]), 0.0);
  }
  out[0] = static_cast<double>(failed < 0 ? wire::status::ok : wire::status::failed);
  out[1] = failed < 0 ? -1 : call_->job_index[static_cast<std::size_t>(failed)];
  for (int j = 0; failed < 0 && j < n; ++j)
    for (int i = 0; i < per_job(); ++i)
      out[static_cast<std::size_t>(answer_head + j * per_job() + i)] = call_->jobs[j].params[i].adj_;
  if (!root_) done_ = announce_done(s_);
}

void reverse_command::answers() {
  if (!root_) {
    if (seeds_[0] != 0) s_.last_error = error_;
    MPI_Request unused;
    collect_answers(s_.ends(), collective{}, MPI_DOUBLE, seeds_.data(), static_cast<int>(seeds_.size()), nullptr,
                    nullptr, nullptr, std::chrono::steady_clock::time_point::max(), unused);
    finish_done(s_, done_);
    return;
  }
  const auto deadline = s_.settings.timeout > 0 ? s_.deadline : std::chrono::steady_clock::time_point::max();
  gather_within_deadline(s_, {"", header_.call_id}, deadline, collective{}, MPI_DOUBLE, answer_.data(),
                         answers_.counts.data(), answers_.displs.data());
  s_.last_traffic.received = sizeof(double) * static_cast<std::uint64_t>(answer_.size() - answers_.counts[0]);
  s_.mid_call = false;
}

void reverse_command::finish() {
  // Each rank keeps its jobs in ascending order and reports its first failure: the lowest of those wins.
  int failing_rank = -1, failing_job = -1;
  for (int r = 0; r < s_.size; ++r) {
    const double* head = answer_.data() + answers_.displs[r];
    if (head[0] != 0 && (failing_rank < 0 || head[1] < failing_job)) {
      failing_rank = r;
      failing_job = static_cast<int>(head[1]);
    }
  }
  if (failing_rank == 0) throw_job_error(error_, failing_job, 0);
  if (failing_rank > 0) throw_remote_error(s_, failing_rank, failing_job);
  const int S = call_->n_shared_var, P = call_->n_job_var, M = per_job();
  std::vector<const double*> adjoints_of(static_cast<std::size_t>(call_->n_jobs), nullptr);
  for (int r = 0; r < s_.size; ++r)
    for (int i = 0; i < ran_count(r); ++i)
      adjoints_of[ran_by(r)[i]] = answer_.data() + answers_.displs[r] + answer_head + i * M;
  vari* const* shared = call_->caller_shared.data();
  for (int j = 0; j < call_->n_jobs; ++j) {  // in job order, as in process
    const double* adjoints = adjoints_of[j];
    for (int i = 0; i < S; ++i) shared[i]->adj_ += adjoints[i];
    vari* const* own = call_->caller_job_params.data() + static_cast<std::size_t>(j) * P;
    for (int p = 0; p < P; ++p) own[p]->adj_ += adjoints[S + p];
  }
}

}  // namespace

void sweep_on_cluster(deferred_call& call) {
  map_rect_context* s = live_root;
  if (s == nullptr || call.cluster != s->root.serial)
    throw std::logic_error("map_rect: call id " + std::to_string(call.call_id) +
                           ": grad() reached a deferred call whose cluster has stopped");
  reverse_command command(*s, call);
  command.run();
  command.finish();
}

void serve_reverse(map_rect_context& s, const wire::request& v) { reverse_command(s, v).run(); }

}  // namespace maprect::detail
