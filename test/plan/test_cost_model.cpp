// The cost model's arithmetic on synthetic inputs, against closed forms worked out by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>

#include "src/plan/cost_model.hpp"

using maprect::plan::bound_kind;
using maprect::plan::cost_inputs;
using maprect::plan::gather_kind;
using maprect::plan::link_figures;
using maprect::plan::predict;

namespace {

/// Links that cost nothing: only compute and the root's work count.
cost_inputs free_links(int jobs, double job_s) {
  cost_inputs in;
  in.jobs = jobs;
  in.job_s = job_s;
  in.shared_params = 2;
  in.job_params = 2;
  in.local = {0, 1e300, 0};
  in.remote = {0, 1e300, 0};
  in.ranks_per_host = 1024;
  in.request_bytes = 0;
  return in;
}

/// Two hosts of 4 ranks, 64 jobs moving 100 bytes each: per rank 800 bytes.
cost_inputs two_hosts() {
  cost_inputs in = free_links(64, 1e-3);
  in.ranks_per_host = 4;
  in.local = {1e-6, 1e9, 1e-6};
  in.remote = {10e-6, 1e8, 10e-6};
  return in;
}

}  // namespace

TEST_CASE("cost model: one rank is J jobs plus the root's costs, no messages", "[plan]") {
  cost_inputs in = free_links(10, 2e-3);
  in.outputs_per_job = 3;
  in.root_output_s = 5e-6;
  in.root_call_s = 40e-6;
  in.root_check_s_per_job = 1e-6;  // only worker jobs are checked: none at one rank
  in.local = {1e-6, 1e9, 1e-6};
  const auto p = predict(in, 1, 1);
  CHECK(p.total_s == Approx(10 * 2e-3 + 40e-6 + 10 * 3 * 5e-6).epsilon(1e-12));
  CHECK(p.messages_s == 0);
  CHECK(p.jobs_on_slowest == 10);
  CHECK(p.efficiency == 1.0);
  CHECK(p.bound == bound_kind::compute);
}

TEST_CASE("cost model: divisible J over P x T shares the jobs exactly", "[plan]") {
  const cost_inputs in = free_links(64, 1e-3);
  const auto p = predict(in, 8, 2);
  CHECK(p.jobs_on_slowest == 4);
  CHECK(p.compute_s == Approx(4e-3).epsilon(1e-12));
  CHECK(p.efficiency == Approx(1.0).epsilon(1e-9));  // free links, no root work: perfect scaling
  const auto q = predict(in, 3, 1);                    // 64 = 3 x 21 + 1: the slowest rank runs 22
  CHECK(q.jobs_on_slowest == 22);
  CHECK(q.efficiency == Approx(64.0 / (3 * 22)).epsilon(1e-9));
}

TEST_CASE("cost model: the bound switches from compute to the root where they cross", "[plan]") {
  cost_inputs in = free_links(1024, 1e-3);
  in.root_call_s = 0.01;  // compute 1.024 s / P crosses 0.01 s between P = 64 and P = 128
  CHECK(predict(in, 64, 1).bound == bound_kind::compute);
  CHECK(predict(in, 128, 1).bound == bound_kind::root);
  CHECK(predict(in, 128, 1).total_s == Approx(0.01 + 8e-3).epsilon(1e-12));
}

TEST_CASE("cost model: an uneven last share is balance, not compute", "[plan]") {
  const cost_inputs in = free_links(5, 1e-3);
  const auto p = predict(in, 4, 1);  // slowest runs 2 jobs, the mean share is 1.25
  CHECK(p.jobs_on_slowest == 2);
  CHECK(p.bound == bound_kind::balance);
  CHECK(predict(in, 5, 1).bound == bound_kind::compute);
}

TEST_CASE("cost model: more threads than a host's cores take turns", "[plan]") {
  cost_inputs in = free_links(12, 1e-3);
  in.cores_per_host = 2;
  CHECK(predict(in, 2, 1).compute_s == Approx(6e-3).epsilon(1e-12));       // one core each
  CHECK(predict(in, 3, 1).core_sharing == Approx(1.5));                    // 3 ranks on 2 cores
  CHECK(predict(in, 3, 1).compute_s == Approx(1.5 * 4e-3).epsilon(1e-12));
  CHECK(predict(in, 2, 2).compute_s == Approx(2 * 3e-3).epsilon(1e-12));   // 4 threads on 2 cores
  in.cores_per_host = -1;
  CHECK_THROWS_WITH(predict(in, 1, 1), Catch::Contains("cores_per_host = -1, must be >= 0"));
}

TEST_CASE("cost model: the launched ranks' measured phases replace the counted core sharing", "[plan]") {
  using maprect::plan::phase_core_sharing;
  cost_inputs in = free_links(12, 1e-3);
  in.cores_per_host = 2;
  in.phase_ranks = 3;
  in.phase_lengths_s = {1e-4, 1e-3, 1e-2};
  in.phase_sharing = {3, 2, 1.5};
  CHECK(phase_core_sharing(in, 3, 1, 1e-3, 1.5) == Approx(2));
  CHECK(phase_core_sharing(in, 3, 1, std::sqrt(1e-4 * 1e-3), 1.5) == Approx(2.5));  // log-linear between
  CHECK(phase_core_sharing(in, 3, 1, 1e-5, 1.5) == 3);     // the nearest beyond the lengths
  CHECK(phase_core_sharing(in, 3, 1, 1.0, 1.5) == 1.5);
  CHECK(phase_core_sharing(in, 2, 1, 1e-3, 1.25) == 1.25);  // other ranks or threads: the count
  CHECK(phase_core_sharing(in, 3, 2, 1e-3, 1.25) == 1.25);
  // 3 ranks: 4 jobs each, 4 ms alone, between the lengths 1 ms (2) and 10 ms (1.5).
  const double at_4ms = 2 - 0.5 * std::log(4.0) / std::log(10.0);
  const auto p = predict(in, 3, 1);
  CHECK(p.core_sharing == Approx(at_4ms));
  CHECK(p.compute_s == Approx(4e-3 * at_4ms).epsilon(1e-12));
  CHECK(p.compute_claims_s == Approx(4e-3 * at_4ms).epsilon(1e-12));
  CHECK(p.compute_bound_s == Approx(1.5 * 4e-3).epsilon(1e-12));  // the least compute: the cores as counted
  CHECK(predict(in, 2, 1).compute_s == Approx(6e-3).epsilon(1e-12));  // not measured at 2 ranks
  // An empty phase of 30 us where the model's links cost nothing: each of the call's 3 collectives waits 15.
  in.phase_round_s = 30e-6;
  const auto waited = predict(in, 3, 1);
  CHECK(waited.collective_wait_s == Approx(45e-6).epsilon(1e-12));
  CHECK(waited.total_s - p.total_s == Approx(45e-6).epsilon(1e-9));
  CHECK(waited.total_claims_s - p.total_claims_s == Approx(45e-6).epsilon(1e-9));
  CHECK(predict(in, 2, 1).collective_wait_s == 0);
  in.local = {5e-6, 1e300, 0};  // the model's own empty phase: a broadcast of 2 rounds, 10 us, and a gather, 5
  CHECK(predict(in, 3, 1).collective_wait_s == Approx(3 * 7.5e-6).epsilon(1e-12));
  in.local = {0, 1e300, 0};
  in.phase_sharing = {3, 0.9, 1.5};
  CHECK_THROWS_WITH(predict(in, 3, 1), Catch::Contains("phase_sharing[1] = 0.9, must be >= 1"));
  in.phase_sharing = {3, 2};
  CHECK_THROWS_WITH(predict(in, 3, 1), Catch::Contains("phase_sharing holds 2 factors, must be one per length (3)"));
  in.phase_sharing = {3, 2, 1.5};
  in.phase_lengths_s = {1e-4, 1e-4, 1e-2};
  CHECK_THROWS_WITH(predict(in, 3, 1), Catch::Contains("phase_lengths_s[1] = 0.0001, must be positive and ascending"));
}

TEST_CASE("cost model: spread of the job times adds sd sqrt(2 n ln(P T)) to the slowest thread", "[plan]") {
  cost_inputs in = free_links(8, 1e-3);
  in.job_spread_s = 2e-4;
  CHECK(predict(in, 2, 2).compute_s == Approx(2e-3 + 2e-4 * std::sqrt(2 * 2 * std::log(4.0))).epsilon(1e-12));
  CHECK(predict(in, 1, 1).compute_s == Approx(8e-3).epsilon(1e-12));  // one thread: the plain sum
}

TEST_CASE("cost model: flat and hierarchical collectives by hand", "[plan]") {
  cost_inputs in = two_hosts();
  using maprect::plan::collective_seconds;
  // flat: alpha_r + 3 o_l + 3 o_r + 2400 B / beta_l + 3200 B / beta_r
  CHECK(collective_seconds(in, 8, 100, gather_kind::flat) ==
        Approx(10e-6 + 3e-6 + 30e-6 + 2.4e-6 + 32e-6).epsilon(1e-12));
  // hierarchical: (alpha_l + 2 o_l + 2400 B / beta_l) + (alpha_r + 3200 B / beta_r)
  CHECK(collective_seconds(in, 8, 100, gather_kind::hierarchical) ==
        Approx(1e-6 + 2e-6 + 2.4e-6 + 10e-6 + 32e-6).epsilon(1e-12));
  // One host: both kinds are the same messages.
  CHECK(collective_seconds(in, 4, 100, gather_kind::flat) == Approx(1e-6 + 2e-6 + 100 * 64 / 4 * 3 / 1e9));
  CHECK(collective_seconds(in, 4, 100, gather_kind::hierarchical) ==
        collective_seconds(in, 4, 100, gather_kind::flat));
  // tree: 2 rounds within hosts, 1 between: 2 alpha_l + 2400 B / beta_l + alpha_r + 3200 B / beta_r
  CHECK(collective_seconds(in, 8, 100, gather_kind::tree) == Approx(2e-6 + 2.4e-6 + 10e-6 + 32e-6).epsilon(1e-12));
  // Chunks of a fixed size: 63 jobs on 8 ranks are sent as 8 chunks of 8 jobs.
  in.jobs = 63;
  CHECK(collective_seconds(in, 8, 100, gather_kind::tree) == Approx(2e-6 + 2.4e-6 + 10e-6 + 32e-6).epsilon(1e-12));
  CHECK(collective_seconds(in, 1, 100, gather_kind::flat) == 0);
}

TEST_CASE("cost model: hierarchical gathers where the root's per-message cost dominates", "[plan]") {
  cost_inputs in = two_hosts();
  in.local.overhead_s = 0.2e-6;  // within a host a message costs the root less than a tree round's latency
  in.job_params = 10;   // 80 bytes out per job
  in.shared_params = 2; // blocks of 13 doubles back
  const auto p = predict(in, 8, 1);
  CHECK(p.gather == gather_kind::hierarchical);
  CHECK(p.hierarchical_s < p.flat_s);
  CHECK(p.hierarchical_s < p.tree_s);
  CHECK(p.gather_s == Approx(maprect::plan::collective_seconds(in, 8, 8.0 * 13, gather_kind::hierarchical)));

  // Free messages after the first, dear latency: forwarding through a leader or a tree only adds latency.
  in.remote.overhead_s = 0;
  in.local.overhead_s = 0;
  in.local.alpha_s = 2e-6;
  const auto q = predict(in, 8, 1);
  CHECK(q.gather == gather_kind::flat);
  CHECK(q.flat_s < q.hierarchical_s);
  CHECK(q.flat_s < q.tree_s);

  // One rank per host: nothing to gather within hosts, so flat (equal costs choose flat).
  in.ranks_per_host = 1;
  const auto r = predict(in, 8, 1);
  CHECK(r.flat_s == r.hierarchical_s);
  CHECK(r.gather == gather_kind::flat);
}

TEST_CASE("cost model: a binomial tree where every message costs the root as much as a latency", "[plan]") {
  cost_inputs in = two_hosts();  // o = alpha on both links
  const auto p = predict(in, 8, 1);
  CHECK(p.gather == gather_kind::tree);
  CHECK(p.tree_s < std::min(p.flat_s, p.hierarchical_s));
  CHECK(p.gather_s == Approx(maprect::plan::collective_seconds(in, 8, 8.0 * 5, gather_kind::tree)));
}

TEST_CASE("cost model: many hosts of many ranks with TCP-like links avoid flat", "[plan]") {
  cost_inputs in = free_links(4096, 1e-3);
  in.ranks_per_host = 32;
  in.local = {0.5e-6, 10e9, 0.3e-6};
  in.remote = {20e-6, 1e9, 5e-6};
  // One host: 5 tree rounds of 0.5 us beat one latency and 30 messages of 0.3 us.
  const auto one_host = predict(in, 32, 1);
  CHECK(one_host.gather == gather_kind::tree);
  CHECK(one_host.flat_s - one_host.tree_s == Approx(2 * (0.5e-6 + 30 * 0.3e-6 - 5 * 0.5e-6)).epsilon(1e-9));
  const auto p = predict(in, 1024, 1);
  CHECK(p.hosts == 32);
  CHECK(p.gather != gather_kind::flat);
  CHECK(p.flat_s > 10 * std::min(p.hierarchical_s, p.tree_s));
  // The broadcast: a binomial tree over the 32 hosts, then over the 32 ranks of each host.
  const double bytes = 8.0 * 2;
  CHECK(p.broadcast_s == Approx(5 * (20e-6 + bytes / 1e9) + 5 * (0.5e-6 + bytes / 10e9)).epsilon(1e-12));
  // The scatter follows the request across hosts: alpha_r - o_r of its latency is hidden.
  CHECK(p.scatter_overlap_s == Approx(20e-6 - 5e-6).epsilon(1e-12));
  CHECK(p.messages_s == Approx(p.broadcast_s + p.scatter_s + p.gather_s - 15e-6));
  CHECK(p.total_s == Approx(p.root_s + p.messages_s + p.compute_s));
  CHECK(p.total_flat_s == Approx(p.root_s + p.broadcast_s + p.flat_s - 15e-6 + p.compute_s));
  CHECK(p.total_flat_s > p.total_s);
}

TEST_CASE("cost model: the scatter follows the request without a latency of its own", "[plan]") {
  // Two hosts of one rank over a 200 us link: the request and the job parameters leave the root back to
  // back and arrive together, the blocks come back one latency later: 2 alpha + o, not 3 alpha.
  cost_inputs in = free_links(64, 0);
  in.ranks_per_host = 1;
  in.remote = {200e-6, 1e9, 5e-6};
  const auto p = predict(in, 2, 1);
  const double request = 8.0 * 2 / 1e9, params = 8.0 * 2 * 32 / 1e9, blocks = 8.0 * 5 * 32 / 1e9;
  CHECK(p.broadcast_s == Approx(200e-6 + request).epsilon(1e-12));
  CHECK(p.scatter_s == Approx(200e-6 + params).epsilon(1e-12));
  CHECK(p.gather_s == Approx(200e-6 + blocks).epsilon(1e-12));
  CHECK(p.scatter_overlap_s == Approx(195e-6).epsilon(1e-12));
  CHECK(p.messages_s == Approx(2 * 200e-6 + 5e-6 + request + params + blocks).epsilon(1e-12));
  CHECK(p.total_flat_s == Approx(p.messages_s).epsilon(1e-12));  // no jobs, no root work: messages only

  // Three hosts: the request takes two rounds, the second worker's parameters one more message at the root.
  const auto q = predict(in, 3, 1);
  CHECK(q.broadcast_s == Approx(2 * (200e-6 + request)).epsilon(1e-12));
  CHECK(q.messages_s == Approx(q.broadcast_s + q.scatter_s + q.gather_s - 195e-6).epsilon(1e-12));

  // On one host the local link's latency is the one hidden; none where a message costs the root a latency.
  in.ranks_per_host = 4;
  in.local = {2e-6, 1e9, 0.5e-6};
  CHECK(maprect::plan::scatter_overlap_seconds(in, 4) == Approx(1.5e-6).epsilon(1e-12));
  CHECK(maprect::plan::scatter_overlap_seconds(in, 8) == Approx(195e-6).epsilon(1e-12));
  CHECK(maprect::plan::scatter_overlap_seconds(in, 1) == 0);
  in.local.overhead_s = 3e-6;
  CHECK(maprect::plan::scatter_overlap_seconds(in, 4) == 0);
  CHECK_THROWS_WITH(maprect::plan::scatter_overlap_seconds(in, 0), "cost model: ranks = 0, must be >= 1");
}

TEST_CASE("cost model: MAPRECT_COLLECTIVES=auto takes the cheapest kind, flat on one host", "[plan]") {
  using maprect::plan::auto_collective;
  using maprect::plan::cheapest_collective;
  // Two hosts of 4 ranks, 8 ranks, o = alpha: the tree (as predict() finds for 8 doubles out, 5 back per job).
  cost_inputs in = two_hosts();
  CHECK(cheapest_collective(in, 8, 8.0 * 2, 8.0 * 5) == gather_kind::tree);
  CHECK(auto_collective(in, 8, 2, 8.0 * 2, 8.0 * 5) == gather_kind::tree);
  // The same ranks all on one host: flat, whatever the links.
  CHECK(auto_collective(in, 8, 1, 8.0 * 2, 8.0 * 5) == gather_kind::flat);
  // Messages within a host cheap for the root: through the hosts' leaders.
  in.local.overhead_s = 0.2e-6;
  CHECK(auto_collective(in, 8, 2, 8.0 * 10, 8.0 * 13) == gather_kind::hierarchical);
  // Free messages after the first, dear latency: flat.
  in.remote.overhead_s = 0;
  in.local.overhead_s = 0;
  in.local.alpha_s = 2e-6;
  CHECK(auto_collective(in, 8, 2, 8.0 * 10, 8.0 * 13) == gather_kind::flat);
  // A slow link between hosts: the tree's padding (J = 64 jobs over 6 ranks padded to 11 each) costs more
  // bytes there than its rounds save; the leaders forward only the real parts.
  cost_inputs wide = two_hosts();
  wide.remote = {1e-6, 1e6, 1e-6};
  wide.local.overhead_s = 0.2e-6;
  CHECK(cheapest_collective(wide, 6, 8.0, 8000.0) == gather_kind::hierarchical);
  CHECK(maprect::plan::collective_seconds(wide, 6, 8000.0, gather_kind::tree) >
        maprect::plan::collective_seconds(wide, 6, 8000.0, gather_kind::hierarchical));
  // One rank: nothing to scatter or gather.
  CHECK(cheapest_collective(in, 1, 8.0, 8.0) == gather_kind::flat);
  // The assumed links the runtime uses: at hundreds of ranks on many hosts of 32, not flat.
  cost_inputs assumed = free_links(4096, 1e-3);
  assumed.ranks_per_host = 32;
  assumed.local = maprect::plan::assumed_local_link;
  assumed.remote = maprect::plan::assumed_remote_link;
  CHECK(auto_collective(assumed, 512, 16, 8.0 * 2, 8.0 * 5) != gather_kind::flat);
  CHECK(auto_collective(assumed, 32, 1, 8.0 * 2, 8.0 * 5) == gather_kind::flat);
  CHECK_THROWS_WITH(auto_collective(in, 8, 0, 8.0, 8.0), "cost model: hosts = 0, must be >= 1");
  CHECK_THROWS_WITH(cheapest_collective(in, 8, -1.0, 8.0), "cost model: out_bytes_per_job = -1, must be >= 0");
}

TEST_CASE("cost model: rank counts are powers of two with the measured ones merged in", "[plan]") {
  const auto ps = maprect::plan::rank_counts(1024, {3, 4, 1});
  const std::vector<int> expected = {1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
  CHECK(ps == expected);
  CHECK(maprect::plan::rank_counts(5) == std::vector<int>{1, 2, 4});
}

TEST_CASE("cost model: bad inputs name the value", "[plan]") {
  cost_inputs in = free_links(8, 1e-3);
  CHECK_THROWS_AS(predict(in, 0, 1), std::invalid_argument);
  CHECK_THROWS_WITH(predict(in, 0, 1), Catch::Contains("ranks = 0, must be >= 1"));
  CHECK_THROWS_WITH(predict(in, 2, 0), Catch::Contains("threads = 0, must be >= 1"));
  CHECK_THROWS_WITH(maprect::plan::rank_counts(0), Catch::Contains("ranks_max = 0"));
  in.job_s = -1e-3;
  CHECK_THROWS_AS(predict(in, 1, 1), std::invalid_argument);
  CHECK_THROWS_WITH(predict(in, 1, 1), Catch::Contains("job_s = -0.001, must be >= 0"));
  in.job_s = 1e-3;
  in.root_output_s = std::nan("");
  CHECK_THROWS_WITH(predict(in, 1, 1), Catch::Contains("root_output_s = nan"));
  in.root_output_s = 0;
  in.remote.beta_bytes_per_s = 0;
  CHECK_THROWS_WITH(predict(in, 1, 1), Catch::Contains("remote.beta_bytes_per_s = 0, must be > 0"));
  in.remote.beta_bytes_per_s = 1e9;
  in.jobs = 0;
  CHECK_THROWS_WITH(predict(in, 1, 1), Catch::Contains("jobs = 0, must be >= 1"));
}

namespace {

/// The skewed standard model's job times: J jobs of one unit, the last tenth (10 j >= 9 J) ten units.
cost_inputs skewed(int jobs) {
  cost_inputs in = free_links(jobs, 0);
  double sum = 0;
  for (int j = 0; j < jobs; ++j) {
    in.job_times_s.push_back(10 * j >= 9 * jobs ? 10e-6 : 1e-6);
    sum += in.job_times_s.back();
  }
  in.job_s = sum / jobs;
  return in;
}

}  // namespace

TEST_CASE("cost model: measured job times give the static split's slowest chunk and the claims' bound", "[plan]") {
  // 128 jobs, 12 dear ones (116..127): 236 units. Even split at 2 ranks: the root 0..63 (64 units), the
  // worker 64..127 (52 + 120 = 172 units).
  const cost_inputs in = skewed(128);
  CHECK(maprect::plan::static_compute_seconds(in, 2, 1) == Approx(172e-6).epsilon(1e-12));
  CHECK(maprect::plan::claimed_compute_seconds(in, 2, 1) == Approx(118e-6).epsilon(1e-12));
  // Whole jobs: at 64 the worker runs its second dear job (62..72) and 10 are unstarted; the root claims one
  // from the back at 64, 74, ..., 104 (5 of them, to 114), the worker runs the other 5 to 122.
  CHECK(maprect::plan::claims_schedule_seconds(in, 2, 1) == Approx(122e-6).epsilon(1e-12));
  const auto p = predict(in, 2, 1);
  CHECK(p.compute_s == Approx(172e-6).epsilon(1e-12));
  CHECK(p.compute_claims_s == Approx(122e-6).epsilon(1e-12));
  CHECK(p.compute_bound_s == Approx(118e-6).epsilon(1e-12));
  CHECK(p.bound == bound_kind::balance);  // 172 against a mean share of 118
  CHECK(p.termination_s == 0);            // free links
  CHECK(p.total_claims_s == Approx(122e-6).epsilon(1e-12));
  // 2 threads in a rank claim the rank's jobs one by one: the worker's 172 units over 2 threads.
  CHECK(maprect::plan::static_compute_seconds(in, 2, 2) == Approx(86e-6).epsilon(1e-12));
  // 128 ranks: a job each, the dearest sets the pace either way.
  CHECK(maprect::plan::static_compute_seconds(in, 128, 1) == Approx(10e-6).epsilon(1e-12));
  CHECK(maprect::plan::claimed_compute_seconds(in, 128, 1) == Approx(10e-6).epsilon(1e-12));
  CHECK(maprect::plan::claims_schedule_seconds(in, 128, 1) == Approx(10e-6).epsilon(1e-12));
}

TEST_CASE("cost model: under claims the other ranks take the root's jobs while it checks their rows", "[plan]") {
  // 100 jobs of 10 us at 2 ranks, a check of 1 us per worker job: 50 us before the root's first job.
  cost_inputs in = free_links(100, 10e-6);
  in.root_check_s_per_job = 1e-6;
  const auto p = predict(in, 2, 1);
  CHECK(maprect::plan::root_check_seconds(in, 2) == Approx(50e-6).epsilon(1e-12));
  CHECK(p.root_check_s == Approx(50e-6).epsilon(1e-12));
  CHECK(p.root_s == Approx(50e-6).epsilon(1e-12));
  // The static split: the root's 50 jobs after its check.
  CHECK(p.total_flat_s == Approx(550e-6).epsilon(1e-12));
  // Claims: at 500 the worker is done and the root has run 45 jobs; it runs 45, 46, 47 to 530 while the
  // worker claims 49 and 48 to 520. (1000 + 50) / 2 = 525 in whole jobs.
  CHECK(maprect::plan::claims_schedule_seconds(in, 2, 1) == Approx(530e-6).epsilon(1e-12));
  CHECK(p.compute_claims_s == Approx(530e-6).epsilon(1e-12));
  CHECK(p.total_claims_s == Approx(530e-6).epsilon(1e-12));
  // Two threads a rank: the check takes 25 us of each root thread. At 250 the worker's threads are done and
  // the root's run 44 and 45 to 255: the worker's claim 49 and 48 to 260, the root's run 46 and 47 to 265.
  // (1000 + 50) / 4 = 262.5 in whole jobs.
  CHECK(maprect::plan::claims_schedule_seconds(in, 2, 2) == Approx(265e-6).epsilon(1e-12));
  // One rank checks nothing.
  CHECK(predict(in, 1, 1).root_check_s == 0);
  CHECK(predict(in, 1, 1).total_claims_s == Approx(1000e-6).epsilon(1e-12));
}

TEST_CASE("cost model: the claims' termination grows with the ranks", "[plan]") {
  cost_inputs in = skewed(128);
  in.ranks_per_host = 4;
  in.local = {1e-6, 1e300, 0.5e-6};
  in.remote = {10e-6, 1e300, 2e-6};
  // One host: the ranges read in memory, 3 "done" of 0.5 us. Four hosts: a round trip of 2 x 10 us, 15 "done".
  CHECK(predict(in, 4, 1).termination_s == Approx(3 * 0.5e-6).epsilon(1e-12));
  const auto p = predict(in, 16, 1);
  CHECK(p.termination_s == Approx(2 * 10e-6 + 15 * 2e-6).epsilon(1e-12));
  CHECK(p.total_claims_s == Approx(p.root_s + p.broadcast_s + p.flat_s - p.scatter_overlap_s + p.termination_s +
                                   p.compute_claims_s)
                                .epsilon(1e-12));
  // So many ranks, a job each, that the termination costs more than the balance saves.
  CHECK(predict(in, 128, 1).total_claims_s > predict(in, 128, 1).total_flat_s);
}

TEST_CASE("cost model: job times must be one per job, none negative", "[plan]") {
  cost_inputs in = skewed(8);
  in.job_times_s.pop_back();
  CHECK_THROWS_WITH(predict(in, 1, 1), Catch::Contains("job_times_s holds 7 times, must be empty or jobs = 8"));
  in.job_times_s.push_back(-1e-6);
  CHECK_THROWS_WITH(predict(in, 1, 1), Catch::Contains("job_times_s[7] = -1e-06, must be >= 0"));
}

TEST_CASE("cost model: auto claims on one host, and across hosts only where a call lasts 32 round trips", "[plan]") {
  // Two hosts of one rank over a 50 us link: a round trip of 100 us, so claims pay from calls of 3.2 ms.
  cost_inputs in = free_links(64, 0);
  in.ranks_per_host = 1;
  in.remote = {50e-6, 1e9, 5e-6};
  in.job_s = 10e-6;  // 64 jobs of 10 us: a call far shorter than 3.2 ms
  const auto short_call = predict(in, 2, 1);
  CHECK_FALSE(short_call.claims);
  CHECK(short_call.total_auto_s == short_call.total_flat_s);
  in.job_s = 1e-3;  // 64 jobs of 1 ms: 32 ms a rank
  const auto long_call = predict(in, 2, 1);
  CHECK(long_call.claims);
  CHECK(long_call.total_auto_s == long_call.total_claims_s);
  // On one host auto claims in host memory whatever the call's length.
  in.ranks_per_host = 2;
  in.job_s = 10e-6;
  const auto one_host = predict(in, 2, 1);
  CHECK(one_host.claims);
  CHECK(one_host.total_auto_s == one_host.total_claims_s);
  CHECK_FALSE(predict(in, 1, 1).claims);
}
