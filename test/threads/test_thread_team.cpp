// thread_team on its own: every job of a range runs once, the busy times add up, a failing share on the
// calling thread comes back after the team's threads are done, a run inside a run stays on its thread,
// and idle team threads block instead of spinning.
#include <catch2/catch.hpp>

#include <maprect/thread_team.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/matchers.hpp"

using maprect::thread_team;
using maprect::test::message_contains;

namespace {

/// Counts how often each job ran and which thread ran it.
struct coverage {
  std::vector<std::atomic<int>> runs;
  std::vector<std::atomic<int>> thread_of;
  explicit coverage(int n) : runs(static_cast<std::size_t>(n)), thread_of(static_cast<std::size_t>(n)) {}
  static void task(void* self, int thread, int begin, int end) {
    auto& me = *static_cast<coverage*>(self);
    for (int j = begin; j < end; ++j) {
      me.runs[static_cast<std::size_t>(j)].fetch_add(1);
      me.thread_of[static_cast<std::size_t>(j)].store(thread);
    }
  }
};

void spin_for(std::chrono::microseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

}  // namespace

TEST_CASE("a team has the size it was made with, and refuses fewer than one thread") {
  CHECK(thread_team(1).size() == 1);
  CHECK(thread_team(3).size() == 3);
  CHECK_THROWS_MATCHES(thread_team(0), std::invalid_argument, message_contains({"thread_team", "at least 1", "0"}));
  CHECK_THROWS_MATCHES(thread_team(-2), std::invalid_argument, message_contains({"-2"}));
}

TEST_CASE("run covers every job of the range exactly once, for any size and batch") {
  for (int T : {1, 2, 3, 4, 7}) {
    thread_team team(T);
    for (int n : {0, 1, T - 1, T + 1, 64, 513})
      for (int batch : {0, 1, 3, 1000}) {
        INFO("T = " << T << ", n = " << n << ", batch = " << batch);
        coverage c(n);
        team.run(n, batch, &coverage::task, &c);
        int wrong = 0, bad_thread = 0;
        for (int j = 0; j < n; ++j) {
          wrong += c.runs[static_cast<std::size_t>(j)].load() != 1;
          const int t = c.thread_of[static_cast<std::size_t>(j)].load();
          bad_thread += t < 0 || t >= T;
        }
        CHECK(wrong == 0);
        CHECK(bad_thread == 0);
      }
  }
}

TEST_CASE("the busy times of a call bracket the work of its threads") {
  thread_team team(2);
  struct timed {
    static void task(void*, int, int begin, int end) { spin_for(std::chrono::microseconds(200) * (end - begin)); }
  };
  team.run(20, 1, &timed::task, nullptr);
  const maprect::team_busy b = team.last_call_busy();
  CHECK(b.fastest_seconds >= 0);
  CHECK(b.slowest_seconds >= b.fastest_seconds);
  // 20 jobs of 200 us on two threads: the busier one worked at least half of 4 ms.
  CHECK(b.slowest_seconds >= 0.002);
  CHECK(b.slowest_seconds == std::max(team.busy_seconds(0), team.busy_seconds(1)));
  CHECK(b.fastest_seconds == std::min(team.busy_seconds(0), team.busy_seconds(1)));
  CHECK_THROWS_AS(team.busy_seconds(2), std::out_of_range);
  thread_team alone(1);
  alone.run(5, 1, &timed::task, nullptr);
  CHECK(alone.last_call_busy().slowest_seconds >= 0.001);
  CHECK(alone.last_call_busy().fastest_seconds == alone.last_call_busy().slowest_seconds);
}

TEST_CASE("an exception from the calling thread's share comes back after the others, and the team goes on") {
  thread_team team(3);
  struct failing {
    std::atomic<int> ran{0};
    std::atomic<bool> caller_ran{false};
    static void task(void* self, int thread, int begin, int end) {
      auto& me = *static_cast<failing*>(self);
      me.ran.fetch_add(end - begin);
      if (thread == 0) {
        me.caller_ran.store(true);
        throw std::domain_error("share of the caller");
      }
      // The team's threads hold their first batch until the caller has one, so that a slow caller (as under
      // a sanitizer) still gets a share; the bound keeps a broken team from hanging the test.
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!me.caller_ran.load() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
      spin_for(std::chrono::microseconds(50));
    }
  };
  failing f;
  CHECK_THROWS_MATCHES(team.run(64, 1, &failing::task, &f), std::domain_error,
                       message_contains({"share of the caller"}));
  coverage c(100);
  team.run(100, 2, &coverage::task, &c);
  int total = 0;
  for (auto& r : c.runs) total += r.load();
  CHECK(total == 100);
}

TEST_CASE("a run inside a job runs on the job's thread, and a busy team serves a second caller alone") {
  thread_team team(3);
  struct nested {
    thread_team* team;
    std::atomic<int> inner_elsewhere{0}, inner_runs{0};
    static void inner(void* self, int thread, int begin, int end) {
      auto& me = *static_cast<nested*>(self);
      if (thread != 0) me.inner_elsewhere.fetch_add(1);
      me.inner_runs.fetch_add(end - begin);
    }
    static void outer(void* self, int, int begin, int end) {
      auto& me = *static_cast<nested*>(self);
      for (int j = begin; j < end; ++j) me.team->run(5, 1, &inner, self);
    }
  };
  nested n{&team};
  team.run(12, 1, &nested::outer, &n);
  CHECK(n.inner_runs.load() == 60);
  CHECK(n.inner_elsewhere.load() == 0);

  // Two threads share one team: whichever finds it busy runs its range alone; both cover their ranges.
  coverage a(3000), b(3000);
  std::thread other([&] {
    for (int r = 0; r < 20; ++r) team.run(150, 1, &coverage::task, &b);
  });
  for (int r = 0; r < 20; ++r) team.run(150, 1, &coverage::task, &a);
  other.join();
  int total_a = 0, total_b = 0;
  for (auto& r : a.runs) total_a += r.load();
  for (auto& r : b.runs) total_b += r.load();
  CHECK(total_a == 20 * 150);
  CHECK(total_b == 20 * 150);
}

TEST_CASE("idle team threads block after a short spin instead of polling their cores") {
  thread_team team(4);
  coverage c(64);
  team.run(64, 1, &coverage::task, &c);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the spin: the threads are blocked now
  const double before = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double used = cpu_seconds() - before;
  INFO("CPU seconds used by an idle team of 4 over 0.2 s: " << used);
  CHECK(used < 0.02);  // three spinning threads would use about 0.6 s
  // ... and they wake for the next call.
  coverage d(64);
  team.run(64, 1, &coverage::task, &d);
  int total = 0;
  for (auto& r : d.runs) total += r.load();
  CHECK(total == 64);
}

TEST_CASE("a team with no spin blocks at once and still runs every job") {
  thread_team team(3, std::chrono::nanoseconds(0));
  for (int r = 0; r < 200; ++r) {
    coverage c(17);
    team.run(17, 1, &coverage::task, &c);
    int total = 0;
    for (auto& x : c.runs) total += x.load();
    REQUIRE(total == 17);
  }
}
