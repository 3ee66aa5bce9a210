// Chunk plans and the share tuner: who runs which jobs, and when the root's share moves.
#include <catch2/catch.hpp>

#include "src/balance/share_tuner.hpp"
#include "src/protocol/chunk_plan.hpp"

using maprect::detail::call_timing;
using maprect::detail::chunk_plan;
using maprect::detail::rank_layout;
using maprect::detail::share_tuner;

TEST_CASE("a plan gives the root its share and splits the rest evenly, in rank order") {
  const chunk_plan even = chunk_plan::even(10, 3);
  CHECK(even.root_jobs == 3);
  CHECK(even.first(0) == 0);
  CHECK(even.first(1) == 3);
  CHECK(even.first(2) == 6);
  CHECK(even.first(3) == 10);
  CHECK(even.jobs(2) == 4);

  const chunk_plan lean{10, 3, 1};  // the root keeps one job; 9 go to two workers
  CHECK(lean.jobs(0) == 1);
  CHECK(lean.jobs(1) == 4);
  CHECK(lean.jobs(2) == 5);
  const chunk_plan all{5, 4, 5};  // the root runs everything
  for (int r = 1; r < 4; ++r) CHECK(all.jobs(r) == 0);
  const chunk_plan none{5, 2, 0};
  CHECK(none.jobs(1) == 5);
  const chunk_plan fewer_jobs_than_ranks = chunk_plan::even(2, 4);
  int total = 0;
  for (int r = 0; r < 4; ++r) total += fewer_jobs_than_ranks.jobs(r);
  CHECK(total == 2);
}

TEST_CASE("a layout for the workers' rows starts at the first worker job") {
  rank_layout l;
  l.assign_workers(chunk_plan{10, 3, 2}, 4);  // 4 values per job; jobs 2..5 and 6..9 on the workers
  CHECK(l.counts == std::vector<int>{0, 16, 16});
  CHECK(l.displs == std::vector<int>{0, 0, 16});
}

TEST_CASE("block offsets and a worker's answer size follow the jobs' output counts") {
  const std::vector<int> counts{2, 0, 1, 3};  // outputs per job; 5 rows per output
  std::vector<int> at(counts.size());
  maprect::detail::block_offsets(counts.data(), 4, 5, at.data());
  CHECK(at == std::vector<int>{0, 10, 10, 15});
  const int status = maprect::detail::wire::status_doubles, planned = status + 30;
  CHECK(maprect::detail::answer_doubles(planned, at.data(), 4, 4) == planned);  // nothing taken over
  CHECK(maprect::detail::answer_doubles(planned, at.data(), 4, 3) == status + 15);
  CHECK(maprect::detail::answer_doubles(planned, at.data(), 4, 1) == status + 10);
  CHECK(maprect::detail::answer_doubles(planned, at.data(), 4, 0) == status);  // all taken over
}

namespace {

/// Timings of a call of `plan` whose jobs cost `root_job` s on the root and `worker_job` s on each
/// worker, with `check` s of data check and `latency` s of messages.
call_timing timing(const chunk_plan& plan, double check, double root_job, double worker_job, double latency) {
  call_timing t;
  t.check = check;
  t.own = plan.root_jobs * root_job;
  t.worker_busy.assign(plan.ranks, 0.0);
  double slowest = 0;
  for (int r = 1; r < plan.ranks; ++r) slowest = std::max(slowest, t.worker_busy[r] = plan.jobs(r) * worker_job);
  const double root_done = check + t.own, answers = latency + slowest;
  t.arrival = std::max(root_done, answers);
  t.waited = std::max(0.0, answers - root_done);
  return t;
}

/// Feeds one window of identical calls to a tuner that is past its warm-up call and returns the window's
/// proposal, made with or without take-over.
int feed_window(share_tuner& tuner, const chunk_plan& plan, double check, double root_job, double worker_job,
                double latency, bool take_over = false) {
  int proposal = -1;
  for (int c = 0; c < share_tuner::window; ++c) {
    tuner.record(plan, timing(plan, check, root_job, worker_job, latency));
    const int p = tuner.proposal(plan, take_over);
    if (c < share_tuner::window - 1) CHECK(p == -1);  // decided once per window
    proposal = p;
  }
  return proposal;
}

/// Feeds `windows` windows of identical calls (plus the warm-up call) and returns the last proposal, made
/// with or without take-over.
int feed(share_tuner& tuner, const chunk_plan& plan, int windows, double check, double root_job, double worker_job,
         double latency, bool take_over = false) {
  int proposal = -1;
  tuner.record(plan, timing(plan, check, root_job, worker_job, latency));  // the warm-up call: not counted
  for (int w = 0; w < windows; ++w)
    proposal = feed_window(tuner, plan, check, root_job, worker_job, latency, take_over);
  return proposal;
}

}  // namespace

TEST_CASE("balanced ranks keep the even split") {
  share_tuner tuner;
  tuner.restart(1e-3, true);
  const chunk_plan plan = chunk_plan::even(64, 2);
  CHECK(feed(tuner, plan, 3, 0, 4e-6, 4e-6, 0) == -1);
}

TEST_CASE("a root slowed by its data check hands jobs to the workers, once two windows agree") {
  share_tuner tuner;
  tuner.restart(1e-3, true);  // re-planning took 1 ms
  const chunk_plan plan = chunk_plan::even(256, 2);
  // 55 us per job everywhere, 220 us of data check on the root: moving 2 jobs balances 218 us against 220.
  CHECK(feed(tuner, plan, 1, 220e-6, 55e-6, 55e-6, 0) == -1);  // the first window only names a candidate
  share_tuner again;
  again.restart(1e-3, true);
  CHECK(feed(again, plan, 2, 220e-6, 55e-6, 55e-6, 0) == 126);
}

TEST_CASE("two windows agree when the first one's share pays by the second one's timings") {
  const chunk_plan plan = chunk_plan::even(256, 2);
  // 60 us per job on the root and 50 on the worker: the best share is 116. At 61 us it is 115, where the
  // first window's 116 still saves 732 of 7808 us.
  share_tuner tuner;
  tuner.restart(1e-3, true);
  tuner.record(plan, timing(plan, 0, 60e-6, 50e-6, 0));  // warm-up
  CHECK(feed_window(tuner, plan, 0, 60e-6, 50e-6, 0) == -1);
  CHECK(feed_window(tuner, plan, 0, 61e-6, 50e-6, 0) == 115);
  // When the second window finds the worker the slower rank, the first one's share would cost time: no
  // proposal, and the second one's share is the next candidate.
  share_tuner turned;
  turned.restart(1e-3, true);
  turned.record(plan, timing(plan, 0, 60e-6, 50e-6, 0));
  CHECK(feed_window(turned, plan, 0, 60e-6, 50e-6, 0) == -1);
  CHECK(feed_window(turned, plan, 0, 50e-6, 60e-6, 0) == -1);
  CHECK(feed_window(turned, plan, 0, 50e-6, 61e-6, 0) == 141);
}

TEST_CASE("slow messages to tiny jobs give the root more of them") {
  share_tuner tuner;
  tuner.restart(100e-6, true);
  const chunk_plan plan = chunk_plan::even(512, 2);
  // 0.1 us per job, 4 us of messages: the root should run 20 more jobs than the worker.
  const int proposal = feed(tuner, plan, 2, 0, 0.1e-6, 0.1e-6, 4e-6);
  CHECK(proposal == 276);
}

TEST_CASE("a gain that cannot pay for moving the share is no proposal") {
  share_tuner tuner;
  tuner.restart(1.0, true);  // moving the share took a second: 50 calls of the gain below do not pay for it
  const chunk_plan plan = chunk_plan::even(256, 2);
  CHECK(feed(tuner, plan, 3, 220e-6, 55e-6, 55e-6, 0) == -1);
}

TEST_CASE("proposals stop after their budget until the data are new") {
  share_tuner tuner;
  tuner.restart(1e-3, true);
  chunk_plan plan = chunk_plan::even(256, 2);
  int made = 0;
  for (int round = 0; round < 10; ++round) {
    // Every round the worker looks slower, so that every round wants a new share.
    const int p = feed(tuner, plan, 2, 0, 50e-6, (60 + 10 * round) * 1e-6, 0);
    if (p < 0) continue;
    ++made;
    plan.root_jobs = p;
    tuner.restart(1e-3, false);
  }
  CHECK(made == share_tuner::max_proposals);
  tuner.restart(1e-3, true);
  CHECK(feed(tuner, plan, 2, 0, 50e-6, 200e-6, 0) > plan.root_jobs);
}

TEST_CASE("the fastest timings decide: a rank slowed for a moment does not move the share") {
  share_tuner tuner;
  tuner.restart(1e-3, true);
  const chunk_plan plan = chunk_plan::even(64, 2);
  tuner.record(plan, timing(plan, 0, 4e-6, 4e-6, 0));  // warm-up
  int proposal = -1;
  for (int c = 0; c < 2 * share_tuner::window; ++c) {
    // Every third call the worker's core is taken from it for a while.
    const double worker_job = c % 3 == 0 ? 12e-6 : 4e-6;
    tuner.record(plan, timing(plan, 0, 4e-6, worker_job, 0));
    const int p = tuner.proposal(plan);
    if (p >= 0) proposal = p;
  }
  CHECK(proposal == -1);
}

TEST_CASE("with take-over, a slower worker leaves the root at the even split") {
  const chunk_plan plan = chunk_plan::even(64, 2);
  // 4 us per job on the root, 8 on the worker: a static split gives the root about two thirds.
  share_tuner fixed;
  fixed.restart(1e-3, true);
  CHECK(feed(fixed, plan, 2, 0, 4e-6, 8e-6, 0) == 43);
  // With take-over the root runs the worker's last jobs anyway; more of its own could only hold it up
  // when the worker speeds up again.
  share_tuner taking;
  taking.restart(1e-3, true);
  CHECK(feed(taking, plan, 3, 0, 4e-6, 8e-6, 0, true) == -1);
}

TEST_CASE("with take-over, a root share above the even split comes back to it") {
  const chunk_plan plan{64, 2, 40};
  // 5 us per job on the root, 6 on the worker: a static split would give the root 35 jobs.
  share_tuner fixed;
  fixed.restart(1e-3, true);
  CHECK(feed(fixed, plan, 2, 0, 5e-6, 6e-6, 0) == 35);
  share_tuner taking;
  taking.restart(1e-3, true);
  CHECK(feed(taking, plan, 2, 0, 5e-6, 6e-6, 0, true) == 32);
}

TEST_CASE("with take-over, a root slowed by its data check still hands jobs to the workers") {
  share_tuner tuner;
  tuner.restart(1e-3, true);
  // As without take-over: 220 us of check against 55 us per job everywhere moves 2 jobs.
  CHECK(feed(tuner, chunk_plan::even(256, 2), 2, 220e-6, 55e-6, 55e-6, 0, true) == 126);
}

TEST_CASE("with take-over, every share up to the balance predicts the same call: the plan stays") {
  share_tuner tuner;
  tuner.restart(1e-3, true);
  const chunk_plan plan{64, 3, 10};  // two workers of 27 jobs each; the root finishes first and takes over
  CHECK(feed(tuner, plan, 3, 0, 4e-6, 4e-6, 2e-6, true) == -1);
}

TEST_CASE("with the workers' nodes made while they run, the root leaves them the jobs that time pays for") {
  // 512 jobs of 0.13 us on both ranks, 2 us of data check; making a worker job's node takes the root 0.03 us,
  // between its own jobs. The root is the slower side, so the messages' time is not seen (it never waits).
  // Balance: 2 + 0.13 n + 0.03 (512 - n) = 0.13 (512 - n), n = 214; without the nodes, 2 + 0.13 n = 0.13 (512 - n).
  const int J = 512;
  const double check = 2e-6, job = 0.13e-6, node = 0.03e-6, latency = 1e-6;
  const chunk_plan plan = chunk_plan::even(J, 2);
  auto call = [&](bool timed) {
    call_timing t = timing(plan, check, job, job, latency);
    t.nodes_during_own = J - plan.root_jobs;
    t.own += t.nodes_during_own * node;  // the node making counts in the root's own time
    t.node_job = timed ? node : 0.0;
    t.arrival = std::max(check + t.own, latency + plan.jobs(1) * job);
    return t;
  };
  share_tuner tuner;
  tuner.restart(100e-6, true);
  tuner.record(plan, call(false));  // warm-up
  int proposal = -1;
  for (int c = 0; c < 2 * share_tuner::window; ++c) {
    const bool timed = tuner.wants_node_timing();
    CHECK(timed == (c % share_tuner::window == 0));  // once per window
    tuner.record(plan, call(timed));
    const int p = tuner.proposal(plan, true);
    if (p >= 0) proposal = p;
  }
  CHECK(proposal >= 213);
  CHECK(proposal <= 215);
  share_tuner after_the_call;  // the nodes made after the answers: only the check moves jobs
  after_the_call.restart(10e-6, true);  // re-planning as cheap as a call: a 1 us gain is worth it
  CHECK(feed(after_the_call, plan, 2, check, job, job, latency, true) == 248);
}
