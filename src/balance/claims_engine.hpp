#pragma once
// The claims engine by message (MAPRECT_BALANCE=auto wherever the ranks cannot claim in host memory, and hosts): any
// rank that has run out of jobs (map_rect's) or slices (reduce_sum's) takes batches of those a slower rank has not
// started, wherever that rank runs. What both sides share; the rules that need no message are grant_rule.hpp, the
// root's side is claims_broker.hpp, the worker's claims_worker.cpp. The engine reaches a call's jobs only through
// root_claimed_work and worker_claimed_work below, so that what a job is stays the command's
// (src/map_rect/claimed_jobs.*, src/reduce_sum/claimed_slices.*).
//
// The claims travel as messages, not as one-sided atomics. Open MPI 4.1 here serves MPI_Fetch_and_op and
// MPI_Compare_and_swap across hosts only through its osc/pt2pt component, which Debian's configuration turns off
// (MPI_Win_allocate fails over TCP) and which, turned on, answers an atomic (about 30 us) only while the target
// calls MPI (test/balance_hosts/claim_probe.cpp; docs/balancing.md). A claim needs the owner's help either way, so
// the owner serves it: between batches of its own jobs it answers each ask with a batch from the back of its
// unstarted jobs, and then runs on from the front. Every ask goes to the root, which holds every job's data and
// brokers the grants, so a call's claims end with one ask and one answer per worker. Every job runs the same code
// wherever it runs: the bits do not depend on who ran what.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <maprect/detail/call.hpp>
#include <maprect/detail/claims_pay.hpp>
#include <maprect/detail/job_error.hpp>
#include <utility>
#include <vector>

#include "src/balance/claims_rank.hpp"
#include "src/balance/grant_rule.hpp"
#include "src/balance/job_claims.hpp"
#include "src/cluster/clock.hpp"
#include "src/protocol/chunk_plan.hpp"
#include "src/protocol/tags.hpp"

namespace maprect::detail {

/// Runs `batch()` (it returns a wire::status and throws nothing): where `aside` allows it and the batch should
/// last `expected_seconds` >= claims_aside_seconds, on the rank's batch_aside thread (which runs it on the
/// team, if any, in this thread's place) while this one calls `answer()` every claims_aside_period; else on
/// this thread.
template <class Batch, class Answer>
wire::status run_answering(const claims_rank& self, bool aside, double expected_seconds, Batch&& batch,
                           Answer&& answer) {
  if (!aside || expected_seconds < claims_aside_seconds) return batch();
  wire::status code = wire::status::ok;
  self.aside->run([&] { code = batch(); }, answer, claims_aside_period(expected_seconds));
  return code;
}

/// Waits a little in a claim loop, as the policy says (`spins` counts the waits so far).
void pause_in_claims(wait_policy policy, unsigned& spins);

/// While `thieves` would outrun the owner on `jobs` at `own_seconds` per job, answers asks (`serve`) instead
/// of starting the next: at most one job's time, after which starting it ends no later than waiting did.
template <class Serve>
void leave_to_thieves(wait_policy policy, const unstarted_jobs& jobs, const idle_thieves& thieves, double own_seconds,
                      Serve&& serve) {
  const auto until = std::chrono::steady_clock::now() + steady_seconds(own_seconds);
  unsigned spins = 0;
  while (jobs.left() > 0 && thieves.outrun(jobs.left(), own_seconds) && std::chrono::steady_clock::now() < until) {
    serve();
    pause_in_claims(policy, spins);
  }
}

/// An owner's batches of its own range, as the root and a worker both run them: from the front, from
/// `owner.least_batch()` jobs (a round trip's worth) to answer_batch's cap (both one while `job_seconds`, the
/// latest batch's time per job, is 0), each timed (into `pace` too) and run aside when long (run_answering), the
/// asks answered after each, and the last jobs left to thieves that would outrun the owner (leave_to_thieves).
/// `owner` also says when a batch starts (`starting(got)`), runs it (`run(got, failed_job)`, `runs_aside()`),
/// answers asks (`serve_asks()`), and hears of a batch that ran to its end (`ran(got, seconds)`). Stops at a batch
/// whose status is not ok and drops the jobs after it: after a failure none can fail first, and after changed
/// output counts their blocks would not fit. Returns that status, or ok.
template <class Owner>
wire::status run_own_batches(const claims_rank& self, unstarted_jobs& jobs, const idle_thieves& thieves,
                             double& job_seconds, own_pace& pace, Owner& owner, int& failed_job) {
  const int threads = self.threads;
  const auto serve = [&owner] { owner.serve_asks(); };
  const auto next = [&] {
    return jobs.take_front(threads, owner.least_batch(), answer_batch(job_seconds, threads, self.answers->seconds()));
  };
  for (job_range got = next(); !got.empty(); got = next()) {
    const auto start = std::chrono::steady_clock::now();
    owner.starting(got);
    const wire::status code = run_answering(self, owner.runs_aside(), job_seconds * got.size(),
                                            [&] { return owner.run(got, failed_job); }, serve);
    if (code != wire::status::ok) {
      jobs.drop_rest();
      return code;
    }
    const double seconds = seconds_since(start);
    job_seconds = seconds / got.size();  // a thief's held jobs count at this rate
    pace.add(seconds, got.size());
    const auto answering = std::chrono::steady_clock::now();
    serve();
    self.answers->add(seconds_since(answering));
    owner.ran(got, seconds);
    leave_to_thieves(self.policy, jobs, thieves, job_seconds, serve);
  }
  return wire::status::ok;
}

/// A grant of the claims by message: rank `owner`'s local jobs [begin, end) (empty: none left).
struct grant_message {
  int owner = 0;
  int begin = 0;
  int end = 0;
  int left = 0;  ///< an owner's answer to the root: its unstarted jobs after it (else 0)
  job_range range() const { return {begin, end}; }
};

/// Sends `ask` to `owner` and posts the receive of its grant into `grant` (`reply` completes with it).
void post_ask(MPI_Comm comm, int owner, const ask_message& ask, grant_message& grant, MPI_Request& reply);

/// Whether a message under `tag` from any rank has come (its envelope in `st`). Open MPI's MPI_Iprobe makes
/// progress only when it finds nothing, and then does not look again: a message that arrived while this rank
/// computed is seen by the second probe, not the first, and an owner that probed once between batches
/// answered its thieves a batch late.
bool probe_after_progress(MPI_Comm comm, int tag, MPI_Status& st);

/// Receives every ask that has come, and hands each to `grant(thief, ask)`; with `stop()` true once an ask is
/// found, leaves it where it is.
template <class Grant, class Stop>
void answer_asks(MPI_Comm comm, Grant&& grant, Stop&& stop) {
  MPI_Status st;
  while (probe_after_progress(comm, claims_tag::ask, st) && !stop()) {
    ask_message ask;
    MPI_Recv(&ask, sizeof ask, MPI_BYTE, st.MPI_SOURCE, claims_tag::ask, comm, MPI_STATUS_IGNORE);
    grant(st.MPI_SOURCE, ask);
  }
}

/// Receives every ask that has come, and hands each to `grant(thief, ask)`.
template <class Grant>
void answer_asks(MPI_Comm comm, Grant&& grant) {
  answer_asks(comm, std::forward<Grant>(grant), [] { return false; });
}

/// Sends `thief` the grant of `owner`'s local jobs `g`; an owner answering the root says how many it has `left`.
void send_grant(MPI_Comm comm, int thief, int owner, job_range g, int left = 0);

/// Root: what worker thieves need beside their grants to run the batches (the data only the root holds), sent
/// without waiting. A thief receives a payload once it has run the batch it holds, so the root must not block.
class grant_payloads {
 public:
  explicit grant_payloads(MPI_Comm comm) : comm_(comm) {}
  /// Sends `n` values from `values` to `thief` under `tag`; they must stay in place until complete().
  void post(int thief, int tag, const double* values, int n);
  /// Sends `n` ints from `values` to `thief` under `tag`; they must stay in place until complete().
  void post(int thief, int tag, const int* values, int n);
  /// Waits for every payload posted: a thief that has heard "none" has received them all.
  void complete();

 private:
  MPI_Comm comm_;
  std::vector<MPI_Request> sent_;
};

/// Thief: receives the `n` values of a granted batch's payload sent under `tag` into `values`.
void receive_grant_payload(MPI_Comm comm, int tag, double* values, int n);
/// Thief: receives the `n` ints of a granted batch's payload sent under `tag` into `values`.
void receive_grant_payload(MPI_Comm comm, int tag, int* values, int n);

/// What a worker sends the root ahead of the blocks of its own jobs, or of a batch it ran for another rank.
/// It goes in an ask_message's integers and floats: 32 bytes, or the 20 before `busy` for a batch run for
/// another rank, and for work whose root reads no times (worker_claimed_work::reports_times).
struct result_head {
  std::int32_t owner = 0;  ///< whose chunk: the worker's own, or the batch's owner
  std::int32_t begin = 0;  ///< the owner's local jobs [begin, end) whose blocks follow
  std::int32_t end = 0;
  std::int32_t code = 0;   ///< a wire::status, or not_run
  std::int32_t job = -1;   ///< global index of the failing job
  float busy = 0;          ///< own jobs: seconds on them, and the team's slowest and fastest thread's
  float slowest = 0;
  float fastest = 0;
  /// A batch granted after the thief's own failure, entirely behind it: not run, no blocks follow.
  static constexpr int not_run = -1;
  /// Added to `code`: a batch the thief claimed in host memory from a worker of its host, which the root did
  /// not grant.
  static constexpr int claimed_in_host = 0x100;

  /// The bytes it goes as: a worker's own jobs' head with its times where the work reports them (`timed`), a
  /// batch's without them. The root receives either into a whole head, whose times stay 0.
  int bytes(int sender, bool timed = true) const {
    return static_cast<int>(owner == sender && timed ? sizeof(result_head) : offsetof(result_head, busy));
  }

  /// Its status as a gather of statuses holds a worker's (wire::status_doubles into `status`).
  void write_status(double* status) const {
    const double values[wire::status_doubles] = {static_cast<double>(code), static_cast<double>(job), busy, slowest,
                                                 fastest};
    std::copy_n(values, wire::status_doubles, status);
  }
};
static_assert(sizeof(result_head) == 32 && offsetof(result_head, busy) == 20, "a result head is 32 or 20 bytes");

/// A call's outcome as its jobs' outcomes come in, by the one rule that keeps its error deterministic however
/// its jobs were spread: the failing job of lowest index decides, wherever it ran, and a failure decides before
/// a changed output count.
struct lowest_failure {
  wire::status code = wire::status::ok;
  int rank = 0;     ///< the rank that ran the deciding job (it holds the error)
  int job = -1;     ///< the failing job's global index (failed only)
  job_error error;  ///< its exception, where this rank ran it and keeps it here

  /// Takes rank r's outcome `c` of job j (any other code than failed or counts_changed is none): kept where it
  /// decides before what is kept. Returns whether it was.
  bool keep(wire::status c, int r, int j) {
    const bool lower = c == wire::status::failed && (code != wire::status::failed || j < job);
    if (!lower && (c != wire::status::counts_changed || code != wire::status::ok)) return false;
    code = c;
    rank = r;
    job = j;
    return true;
  }
  /// keep(), with its error `e` moved into `kept` where it decides: a worker keeps it for fetch_error.
  void keep(wire::status c, int r, int j, job_error&& e, job_error& kept) {
    if (keep(c, r, j)) kept = std::move(e);
  }
  /// keep(), with its error `e` here where it decides.
  void keep(wire::status c, int r, int j, job_error&& e) { keep(c, r, j, std::move(e), error); }
  /// keep(), with the other's error where it decides.
  void keep(lowest_failure&& other) { keep(other.code, other.rank, other.job, std::move(other.error)); }
  bool failed() const { return code == wire::status::failed; }
};

/// A test's pin (MAPRECT_TEST_HOLD_RANK), on the held owner once the first batch of its own has run: while
/// nobody has taken any of its `jobs` from their back (it still ends at `chunk_end`; the ranks of its host may
/// have claimed some before the hold) and `released()` is false, answers asks (`serve`); at most 20 s, so that
/// a test that sees no claims fails rather than hangs.
template <class Serve, class Released>
void hold_until_claimed(wait_policy policy, const unstarted_jobs& jobs, int chunk_end, Serve&& serve,
                        Released&& released) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  unsigned spins = 0;
  while (jobs.left() > 0 && jobs.back() == chunk_end && !released() && std::chrono::steady_clock::now() < until) {
    serve();
    pause_in_claims(policy, spins);
  }
}

/// With MAPRECT_TIMEOUT: the later of the call's deadline and the timeout from `since` (a rank answers an ask
/// only between its jobs, and the root's own jobs may have held the workers' asks up); else never.
std::chrono::steady_clock::time_point claims_deadline(const claims_rank& self,
                                                      std::chrono::steady_clock::time_point since);

/// Root: the jobs of one call whose claims claims_broker brokers, as one kind of command sees them: how
/// many each worker's range holds, and how a batch's data go to a thief, run on the root, and come back.
class root_claimed_work {
 public:
  virtual ~root_claimed_work() = default;
  /// The jobs of worker r's range when the call starts.
  virtual int jobs_of(int r) const = 0;
  /// Sends worker `thief`, without waiting, what it needs to run `owner`'s local jobs `g` (owner 0: the root).
  virtual void send_batch(int thief, int owner, job_range g) = 0;
  /// Completes send_batch's sends: once every thief has heard "none", it has received all of them.
  virtual void finish_sends() = 0;
  /// The global index of `owner`'s local job `local`.
  virtual int global_job(int owner, int local) const = 0;
  /// Runs worker `owner`'s local jobs `g` on the root: ok, or failed (the failing global job in `failed_job`),
  /// or counts_changed; the work keeps the lowest failure.
  virtual wire::status run_on_root(int owner, job_range g, int& failed_job) = 0;
  /// Takes `head`, a result from worker `from`: of its own jobs (owner == from) or of a batch it ran. Returns
  /// where the `n` doubles of blocks that follow it go (n = 0: none follow).
  virtual double* place_result(int from, const result_head& head, int& n) = 0;
  /// Whether run_on_root may run on another thread than MPI's (run_answering) while results are placed.
  virtual bool runs_aside() const { return false; }
};

/// Worker: its jobs of one call under claims by message, as one kind of command sees them: its own range,
/// and the batches the root grants it from other ranks' ranges.
class worker_claimed_work {
 public:
  virtual ~worker_claimed_work() = default;
  /// The jobs of this rank's own range.
  virtual int own_jobs() const = 0;
  /// -1 when this rank can run the call's jobs; else the global job whose failure names why not (its error
  /// kept for fetch_error).
  virtual int unrunnable_job() = 0;
  /// Runs its own local jobs `g`: ok, or failed (the failing global job in `failed_job`, its error kept), or
  /// counts_changed.
  virtual wire::status run_own(job_range g, int& failed_job) = 0;
  /// The global index of `owner`'s local job `local`.
  virtual int global_job(int owner, int local) const = 0;
  /// Receives the data of the batch `got` the root granted this rank.
  virtual void receive_batch(const grant_message& got) = 0;
  /// Runs the batch received last into `blocks`, as run_own reports.
  virtual wire::status run_batch(const grant_message& got, block_buffer& blocks, int& failed_job) = 0;
  /// The blocks of its own local jobs [0, end): where they start, and their `n` doubles.
  virtual const double* own_blocks(int end, int& n) = 0;
  /// Whether run_own may run on another thread than MPI's (run_answering): only where the jobs keep no state
  /// on the thread that runs them.
  virtual bool runs_aside() const { return false; }
  /// Whether the root reads the times in the head of its own jobs' result (the steady call's profile).
  virtual bool reports_times() const { return true; }
  /// The claim words of this rank's host where its workers claim each other's jobs in this call, its own range
  /// set in its word; else null.
  virtual job_claims* host_claims() { return nullptr; }
  /// Runs `owner`'s local jobs `got`, a batch claimed in host memory, into `blocks`, as run_own reports.
  virtual wire::status run_host_batch(int /*owner*/, job_range /*got*/, block_buffer& /*blocks*/, int& /*failed*/) {
    return wire::status::ok;
  }
};

/// Worker: steps 4 and 5 of a call by claims by message: runs its own jobs, answering the root's asks, sends
/// their blocks, then runs the batches the root grants it, sending each one's blocks, until the root answers
/// "none". With `hold` (a test's pin, MAPRECT_TEST_HOLD_RANK), once the first batch of its own has run, it
/// runs no more until the root took some, answered "none", or 20 s passed.
void serve_claims(const claims_rank& self, worker_claimed_work& work, bool hold = false);

/// Whether a site's next call goes by claims by message under auto, its last call having lasted `call_s`
/// seconds: when that is long enough for them to pay (claims_pay); always under a test's pin
/// (MAPRECT_TEST_HOLD_RANK), whose claims must happen. The same rule for map_rect, eager or deferred, and
/// reduce_sum.
inline bool claims_by_message_pay(const claims_rank& self, double call_s) {
  return self.automatic && self.size > 1 &&
         (self.held_rank >= 0 || claims_pay(call_s, self.farthest_round_trip()));
}

/// Who ran which jobs in a steady or deferred call by claims (by message, or between all ranks of one host),
/// per rank (index 0: the root).
struct balance_report {
  std::vector<int> ends;   ///< where its own jobs ended: others ran the rest of its chunk
  std::vector<int> taken;  ///< jobs of other ranks' chunks it ran
  std::vector<int> runners;  ///< a deferred call: per job, the rank that ran it and keeps its tape (else empty)
  /// By message: of `taken`, the jobs it claimed in host memory from the workers of its host (else empty).
  std::vector<int> taken_in_host;
};

/// Root: who ran which jobs in the last steady call, if it went by claims (empty vectors otherwise).
balance_report last_call_balance();

}  // namespace maprect::detail
