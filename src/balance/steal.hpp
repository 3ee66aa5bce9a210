#pragma once
// Dynamic balancing across hosts (MAPRECT_BALANCE=hosts): any rank that has run out of jobs in a steady call
// takes batches of the jobs a slower worker has not started, wherever that worker runs.
//
// The claims travel as messages, not as one-sided atomics. Open MPI 4.1 here serves MPI_Fetch_and_op and
// MPI_Compare_and_swap across hosts only through its osc/pt2pt component, which Debian's configuration turns
// off (MPI_Win_allocate fails over TCP) and which, turned on, answers an atomic (about 30 us) only while the
// target calls MPI (test/balance_hosts/claim_probe.cpp; docs/balancing.md). A claim needs the owner's help
// either way, so the owner serves it: between batches of its own jobs it answers each thief's ask with a batch
// from the back of its unstarted jobs, and then runs on from the front.
//
// The root's own jobs are claimable too: it runs them in batches from the front, answering asks between
// them, and the output nodes of those a worker ran are made behind its own, in job order.
//
// Every thief asks every other rank until that rank answers "none": an owner then knows when no ask can come
// any more (it has said "none" to every other rank), and a thief that wants nothing (its own jobs failed)
// still asks, for nothing. A worker thief receives the rows and parameters of the jobs it is granted; the
// root has the caller's. A worker sends the root, after the call's status gather, the blocks of its own jobs
// and of each batch it ran for another rank, with that batch's range; the root places every block where
// the owner's would have gone. Every job runs the same code wherever it runs: the bits do not depend on who
// ran what.
#include <deque>
#include <maprect/detail/call.hpp>
#include <maprect/detail/job_error.hpp>

#include "src/protocol/chunk_plan.hpp"
#include "src/cluster/cluster_state.hpp"
#include "src/protocol/tags.hpp"

namespace maprect::detail {

/// A rank's jobs of a call that nobody has started: the rank runs them from the front, thieves are granted
/// batches from the back. Only the rank that owns them moves either end (it serves the thieves' asks).
class unstarted_jobs {
 public:
  /// All of `n` jobs are unstarted.
  void reset(int n) {
    front_ = 0;
    back_ = n;
  }
  /// The next batch the worker runs: a sixteenth of what is left, so that it answers asks often.
  job_range take_front();
  /// A batch for a thief that still holds work worth `held` of this worker's jobs (the batch it runs while
  /// this ask travels), from the back: half of what is left beyond them, so that both end about together; at
  /// least one job to a thief that holds none. Returns later_grant() when the thief holds enough for now.
  job_range grant_back(int held);
  /// The worker runs no more of its jobs (one failed or changed its output count): none are left to grant.
  void drop_rest() { front_ = back_; }
  /// Where the worker's own jobs end once none are left (the rest went to thieves).
  int end() const { return front_; }
  /// How many are unstarted.
  int left() const { return back_ - front_; }

 private:
  int front_ = 0;
  int back_ = 0;
};

/// The answer "none for now, ask again once your batch is done" to a thief that holds enough (as opposed to
/// an empty range: "none left").
inline job_range later_grant() { return {-1, -1}; }
/// Whether a grant is later_grant().
inline bool is_later(job_range g) { return g.begin < 0; }

/// What a thief tells the owner it asks: whether it wants a batch, and what it still has to run before it
/// could start one: `held_jobs` jobs of this owner's (granted earlier) and `held_seconds` of other work (the
/// root's own jobs, by their mean time so far). Jobs differ in cost between owners and within a chunk, so
/// the owner turns seconds into jobs at its own latest time per job.
struct ask_message {
  double want = 0;          ///< 1: a batch, 0: none
  double held_jobs = 0;     ///< the owner's jobs the thief still holds
  double held_seconds = 0;  ///< other work the thief still holds

  /// All the thief holds, in the owner's jobs at `seconds_per_job` (0: none timed yet, the seconds count for
  /// nothing).
  int held(double seconds_per_job) const {
    return static_cast<int>(held_jobs + (seconds_per_job > 0 ? held_seconds / seconds_per_job : 0.0));
  }
};

/// Sends `ask` to `owner` and posts the receive of its grant into `range` (`reply` completes with it), under
/// the tags of map_rect's claims unless others are given (reduce_sum's claims have their own).
void post_ask(MPI_Comm comm, int owner, const ask_message& ask, int (&range)[2], MPI_Request& reply,
              int ask_tag = steal_tag::ask, int grant_tag = steal_tag::grant);

/// Receives every ask under `ask_tag` that has come, and hands each to `grant(thief, ask)`.
template <class Grant>
void answer_asks(MPI_Comm comm, int ask_tag, Grant&& grant) {
  int pending = 0;
  MPI_Status st;
  while (MPI_Iprobe(MPI_ANY_SOURCE, ask_tag, comm, &pending, &st), pending) {
    ask_message ask;
    MPI_Recv(&ask, 3, MPI_DOUBLE, st.MPI_SOURCE, ask_tag, comm, MPI_STATUS_IGNORE);
    grant(st.MPI_SOURCE, ask);
  }
}

/// Where an owner holds what a worker thief needs to run a batch of its jobs (its job 0 first): the root's
/// are the caller's parameters and rows, a worker's those it received.
struct owned_rows {
  const double* job_params = nullptr;        ///< P values per job
  int n_job_params = 0;                      ///< P
  const int* counts = nullptr;               ///< planned output counts
  const std::vector<double>* x_r = nullptr;  ///< one row per job
  const std::vector<int>* x_i = nullptr;     ///< one row per job
  rows_sent* sent = nullptr;                 ///< the root's: which worker holds which rows of its job_data
};

/// The rows of a batch granted to a worker thief, sent without waiting: the thief receives them once it has
/// run the batch it holds.
struct granted_rows {
  std::vector<double> reals;  ///< the batch's job parameters, then its x_r rows
  std::vector<int> ints;      ///< its planned output counts, whether each job's rows follow, its x_i rows
  MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
};

/// The owner's side of the claims on one rank, the root's or a worker's: the jobs of its chunk nobody has
/// started, and its answers to the thieves' asks, granted from their back (a worker thief also receives
/// the granted jobs' parameters, rows and planned output counts).
class job_owner {
 public:
  job_owner(MPI_Comm comm, int size, owned_rows rows) : comm_(comm), size_(size), rows_(rows) {}
  /// A call's `n` jobs, all unstarted; with `claimable` false every ask is answered "none" (the jobs stay).
  void reset(int n, bool claimable = true);
  /// The jobs nobody has started; the owner runs them from the front.
  unstarted_jobs& jobs() { return jobs_; }
  /// Its latest batch of its own, of `n` jobs, took `seconds`: a thief's held seconds count at that rate.
  void timed_batch(double seconds, int n) { job_seconds_ = seconds / n; }
  /// Answers every ask that has come.
  void serve_asks();
  /// Whether every other rank has heard "none": no ask can come any more.
  bool all_told() const { return told_none_ >= size_ - 1; }
  /// The other ranks that have not heard "none" yet (each will ask until it does).
  std::vector<int> not_told(int self) const;
  /// Completes the sends of granted rows: once every thief has heard "none", it has received them all.
  void finish_sends();

 private:
  void grant(int thief, const ask_message& ask);

  MPI_Comm comm_;
  int size_;
  owned_rows rows_;
  unstarted_jobs jobs_;
  bool claimable_ = true;
  double job_seconds_ = 0;   ///< seconds per job of its latest batch of its own (0: none timed yet)
  int told_none_ = 0;        ///< ranks told that this rank has no jobs left
  std::vector<char> told_;   ///< per rank, whether it was told
  std::deque<granted_rows> sent_;  ///< rows on their way to thieves (a deque: their addresses stay)
};

/// What a worker tells the root about a batch it ran for another worker.
struct batch_head {
  int owner = 0;   ///< whose chunk
  int begin = 0;   ///< the owner's local jobs [begin, end)
  int end = 0;
  int code = 0;    ///< a wire::status
  int job = -1;    ///< global index of the failing job
};

/// Where the root's running of workers' jobs stopped early: a job that threw, or changed its output count.
struct taken_failure {
  wire::status code = wire::status::ok;
  int rank = 0;  ///< whose chunk
  int job = -1;  ///< global index of the failing job
  job_error error;
};

/// The first failure, by job index, among the batches the workers ran for other workers in a call.
struct stolen_failure {
  wire::status code = wire::status::ok;
  int thief = 0;  ///< the rank that ran the batch (it holds the error)
  int job = -1;   ///< global index of the failing job (failed only)
};

/// Waits a little in a claim loop, as the policy says (`spins` counts the waits so far).
void pause_in_claims(wait_policy policy, unsigned& spins);

/// Runs worker r's local jobs `got` on the root from the caller's data, into their place in `region` (the
/// blocks of r's chunk). On a failure records it in `failure`.
void run_batch_on_root(cluster_state& s, const root_site& site, const call_request& req, double* region, int r,
                       job_range got, taken_failure& failure);

/// With MAPRECT_TIMEOUT: the later of the call's deadline and the timeout from `since` (a rank answers an ask
/// only between its jobs, and the root's own jobs may have held the workers' asks up); else never.
std::chrono::steady_clock::time_point claims_deadline(const cluster_state& s,
                                                      std::chrono::steady_clock::time_point since);

/// Root: its ask to one worker, whose answer is awaited.
class root_ask {
 public:
  /// Asks worker r for a batch (`want`; the root still holds `held_jobs` of r's jobs and `held_seconds` of
  /// its own), or tells it that the root wants none.
  void post(cluster_state& s, int r, bool want, int held_jobs = 0, double held_seconds = 0);
  /// Waits for the answer, answering meanwhile the asks that reach the root (`own`: the worker may be
  /// waiting for the root's answer as the root waits for its). With MAPRECT_TIMEOUT, gives up (false) once
  /// both the call's deadline and the timeout since the ask have passed.
  bool wait(cluster_state& s, job_owner& own);
  /// Whether an ask is on its way and not yet waited for.
  bool posted() const { return posted_; }
  /// The batch granted (empty: the worker has none left).
  job_range granted() const { return {range_[0], range_[1]}; }

 private:
  int range_[2] = {0, 0};
  MPI_Request reply_ = MPI_REQUEST_NULL;
  bool posted_ = false;
  std::chrono::steady_clock::time_point sent_;
};

/// Root: between batches of its own jobs, asks worker 1 for a batch once the last few are left, so that the
/// answer (given between the worker's batches) is there when they are done.
class early_ask {
 public:
  explicit early_ask(cluster_state& s) : s_(s), start_(std::chrono::steady_clock::now()) {}
  /// The root has run `done` of its own jobs and `left` are unstarted.
  void after_batch(int done, int left);
  root_ask first;  ///< the ask to worker 1, once posted

 private:
  cluster_state& s_;
  std::chrono::steady_clock::time_point start_;  ///< when the root's own jobs began
};

/// Root, once its own jobs are done: asks each worker in turn for batches of its unstarted jobs until it has
/// none left, running each batch into `buffer`; with `want` false it asks for none (it still asks each
/// worker once, as the protocol needs). Stops taking at the first failure. Meanwhile, and then until every
/// worker has heard "none" from it, answers the workers' asks for the root's own jobs (`own`). Returns the
/// jobs it ran, or -1 when MAPRECT_TIMEOUT passed while a worker had not answered or not asked (`late`
/// names them). `early`, if not null, may hold the ask to worker 1 already posted.
int steal_as_root(cluster_state& s, const root_site& site, const call_request& req, double* buffer, bool want,
                  taken_failure& failure, std::vector<int>& late, job_owner& own, early_ask* early = nullptr);

/// Root, after the status gather of a call under MAPRECT_BALANCE=hosts: receives each worker's blocks (of its
/// own jobs, then of each batch it ran for another worker) into `buffer`, sets s.call.worker_ends, and
/// returns the first failure among the batches. Returns the doubles received.
long long receive_worker_blocks(cluster_state& s, const root_site& site, double* buffer, stolen_failure& failure);

/// Worker: steps 4 and 5 of a steady call under MAPRECT_BALANCE=hosts, once its job parameters are in
/// `job_params`: runs its jobs, serving the thieves' asks, then takes batches from the other workers, then
/// answers (status by gather, blocks by message).
void serve_call_stealing(cluster_state& s, worker_site& site, const wire::request& v, const double* shared,
                         const double* job_params);

/// Who ran which jobs in a steady call by claims (MAPRECT_BALANCE=hosts, or between all ranks of one host),
/// per rank (index 0: the root).
struct balance_report {
  std::vector<int> ends;   ///< where its own jobs ended: others ran the rest of its chunk
  std::vector<int> taken;  ///< jobs of other ranks' chunks it ran
};

/// Root: who ran which jobs in the last steady call, if it went by claims (empty vectors otherwise).
balance_report last_call_balance();

}  // namespace maprect::detail
