// Claim words in memory that the root shares with the workers of its host (an MPI shared-memory window).
#include "src/balance/job_claims.hpp"

#include <algorithm>
#include <new>
#include <thread>

#include "src/cluster/clock.hpp"

namespace maprect::detail {

namespace {

// A word per cache line: a worker's claims do not disturb its neighbours', and the root reading a worker's
// progress does not disturb that worker's claims. Rank r's claim word is in line 3r, its progress in 3r + 1,
// the count of its jobs others ran, its pace and its busy time in 3r + 2; the call's words follow the last
// rank's.
constexpr MPI_Aint line = 64;
constexpr MPI_Aint lines_per_rank = 3;
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "claim words must work across processes");
static_assert(std::atomic<double>::is_always_lock_free, "paces must work across processes");
constexpr MPI_Aint pace_at = 8;   ///< the pace's place in a rank's third line
constexpr MPI_Aint busy_at = 16;  ///< the place of when its claimed batch ends, in the same line
constexpr MPI_Aint published_at = 24;  ///< the place of the call whose range its claim word holds, in the same line
static_assert(std::atomic<std::int64_t>::is_always_lock_free, "busy times must work across processes");

/// Nanoseconds on the steady clock, which every process of a host shares.
std::int64_t steady_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
// A progress word and the report behind it share their line.
static_assert(sizeof(std::atomic<std::uint64_t>) + sizeof(worker_report) <= line, "a report must fit its line");

}  // namespace

MPI_Aint job_claims::bytes_for(int ranks) { return line * (lines_per_rank * ranks + 1); }

void job_claims::place(char* base, int rank, const std::vector<int>& comm_rank, bool make) {
  const int ranks = *std::max_element(comm_rank.begin(), comm_rank.end()) + 1;
  words_.assign(static_cast<std::size_t>(ranks), nullptr);
  progress_.assign(static_cast<std::size_t>(ranks), nullptr);
  lines_.assign(static_cast<std::size_t>(ranks), {});
  idle_.assign(static_cast<std::size_t>(ranks), {});
  char* const call_line = base + line * lines_per_rank * ranks;
  // The maker places every word before any other rank reads one (host_memory's barrier).
  call_ = make ? new (call_line) call_words() : reinterpret_cast<call_words*>(call_line);
  for (const int r : comm_rank) {
    char* const at = base + line * lines_per_rank * r;
    words_[r] = make ? new (at) word(pack(0, 0)) : reinterpret_cast<word*>(at);
    progress_[r] = make ? new (at + line) word(pack(0, 0)) : reinterpret_cast<word*>(at + line);
    lines_[r].claimed_done =
        make ? new (at + 2 * line) std::atomic<int>(0) : reinterpret_cast<std::atomic<int>*>(at + 2 * line);
    char* const pace = at + 2 * line + pace_at;
    lines_[r].pace = make ? new (pace) std::atomic<double>(0) : reinterpret_cast<std::atomic<double>*>(pace);
    char* const busy = at + 2 * line + busy_at;
    lines_[r].busy_until =
        make ? new (busy) std::atomic<std::int64_t>(0) : reinterpret_cast<std::atomic<std::int64_t>*>(busy);
    char* const published = at + 2 * line + published_at;
    lines_[r].published = make ? new (published) std::atomic<std::uint64_t>(0)
                               : reinterpret_cast<std::atomic<std::uint64_t>*>(published);
  }
  self_ = rank;
  claimers_ = static_cast<int>(comm_rank.size());
  mine_ = rank != 0 ? words_[rank] : nullptr;
  my_progress_ = rank != 0 ? progress_[rank] : nullptr;
}

job_range job_claims::claim_front() { return claim_batch_front(1); }

job_range job_claims::claim_batch_back(int r, int threads) {
  const double share = grant_share(pace(r), pace(self_), claimers_);
  const job_range got = take_from_range(*words_[r], false, [threads, share](int left) {
    return std::min(left, std::max(threads, granted_jobs(left, 0, share)));
  });
  // When it will be out of work again, at its own pace, for an owner deciding whether to leave it jobs.
  const double own = known_pace();
  if (!got.empty() && own >= leave_pace_seconds)
    lines_[self_].busy_until->store(
        steady_ns(std::chrono::steady_clock::now()) + static_cast<std::int64_t>(got.size() * own * 1e9),
        std::memory_order_release);
  return got;
}

job_range job_claims::claim_batch_front(int threads) {
  word& w = *(mine_ != nullptr ? mine_ : words_[0]);
  // At most the jobs worth claims_answer_seconds per team thread, as an owner answering by message runs
  // them: a slow owner's last quarter was the end of the call.
  // The cap is worked out only where it can bind: a call of a job or two per rank does no arithmetic on paces.
  const auto batch = [this, threads](int left) {
    const int quarter = claim_batch(left, threads);
    return quarter <= threads ? quarter : front_batch(left, threads, 1, answer_batch(known_pace(), threads));
  };
  if (held_ && hold_back_ >= 0) hold_until_claimed(w);
  if (!held_ && known_pace() >= leave_pace_seconds) leave_to_faster_thieves(w);
  const int back_before = held_ ? back(w.load(std::memory_order_acquire)) : 0;
  int left = 0;
  const job_range got = take_from_range(w, true, batch, &left);
  if (held_) hold_back_ = got.begin == 0 && !got.empty() ? back_before : -1;
  // Nobody claims from a rank with no jobs left, so its last batch goes untimed: a call of one batch per rank
  // times nothing.
  if (batch_jobs_ > 0 || (!got.empty() && left > 0)) time_front_batch(got, left == 0);
  return got;
}

void job_claims::time_front_batch(job_range got, bool last) {
  if (got.begin == 0 && !got.empty()) {  // the call's first batch: nobody claims from the front but the owner
    if (own_.jobs > 0) last_pace_ = own_.per_job();
    own_ = {};
    batch_jobs_ = 0;
    lines_[self_].pace->store(last_pace_, std::memory_order_release);
  }
  const double pace = known_pace();
  const bool timed = !got.empty() && !last && (pace <= 0 || pace * got.size() >= pace_batch_seconds);
  if (batch_jobs_ == 0 && !timed) return;
  const auto now = std::chrono::steady_clock::now();
  if (batch_jobs_ > 0) {
    own_.add(std::chrono::duration<double>(now - batch_start_).count(), batch_jobs_);
    lines_[self_].pace->store(own_.per_job(), std::memory_order_release);
  }
  batch_start_ = now;
  batch_jobs_ = timed ? got.size() : 0;
}

void job_claims::leave_to_faster_thieves(const word& w) const {
  const double own = known_pace();
  std::chrono::steady_clock::time_point until{};
  for (bool first = true;; first = false) {
    const std::uint64_t seen = w.load(std::memory_order_acquire);
    const int left = back(seen) - front(seen);
    const auto now = std::chrono::steady_clock::now();
    if (left <= 0 || stopped() || first_failure() != no_failure || !outrun_by_idle(left, own, now)) return;
    if (first) until = now + steady_seconds(own);
    else if (now >= until) return;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

bool job_claims::outrun_by_idle(int left, double own, std::chrono::steady_clock::time_point now) const {
  const std::int64_t now_ns = steady_ns(now);
  int n = 0;
  for (std::size_t r = 0; r < words_.size(); ++r) {
    if (static_cast<int>(r) == self_ || words_[r] == nullptr) continue;
    const std::uint64_t w = words_[r]->load(std::memory_order_relaxed);
    const double p = pace(static_cast<int>(r));
    if (front(w) < back(w) || p <= 0) continue;
    const std::int64_t busy_ns = lines_[r].busy_until->load(std::memory_order_acquire) - now_ns;
    idle_[n++] = {std::max<std::int64_t>(busy_ns, 0) * 1e-9, p, 1};
  }
  // Half this rank's time for one job: paces and ends are estimates, and between ranks alike, or a thief whose
  // pace is on cheaper jobs than the owner's last, leaving them gained nothing and idled the owner.
  return idle_ranks_end_within(idle_.data(), n, left, own / 2);
}

void job_claims::hold_until_claimed(const word& w) const {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (std::uint64_t seen = w.load(std::memory_order_acquire);
       back(seen) == hold_back_ && front(seen) < back(seen) && first_failure() == no_failure && !stopped() &&
       std::chrono::steady_clock::now() < until;
       seen = w.load(std::memory_order_acquire))
    std::this_thread::sleep_for(std::chrono::microseconds(50));
}

int job_claims::richest(int self, int ranks) const {
  // Work left is jobs at their owner's pace; an untimed owner counts as alike to this rank.
  const double own = pace(self);
  int best = -1;
  double most = 0;
  for (int r = 0; r < std::min(ranks, static_cast<int>(words_.size())); ++r) {
    if (r == self || words_[r] == nullptr) continue;
    const std::uint64_t w = words_[r]->load(std::memory_order_relaxed);
    const int left = back(w) - front(w);
    if (left <= 0) continue;
    const double owner = pace(r);
    const double work = left * (owner > 0 && own > 0 ? owner / own : 1.0);
    if (work > most) {
      most = work;
      best = r;
    }
  }
  return best;
}

int job_claims::claim_rest() {
  word& w = *(mine_ != nullptr ? mine_ : words_[0]);
  take_from_range(w, true, [](int left) { return left; });
  batch_jobs_ = 0;
  return back(w.load(std::memory_order_acquire));
}

bool job_claims::host_published() const {
  for (std::size_t r = published_with_root_ ? 0 : 1; r < words_.size(); ++r)
    if (words_[r] != nullptr && lines_[r].published->load(std::memory_order_acquire) < published_call_) return false;
  return true;
}

bool await_finished(const job_claims& claims, int r, wait_policy policy,
                    std::chrono::steady_clock::time_point deadline) {
  struct finished_test {
    const job_claims* claims;
    int rank;
    static bool ready(void* self) {
      const auto& t = *static_cast<finished_test*>(self);
      return t.claims->progress(t.rank).finished;
    }
  };
  finished_test test{&claims, r};
  return wait_until(&finished_test::ready, &test, policy, deadline);
}

std::vector<int> unfinished(const job_claims& claims, int ranks) {
  std::vector<int> late;
  for (int r = 1; r < ranks; ++r)
    if (!claims.progress(r).finished) late.push_back(r);
  return late;
}

}  // namespace maprect::detail
