#pragma once
/// \file Waiting for a condition another thread makes true: a short spin, then a block on a condition
/// variable, so that an idle thread gives its core back instead of polling it forever.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace maprect::detail {

/// Lets the core's other hardware thread run while this one polls.
inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// A place where threads wait for a condition: wait() spins for at most the spin budget, then blocks until
/// wake() is called after the condition became true. The condition must read atomics only, and the thread
/// that makes it true must do so with a sequentially consistent store before calling wake(): then a waiter
/// either sees the change before it blocks or is woken (it counts itself in `sleepers_` before its last look).
class parking {
 public:
  explicit parking(std::chrono::nanoseconds spin) : spin_(spin) {}

  /// Returns once ready() is true.
  template <class Ready>
  void wait(const Ready& ready) {
    if (spin_until(ready)) return;
    std::unique_lock<std::mutex> lock(mutex_);
    sleepers_.fetch_add(1);
    cv_.wait(lock, ready);
    sleepers_.fetch_sub(1);
  }

  /// Wakes the blocked waiters (costs one atomic load when none is blocked).
  void wake() {
    if (sleepers_.load() == 0) return;
    { const std::lock_guard<std::mutex> lock(mutex_); }  // a waiter between its count and its block is now blocked
    cv_.notify_all();
  }

 private:
  template <class Ready>
  bool spin_until(const Ready& ready) const {
    if (ready()) return true;
    if (spin_.count() <= 0) return false;
    const auto until = std::chrono::steady_clock::now() + spin_;
    for (;;) {
      for (int i = 0; i < 64; ++i) {  // a clock read costs about as much as 64 polls
        spin_pause();
        if (ready()) return true;
      }
      if (std::chrono::steady_clock::now() >= until) return ready();
    }
  }

  std::chrono::nanoseconds spin_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::atomic<int> sleepers_{0};
};

}  // namespace maprect::detail
