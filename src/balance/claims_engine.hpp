#pragma once
// The claims engine by message (MAPRECT_BALANCE=auto wherever the ranks cannot claim in host memory, and
// hosts): any rank that has run out of jobs (map_rect's) or slices (reduce_sum's) takes batches of those a
// slower rank has not started, wherever that rank runs. What both sides share; the root's side is
// claims_broker.hpp, the worker's claims_worker.cpp. The engine reaches a call's jobs only through
// root_claimed_work and worker_claimed_work below, so that what a job is stays the command's
// (src/map_rect/claimed_jobs.*, src/reduce_sum/claimed_slices.*).
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
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <maprect/detail/call.hpp>
#include <maprect/detail/claims_pay.hpp>
#include <maprect/detail/job_error.hpp>
#include <utility>
#include <vector>

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
  /// The next batch the owner runs, on `threads` team threads: claim_batch() of what is left, but at most
  /// `most` jobs, since asks wait for the batch's end and a slow owner's quarter is what slows its thieves;
  /// and at least `least` jobs and one per thread (fewer where fewer are left): no thief is granted fewer, so
  /// answering asks more often than that gains nothing, and each answer costs a poll of the network.
  job_range take_front(int threads, int least = 1, int most = std::numeric_limits<int>::max());
  /// A batch for a thief that still holds work worth `held` of this owner's jobs (the batch it runs while
  /// this ask travels), from the back: half of what is left beyond them, so that both end about together; at
  /// least one job to a thief that holds none. Returns later_grant() when the thief holds enough for now, and
  /// none (empty) when the batch would be under `least` jobs: the owner runs those sooner than the thief could
  /// receive them and send their blocks back.
  /// `share` is the part of them a thief that holds none gets (grant_share), half between two ranks alike.
  job_range grant_back(int held, int least = 1, double share = 0.5);
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

/// A rank's time on its own jobs over the call so far: the pace the grant rule compares (grant_share). The
/// latest batch's time per job would mistake a range whose jobs grow dearer for a slower rank.
struct own_pace {
  double seconds = 0;
  int jobs = 0;
  /// Adds a batch of `n` jobs that took `batch_seconds`.
  void add(double batch_seconds, int n) {
    seconds += batch_seconds;
    jobs += n;
  }
  /// Seconds per job so far (0: none timed yet).
  double per_job() const { return jobs > 0 ? seconds / jobs : 0.0; }
};

/// The part of an owner's unstarted jobs a thief gets, the owner at `own_seconds` and the thief at
/// `thief_seconds` per job, with `ranks` ranks in the call: by the call's end every other rank is out of work
/// and asks, so each is granted its part by its speed, o / (t + (ranks - 1) o); a thief that comes back for
/// more costs a round trip, one that got too much ends last. Half while either is untimed.
inline double grant_share(double own_seconds, double thief_seconds, int ranks) {
  if (own_seconds <= 0 || thief_seconds <= 0 || ranks < 2) return 0.5;
  return own_seconds / (thief_seconds + (ranks - 1) * own_seconds);
}

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

/// The longest an owner runs its own jobs between two answers to asks, per team thread, where its jobs are
/// shorter and answering costs little: a thief waits this long at most beyond the owner's job. A poll of shared
/// memory costs well under 1% of it; a team's start and join of a batch cost more than a poll, so a team's
/// batches last longer.
constexpr double claims_answer_seconds = 50e-6;

/// How many times an answer's cost an owner's batch lasts at least. A poll of TCP costs 8 us here (Open MPI
/// reads its sockets twice, probe_after_progress): at 50 us batches the polls made a skewed call's owners 25%
/// slower, against a thief's wait of a batch once or twice a call.
constexpr double claims_answer_cost_ratio = 16;

/// The most jobs an owner on `threads` team threads runs between two answers to asks, at `seconds_per_job`
/// of the batch's wall time per job (0, none timed yet: one), where an answer costs `answer_seconds`.
inline int answer_batch(double seconds_per_job, int threads, double answer_seconds = 0) {
  return jobs_worth(std::max(claims_answer_seconds * threads, claims_answer_cost_ratio * answer_seconds),
                    seconds_per_job);
}

/// How often an owner whose batch runs aside (batch_aside) answers asks meanwhile: 8 times a batch, so that
/// the wakes cost the jobs about as little whatever they last, but no more often than every 100 us.
inline double claims_aside_period(double batch_seconds) { return std::max(100e-6, batch_seconds / 8); }

/// Runs `batch()` (it returns a wire::status and throws nothing): where `aside` allows it and the batch should
/// last `expected_seconds` >= claims_aside_seconds, on the rank's batch_aside thread (which runs it on the
/// team, if any, in this thread's place) while this one calls `answer()` every claims_aside_period; else on
/// this thread.
template <class Batch, class Answer>
wire::status run_answering(cluster_state& s, bool aside, double expected_seconds, Batch&& batch, Answer&& answer) {
  if (!aside || expected_seconds < claims_aside_seconds) return batch();
  wire::status code = wire::status::ok;
  s.aside.run([&] { code = batch(); }, answer, claims_aside_period(expected_seconds));
  return code;
}

/// What a thief tells the owner it asks: whether it wants a batch, and what it still has to run before it
/// could start one: `held_jobs` jobs of this owner's (granted earlier) and `held_seconds` of other work (the
/// root's own jobs, by their mean time so far). Jobs differ in cost between owners and within a chunk, so
/// the owner turns seconds into jobs at its own latest time per job.
/// Counts go as 32-bit integers and times as 32-bit floats (a grant needs no more than 7 digits of a time),
/// so that an ask is 24 bytes: the claims' control traffic is a few asks, grants and heads per job claimed.
struct ask_message {
  std::int32_t want = 0;       ///< wants_batch: a batch; paced_on_owner: thief_seconds is on the owner's jobs
  std::int32_t held_jobs = 0;  ///< the owner's jobs the thief still holds
  float held_seconds = 0;      ///< other work the thief still holds
  float least_seconds = 0;     ///< the least work worth a batch: a round trip between the root and the thief
  float thief_seconds = 0;     ///< the thief's seconds per job (0: none timed), on its own or the owner's jobs
  std::int32_t idle_ranks = 0; ///< the ranks out of their own jobs as the root knows, the thief included

  static constexpr std::int32_t wants_batch = 1;     ///< `want` bit: the thief wants a batch
  static constexpr std::int32_t paced_on_owner = 2;  ///< `want` bit: thief_seconds timed on the owner's jobs

  /// An ask: `want` a batch or none, with what the thief holds, the least work worth a batch, its seconds per
  /// job (on the owner's jobs it ran in this call where `on_owner`, else on its own) and the ranks out of
  /// their own jobs.
  static ask_message of(bool want, int held, double held_seconds, double least_seconds, double thief_seconds,
                        int idle_ranks = 0, bool on_owner = false) {
    return {(want ? wants_batch : 0) | (on_owner ? paced_on_owner : 0),
            held,
            static_cast<float>(held_seconds),
            static_cast<float>(least_seconds),
            static_cast<float>(thief_seconds),
            idle_ranks};
  }

  /// Whether the thief wants a batch.
  bool wants() const { return (want & wants_batch) != 0; }
  /// Whether thief_seconds was timed on the owner's jobs (granted earlier in the call), not on its own.
  bool on_owner_jobs() const { return (want & paced_on_owner) != 0; }
  /// How many of the owner's jobs the thief runs in the time the owner runs one: the thief's seconds per job
  /// over the owner's, on the same jobs where the thief has timed some of the owner's (`seconds_per_job`, the
  /// owner's latest), else on their own jobs (`owner_pace`, its time per job so far); 1 while either is
  /// untimed. Own jobs compare speeds only where jobs cost alike: in a skewed range an owner among dear jobs
  /// took a thief with light ones for ten times as fast.
  double thief_per_owner_job(double seconds_per_job, double owner_pace) const {
    const double owner = owner_seconds(seconds_per_job, owner_pace);
    return thief_seconds > 0 && owner > 0 ? thief_seconds / owner : 1.0;
  }
  /// All the thief holds, in the owner's seconds at `seconds_per_job` per job (0: none timed yet, the thief's
  /// seconds count as the owner's): the owner's jobs it holds at thief_per_owner_job, since they cost what the
  /// owner's jobs cost, not what the thief's own did.
  double held_time(double seconds_per_job, double owner_pace) const {
    return held_jobs * thief_per_owner_job(seconds_per_job, owner_pace) * seconds_per_job + held_seconds;
  }
  /// held_time in whole jobs of the owner's (held_jobs while none is timed), rounded down: a thief that holds
  /// part of a job is granted more, which the unequal ranks need (a fast thief's 0.67 of a slow owner's job
  /// rounded up left the owner its last jobs: 1.21 of the balanced bound against 1.17). A part within
  /// held_job_slack of a whole job counts whole: two ranks' times on jobs alike differ by about that, and a
  /// thief that held one of the owner's dear jobs timed at 0.99 of the owner's was granted its last as well.
  int held(double seconds_per_job, double owner_pace) const {
    if (seconds_per_job <= 0) return held_jobs;
    return static_cast<int>(held_time(seconds_per_job, owner_pace) / seconds_per_job + held_job_slack);
  }
  /// The part of a job within which held() counts a whole one.
  static constexpr double held_job_slack = 0.1;
  /// The part of the owner's unstarted jobs the thief gets (grant_share), with `ranks` ranks in the call, by
  /// the speeds thief_per_owner_job compares.
  double share(double seconds_per_job, double owner_pace, int ranks) const {
    return grant_share(owner_seconds(seconds_per_job, owner_pace), thief_seconds, ranks);
  }
  /// The fewest jobs worth a batch at `seconds_per_job`.
  int least(double seconds_per_job) const { return jobs_worth(least_seconds, seconds_per_job); }

 private:
  /// The owner's seconds per job on the jobs thief_seconds was timed on.
  double owner_seconds(double seconds_per_job, double owner_pace) const {
    return on_owner_jobs() ? seconds_per_job : owner_pace;
  }
};

/// An owner's answer to `ask` from its unstarted `jobs`, at `seconds_per_job` (its latest) and `owner_pace`
/// (its time per job so far), with `ranks` ranks in the call: a batch from the back (grant_back) of at least
/// `least` jobs, later_grant(), or none (empty), as the root's and a worker's jobs are granted alike.
inline job_range grant_for(unstarted_jobs& jobs, const ask_message& ask, double seconds_per_job, double owner_pace,
                           int least, int ranks) {
  if (!ask.wants()) return {};
  return jobs.grant_back(ask.held(seconds_per_job, owner_pace), least,
                         ask.share(seconds_per_job, owner_pace, ranks));
}

/// Waits a little in a claim loop, as the policy says (`spins` counts the waits so far).
void pause_in_claims(wait_policy policy, unsigned& spins);

/// What an owner has heard of the ranks that would run its unstarted jobs if it did not: how many are out of
/// their own, how fast the latest of them runs jobs, and how long it is busy with what it holds.
class idle_thieves {
 public:
  /// Takes what `ask` says of them; the thief that sent it still holds `held_seconds` of work, in the owner's
  /// time (ask_message::held at the owner's time per job).
  void note(const ask_message& ask, double held_seconds) {
    ranks_ = ask.idle_ranks;
    seconds_ = ask.thief_seconds;
    trip_ = ask.least_seconds;
    held_ = held_seconds;
  }
  /// Whether an owner at `own_seconds` per job should leave its `left` unstarted jobs to them rather than start
  /// the next: they would run all of them, a round trip and what they hold included, before it ran that one. A
  /// slow owner that started its last job as the others ran out of theirs made the call wait for it; one that
  /// waited for a thief still busy with a batch of its dear jobs idled a job's time for nothing.
  bool outrun(int left, double own_seconds) const {
    if (ranks_ <= 0 || seconds_ <= 0 || own_seconds <= 0) return false;
    // Whole jobs, each on one rank; what the asking thief holds shared out with the jobs among them all.
    const double rounds = std::max<double>((left + ranks_ - 1) / ranks_ * seconds_, (held_ + left * seconds_) / ranks_);
    return rounds + trip_ < own_seconds;
  }

 private:
  int ranks_ = 0;
  double seconds_ = 0;
  double trip_ = 0;
  double held_ = 0;
};

/// While `thieves` would outrun the owner on `jobs` at `own_seconds` per job, answers asks (`serve`) instead
/// of starting the next: at most one job's time, after which starting it ends no later than waiting did.
template <class Serve>
void leave_to_thieves(wait_policy policy, const unstarted_jobs& jobs, const idle_thieves& thieves, double own_seconds,
                      Serve&& serve) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(own_seconds));
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
wire::status run_own_batches(cluster_state& s, unstarted_jobs& jobs, const idle_thieves& thieves,
                             double& job_seconds, own_pace& pace, Owner& owner, int& failed_job) {
  const int threads = s.settings.threads;
  const auto serve = [&owner] { owner.serve_asks(); };
  const auto next = [&] {
    return jobs.take_front(threads, owner.least_batch(), answer_batch(job_seconds, threads, s.answers.seconds()));
  };
  for (job_range got = next(); !got.empty(); got = next()) {
    const auto start = std::chrono::steady_clock::now();
    owner.starting(got);
    const wire::status code = run_answering(s, owner.runs_aside(), job_seconds * got.size(),
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
    s.answers.add(seconds_since(answering));
    owner.ran(got, seconds);
    leave_to_thieves(s.settings.policy, jobs, thieves, job_seconds, serve);
  }
  return wire::status::ok;
}

static_assert(sizeof(ask_message) == 24, "an ask goes as 24 bytes");

/// A grant of the claims by message: rank `owner`'s local jobs [begin, end) (empty: none left).
struct grant_message {
  int owner = 0;
  int begin = 0;
  int end = 0;
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

/// Sends `thief` the grant of `owner`'s local jobs `g`.
void send_grant(MPI_Comm comm, int thief, int owner, job_range g);

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
/// another rank, which reports no times.
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

  /// The bytes it goes as: a worker's own jobs' head with its times, a batch's without them.
  int bytes(int sender) const {
    return static_cast<int>(owner == sender ? sizeof(result_head) : offsetof(result_head, busy));
  }

  /// Its status as a gather of statuses holds a worker's (wire::status_doubles into `status`).
  void write_status(double* status) const {
    const double values[wire::status_doubles] = {static_cast<double>(code), static_cast<double>(job), busy, slowest,
                                                 fastest};
    std::copy_n(values, wire::status_doubles, status);
  }
};
static_assert(sizeof(result_head) == 32 && offsetof(result_head, busy) == 20, "a result head is 32 or 20 bytes");

/// The first failure, by job index, among the batches the workers ran for other workers in a call.
struct stolen_failure {
  wire::status code = wire::status::ok;
  int thief = 0;  ///< the rank that ran the batch (it holds the error)
  int job = -1;   ///< global index of the failing job (failed only)
};

/// A test's pin (MAPRECT_TEST_HOLD_RANK), on the held owner once the first batch of its own has run: while
/// `jobs` holds what it held and `released()` is false, answers asks (`serve`); at most 20 s, so that a test
/// that sees no claims fails rather than hangs.
template <class Serve, class Released>
void hold_until_claimed(wait_policy policy, const unstarted_jobs& jobs, Serve&& serve, Released&& released) {
  const int left = jobs.left();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  unsigned spins = 0;
  while (left > 0 && jobs.left() == left && !released() && std::chrono::steady_clock::now() < until) {
    serve();
    pause_in_claims(policy, spins);
  }
}

/// With MAPRECT_TIMEOUT: the later of the call's deadline and the timeout from `since` (a rank answers an ask
/// only between its jobs, and the root's own jobs may have held the workers' asks up); else never.
std::chrono::steady_clock::time_point claims_deadline(const cluster_state& s,
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
};

/// Worker: steps 4 and 5 of a call by claims by message: runs its own jobs, answering the root's asks, sends
/// their blocks, then runs the batches the root grants it, sending each one's blocks, until the root answers
/// "none". With `hold` (a test's pin, MAPRECT_TEST_HOLD_RANK), once the first batch of its own has run, it
/// runs no more until the root took some, answered "none", or 20 s passed.
void serve_claims(cluster_state& s, worker_claimed_work& work, bool hold = false);

/// The round trip from the root to its farthest worker, in seconds (rank_fact::round_trip), or a test's.
inline double farthest_round_trip(const cluster_state& s) {
  if (s.root.judged_round_trip >= 0) return s.root.judged_round_trip;
  double farthest = 0;
  for (int r = 1; r < s.size && r < static_cast<int>(s.ranks.size()); ++r)
    farthest = std::max(farthest, s.ranks[r].round_trip);
  return farthest;
}

/// Whether a site's next call goes by claims by message under auto, its last call having lasted `call_s`
/// seconds: when that is long enough for them to pay (claims_pay); always under a test's pin
/// (MAPRECT_TEST_HOLD_RANK), whose claims must happen. The same rule for map_rect, eager or deferred, and
/// reduce_sum.
inline bool claims_by_message_pay(const cluster_state& s, double call_s) {
  return s.settings.balance == balance_mode::automatic && s.size > 1 &&
         (s.settings.test_held_rank >= 0 || claims_pay(call_s, farthest_round_trip(s)));
}

/// Who ran which jobs in a steady or deferred call by claims (by message, or between all ranks of one host),
/// per rank (index 0: the root).
struct balance_report {
  std::vector<int> ends;   ///< where its own jobs ended: others ran the rest of its chunk
  std::vector<int> taken;  ///< jobs of other ranks' chunks it ran
  std::vector<int> runners;  ///< a deferred call: per job, the rank that ran it and keeps its tape (else empty)
};

/// Root: who ran which jobs in the last steady call, if it went by claims (empty vectors otherwise).
balance_report last_call_balance();

}  // namespace maprect::detail
