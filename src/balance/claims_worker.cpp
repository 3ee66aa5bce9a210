// Claims by message, the worker's side (claims_engine.hpp): its own jobs while serving the root's asks, then
// those it claims from the workers of its host in host memory (where they claim each other's), then the batches
// the root grants it, each one's blocks sent as it ends. What the jobs are is the work's.
#include <chrono>
#include <deque>

#include "src/balance/claims_engine.hpp"

namespace maprect::detail {

namespace {

/// A batch this worker ran for another rank, kept until the root has received it.
struct stolen_batch {
  result_head head;
  block_buffer blocks;
  MPI_Request sends[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
};

/// One worker's part of a call by claims by message.
class worker_claims {
 public:
  worker_claims(const claims_rank& self, worker_claimed_work& work, bool hold)
      : self_(self), work_(work), hold_(hold), host_(work.host_claims()) {
    jobs_.reset(work.own_jobs());
    if (host_ != nullptr) jobs_.attach(host_->word_of(self.rank));
  }

  /// Runs this rank's own jobs from the front, answering the root's asks between batches; sets code_.
  void run_own();
  /// Claims batches of its host's workers' jobs in host memory and runs them, each one's blocks sent to the root
  /// ahead of its own (so that the root has them all once its own are in), until no worker of the host has any
  /// left.
  void take_from_host();
  /// Asks the root for batches of other ranks' jobs and runs them, until it answers "none" (meanwhile it
  /// answers the root's asks, for none).
  void take_from_root();
  /// Sends the root the status and blocks of its own jobs, with the lowest failing job so far, without waiting.
  void send_own(double busy, const team_busy& threads);
  /// Completes the sends: the root has received everything once it has answered "none".
  void finish_sends();

 private:
  /// Answers the root's asks that have come; with `until_answered`, none once this rank's own ask is answered.
  void serve_asks(bool until_answered = false);
  void hold_for_claims();
  void post_ask(bool want, int held = 0, double held_seconds = 0);
  grant_message await_grant();
  void run_stolen(const grant_message& got);
  /// The global index of the lowest job this rank saw fail, or -1.
  int failed_job() const { return failure_.failed() ? failure_.job : -1; }
  void send_result(const result_head& head, const double* blocks, int n, MPI_Request (&sends)[2]);

  const claims_rank& self_;
  worker_claimed_work& work_;
  bool hold_;                ///< a test's pin: after the first batch of its own, wait for a claim
  job_claims* host_;         ///< its host's claim words where its workers claim from each other, else null
  bool answered_none_ = false;  ///< it told the root "none": the root asks it no more
  bool asked_ = false;       ///< its first ask is out, sent as its last batch of its own started
  unstarted_jobs jobs_;      ///< this rank's own jobs nobody has started
  idle_thieves thieves_;     ///< the ranks the root asks for
  double job_seconds_ = 0;   ///< seconds per job of its latest batch of its own (0: none timed yet)
  own_pace pace_;            ///< its time on its own jobs so far: its pace in grants and asks
  own_pace root_jobs_pace_;  ///< its time on the root's jobs it ran in this call: its pace in asks once timed
  wire::status code_ = wire::status::ok;  ///< its own jobs' outcome
  lowest_failure failure_;   ///< the lowest failing job of all it ran, its own and others'
  std::deque<stolen_batch> stolen_;  ///< a deque: their blocks stay where the sends read them
  result_head own_head_;
  MPI_Request own_sends_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  grant_message grant_;      ///< the answer to this rank's pending ask
  MPI_Request grant_request_ = MPI_REQUEST_NULL;
};

void worker_claims::run_own() {
  if (const int job = work_.unrunnable_job(); job >= 0) {
    code_ = wire::status::failed;
    jobs_.drop_rest();
    failure_.keep(code_, self_.rank, job);
    return;
  }
  struct worker_owner {
    worker_claims& w;
    int least_batch() const { return jobs_worth(w.self_.own_round_trip, w.job_seconds_); }
    void starting(job_range got) {
      // All its jobs are started: the ask goes now, saying what the batch holds, so that the answer (which a
      // slow owner gives only between its jobs) is found while the batch runs.
      if (w.jobs_.left() > 0 || w.hold_) return;
      w.post_ask(true, 0, got.size() * w.job_seconds_);
      w.asked_ = true;
    }
    wire::status run(job_range got, int& failed) { return w.work_.run_own(got, failed); }
    bool runs_aside() const { return w.work_.runs_aside(); }
    void serve_asks() { w.serve_asks(); }
    void ran(job_range got, double) {
      if (w.host_ != nullptr) w.host_->publish_pace(w.pace_.per_job());
      if (w.hold_ && got.begin == 0) w.hold_for_claims();
    }
  } owner{*this};
  int job = -1;
  code_ = run_own_batches(self_, jobs_, thieves_, job_seconds_, pace_, owner, job);
  failure_.keep(code_, self_.rank, job);
}

void worker_claims::take_from_host() {
  if (host_ == nullptr || code_ != wire::status::ok) return;
  // Its host's workers may have taken its last jobs before it started them: the root learns it has none
  // now, not after the claims below, so that it asks no more of it on behalf of other hosts' thieves.
  if (!asked_) {
    post_ask(true);
    asked_ = true;
  }
  // A rank of its host that has not set its range for this call yet will, first thing in the call: its word
  // may be the last call's. The root's answer to this rank's ask does not end the wait: a "none" that came
  // before a held rank of its host set its range would leave that rank's jobs to nobody.
  for (unsigned spins = 0; !host_->host_published();) {
    serve_asks();
    pause_in_claims(self_.policy, spins);
  }
  const auto first_of = [this](int r) { return work_.global_job(r, 0); };
  claim_until_none(*host_, self_.rank, self_.size, self_.threads, first_of, [&](int owner, job_range got, int) {
    stolen_batch& b = stolen_.emplace_back();
    int job = -1;
    // A long batch runs aside while this thread answers the root's asks, as its own batches do.
    const wire::status code = run_answering(
        self_, work_.runs_aside(), job_seconds_ * got.size(),
        [&] { return work_.run_host_batch(owner, got, b.blocks, job); }, [this] { serve_asks(); });
    b.head = {owner, got.begin, got.end, static_cast<int>(code) + result_head::claimed_in_host, job};
    const bool ok = code == wire::status::ok;
    send_result(b.head, b.blocks.data(), ok ? static_cast<int>(b.blocks.size()) : 0, b.sends);
    serve_asks();
    failure_.keep(code, self_.rank, job);
    return ok;
  });
}

void worker_claims::hold_for_claims() {
  // Once it answered "none" the root asks it no more.
  hold_until_claimed(self_.policy, jobs_, work_.own_jobs(), [this] { serve_asks(); },
                     [this] { return answered_none_; });
}

void worker_claims::serve_asks(bool until_answered) {
  // Only the root asks a worker for its jobs, on behalf of a rank out of them.
  // A held rank (a test's pin) grants whatever is worth it to nobody else, so that some claim ends its hold
  // however long the root's round trip was at start-up.
  const auto grant = [this](int root, const ask_message& ask) {
    // A held rank beside another worker that claims in its host's memory grants the root none: its jobs that
    // others run are those that worker claims, which pins a schedule of claims in host memory. Beside the root
    // alone, which claims only by message, it grants as any held rank does.
    if (hold_ && host_ != nullptr && host_->worker_beside(self_.rank) && ask.wants())
      return send_grant(self_.comm, root, self_.rank, {});
    thieves_.note(ask, ask.held_time(job_seconds_, pace_.per_job()));
    const int least = hold_ ? 1 : ask.least(job_seconds_);
    const job_range g = grant_for(jobs_, ask, job_seconds_, pace_.per_job(), least, self_.size);
    answered_none_ = answered_none_ || (!is_later(g) && g.empty());
    send_grant(self_.comm, root, self_.rank, g, jobs_.left());
  };
  if (!until_answered) return answer_asks(self_.comm, grant);
  // The root's "none" is the last it sends this rank in a call: an ask found once it is in may be the next
  // call's (the probe's progress can bring both), and stays for that call to answer.
  answer_asks(self_.comm, grant, [this] {
    int done = 0;
    MPI_Test(&grant_request_, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
}

void worker_claims::post_ask(bool want, int held, double held_seconds) {
  // Its asks go to the root, which grants its own jobs: once this rank ran some, its time on them.
  const bool on_root = root_jobs_pace_.jobs > 0;
  const double seconds = on_root ? root_jobs_pace_.per_job() : pace_.per_job();
  const ask_message ask = ask_message::of(want, held, held_seconds, 0.0, seconds, 0, on_root);
  detail::post_ask(self_.comm, 0, ask, grant_, grant_request_);
}

grant_message worker_claims::await_grant() {
  unsigned spins = 0;
  for (int done = 0; MPI_Test(&grant_request_, &done, MPI_STATUS_IGNORE), !done;) {
    serve_asks(true);  // the root may be waiting for this rank's answer as it waits for the root's
    pause_in_claims(self_.policy, spins);
  }
  return grant_;
}

void worker_claims::run_stolen(const grant_message& got) {
  stolen_batch& b = stolen_.emplace_back();
  b.head = {got.owner, got.begin, got.end, static_cast<int>(wire::status::ok)};
  // A batch wholly behind this rank's own failing job cannot change which job fails first.
  if (failure_.failed() && work_.global_job(got.owner, got.begin) >= failure_.job) {
    b.head.code = result_head::not_run;
  } else {
    int job = -1;
    const auto start = std::chrono::steady_clock::now();
    b.head.code = static_cast<int>(work_.run_batch(got, b.blocks, job));
    b.head.job = job;
    if (got.owner == 0) root_jobs_pace_.add(seconds_since(start), got.range().size());
  }
  const bool ok = b.head.code == static_cast<int>(wire::status::ok);
  send_result(b.head, b.blocks.data(), ok ? static_cast<int>(b.blocks.size()) : 0, b.sends);
}

void worker_claims::send_result(const result_head& head, const double* blocks, int n, MPI_Request (&sends)[2]) {
  const int bytes = head.bytes(self_.rank, work_.reports_times());
  MPI_Isend(&head, bytes, MPI_BYTE, 0, claims_tag::result, self_.comm, &sends[0]);
  if (n > 0) MPI_Isend(blocks, n, MPI_DOUBLE, 0, claims_tag::blocks, self_.comm, &sends[1]);
}

void worker_claims::take_from_root() {
  bool want = !failure_.failed() && code_ == wire::status::ok;
  if (!asked_) post_ask(want);
  for (grant_message got = await_grant(); is_later(got.range()) || !got.range().empty(); got = await_grant()) {
    if (is_later(got.range())) {  // it came while this rank ran the batch it held: it holds none now
      post_ask(want);
      continue;
    }
    work_.receive_batch(got);
    // The next ask goes before this batch runs: the root finds the next batch meanwhile.
    post_ask(want, got.owner == 0 ? got.range().size() : 0);
    // Every batch granted is answered; one that fails ends this rank's asks for more.
    run_stolen(got);
    const stolen_batch& b = stolen_.back();
    const auto code = static_cast<wire::status>(b.head.code);
    if (code != wire::status::ok) want = false;
    failure_.keep(code, self_.rank, b.head.job);
  }
}

void worker_claims::send_own(double busy, const team_busy& threads) {
  const int end = jobs_.end();
  int n = 0;
  const double* blocks = work_.own_blocks(end, n);
  own_head_ = {self_.rank,
               0,
               end,
               static_cast<int>(code_),
               failed_job(),
               static_cast<float>(busy),
               static_cast<float>(threads.slowest_seconds),
               static_cast<float>(threads.fastest_seconds)};
  send_result(own_head_, blocks, n, own_sends_);
}

void worker_claims::finish_sends() {
  MPI_Waitall(2, own_sends_, MPI_STATUSES_IGNORE);
  for (stolen_batch& b : stolen_) MPI_Waitall(2, b.sends, MPI_STATUSES_IGNORE);
}

}  // namespace

void serve_claims(const claims_rank& self, worker_claimed_work& work, bool hold) {
  const auto start = std::chrono::steady_clock::now();
  self.chunks->reset_busy();
  worker_claims claims(self, work, hold);
  claims.run_own();
  const double busy = seconds_since(start);
  const team_busy threads = self.chunks->busy();
  claims.take_from_host();
  claims.send_own(busy, threads);
  claims.take_from_root();
  claims.finish_sends();
}

}  // namespace maprect::detail
