// The cost model with unequal ranks and the claims engine: per-rank job speeds, the least compute any schedule
// reaches, the engine's job-by-job schedule and its termination, against closed forms worked out by hand.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "src/plan/cost_model.hpp"

using maprect::plan::claimed_compute_seconds;
using maprect::plan::claims_schedule_seconds;
using maprect::plan::cost_inputs;
using maprect::plan::predict;
using maprect::plan::rank_scale;
using maprect::plan::static_compute_seconds;
using maprect::plan::termination_seconds;

namespace {

/// J equal jobs of `job_s`, rank r's jobs `scales[r]` times as long, links that cost nothing.
cost_inputs equal_jobs(int jobs, double job_s, std::vector<double> scales) {
  cost_inputs in;
  in.jobs = jobs;
  in.job_s = job_s;
  in.job_times_s.assign(static_cast<std::size_t>(jobs), job_s);
  in.rank_job_scale = std::move(scales);
  in.local = {0, 1e300, 0};
  in.remote = {0, 1e300, 0};
  in.ranks_per_host = 1024;
  in.request_bytes = 0;
  return in;
}

}  // namespace

TEST_CASE("rank speeds: equal ranks share equal jobs exactly, whichever balancing", "[plan]") {
  const cost_inputs in = equal_jobs(48, 1e-3, {1, 1, 1, 1});
  CHECK(claimed_compute_seconds(in, 4, 1) == Approx(12e-3).epsilon(1e-12));
  CHECK(claims_schedule_seconds(in, 4, 1) == Approx(12e-3).epsilon(1e-12));
  CHECK(static_compute_seconds(in, 4, 1) == Approx(12e-3).epsilon(1e-12));
}

TEST_CASE("rank speeds: claims reach sum of work / sum of speeds where whole jobs fit it", "[plan]") {
  // Speeds 2 and 1 jobs per ms: 48 ms of work / 3 = 16 ms. Statically the worker's 24 jobs take 24 ms.
  const cost_inputs in = equal_jobs(48, 1e-3, {0.5, 1});
  CHECK(claimed_compute_seconds(in, 2, 1) == Approx(16e-3).epsilon(1e-12));
  CHECK(claims_schedule_seconds(in, 2, 1) == Approx(16e-3).epsilon(1e-12));
  CHECK(static_compute_seconds(in, 2, 1) == Approx(24e-3).epsilon(1e-12));
  const auto p = predict(in, 2, 1);
  CHECK(p.compute_claims_s == Approx(16e-3).epsilon(1e-12));
  CHECK(p.compute_bound_s == Approx(16e-3).epsilon(1e-12));
  CHECK(p.compute_s == Approx(24e-3).epsilon(1e-12));
}

TEST_CASE("rank speeds: one rank 3x slower, 48 jobs of 1 ms on 4 ranks", "[plan]") {
  // Speeds 1, 1, 1, 1/3: the bound is 48 / (3 + 1/3) = 14.4 ms. Whole jobs: at 12 ms the fast ranks are out of
  // work and the slow one has 8 unstarted (one of them starting); they claim one each at 12, 13 and 14 ms while
  // it runs its fifth job to 15 ms: 15 ms. The static split leaves the slow rank's 12 jobs to it: 36 ms.
  for (const std::vector<double>& scales : {std::vector<double>{1, 1, 1, 3}, std::vector<double>{3, 1, 1, 1}}) {
    const cost_inputs in = equal_jobs(48, 1e-3, scales);
    CHECK(claimed_compute_seconds(in, 4, 1) == Approx(14.4e-3).epsilon(1e-12));
    CHECK(claims_schedule_seconds(in, 4, 1) == Approx(15e-3).epsilon(1e-12));
    CHECK(static_compute_seconds(in, 4, 1) == Approx(36e-3).epsilon(1e-12));
    const auto p = predict(in, 4, 1);
    CHECK(p.compute_s == Approx(36e-3).epsilon(1e-12));
    CHECK(p.compute_bound_s == Approx(14.4e-3).epsilon(1e-12));
    CHECK(p.total_claims_s == Approx(15e-3).epsilon(1e-12));  // free links, no root work, no termination
  }
}

TEST_CASE("rank speeds: the last claimed batch sets the claims' granularity", "[plan]") {
  // Batches of 4: at 12 ms two fast ranks take the slow worker's last 8 jobs, 4 each, to 16 ms.
  cost_inputs in = equal_jobs(48, 1e-3, {1, 1, 1, 3});
  in.claim_batch = 4;
  CHECK(claims_schedule_seconds(in, 4, 1) == Approx(16e-3).epsilon(1e-12));
  in.claim_batch = 1;
  in.rank_job_scale = {3, 1};  // a slow root at 2 ranks: 48 / (1 + 1/3) = 36 ms, 72 ms statically
  CHECK(claimed_compute_seconds(in, 2, 1) == Approx(36e-3).epsilon(1e-12));
  CHECK(static_compute_seconds(in, 2, 1) == Approx(72e-3).epsilon(1e-12));
  CHECK(claims_schedule_seconds(in, 2, 1) == Approx(36e-3).epsilon(1e-12));
}

TEST_CASE("rank speeds: a fast rank takes a slow one's job, a slow rank leaves a fast one's to it", "[plan]") {
  // 2 jobs on 3 ranks: the root owns none, workers 1 and 2 one each, worker 1 ten times slower. The root
  // claims worker 1's job at 0 (1 ms against its 10); worker 1 would need 10 ms for worker 2's, which worker 2
  // runs in 1: it claims nothing.
  const cost_inputs in = equal_jobs(2, 1e-3, {1, 10, 1});
  CHECK(claims_schedule_seconds(in, 3, 1) == Approx(1e-3).epsilon(1e-12));
  CHECK(static_compute_seconds(in, 3, 1) == Approx(10e-3).epsilon(1e-12));
  const cost_inputs idle = equal_jobs(3, 1e-3, {1, 1, 1, 10});
  CHECK(claims_schedule_seconds(idle, 8, 1) == Approx(1e-3).epsilon(1e-12));  // more ranks than jobs
}

TEST_CASE("rank speeds: ranks beyond the measured ones run at their median", "[plan]") {
  const cost_inputs in = equal_jobs(8, 1e-3, {1, 3});
  CHECK(rank_scale(in, 1) == 3);
  CHECK(rank_scale(in, 5) == 2);
  CHECK(rank_scale(equal_jobs(8, 1e-3, {}), 7) == 1);
  // 4 ranks: 1, 3, 2, 2 -> speeds 1 + 1/3 + 1/2 + 1/2 = 7/3 per ms; 8 ms of work in 24/7 ms.
  CHECK(claimed_compute_seconds(in, 4, 1) == Approx(8e-3 * 3 / 7).epsilon(1e-12));
  CHECK(static_compute_seconds(in, 4, 1) == Approx(3 * 2e-3).epsilon(1e-12));  // worker 1's 2 jobs
}

TEST_CASE("rank speeds: threads of a rank share its speed", "[plan]") {
  // 2 ranks x 2 threads, the worker's threads half as fast: speeds 2 + 1 per ms; 24 jobs of 1 ms in 8 ms.
  const cost_inputs in = equal_jobs(24, 1e-3, {1, 2});
  CHECK(claimed_compute_seconds(in, 2, 2) == Approx(8e-3).epsilon(1e-12));
  CHECK(claims_schedule_seconds(in, 2, 2) == Approx(8e-3).epsilon(1e-12));
  CHECK(static_compute_seconds(in, 2, 2) == Approx(12e-3).epsilon(1e-12));
}

TEST_CASE("rank speeds: the claims engine ends with O(P) messages", "[plan]") {
  cost_inputs in = equal_jobs(64, 1e-3, {});
  in.ranks_per_host = 4;
  in.local = {1e-6, 1e300, 0.5e-6};
  in.remote = {10e-6, 1e300, 2e-6};
  CHECK(termination_seconds(in, 1) == 0);
  CHECK(termination_seconds(in, 4) == Approx(3 * 0.5e-6).epsilon(1e-12));         // one host: memory, 3 "done"
  CHECK(termination_seconds(in, 16) == Approx(2 * 10e-6 + 15 * 2e-6).epsilon(1e-12));  // a round trip, 15 "done"
  const auto p = predict(in, 16, 1);
  CHECK(p.termination_s == Approx(50e-6).epsilon(1e-12));
  CHECK(p.total_claims_s == Approx(p.root_s + p.broadcast_s + p.flat_s - p.scatter_overlap_s + p.termination_s +
                                   p.compute_claims_s)
                                .epsilon(1e-12));
}

TEST_CASE("rank speeds: one rank's schedule is its jobs in a row, at its speed", "[plan]") {
  const cost_inputs in = equal_jobs(5, 2e-3, {1.5});
  CHECK(claims_schedule_seconds(in, 1, 1) == Approx(15e-3).epsilon(1e-12));
  CHECK(predict(in, 1, 1).compute_s == Approx(15e-3).epsilon(1e-12));
}

TEST_CASE("rank speeds: bad speeds and batches name the value", "[plan]") {
  cost_inputs in = equal_jobs(8, 1e-3, {1, 0});
  CHECK_THROWS_WITH(predict(in, 2, 1), Catch::Contains("rank_job_scale[1] = 0, must be > 0"));
  in.rank_job_scale = {1, 1};
  in.claim_batch = 0;
  CHECK_THROWS_WITH(predict(in, 2, 1), Catch::Contains("claim_batch = 0, must be >= 1"));
}
