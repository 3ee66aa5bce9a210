#pragma once
// The root's side of map_rect's claims by message. Every ask comes to the root, and every grant comes from
// it: a worker out of jobs gets a batch from the back of the root's unstarted jobs, or, once those are all
// started, a batch the root asks for on its behalf from the worker with the most unstarted jobs (the root
// holds every job's data, so it sends the thief the batch's rows itself). The root takes such batches too once
// its own jobs are done. No batch goes that its owner would run sooner than the thief could receive it and
// send its blocks back: under the round trip between the root and the thief (measured at start-up). A worker
// that asks has started all its own jobs, so the root knows who has none left without asking; once none has
// any, it answers every ask "none", and a worker stops at its first "none". A call's claims therefore end
// with one ask and one answer per worker, O(P) messages.
#include <chrono>
#include <climits>
#include <deque>
#include <limits>
#include <vector>

#include <maprect/cluster.hpp>

#include "src/balance/claims_engine.hpp"

namespace maprect::detail {

/// Root: one kind of command's batches of the root's own jobs, as claims_broker::run_own runs them.
class own_batch_runner {
 public:
  virtual ~own_batch_runner() = default;
  /// Runs the root's own jobs `g`: ok, failed (the failing job in `failed_job`; the runner keeps its error),
  /// or counts_changed (the blocks no longer fit the plan).
  virtual wire::status run(job_range g, int& failed_job) = 0;
  /// A batch that ran to its end took `seconds`: for a command that adds them to the rank's busy time.
  virtual void ran_for(double /*seconds*/) {}
  /// Whether run may run on another thread than MPI's (run_answering).
  virtual bool runs_aside() const { return false; }
};

/// What a call's claims by message moved to and from the root.
struct claims_traffic {
  long long received_doubles = 0;  ///< from the workers: statuses and blocks
  long long control_messages = 0;  ///< asks, grants and the heads that say whose blocks follow, sent and received
  long long control_bytes = 0;     ///< their bytes
  /// Adds them to a call's traffic `t`: the data to its received, the control messages apart.
  void add_to(cluster::traffic& t) const {
    t.received += sizeof(double) * static_cast<std::uint64_t>(received_doubles);
    t.claims_messages += static_cast<std::uint64_t>(control_messages);
    t.claims_bytes += static_cast<std::uint64_t>(control_bytes);
  }
};

/// Root: the claims of one steady call by message (see above).
class claims_broker {
 public:
  /// The claims of one call over `work`'s jobs.
  claims_broker(const claims_rank& self, root_claimed_work& work);
  /// The root's own `n` jobs, all unstarted; with `claimable` false no worker is granted any of them.
  void reset(int n, bool claimable);
  /// The root's own unstarted jobs; it runs them from the front (run_own).
  unstarted_jobs& jobs() { return own_; }
  /// The root's range is `word`, set for the call, which the workers of its host claim from in host memory too.
  /// Under MAPRECT_TEST_HOLD_RANK=0 the root then grants its own jobs to nobody by message, which pins a schedule
  /// of claims in host memory.
  void attach_host_range(std::atomic<std::uint64_t>* word) {
    own_.attach(word);
    host_range_ = true;
  }
  /// Runs the root's own jobs from the front in `batches`, as a worker runs its range: times each batch,
  /// answers the asks between them, and asks a worker for a batch once few are left. Stops at a batch that
  /// fails (noted, and the jobs after it dropped: they cannot fail first) or changes its output counts
  /// (dropped too: their blocks would not fit). Under MAPRECT_TEST_HOLD_RANK=0 the test pin after the first
  /// batch (hold_for_claims), as serve_claims' `hold` pins a worker. Returns that batch's status, or ok.
  wire::status run_own(own_batch_runner& batches, int& failed_job);
  /// A job the root ran failed (the lowest failing job decides): no more asks go out, and a batch granted
  /// from behind it is dropped. A batch granted from before it still runs, so that nobody's lower failure hides.
  void note_failure(int job);
  /// Once the root's own jobs are done: brokers the workers' batches and runs those it takes, and hands each
  /// worker's results to the work, until every worker has heard "none" and every batch's result is in. With
  /// `want` false (the workers' data are stale) nobody runs another batch. Returns the jobs the root ran for
  /// workers, or -1 when MAPRECT_TIMEOUT passed while a worker had not answered or not asked (`late` names
  /// them).
  int run(bool want, std::vector<int>& late);
  /// The first failure, by job index, among the batches the workers ran for other ranks.
  const lowest_failure& stolen() const { return stolen_; }
  /// What the claims moved so far.
  const claims_traffic& traffic() const { return traffic_; }
  /// Per rank, the jobs it claimed in host memory from the workers of its host.
  const std::vector<int>& taken_in_host() const { return taken_in_host_; }

 private:
  using clock = std::chrono::steady_clock;
  /// One of the root's asks to an owner, on behalf of `thief` (0: the root itself).
  struct ask_out {
    grant_message answer;
    MPI_Request reply = MPI_REQUEST_NULL;
    int thief = 0;
    double held_seconds = 0;  ///< an ask for the root: the work it held as it asked
    clock::time_point sent;
  };
  /// One worker as the owner of jobs others may take, and the root's asks to it that are out. The owner
  /// answers them in order, all of those that have come at once between its batches; a deque keeps the
  /// answers where their receives were posted.
  struct victim {
    std::deque<ask_out> asks;
    bool exhausted = false;  ///< it has no unstarted jobs left
    int left = 0;            ///< its unstarted jobs, as far as the root knows
    clock::time_point known_at;  ///< when the root learnt `left`
    /// What it will have left after the asks out are answered (each grant takes about half).
    int left_after_asks() const { return asks.size() >= 31 ? 0 : left >> asks.size(); }
    /// What it has left by `now`, had it run its jobs since known_at at `seconds_per_job` (0: none timed).
    double left_by(clock::time_point now, double seconds_per_job) const {
      const double ran = seconds_between(known_at, now);
      return left_after_asks() - (seconds_per_job > 0 ? ran / seconds_per_job : 0.0);
    }
  };
  /// A batch granted to the root, run once its next ask is out.
  struct root_batch {
    int owner = 0;
    job_range jobs;
  };

  /// The fewest of its own jobs the root runs between answers to asks: what the shortest round trip to a
  /// worker is worth (no thief is granted fewer).
  int least_own_batch() const;
  /// Answers every ask that has come: a batch of the root's own jobs while it has some, else later.
  void serve_asks();
  /// Between the root's own batches: takes the owners' answers and passes the waiting thieves' asks on, so
  /// that a slow owner hears of the ranks running out of work before it starts its next job, not after the
  /// root's own jobs.
  void broker_between_own();
  /// The root has run `done` of its own jobs and `left` are unstarted: with a few left, it asks a worker for
  /// a batch, so that the answer (given between the worker's batches) is there when they are done.
  void after_batch(int done, int left);
  /// A test's pin (MAPRECT_TEST_HOLD_RANK=0), once the root's first batch of its own has run: answers asks until
  /// a worker took some of the root's jobs, none can (none left, or too few to be worth a round trip), or no
  /// worker wants any; at most 20 s, so that a test that sees no claims fails rather than hangs.
  void hold_for_claims();
  /// Answers one worker's ask: a batch from the back of the root's own jobs, or it waits for dispatch().
  void on_ask(int thief, const ask_message& ask);
  void ask_victim(int v, int thief, int held = 0, double held_seconds = 0, bool want = true);
  /// A test's pin (MAPRECT_TEST_HOLD_RANK=r > 0), once nobody takes more: asks the held worker for none, so that
  /// it stops waiting for a claim that cannot come.
  void release_held();
  int poll_answers(std::vector<int>& late);
  int poll_results();
  void receive_result(int from, result_head head);
  void on_answer(int v, const ask_out& ask);
  void dispatch();
  /// Asks the richest owner on behalf of each waiting thief that wants a batch; with `rich_only`, only an
  /// owner with two jobs or more left by the root's count.
  void forward_waiting(bool rich_only);
  int richest_free(int thief) const;
  bool all_exhausted() const;
  /// The ranks out of their own jobs that still want batches, the root included once its own are started.
  int idle_ranks() const;
  void tell_none(int thief);
  /// Sends `thief` a grant of owner's jobs `g` (empty: none left), and counts it.
  void send_grant_to(int thief, int owner, job_range g);
  bool finished() const;

  const claims_rank self_;
  root_claimed_work& work_;
  unstarted_jobs own_;
  bool claimable_ = true;
  bool host_range_ = false;    ///< its range is a claim word of its host (attach_host_range)
  int own_jobs_ = 0;           ///< the root's own jobs at the call's start
  bool stopping_ = false;      ///< a failure is known (or the data are stale): no more asks go out
  bool dropping_ = false;      ///< the data are stale or the outputs changed: no batch granted runs
  bool refused_ = false;       ///< an ask for the root's jobs found too few to grant
  int lowest_failure_ = INT_MAX;  ///< the lowest job the root saw fail
  bool root_asking_ = false;   ///< an ask for the root is out
  /// What the root held at its latest ask answered "later" (it asks again at half of it).
  double later_held_seconds_ = std::numeric_limits<double>::infinity();
  double job_seconds_ = 0;
  own_pace pace_;              ///< its time on its own jobs so far: its pace in grants and asks
  clock::time_point own_start_;
  std::vector<victim> victims_;  ///< by rank (0 unused)
  std::deque<int> waiting_;      ///< workers whose ask waits for a batch from another worker
  std::vector<char> told_;       ///< per worker, whether it has heard "none"
  std::vector<char> wants_;      ///< per worker, whether its latest ask wants a batch
  int told_none_ = 0;
  std::deque<root_batch> next_;  ///< batches granted to the root, run in turn
  root_batch running_;     ///< a batch the root runs for a worker, aside while it brokers
  int own_results_ = 0;    ///< workers whose own jobs' result is in
  std::vector<char> own_in_;      ///< per worker, whether its own jobs' result is in
  std::vector<int> batches_out_;  ///< per worker, batches granted to it whose result is not in yet
  std::vector<int> taken_in_host_;  ///< per worker, the jobs it claimed in host memory
  std::vector<clock::time_point> held_until_;  ///< per worker, when the work its latest ask held ends
  lowest_failure stolen_;
  claims_traffic traffic_;
  std::vector<double> thief_seconds_;  ///< per worker, its seconds per job of its own, as its latest ask said
  std::vector<own_pace> taken_pace_;   ///< per worker, the root's time on the jobs of its it ran in this call
  idle_thieves thieves_;               ///< the ranks out of their own jobs, as the root's own jobs' owner

  void note_control(std::size_t bytes) {
    ++traffic_.control_messages;
    traffic_.control_bytes += static_cast<long long>(bytes);
  }
};

}  // namespace maprect::detail
