// The owner's rule for what a thief gets (src/balance/claims_engine.hpp: unstarted_jobs): from the back, its
// part of what is left beyond the jobs the thief still holds (half while the speeds are unknown, else by
// grant_share), at least one to a thief that holds none, "later" to a thief that holds enough, "none" once
// nothing is left; the owner runs batches of claim_batch() from the front, capped so that it answers asks about
// every claims_answer_seconds, leaves its last jobs to idle ranks that would outrun it, and runs a long batch
// aside (batch_aside) while it answers.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "src/balance/batch_aside.hpp"
#include "src/balance/claims_engine.hpp"

using maprect::detail::answer_batch;
using maprect::detail::claims_answer_seconds;
using maprect::detail::grant_for;
using maprect::detail::is_later;
using maprect::detail::job_range;
using maprect::detail::unstarted_jobs;

namespace {
bool same(job_range a, job_range b) { return a.begin == b.begin && a.end == b.end; }
}  // namespace

TEST_CASE("grants: half of what is left beyond the thief's held jobs, from the back") {
  unstarted_jobs jobs;
  jobs.reset(64);
  CHECK(same(jobs.take_front(1), {0, 16}));     // a quarter of 64
  CHECK(same(jobs.grant_back(0), {40, 64}));    // half of the 48 left, to a thief holding none
  CHECK(same(jobs.grant_back(10), {33, 40}));   // (24 - 10) / 2 = 7 more to a thief holding 10
  CHECK(same(jobs.take_front(1), {16, 20}));    // a quarter of 17
  CHECK(is_later(jobs.grant_back(13)));         // (13 - 13) / 2 = 0: later, and nothing moves
  CHECK(same(jobs.grant_back(11), {32, 33}));   // (13 - 11) / 2 = 1
  CHECK(jobs.end() == 20);
}

TEST_CASE("a range in a claim word: the same grants and batches, and the word holds where the ends are") {
  std::atomic<std::uint64_t> word{maprect::detail::pack_range(0, 64)};
  unstarted_jobs jobs;
  jobs.reset(0);
  jobs.attach(&word);
  CHECK(jobs.left() == 64);
  CHECK(same(jobs.take_front(1), {0, 16}));
  CHECK(same(jobs.grant_back(0), {40, 64}));
  CHECK(same(jobs.grant_back(10), {33, 40}));
  CHECK(is_later(jobs.grant_back(17)));  // (17 - 17) / 2 = 0: later, and nothing moves
  CHECK(maprect::detail::range_front(word.load()) == 16);
  CHECK(maprect::detail::range_back(word.load()) == 33);
  // Another rank of the host takes from the back of the same word: the owner sees it.
  word.store(maprect::detail::pack_range(16, 30));
  CHECK(jobs.left() == 14);
  jobs.drop_rest();
  CHECK(jobs.left() == 0);
  CHECK(jobs.end() == 30);
  CHECK(maprect::detail::range_back(word.load()) == 30);
}

TEST_CASE("a range in a claim word: an owner and thieves on other threads take every job once") {
  constexpr int n = 20000;
  std::atomic<std::uint64_t> word{maprect::detail::pack_range(0, n)};
  std::vector<std::atomic<int>> ran(n);
  for (auto& r : ran) r.store(0);
  auto mark = [&](job_range g) {
    for (int j = g.begin; j < g.end; ++j) ran[j].fetch_add(1);
  };
  std::thread owner([&] {
    unstarted_jobs jobs;
    jobs.attach(&word);
    for (job_range g = jobs.take_front(1, 1, 3); !g.empty(); g = jobs.take_front(1, 1, 3)) mark(g);
  });
  std::vector<std::thread> thieves;
  for (int t = 0; t < 3; ++t)
    thieves.emplace_back([&] {
      unstarted_jobs jobs;
      jobs.attach(&word);
      for (job_range g = jobs.grant_back(0, 1, 0.01); !g.empty(); g = jobs.grant_back(0, 1, 0.01))
        if (!is_later(g)) mark(g);
    });
  owner.join();
  for (std::thread& t : thieves) t.join();
  int twice = 0, never = 0;
  for (const auto& r : ran) {
    twice += r.load() > 1 ? 1 : 0;
    never += r.load() == 0 ? 1 : 0;
  }
  CHECK(twice == 0);
  CHECK(never == 0);
}

TEST_CASE("the owner's batches: a quarter of what is left, at least one job per team thread") {
  unstarted_jobs jobs;
  jobs.reset(10);
  CHECK(same(jobs.take_front(4), {0, 4}));   // a quarter of 10 is 2: a job for each of 4 threads
  CHECK(same(jobs.take_front(4), {4, 8}));
  CHECK(same(jobs.take_front(4), {8, 10}));  // fewer where fewer are left
  CHECK(jobs.take_front(4).empty());
}

TEST_CASE("grants: one job to an idle thief, none once nothing is left") {
  unstarted_jobs jobs;
  jobs.reset(2);
  CHECK(same(jobs.grant_back(0), {1, 2}));  // half of 2
  CHECK(same(jobs.grant_back(0), {0, 1}));  // at least one to a thief that holds none
  const job_range none = jobs.grant_back(0);
  CHECK(none.empty());
  CHECK_FALSE(is_later(none));
  CHECK(jobs.take_front(1).empty());
  CHECK(jobs.end() == 0);
}

TEST_CASE("grants: an owner that dropped its jobs (a failure) grants none, never later") {
  unstarted_jobs jobs;
  jobs.reset(10);
  jobs.drop_rest();
  for (int held : {0, 3, 20}) {
    const job_range g = jobs.grant_back(held);
    CHECK(g.empty());
    CHECK_FALSE(is_later(g));
  }
}

TEST_CASE("grants: none when the batch is smaller than the least worth a round trip, and nothing moves") {
  unstarted_jobs jobs;
  jobs.reset(20);
  const job_range declined = jobs.grant_back(0, 11);  // half of 20 is 10 < 11
  CHECK(declined.empty());
  CHECK_FALSE(is_later(declined));
  CHECK(jobs.left() == 20);
  CHECK(same(jobs.grant_back(0, 10), {10, 20}));
  CHECK(is_later(jobs.grant_back(10, 5)));  // a thief that holds enough still hears "later" first
}

TEST_CASE("asks: the least worth a batch, in the owner's jobs at its time per job") {
  using maprect::detail::ask_message;
  const ask_message ask = ask_message::of(true, 2, 0.003, 0.0005, 0.0);  // a round trip of 500 us
  CHECK(ask.least(0.0001) == 5);    // jobs of 100 us
  CHECK(ask.least(0.001) == 1);     // jobs dearer than the round trip: any batch is worth it
  CHECK(ask.least(0.0) == 1);       // nothing timed yet
  CHECK(ask.held(0.001, 0.001) == 5);  // 2 jobs held and 3 ms of other work
}

TEST_CASE("the owner's batches: at least the least worth a round trip, fewer where fewer are left") {
  unstarted_jobs jobs;
  jobs.reset(40);
  CHECK(same(jobs.take_front(1, 6), {0, 10}));   // a quarter of 40 is more than 6
  CHECK(same(jobs.take_front(1, 12), {10, 22}));  // a quarter of 30 is 7: 12
  CHECK(same(jobs.take_front(1, 12), {22, 34}));
  CHECK(same(jobs.take_front(1, 12), {34, 40}));  // the 6 left
}

TEST_CASE("the owner's batches: at most what answers asks in time, yet one per thread and the least worth a trip") {
  unstarted_jobs jobs;
  jobs.reset(48);
  CHECK(same(jobs.take_front(1, 1, answer_batch(0, 1)), {0, 1}));        // nothing timed: one job
  CHECK(same(jobs.take_front(1, 1, answer_batch(1e-3, 1)), {1, 2}));     // 1 ms jobs: one between answers
  CHECK(same(jobs.take_front(4, 1, answer_batch(1e-3, 4)), {2, 6}));     // but one per thread
  CHECK(same(jobs.take_front(1, 3, answer_batch(1e-3, 1)), {6, 9}));     // and the least worth a round trip
  CHECK(same(jobs.take_front(1, 1, answer_batch(2e-5, 1)), {9, 11}));    // 20 us jobs: 50 us worth, 2
  CHECK(same(jobs.take_front(1, 1, answer_batch(1e-7, 1)), {11, 20}));   // tiny jobs: a quarter of 37, 9
  CHECK(answer_batch(1e-6, 1) == static_cast<int>(claims_answer_seconds / 1e-6));
  // A team's batch lasts 50 us per thread: 4 threads at 5 us of wall time per job, 40 jobs.
  CHECK(answer_batch(5e-6, 4) == 40);
}

TEST_CASE("the owner's batches last 16 answers' cost where answering costs more than shared memory's poll") {
  using maprect::detail::answer_cost;
  answer_cost cost;
  CHECK(cost.seconds() == 0);
  CHECK(answer_batch(32e-6, 1, cost.seconds()) == 1);  // untimed: 50 us of 32 us jobs
  cost.add(8e-6);                                      // a poll of TCP
  CHECK(cost.seconds() == 8e-6);
  CHECK(answer_batch(32e-6, 1, cost.seconds()) == 4);  // 128 us of them
  CHECK(answer_batch(32e-6, 4, cost.seconds()) == 6);  // a team of 4: 200 us, as before
  cost.add(24e-6);                                     // a poll that answered an ask moves the mean by 1/16
  CHECK(cost.seconds() == Approx(9e-6));
  for (int i = 0; i < 200; ++i) cost.add(0.5e-6);      // shared memory's poll: back to 50 us batches
  CHECK(answer_batch(32e-6, 1, cost.seconds()) == 1);
}

TEST_CASE("grants by speed: each other rank's part at its speed, as if alike while either side is untimed") {
  using maprect::detail::grant_share;
  using maprect::detail::granted_jobs;
  CHECK(grant_share(0.0, 1e-3, 4) == 0.25);  // the owner untimed: a quarter, as among four alike
  CHECK(grant_share(1e-3, 0.0, 3) == Approx(1.0 / 3));  // the thief untimed
  CHECK(grant_share(0.0, 0.0, 2) == 0.5);
  CHECK(grant_share(1e-3, 1e-3, 2) == 0.5);  // two ranks alike: half, as ever
  CHECK(grant_share(1e-3, 1e-3, 4) == Approx(0.25));  // four alike: a quarter each
  // An owner 3 times slower than its thieves among 4 ranks: each thief's part is 3 / (1 + 3 * 3) of the rest.
  CHECK(grant_share(3e-3, 1e-3, 4) == Approx(0.3));
  unstarted_jobs jobs;
  jobs.reset(20);
  CHECK(same(jobs.grant_back(0, 1, grant_share(3e-3, 1e-3, 4)), {14, 20}));  // 0.3 of 20
  CHECK(same(jobs.grant_back(2, 1, grant_share(3e-3, 1e-3, 4)), {11, 14}));  // 0.3 of the 12 beyond 2 held: 3
  // The grant's size, as host memory's claims take it too: rounded down, at least one to a thief holding none.
  CHECK(granted_jobs(20, 0, 0.3) == 6);  // 0.3 * 20 is 5.999... in doubles
  CHECK(granted_jobs(3, 0, 0.25) == 1);
  CHECK(granted_jobs(3, 2, 0.25) == 0);  // holds enough: "later"
  // A thief 3 times slower than the owner among 4 ranks: 1 / (3 + 3) of what is left, not a quarter.
  CHECK(granted_jobs(12, 0, grant_share(1e-3, 3e-3, 4)) == 2);
}

TEST_CASE("asks: jobs the thief holds count by the ranks' paces where both are known, in whole jobs") {
  using maprect::detail::ask_message;
  // 3 of the owner's jobs, a thief at 1 ms per job of its own, 2 ms more
  ask_message ask = ask_message::of(true, 3, 0.002, 0.0, 0.001);
  CHECK(ask.held(0.003, 0.003) == 1);  // the thief 3x as fast: 1 job, and 2 ms at the owner's 3 ms per job, 1.67
  // A skewed range: the owner's jobs now cost 10 ms, its pace over the call 1 ms, as the thief's. The held
  // jobs are the owner's, as dear as its latest: 3 of them, not the 0.3 that 1 ms against 10 would make.
  CHECK(ask.held(0.010, 0.001) == 3);
  ask.thief_seconds = 0;
  CHECK(ask.held(0.003, 0.003) == 3);  // untimed thief: its held jobs count as the owner's own, 2 ms as 0.67
  ask.thief_seconds = 0.001;
  CHECK(ask.held(0.003, 0.0) == 3);    // untimed owner: the same
  // 0.99 of the owner's: 3 x 0.99 jobs and 2 ms of 3 make 3.64 jobs, rounded down to 3
  ask.thief_seconds = 0.00297;
  CHECK(ask.held(0.003, 0.003) == 3);
}

TEST_CASE("asks: a thief that ran some of the owner's jobs is compared with the owner on those jobs") {
  using maprect::detail::ask_message;
  // A skewed range: the owner's latest jobs cost 10.2 ms, its pace over the call is 1.7 ms (light jobs
  // first), the thief's own jobs took 1.1 ms and the owner's dear jobs granted to it 10.1 ms.
  const ask_message own = ask_message::of(true, 1, 0.0, 0.0, 0.0011);
  const ask_message on_owner = ask_message::of(true, 1, 0.0, 0.0, 0.0101, 0, true);
  CHECK_FALSE(own.on_owner_jobs());
  CHECK(on_owner.on_owner_jobs());
  CHECK(on_owner.wants());
  // By their own jobs the thief looks 1.5 times as fast, and the dear job it holds as 0.65 of one, which
  // rounded down to none gave it the owner's last job too. On the same jobs they are alike: 0.99, one job.
  CHECK(own.thief_per_owner_job(0.0102, 0.0017) == Approx(0.0011 / 0.0017));
  CHECK(on_owner.thief_per_owner_job(0.0102, 0.0017) == Approx(0.0101 / 0.0102));
  CHECK(on_owner.held(0.0102, 0.0017) == 1);
  CHECK(own.share(0.0102, 0.0017, 2) == Approx(0.0017 / (0.0011 + 0.0017)));
  CHECK(on_owner.share(0.0102, 0.0017, 2) == Approx(0.0102 / (0.0101 + 0.0102)));
  // The owner's last job stays with it while the thief still holds one as dear ("later"); a thief that holds
  // none gets it; a thief that wants none gets none.
  unstarted_jobs last;
  last.reset(1);
  CHECK(is_later(grant_for(last, on_owner, 0.0102, 0.0017, 1, 2)));
  const ask_message idle = ask_message::of(true, 0, 0.0, 0.0, 0.0101, 0, true);
  CHECK(same(grant_for(last, idle, 0.0102, 0.0017, 1, 2), {0, 1}));
  unstarted_jobs more;
  more.reset(4);
  const job_range none = grant_for(more, ask_message::of(false, 0, 0.0, 0.0, 0.0101, 0, true), 0.0102, 0.0017, 1, 2);
  CHECK((none.empty() && !is_later(none)));
  CHECK(more.left() == 4);
}

TEST_CASE("a slow owner leaves its last jobs to idle ranks that would run them all before its next one") {
  using maprect::detail::idle_thieves;
  idle_thieves none;
  CHECK_FALSE(none.outrun(1, 1.0));  // nobody has asked: the owner runs its jobs
  idle_thieves thieves;
  using maprect::detail::ask_message;
  ask_message ask = ask_message::of(true, 0, 0.0, 100e-6, 1e-3, 3);  // 3 idle ranks at 1 ms a job, 100 us apart
  thieves.note(ask, 0.0);
  CHECK(thieves.outrun(3, 3e-3));         // one round of 1 ms and a trip, against the owner's 3 ms
  CHECK(thieves.outrun(6, 3e-3));         // two rounds: 2.1 ms < 3 ms
  CHECK_FALSE(thieves.outrun(9, 3e-3));   // three rounds: 3.1 ms
  CHECK_FALSE(thieves.outrun(1, 1e-3));   // an owner as fast as they: one job is no sooner elsewhere
  CHECK_FALSE(thieves.outrun(1, 0.0));    // an untimed owner runs its jobs
  // The thief that asked still holds 2.5 ms of work. Alone, it would end the owner's last job after 3.6 ms;
  // among 3 the 5.5 ms of work take 1.83 ms each.
  ask.set_idle_ranks(1);
  thieves.note(ask, 2.5e-3);
  CHECK_FALSE(thieves.outrun(1, 3e-3));
  CHECK(thieves.outrun(1, 4e-3));
  ask.set_idle_ranks(3);
  thieves.note(ask, 2.5e-3);
  CHECK(thieves.outrun(3, 3e-3));
  CHECK(thieves.outrun(4, 3e-3));        // two jobs on each of the free ranks: 2 ms, and the trip
  CHECK_FALSE(thieves.outrun(5, 3e-3));  // the fifth ends at 3 ms on a free rank, at 3.5 ms on the busy one
}

namespace {

/// The schedule itself: each whole job on the idle rank that would end it first; whether all end within `within`.
bool ends_within_by_schedule(std::vector<maprect::detail::idle_rank> idle, int left, double within) {
  std::vector<double> free_at;
  std::vector<double> per_job;
  for (const auto& kind : idle)
    for (int r = 0; r < kind.ranks; ++r) free_at.push_back(kind.free_in), per_job.push_back(kind.per_job);
  if (free_at.empty() || within <= 0) return false;
  for (int j = 0; j < left; ++j) {
    std::size_t first = 0;
    for (std::size_t r = 1; r < free_at.size(); ++r)
      if (free_at[r] + per_job[r] < free_at[first] + per_job[first]) first = r;
    free_at[first] += per_job[first];
    if (free_at[first] >= within) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("idle ranks end an owner's last jobs within a time when each whole job goes where it ends first") {
  using maprect::detail::idle_rank;
  using maprect::detail::idle_ranks_end_within;
  // Jobs end at 1 ms on either rank; the second and third go to the faster one, which ends them at 1 and 1.5 ms.
  const std::vector<idle_rank> two{{0.0, 1e-3, 1}, {0.5e-3, 0.5e-3, 1}};
  CHECK(idle_ranks_end_within(two.data(), 2, 3, 1.6e-3));
  CHECK_FALSE(idle_ranks_end_within(two.data(), 2, 3, 1.5e-3));  // ending at the time is not within it
  CHECK_FALSE(idle_ranks_end_within(two.data(), 2, 4, 1.6e-3));  // the fourth ends at 2 ms
  CHECK(idle_ranks_end_within(two.data(), 2, 0, 1e-9));          // no jobs left: nothing to wait for
  CHECK_FALSE(idle_ranks_end_within(two.data(), 0, 1, 1.0));     // nobody idle
  CHECK_FALSE(idle_ranks_end_within(two.data(), 2, 1, 0.0));     // no time to end any
  CHECK_FALSE(idle_ranks_end_within(two.data(), 2, 1, -1.0));
  // Ranks alike count as many: 3 at 1 ms end 6 jobs within 2.5 ms, not 7.
  const idle_rank alike{0.0, 1e-3, 3};
  CHECK(idle_ranks_end_within(&alike, 1, 6, 2.5e-3));
  CHECK_FALSE(idle_ranks_end_within(&alike, 1, 7, 2.5e-3));
  // The answer costs one step per kind of rank, however many jobs: 1000 ranks of 1 ns jobs within 1 s.
  const idle_rank many{0.0, 1e-9, 1000};
  CHECK(idle_ranks_end_within(&many, 1, 2000000000, 1.0));
  const idle_rank countless{0.0, 1e-300, 2000000000};  // more job ends than a count holds
  CHECK(idle_ranks_end_within(&countless, 1, 2000000000, 1.0));
  // The same answer as the schedule itself, on 2000 mixes of busy and free ranks, paces and times.
  unsigned seed = 12345;
  const auto next = [&seed](int n) { return static_cast<int>((seed = seed * 1103515245u + 12345u) >> 16) % n; };
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<idle_rank> idle;
    for (int k = 1 + next(4); k > 0; --k)
      idle.push_back({next(4) * 0.25e-3, (1 + next(8)) * 0.125e-3, next(3)});
    const int left = next(12);
    // Off the grid of job ends (multiples of 0.125 ms), where the two sum their times in another order.
    const double within = (next(40) + 0.37) * 0.1e-3;
    INFO("trial " << trial << ": " << left << " jobs within " << within);
    CHECK(idle_ranks_end_within(idle.data(), static_cast<int>(idle.size()), left, within) ==
          ends_within_by_schedule(idle, left, within));
  }
}

TEST_CASE("a batch aside runs on its own thread while the caller answers, and ends when the batch does") {
  maprect::detail::batch_aside aside;
  for (int round = 0; round < 3; ++round) {  // the thread stays for the next batch
    std::atomic<int> answers{0};
    std::atomic<bool> answered{false};
    std::thread::id ran_on;
    bool saw_answer = false;
    // The batch cannot end before the caller answered once: it waits for that (at most 20 s, then fails).
    const std::function<void()> batch = [&] {
      ran_on = std::this_thread::get_id();
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!answered.load() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
      saw_answer = answered.load();
    };
    aside.run(batch, [&] { answers.fetch_add(1), answered.store(true); }, 1e-4);
    CHECK(saw_answer);
    CHECK(answers.load() >= 1);
    CHECK(ran_on != std::this_thread::get_id());
  }
}

TEST_CASE("asks: an idle thief gets none of the jobs it would end after the owner ends them all") {
  using maprect::detail::ask_message;
  // The owner at 4 ms a job; an idle thief 3 times slower (12 ms), and one alike (4 ms), on their own jobs.
  const ask_message slow = ask_message::of(true, 0, 0.0, 0.0, 0.012);
  const ask_message alike = ask_message::of(true, 0, 0.0, 0.0, 0.004);
  unstarted_jobs one, two;
  one.reset(1);
  two.reset(2);
  // One job left: the owner ends it (and half of the one it runs) in 6 ms, the slow thief in 12 ms: none, and
  // the owner keeps it. Two left: 10 ms against 12 ms, none still.
  const job_range to_slow = grant_for(one, slow, 0.004, 0.004, 1, 16);
  CHECK((to_slow.empty() && !is_later(to_slow)));
  CHECK(one.left() == 1);
  CHECK(grant_for(two, slow, 0.004, 0.004, 1, 16).empty());
  // A thief alike starts the last job while the owner still runs its current one: it gets it.
  CHECK(same(grant_for(one, alike, 0.004, 0.004, 1, 16), {0, 1}));
  // Four left: 18 ms against 12 ms, the slow thief gets one from the back.
  unstarted_jobs four;
  four.reset(4);
  CHECK(same(grant_for(four, slow, 0.004, 0.004, 1, 16), {3, 4}));
  // Untimed (either rank), the rule grants as among ranks alike.
  unstarted_jobs untimed;
  untimed.reset(1);
  CHECK(same(grant_for(untimed, ask_message::of(true, 0, 0.0, 0.0, 0.0), 0.004, 0.004, 1, 16), {0, 1}));
}
