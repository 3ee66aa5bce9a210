#pragma once
/// \file thread_team: a few threads that run a range of jobs with the calling thread, and team_scope,
/// which lets map_rect in this process use one.
///
/// The threads claim batches of jobs from an atomic counter; each job runs start to end on one thread,
/// whose own thread-local tape and runner buffers it uses, so no scheduler can move half a job elsewhere.
/// Between calls a team thread spins briefly for the next one, then blocks until it is woken.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "detail/thread_parking.hpp"

namespace maprect {

/// Busy time of the team's threads in one call, the calling thread included: from the start of a thread's
/// first batch to the end of its last (0 for a thread that got no batch).
struct team_busy {
  double slowest_seconds = 0;  ///< the busiest thread's time
  double fastest_seconds = 0;  ///< the least busy thread's time
};

/// A team of threads that run the batches of a range of jobs together with the thread that calls run().
class thread_team {
 public:
  /// What run() calls for each batch [begin, end) of jobs; `thread` is 0 for the calling thread and 1 ..
  /// size() - 1 for the team's own. It must not throw when it runs on a team thread.
  using task = void (*)(void* context, int thread, int begin, int end);

  /// How long an idle team thread polls for the next call before it blocks, unless told otherwise.
  static constexpr std::chrono::microseconds default_spin{50};

  /// A team of `threads` threads in all: the caller of run() and threads - 1 started here. `spin`: how long
  /// an idle thread polls before it blocks (0: block at once, for oversubscribed cores).
  explicit thread_team(int threads, std::chrono::nanoseconds spin = default_spin)
      : work_(spin), done_(spin), slots_(static_cast<std::size_t>(check_threads(threads))) {
    workers_.reserve(static_cast<std::size_t>(threads - 1));
    for (int t = 1; t < threads; ++t) workers_.emplace_back([this, t] { serve(t); });
  }

  /// Stops and joins the team's threads.
  ~thread_team() {
    state_.store(stopped);
    work_.wake();
    for (std::thread& w : workers_) w.join();
  }
  thread_team(const thread_team&) = delete;
  thread_team& operator=(const thread_team&) = delete;

  /// Threads in the team, the caller of run() included.
  int size() const { return static_cast<int>(slots_.size()); }

  /// Calls fn(context, thread, begin, end) over batches of at most `batch` jobs that cover [0, n) once
  /// each, on the calling thread and the team's threads, and returns when all have ended. A team that
  /// is already running a call (for another thread, or for the job this thread is running) runs the
  /// whole range on the calling thread instead. An exception from the calling thread's share is
  /// rethrown once the team's threads have finished theirs.
  void run(int n, int batch, task fn, void* context) {
    if (n <= 0) return;
    batch = std::max(batch, 1);
    if (workers_.empty()) return run_alone(n, fn, context, true);
    if (in_use_.exchange(true, std::memory_order_acquire)) return run_alone(n, fn, context, false);
    for (slot& s : slots_) s.busy_seconds = 0;
    if (n <= batch) {  // one batch: waking the team would only add its wake-up to the call
      const in_use_until_exit release{in_use_};
      return run_alone(n, fn, context, true);
    }
    fn_ = fn;
    context_ = context;
    n_ = n;
    batch_ = batch;
    next_.store(0, std::memory_order_relaxed);
    generation_ += 2;
    state_.store(generation_ | open_bit);
    work_.wake();
    try {
      claim_batches(0);
    } catch (...) {
      finish();
      throw;
    }
    finish();
  }

  /// Thread `thread`'s busy time in the last run() (0: the calling thread); read it on the thread that
  /// called run().
  double busy_seconds(int thread) const { return slots_.at(static_cast<std::size_t>(thread)).busy_seconds; }

  /// The busy times of the last run(); read it on the thread that called run().
  team_busy last_call_busy() const {
    team_busy b{slots_[0].busy_seconds, slots_[0].busy_seconds};
    for (const slot& s : slots_) {
      b.slowest_seconds = std::max(b.slowest_seconds, s.busy_seconds);
      b.fastest_seconds = std::min(b.fastest_seconds, s.busy_seconds);
    }
    return b;
  }

 private:
  /// One thread's figures, on a cache line of its own.
  struct alignas(64) slot {
    double busy_seconds = 0;
  };

  /// Marks the team free again at the end of a scope, also when the task throws.
  struct in_use_until_exit {
    std::atomic<bool>& in_use;
    ~in_use_until_exit() { in_use.store(false, std::memory_order_release); }
  };

  /// state_ is the call's generation with open_bit set while its batches may be claimed.
  static constexpr std::uint64_t open_bit = 1;
  static constexpr std::uint64_t stopped = ~std::uint64_t{0};

  static int check_threads(int threads) {
    if (threads < 1)
      throw std::invalid_argument("thread_team: threads must be at least 1, not " + std::to_string(threads));
    return threads;
  }

  /// The whole range on the calling thread; `record`: the team is this call's, so its figures are too.
  void run_alone(int n, task fn, void* context, bool record) {
    if (!record) return fn(context, 0, 0, n);
    const auto start = std::chrono::steady_clock::now();
    fn(context, 0, 0, n);
    slots_[0].busy_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  /// Closes the call to latecomers and waits for the threads that joined it.
  void finish() {
    state_.store(generation_);
    done_.wait([this] { return active_.load() == 0; });
    in_use_.store(false, std::memory_order_release);
  }

  /// Runs batches until none is left, and records this thread's busy time.
  void claim_batches(int thread) {
    std::chrono::steady_clock::time_point start;
    bool claimed = false;
    for (;;) {
      const std::int64_t begin = next_.fetch_add(batch_, std::memory_order_relaxed);
      if (begin >= n_) break;
      if (!claimed) start = std::chrono::steady_clock::now();
      claimed = true;
      fn_(context_, thread, static_cast<int>(begin), static_cast<int>(std::min<std::int64_t>(begin + batch_, n_)));
    }
    if (claimed)
      slots_[thread].busy_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  /// A team thread: waits for an open call it has not joined yet, joins it, and so on until stopped.
  /// It counts itself active before it reads the state, and the caller closes the state before it waits
  /// for no thread to be active: so a thread that reads an open state reads the fields of that call, and
  /// the caller does not change them until that thread is done.
  void serve(int thread) {
    std::uint64_t joined = 0;
    for (;;) {
      work_.wait([&] {
        const std::uint64_t s = state_.load();
        return s == stopped || ((s & open_bit) != 0 && s != joined);
      });
      active_.fetch_add(1);
      const std::uint64_t s = state_.load();
      if (s == stopped) {
        active_.fetch_sub(1);
        return;
      }
      if ((s & open_bit) != 0) {
        joined = s;
        claim_batches(thread);
      }
      if (active_.fetch_sub(1) == 1) done_.wake();
    }
  }

  detail::parking work_;  ///< where team threads wait for a call
  detail::parking done_;  ///< where the caller waits for the team threads to finish
  std::vector<slot> slots_;
  std::vector<std::thread> workers_;
  std::atomic<std::uint64_t> state_{0};
  std::atomic<int> active_{0};
  std::atomic<bool> in_use_{false};
  std::uint64_t generation_ = 0;  ///< even; written by the caller only
  // The call: written by the caller while no team thread is active, read by the threads that joined it.
  task fn_ = nullptr;
  void* context_ = nullptr;
  std::int64_t n_ = 0;
  std::int64_t batch_ = 1;
  alignas(64) std::atomic<std::int64_t> next_{0};  ///< the first job not yet claimed
};

namespace detail {
/// The team map_rect may use on this thread (see team_scope).
inline thread_local thread_team* installed_team = nullptr;
}  // namespace detail

/// Lets map_rect calls made on this thread, in a process without a cluster, run their jobs on `team`
/// for the scope's lifetime; restores the previous choice at its end. A map_rect inside a job still
/// runs its jobs serially on the thread that runs that job.
class team_scope {
 public:
  explicit team_scope(thread_team& team) : saved_(detail::installed_team) { detail::installed_team = &team; }
  ~team_scope() { detail::installed_team = saved_; }
  team_scope(const team_scope&) = delete;
  team_scope& operator=(const team_scope&) = delete;

 private:
  thread_team* saved_;
};

/// The team installed on this thread by the innermost team_scope, or null.
inline thread_team* current_team() { return detail::installed_team; }

}  // namespace maprect
