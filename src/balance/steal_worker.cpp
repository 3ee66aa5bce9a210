// Claims between any two ranks, by message: the worker's side (its own jobs while serving asks, batches
// taken from other workers, the answer to the root).
#include <algorithm>
#include <chrono>
#include <deque>
#include <maprect/detail/job_runner.hpp>
#include <maprect/detail/registry.hpp>
#include <string>

#include "src/balance/steal.hpp"
#include "src/cluster/call_timeout.hpp"

namespace maprect::detail {

namespace {

/// A batch this worker ran for another rank, kept until the root has received it.
struct stolen_batch {
  result_head head;
  block_buffer blocks;
  MPI_Request sends[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
};


/// One worker's part of a steady call by claims by message.
class worker_claims {
 public:
  worker_claims(cluster_state& s, worker_site& site, const wire::request& v, const double* shared,
                const double* job_params)
      : s_(s), site_(site), v_(v), shared_(shared), job_params_(job_params), f_(find_functor(v.call_id)) {
    jobs_.reset(site.n_jobs);
  }

  /// Runs this rank's own jobs from the front, answering the root's asks between batches. Returns the
  /// failing job's global index, or -1; sets code_.
  int run_own();
  /// Asks the root for batches of other ranks' jobs and runs them, until it answers "none" (meanwhile it
  /// answers the root's asks, for none).
  void take_from_root(int failed_job);
  /// Sends the root the status and blocks of its own jobs, without waiting.
  void send_own(int failed_job, double busy, const team_busy& threads);
  /// Completes the sends: the root has received everything once it has answered "none".
  void finish_sends();

  wire::status code() const { return code_; }

 private:
  void serve_asks();
  void post_ask(bool want, int held = 0);
  grant_message await_grant();
  void receive_rows(const grant_message& got);
  void run_stolen(int owner, job_range got, int failed_job);
  void send_result(const result_head& head, const double* blocks, int n, MPI_Request (&sends)[2]);

  cluster_state& s_;
  worker_site& site_;
  const wire::request& v_;
  const double* shared_;
  const double* job_params_;
  const functor_entry* f_;
  unstarted_jobs jobs_;      ///< this rank's own jobs nobody has started
  double job_seconds_ = 0;   ///< seconds per job of its latest batch of its own (0: none timed yet)
  wire::status code_ = wire::status::ok;
  std::deque<stolen_batch> stolen_;  ///< a deque: their blocks stay where the sends read them
  result_head own_head_;
  MPI_Request own_sends_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  grant_message grant_;      ///< the answer to this rank's pending ask
  MPI_Request grant_request_ = MPI_REQUEST_NULL;
  std::vector<double> grant_reals_;  ///< the granted jobs' parameters, then x_r rows
  std::vector<int> grant_ints_;      ///< their planned output counts, whether each one's rows came, x_i rows
  int batch_first_ = 0;              ///< the global index of the batch received last
};

int worker_claims::run_own() {
  site_.out.assign(static_cast<std::size_t>(wire::status_doubles), 0.0);
  site_.run_counts.assign(static_cast<std::size_t>(site_.n_jobs), 0);
  int begin = 0, cursor = 0;
  try {
    if (f_ == nullptr)
      throw std::invalid_argument("call id " + std::to_string(v_.call_id) + " is not registered on rank " +
                                  std::to_string(s_.rank));
    for (job_range got = jobs_.take_front(s_.settings.threads); !got.empty();
         got = jobs_.take_front(s_.settings.threads, jobs_worth(s_.round_trip, job_seconds_))) {
      begin = got.begin;
      const auto batch_start = std::chrono::steady_clock::now();
      const chunk_input in{shared_, v_.n_shared, job_params_ + static_cast<std::ptrdiff_t>(got.begin) * v_.n_job,
                           v_.n_job, site_.x_r.data() + got.begin, site_.x_i.data() + got.begin, got.size(),
                           nullptr};
      s_.chunks.run(s_.team.get(), f_->run[v_.kinds], in, site_.out, site_.run_counts.data() + got.begin, cursor);
      if (!std::equal(site_.run_counts.begin() + got.begin, site_.run_counts.begin() + got.end,
                      site_.counts.begin() + got.begin)) {
        code_ = wire::status::counts_changed;  // the blocks no longer fit the plan
        jobs_.drop_rest();
        return -1;
      }
      job_seconds_ =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - batch_start).count() / got.size();
      serve_asks();
    }
  } catch (...) {
    s_.worker.last_error = current_job_error();
    code_ = wire::status::failed;
    jobs_.drop_rest();
    return site_.job_begin + begin + cursor;
  }
  return -1;
}

void worker_claims::serve_asks() {
  // Only the root asks a worker for its jobs, on behalf of a rank out of them.
  answer_asks(s_.comm, steal_tag::ask, [this](int root, const ask_message& ask) {
    const job_range g = ask.want != 0 ? jobs_.grant_back(ask.held(job_seconds_), ask.least(job_seconds_)) : job_range{};
    send_grant(s_.comm, root, s_.rank, g);
  });
}

void worker_claims::post_ask(bool want, int held) {
  detail::post_ask(s_.comm, 0, {want ? 1.0 : 0.0, static_cast<double>(held), 0.0}, &grant_.owner, 3,
                   grant_request_);
}

grant_message worker_claims::await_grant() {
  unsigned spins = 0;
  for (int done = 0; MPI_Test(&grant_request_, &done, MPI_STATUS_IGNORE), !done;) {
    serve_asks();  // the root may be waiting for this rank's answer as it waits for the root's
    pause_in_claims(s_.settings.policy, spins);
  }
  return grant_;
}

void worker_claims::receive_rows(const grant_message& got) {
  // At most every job's rows: those of a job_data sent before do not come again (the messages are shorter).
  const int n = got.range().size();
  grant_reals_.resize(static_cast<std::size_t>(n) * (v_.n_job + v_.row_real));
  grant_ints_.resize(static_cast<std::size_t>(n) * (2 + v_.row_int));
  MPI_Recv(grant_reals_.data(), static_cast<int>(grant_reals_.size()), MPI_DOUBLE, 0, steal_tag::grant_reals,
           s_.comm, MPI_STATUS_IGNORE);
  MPI_Recv(grant_ints_.data(), static_cast<int>(grant_ints_.size()), MPI_INT, 0, steal_tag::grant_ints, s_.comm,
           MPI_STATUS_IGNORE);
  // Kept at once, by global job, even for a batch this rank will not run: the root counts them as held here
  // from now on, and the next claims of a job_data's find them.
  batch_first_ = site_.plan.first(got.owner) + got.begin;
  root_rows_held& held = s_.worker.root_rows[v_.call_id];
  if (static_cast<int>(held.x_r.size()) < batch_first_ + n) {
    held.x_r.resize(static_cast<std::size_t>(batch_first_ + n));
    held.x_i.resize(static_cast<std::size_t>(batch_first_ + n));
  }
  const double* real_row = grant_reals_.data() + static_cast<std::ptrdiff_t>(n) * v_.n_job;
  const int* int_row = grant_ints_.data() + 2 * n;
  for (int k = 0; k < n; ++k) {
    if (grant_ints_[static_cast<std::size_t>(n + k)] == 0) continue;  // sent before, held here
    held.x_r[batch_first_ + k].assign(real_row, real_row + v_.row_real);
    held.x_i[batch_first_ + k].assign(int_row, int_row + v_.row_int);
    real_row += v_.row_real;
    int_row += v_.row_int;
  }
}

void worker_claims::run_stolen(int owner, job_range got, int failed_job) {
  const int n = got.size(), P = v_.n_job;
  const root_rows_held& held = s_.worker.root_rows[v_.call_id];  // as receive_rows left them
  const int first = site_.plan.first(owner) + got.begin;
  stolen_batch& b = stolen_.emplace_back();
  b.head = {static_cast<double>(owner), static_cast<double>(got.begin), static_cast<double>(got.end),
            static_cast<double>(wire::status::ok)};
  // A batch wholly behind this rank's own failing job cannot change which job fails first.
  if (failed_job >= 0 && first >= failed_job) {
    b.head.code = result_head::not_run;
  } else {
    std::vector<int> counts(static_cast<std::size_t>(n), 0);
    const chunk_input in{shared_, v_.n_shared, grant_reals_.data(), P, held.x_r.data() + batch_first_,
                         held.x_i.data() + batch_first_, n, nullptr};
    int cursor = 0;
    try {
      s_.chunks.run(s_.team.get(), f_->run[v_.kinds], in, b.blocks, counts.data(), cursor);
      if (!std::equal(counts.begin(), counts.end(), grant_ints_.begin()))
        b.head.code = static_cast<double>(wire::status::counts_changed);
    } catch (...) {
      s_.worker.last_error = current_job_error();
      b.head.code = static_cast<double>(wire::status::failed);
      b.head.job = first + cursor;
    }
  }
  const bool ok = b.head.code == static_cast<double>(wire::status::ok);
  send_result(b.head, b.blocks.data(), ok ? static_cast<int>(b.blocks.size()) : 0, b.sends);
}

void worker_claims::send_result(const result_head& head, const double* blocks, int n, MPI_Request (&sends)[2]) {
  MPI_Isend(&head, sizeof(result_head) / sizeof(double), MPI_DOUBLE, 0, steal_tag::result, s_.comm, &sends[0]);
  if (n > 0) MPI_Isend(blocks, n, MPI_DOUBLE, 0, steal_tag::blocks, s_.comm, &sends[1]);
}

void worker_claims::take_from_root(int failed_job) {
  bool want = failed_job < 0 && code_ == wire::status::ok && f_ != nullptr;
  post_ask(want);
  for (grant_message got = await_grant(); is_later(got.range()) || !got.range().empty(); got = await_grant()) {
    if (is_later(got.range())) {  // it came while this rank ran the batch it held: it holds none now
      post_ask(want);
      continue;
    }
    receive_rows(got);
    // The next ask goes before this batch runs: the root finds the next batch meanwhile.
    post_ask(want, got.owner == 0 ? got.range().size() : 0);
    // Every batch granted is answered; one that fails ends this rank's asks for more.
    run_stolen(got.owner, got.range(), failed_job);
    const stolen_batch& b = stolen_.back();
    if (b.head.code == static_cast<double>(wire::status::failed) && (failed_job < 0 || b.head.job < failed_job))
      failed_job = static_cast<int>(b.head.job);
    if (b.head.code != static_cast<double>(wire::status::ok)) want = false;
  }
}

void worker_claims::send_own(int failed_job, double busy, const team_busy& threads) {
  const int end = jobs_.end();
  const int doubles = answer_doubles(site_.planned_doubles, site_.block_at.data(), site_.n_jobs, end);
  site_.out.resize(static_cast<std::size_t>(doubles));
  own_head_ = {static_cast<double>(s_.rank), 0.0, static_cast<double>(end), static_cast<double>(code_),
               static_cast<double>(failed_job), busy, threads.slowest_seconds, threads.fastest_seconds};
  send_result(own_head_, site_.out.data() + wire::status_doubles, doubles - wire::status_doubles, own_sends_);
}

void worker_claims::finish_sends() {
  MPI_Waitall(2, own_sends_, MPI_STATUSES_IGNORE);
  for (stolen_batch& b : stolen_) MPI_Waitall(2, b.sends, MPI_STATUSES_IGNORE);
}

}  // namespace

void serve_call_stealing(cluster_state& s, worker_site& site, const wire::request& v, const double* shared,
                         const double* job_params) {
  const auto start = std::chrono::steady_clock::now();
  s.chunks.reset_busy();
  worker_claims claims(s, site, v, shared, job_params);
  const int failed_job = claims.run_own();
  claims.send_own(failed_job, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                  s.chunks.busy());
  claims.take_from_root(failed_job);
  claims.finish_sends();
}

}  // namespace maprect::detail
