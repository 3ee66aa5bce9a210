#pragma once
// The rules of the claims by message that need no message: how an owner's range is run and granted
// (unstarted_jobs), how big its batches are (answer_batch), what a thief's ask says and what it is granted
// (ask_message, grant_share, grant_for), and when an owner leaves its last jobs to idle thieves
// (idle_thieves). Unit-tested without MPI (test/balance_hosts/test_grant_rule.cpp).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>

#include "src/protocol/chunk_plan.hpp"

namespace maprect::detail {

/// A range [front, back) of a rank's jobs as one 64-bit claim word, the front in its low half: the form the
/// ranks of one host claim it in (job_claims, unstarted_jobs::attach).
inline std::uint64_t pack_range(int front, int back) {
  return static_cast<std::uint32_t>(front) | (static_cast<std::uint64_t>(static_cast<std::uint32_t>(back)) << 32);
}
/// The front of a claim word.
inline int range_front(std::uint64_t w) { return static_cast<int>(static_cast<std::uint32_t>(w)); }
/// The back of a claim word.
inline int range_back(std::uint64_t w) { return static_cast<int>(w >> 32); }

/// Takes from the front or the back of the range in claim word `w` the `batch(left)` of its `left` jobs that a
/// rule gives, by compare-and-swap: none where the range is empty or the rule gives none. `left_after`, if
/// given, gets what the taking left. The one way a claim word's ends move, whichever rank moves them.
template <class Batch>
job_range take_from_range(std::atomic<std::uint64_t>& w, bool from_front, Batch&& batch, int* left_after = nullptr) {
  std::uint64_t seen = w.load(std::memory_order_acquire);
  while (true) {
    const int f = range_front(seen), b = range_back(seen);
    if (f >= b) return {};
    const int n = batch(b - f);
    if (n <= 0) return {};
    const std::uint64_t rest = from_front ? pack_range(f + n, b) : pack_range(f, b - n);
    if (!w.compare_exchange_weak(seen, rest, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    if (left_after != nullptr) *left_after = b - f - n;
    return from_front ? job_range{f, f + n} : job_range{b - n, b};
  }
}

/// A rank's jobs of a call that nobody has started, as a claim word: the rank runs them from the front,
/// thieves are granted batches from the back. The word is the rank's own, which only it moves as it serves the
/// asks by message; or one in host memory (attach), from whose back the ranks of its host claim too.
class unstarted_jobs {
 public:
  unstarted_jobs() = default;
  unstarted_jobs(const unstarted_jobs&) = delete;
  unstarted_jobs& operator=(const unstarted_jobs&) = delete;
  /// All of `n` jobs are unstarted, in this rank's own word.
  void reset(int n) {
    word_ = &own_word_;
    own_word_.store(pack_range(0, n), std::memory_order_relaxed);
  }
  /// The range is `word`'s, set for the call before any other rank could read it (a claim word in host memory
  /// that the ranks of this host claim from too).
  void attach(std::atomic<std::uint64_t>* word) { word_ = word; }
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
  void drop_rest() {
    take_from_range(*word_, true, [](int left) { return left; });
  }
  /// Where the worker's own jobs end once none are left (the rest went to thieves).
  int end() const { return range_front(word_->load(std::memory_order_acquire)); }
  /// Where its unstarted jobs end: the chunk's end until a thief has taken some.
  int back() const { return range_back(word_->load(std::memory_order_acquire)); }
  /// How many are unstarted.
  int left() const {
    const std::uint64_t w = word_->load(std::memory_order_acquire);
    return range_back(w) - range_front(w);
  }

 private:
  std::atomic<std::uint64_t> own_word_{0};
  std::atomic<std::uint64_t>* word_ = &own_word_;  ///< own_word_, or a claim word in host memory
};

/// The one batch rule for an owner's next batch from its front, by message and in host memory alike:
/// claim_batch() of the `left` unstarted jobs, but at most `most` and at least `least` and one per team thread
/// (fewer where fewer are left).
inline int front_batch(int left, int threads, int least, int most) {
  return std::min(left, std::max({std::min(claim_batch(left, threads), most), least, threads}));
}

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
/// and claims, so each gets its part by its speed, o / (t + (ranks - 1) o); a thief that comes back for
/// more costs a claim (a round trip by message), one that got too much ends last. As if alike, 1 / ranks,
/// while either is untimed.
inline double grant_share(double own_seconds, double thief_seconds, int ranks) {
  if (ranks < 2) return 0.5;
  if (own_seconds <= 0 || thief_seconds <= 0) return 1.0 / ranks;
  return own_seconds / (thief_seconds + (ranks - 1) * own_seconds);
}

/// How many of `left` unstarted jobs a thief that holds work worth `held` of them gets at `share`
/// (grant_share): that part of what is left beyond what it holds, rounded down but not below a whole number
/// that the share's own rounding missed (0.3 of 20 is 5.999...), and at least one to a thief that holds none.
/// Zero or less: it holds enough for now.
inline int granted_jobs(int left, int held, double share) {
  const int part = static_cast<int>(std::floor((left - held) * share + 1e-9));
  return held == 0 ? std::max(1, part) : part;
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

/// What a thief tells the owner it asks: whether it wants a batch, and what it still has to run before it
/// could start one: `held_jobs` jobs of this owner's (granted earlier) and `held_seconds` of other work (the
/// root's own jobs, by their mean time so far). Jobs differ in cost between owners and within a chunk, so
/// the owner turns seconds into jobs at its own latest time per job.
/// Counts go as 32-bit integers and times as 32-bit floats (a grant needs no more than 7 digits of a time),
/// and the idle ranks share an integer with the flags, so that an ask is 20 bytes: the claims' control traffic
/// is a few asks, grants and heads per job claimed, against 16 bytes per job for all of a deferred call's.
struct ask_message {
  std::int32_t want = 0;       ///< flags (wants_batch, paced_on_owner), and the idle ranks above them
  std::int32_t held_jobs = 0;  ///< the owner's jobs the thief still holds
  float held_seconds = 0;      ///< other work the thief still holds
  float least_seconds = 0;     ///< the least work worth a batch: a round trip between the root and the thief
  float thief_seconds = 0;     ///< the thief's seconds per job (0: none timed), on its own or the owner's jobs

  static constexpr std::int32_t wants_batch = 1;     ///< `want` bit: the thief wants a batch
  static constexpr std::int32_t paced_on_owner = 2;  ///< `want` bit: thief_seconds timed on the owner's jobs
  static constexpr int idle_shift = 2;               ///< `want`'s bits below the idle ranks

  /// An ask: `want` a batch or none, with what the thief holds, the least work worth a batch, its seconds per
  /// job (on the owner's jobs it ran in this call where `on_owner`, else on its own) and the ranks out of
  /// their own jobs.
  static ask_message of(bool want, int held, double held_seconds, double least_seconds, double thief_seconds,
                        int idle_ranks = 0, bool on_owner = false) {
    return {(want ? wants_batch : 0) | (on_owner ? paced_on_owner : 0) | (idle_ranks << idle_shift),
            held,
            static_cast<float>(held_seconds),
            static_cast<float>(least_seconds),
            static_cast<float>(thief_seconds)};
  }

  /// The ranks out of their own jobs as the root knows, the thief included.
  int idle_ranks() const { return want >> idle_shift; }
  /// Sets idle_ranks().
  void set_idle_ranks(int ranks) { want = (want & ((1 << idle_shift) - 1)) | (ranks << idle_shift); }

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
/// `least` jobs, later_grant(), or none (empty), as the root's and a worker's jobs are granted alike. None to an
/// idle thief that would end one of them no sooner than the owner ends them all, the job it runs counted half
/// done (both timed): a root 3 times slower granted a worker's last 4 ms job ended the call 12 ms late.
inline job_range grant_for(unstarted_jobs& jobs, const ask_message& ask, double seconds_per_job, double owner_pace,
                           int least, int ranks) {
  if (!ask.wants()) return {};
  const int left = jobs.left();
  if (seconds_per_job > 0 && ask.thief_seconds > 0 && left > 0 && ask.held_time(seconds_per_job, owner_pace) <= 0 &&
      ask.thief_per_owner_job(seconds_per_job, owner_pace) >= left + 0.5)
    return {};
  return jobs.grant_back(ask.held(seconds_per_job, owner_pace), least,
                         ask.share(seconds_per_job, owner_pace, ranks));
}

static_assert(sizeof(ask_message) == 20, "an ask goes as 20 bytes");

/// Ranks out of their own jobs, alike as an owner sees them: the seconds until they are free of what they hold,
/// their seconds per job, and how many they are.
struct idle_rank {
  double free_in = 0;
  double per_job = 0;
  int ranks = 1;
};

/// Whether the `n` kinds of idle ranks in `idle` would end all of an owner's `left` unstarted jobs within `within`
/// seconds, each whole job on the rank that would end it first. The one rule by which an owner, in host memory
/// or by message, leaves its last jobs to the ranks out of theirs rather than start the next: a slow owner that
/// started its last job as the others ran out of theirs made the call wait for it, and one that waited for a
/// thief still busy with a batch of its dear jobs idled a job's time for nothing. Jobs alike, each going where
/// it ends first, take the earliest of all the ranks' job ends, so the answer is whether `left` of those ends
/// come before `within`: O(n), whatever `left`.
bool idle_ranks_end_within(const idle_rank* idle, int n, int left, double within);

/// What an owner has heard of the ranks that would run its unstarted jobs if it did not: how many are out of
/// their own, how fast the latest of them runs jobs, and how long it is busy with what it holds.
class idle_thieves {
 public:
  /// Takes what `ask` says of them; the thief that sent it still holds `held_seconds` of work, in the owner's
  /// time (ask_message::held at the owner's time per job).
  void note(const ask_message& ask, double held_seconds) {
    ranks_ = ask.idle_ranks();
    seconds_ = ask.thief_seconds;
    trip_ = ask.least_seconds;
    held_ = held_seconds;
  }
  /// Whether an owner at `own_seconds` per job should leave its `left` unstarted jobs to them rather than start
  /// the next: they would end all of them (idle_ranks_end_within), the asking thief after what it holds, a round
  /// trip before the owner ended that one.
  bool outrun(int left, double own_seconds) const {
    if (ranks_ <= 0 || seconds_ <= 0 || own_seconds <= 0) return false;
    const idle_rank thieves[2] = {{held_, seconds_, 1}, {0, seconds_, ranks_ - 1}};
    return idle_ranks_end_within(thieves, 2, left, own_seconds - trip_);
  }

 private:
  int ranks_ = 0;
  double seconds_ = 0;
  double trip_ = 0;
  double held_ = 0;
};

}  // namespace maprect::detail
