#pragma once
// Claims by message (MAPRECT_BALANCE=auto wherever the ranks cannot claim in host memory, and hosts): any
// rank that has run out of jobs in a steady call takes batches of the jobs a slower rank has not started,
// wherever that rank runs. What both sides share; the root's side is claims_broker.hpp, the worker's
// steal_worker.cpp.
//
// The claims travel as messages, not as one-sided atomics. Open MPI 4.1 here serves MPI_Fetch_and_op and
// MPI_Compare_and_swap across hosts only through its osc/pt2pt component, which Debian's configuration turns
// off (MPI_Win_allocate fails over TCP) and which, turned on, answers an atomic (about 30 us) only while the
// target calls MPI (test/balance_hosts/claim_probe.cpp; docs/balancing.md). A claim needs the owner's help
// either way, so the owner serves it: between batches of its own jobs it answers each ask with a batch from
// the back of its unstarted jobs, and then runs on from the front. Every ask goes to the root, which holds
// every job's data and brokers the grants, so a call's claims end with one ask and one answer per worker.
// Every job runs the same code wherever it runs: the bits do not depend on who ran what.
#include <algorithm>
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
  /// The next batch the owner runs, on `threads` team threads: claim_batch() of what is left, but at least
  /// `least` jobs (fewer where fewer are left): no thief is granted fewer, so answering asks more often than
  /// that gains nothing, and each answer costs a poll of the network.
  job_range take_front(int threads, int least = 1);
  /// A batch for a thief that still holds work worth `held` of this owner's jobs (the batch it runs while
  /// this ask travels), from the back: half of what is left beyond them, so that both end about together; at
  /// least one job to a thief that holds none. Returns later_grant() when the thief holds enough for now, and
  /// none (empty) when the batch would be under `least` jobs: the owner runs those sooner than the thief could
  /// receive them and send their blocks back.
  job_range grant_back(int held, int least = 1);
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

/// The fewest jobs that `seconds` of work are worth at `seconds_per_job`: 1 while no job is timed, or where a
/// job costs more.
inline int jobs_worth(double seconds, double seconds_per_job) {
  return seconds_per_job > 0 ? std::max(1, static_cast<int>(seconds / seconds_per_job)) : 1;
}

/// What a thief tells the owner it asks: whether it wants a batch, and what it still has to run before it
/// could start one: `held_jobs` jobs of this owner's (granted earlier) and `held_seconds` of other work (the
/// root's own jobs, by their mean time so far). Jobs differ in cost between owners and within a chunk, so
/// the owner turns seconds into jobs at its own latest time per job.
struct ask_message {
  double want = 0;          ///< 1: a batch, 0: none
  double held_jobs = 0;     ///< the owner's jobs the thief still holds
  double held_seconds = 0;  ///< other work the thief still holds
  double least_seconds = 0; ///< the least work worth a batch: a round trip between the root and the thief

  /// All the thief holds, in the owner's jobs at `seconds_per_job` (0: none timed yet, the seconds count for
  /// nothing).
  int held(double seconds_per_job) const {
    return static_cast<int>(held_jobs + (seconds_per_job > 0 ? held_seconds / seconds_per_job : 0.0));
  }
  /// The fewest jobs worth a batch at `seconds_per_job`.
  int least(double seconds_per_job) const { return jobs_worth(least_seconds, seconds_per_job); }
};

/// Doubles in an ask_message.
constexpr int ask_doubles = sizeof(ask_message) / sizeof(double);

/// Sends `ask` to `owner` and posts the receive of its grant, `count` ints, into `range` (`reply` completes
/// with it), under the tags of map_rect's claims unless others are given (reduce_sum's claims have their own).
void post_ask(MPI_Comm comm, int owner, const ask_message& ask, int* range, int count, MPI_Request& reply,
              int ask_tag = steal_tag::ask, int grant_tag = steal_tag::grant);

/// Receives every ask under `ask_tag` that has come, and hands each to `grant(thief, ask)`.
template <class Grant>
void answer_asks(MPI_Comm comm, int ask_tag, Grant&& grant) {
  int pending = 0;
  MPI_Status st;
  while (MPI_Iprobe(MPI_ANY_SOURCE, ask_tag, comm, &pending, &st), pending) {
    ask_message ask;
    MPI_Recv(&ask, ask_doubles, MPI_DOUBLE, st.MPI_SOURCE, ask_tag, comm, MPI_STATUS_IGNORE);
    grant(st.MPI_SOURCE, ask);
  }
}

/// A grant of map_rect's claims: rank `owner`'s local jobs [begin, end) (empty: none left).
struct grant_message {
  int owner = 0;
  int begin = 0;
  int end = 0;
  job_range range() const { return {begin, end}; }
};

/// Sends `thief` the grant of `owner`'s local jobs `g`.
void send_grant(MPI_Comm comm, int thief, int owner, job_range g);

/// The caller's parameters, planned output counts and rows of every job of a call, on the root, from job 0.
struct owned_rows {
  const double* job_params = nullptr;        ///< P values per job
  int n_job_params = 0;                      ///< P
  const int* counts = nullptr;               ///< planned output counts
  const std::vector<double>* x_r = nullptr;  ///< one row per job
  const std::vector<int>* x_i = nullptr;     ///< one row per job
  rows_sent* sent = nullptr;                 ///< which worker holds which rows of the call's job_data
};

/// The rows of a batch granted to a worker thief, sent without waiting: the thief receives them once it has
/// run the batch it holds.
struct granted_rows {
  std::vector<double> reals;  ///< the batch's job parameters, then its x_r rows
  std::vector<int> ints;      ///< its planned output counts, whether each job's rows follow, its x_i rows
  MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
};

/// Root: sends worker thieves what they need to run the batches granted to them, from the caller's data.
class rows_to_thieves {
 public:
  rows_to_thieves(MPI_Comm comm, owned_rows rows) : comm_(comm), rows_(rows) {}
  /// Sends `thief` the parameters, counts and rows of jobs [first + g.begin, first + g.end).
  void send(int thief, int first, job_range g);
  /// Completes the sends: once a thief has heard "none", it has received all of them.
  void finish();

 private:
  MPI_Comm comm_;
  owned_rows rows_;
  std::deque<granted_rows> sent_;  ///< on their way (a deque: their addresses stay)
};

/// What a worker sends the root ahead of the blocks of its own jobs, or of a batch it ran for another rank.
struct result_head {
  double owner = 0;    ///< whose chunk: the worker's own, or the batch's owner
  double begin = 0;    ///< the owner's local jobs [begin, end) whose blocks follow
  double end = 0;
  double code = 0;     ///< a wire::status, or not_run
  double job = -1;     ///< global index of the failing job
  double busy = 0;     ///< own jobs: seconds on them, and the team's slowest and fastest thread's
  double slowest = 0;
  double fastest = 0;
  /// A batch granted after the thief's own failure, entirely behind it: not run, no blocks follow.
  static constexpr int not_run = -1;
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

/// Worker: steps 4 and 5 of a steady call by claims by message, once its job parameters are in
/// `job_params`: runs its jobs, answering the root's asks, sends their blocks, then runs the batches the
/// root grants it, sending each one's blocks, until the root answers "none".
void serve_call_stealing(cluster_state& s, worker_site& site, const wire::request& v, const double* shared,
                         const double* job_params);

/// Who ran which jobs in a steady call by claims (by message, or between all ranks of one host),
/// per rank (index 0: the root).
struct balance_report {
  std::vector<int> ends;   ///< where its own jobs ended: others ran the rest of its chunk
  std::vector<int> taken;  ///< jobs of other ranks' chunks it ran
};

/// Root: who ran which jobs in the last steady call, if it went by claims (empty vectors otherwise).
balance_report last_call_balance();

}  // namespace maprect::detail
