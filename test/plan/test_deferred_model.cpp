// The deferred reverse mode's cost model on synthetic inputs, against closed forms worked out by hand.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "src/plan/deferred_model.hpp"

using maprect::plan::auto_runs_deferred;
using maprect::plan::cost_inputs;
using maprect::plan::deferred_inputs;
using maprect::plan::predict_deferred;

namespace {

/// J jobs of K outputs, S = 2 shared and 1 own parameter (M = 3), links that cost nothing.
cost_inputs free_site(int jobs, int outputs) {
  cost_inputs in;
  in.jobs = jobs;
  in.outputs_per_job = outputs;
  in.job_s = 2e-3;
  in.shared_params = 2;
  in.job_params = 1;
  in.local = {0, 1e300, 0};
  in.remote = {0, 1e300, 0};
  in.ranks_per_host = 1024;
  in.request_bytes = 0;
  return in;
}

deferred_inputs figures() {
  deferred_inputs d;
  d.forward_job_s = 0.5e-3;
  d.sweep_job_s = 0.25e-3;
  d.root_output_s = 0.1e-6;
  d.root_call_s = 30e-6;
  return d;
}

}  // namespace

TEST_CASE("deferred model: one rank is J forward passes and sweeps plus the root's costs", "[plan]") {
  cost_inputs in = free_site(10, 100);
  in.local = {1e-6, 1e9, 1e-6};  // no messages at one rank, whatever the links
  in.root_check_s_per_job = 1e-6;
  const auto p = predict_deferred(in, figures(), 1, 1);
  CHECK(p.compute_forward_s == Approx(10 * 0.5e-3).epsilon(1e-12));
  CHECK(p.compute_sweep_s == Approx(10 * 0.25e-3).epsilon(1e-12));
  CHECK(p.root_s == Approx(30e-6 + 10 * 100 * 0.1e-6).epsilon(1e-12));
  CHECK(p.messages_s == 0);
  CHECK(p.total_s == Approx(7.5e-3 + 130e-6).epsilon(1e-12));
}

TEST_CASE("deferred model: both passes share the jobs by the static split", "[plan]") {
  const cost_inputs in = free_site(64, 10);
  const auto p = predict_deferred(in, figures(), 8, 2);  // 4 jobs on each thread
  CHECK(p.compute_forward_s == Approx(4 * 0.5e-3).epsilon(1e-12));
  CHECK(p.compute_sweep_s == Approx(4 * 0.25e-3).epsilon(1e-12));
  const auto q = predict_deferred(in, figures(), 3, 1);  // the root 21 jobs, the workers 21 and 22
  CHECK(q.compute_forward_s == Approx(22 * 0.5e-3).epsilon(1e-12));
  CHECK(q.root_s == Approx(30e-6 + 640 * 0.1e-6).epsilon(1e-12));
}

TEST_CASE("deferred model: measured job times keep their shape in each pass", "[plan]") {
  cost_inputs in = free_site(4, 10);
  in.job_times_s = {1e-3, 1e-3, 1e-3, 3e-3};
  in.job_s = 1.5e-3;  // the forward pass at 0.75e-3 is half of every job: 0.5, 0.5, 0.5, 1.5 ms
  deferred_inputs d = figures();
  d.forward_job_s = 0.75e-3;
  d.sweep_job_s = 0.15e-3;  // a tenth
  const auto p = predict_deferred(in, d, 2, 1);  // the root jobs 0-1, rank 1 jobs 2-3
  CHECK(p.compute_forward_s == Approx(0.5e-3 + 1.5e-3).epsilon(1e-12));
  CHECK(p.compute_sweep_s == Approx(0.1e-3 + 0.3e-3).epsilon(1e-12));
  in.rank_job_scale = {1.0, 2.0};  // rank 1 runs at half speed
  CHECK(predict_deferred(in, d, 2, 1).compute_forward_s == Approx(4e-3).epsilon(1e-12));
}

TEST_CASE("deferred model: both commands' collectives by hand at two ranks of one host", "[plan]") {
  cost_inputs in = free_site(4, 10);  // M = 3: 8 bytes out, 80 values back, 80 adjoints out, 24 back per job
  in.request_bytes = 64;
  in.local = {1e-6, 1e9, 0.5e-6};
  const auto p = predict_deferred(in, figures(), 2, 1);  // 2 jobs a rank; each message one latency
  // Forward: request of 64 + 2 x 8 bytes; parameters 16 bytes, its latency behind the request's (1 - 0.5 us);
  // 2 x 4 bytes of counts; a go-ahead of 8 bytes; 2 x 80 bytes of values.
  const double forward = (1e-6 + 80e-9) + (1e-6 + 16e-9 - 0.5e-6) + (1e-6 + 8e-9) + (1e-6 + 8e-9) + (1e-6 + 160e-9);
  // Reverse: a request of 64 bytes; 160 bytes of adjoints out behind it; 2 x 24 bytes back.
  const double reverse = (1e-6 + 64e-9) + (1e-6 + 160e-9 - 0.5e-6) + (1e-6 + 48e-9);
  CHECK(p.forward_messages_s == Approx(forward).epsilon(1e-12));
  CHECK(p.reverse_messages_s == Approx(reverse).epsilon(1e-12));
  CHECK(p.messages_s == Approx(forward + reverse).epsilon(1e-12));
  CHECK(maprect::plan::deferred_values_bytes_per_job(in) == 80);
  CHECK(maprect::plan::deferred_adjoint_bytes_per_job(in) == 24);
  CHECK(maprect::plan::gather_bytes_per_job(in) == 10 * 4 * 8);  // eager: K (M + 1) doubles
}

TEST_CASE("deferred model: by claims the passes balance over the ranks' speeds, the values come with them",
          "[plan]") {
  cost_inputs in = free_site(12, 10);
  in.request_bytes = 64;
  in.local = {1e-6, 1e9, 0.5e-6};
  in.rank_job_scale = {3.0, 1.0};  // the root a third as fast: 3 of the 12 jobs, the worker 9
  const auto p = predict_deferred(in, figures(), 2, 1);
  // The static split: the root's 6 forward passes at 1.5 ms, 6 sweeps at 0.75 ms.
  CHECK(p.compute_forward_s == Approx(6 * 1.5e-3).epsilon(1e-12));
  CHECK(p.compute_sweep_s == Approx(6 * 0.75e-3).epsilon(1e-12));
  // Claims: 3 jobs on the root (4.5 ms) against 9 on the worker (4.5 ms); the sweeps where they ran.
  CHECK(p.compute_forward_claims_s == Approx(4.5e-3).epsilon(1e-12));
  CHECK(p.compute_sweep_claims_s == Approx(2.25e-3).epsilon(1e-12));
  // Request of 64 + 16 bytes, 6 x 8 bytes of parameters behind it, 6 x 80 bytes of values: no counts, no go.
  const double forward = (1e-6 + 80e-9) + (1e-6 + 48e-9 - 0.5e-6) + (1e-6 + 480e-9);
  CHECK(p.forward_claims_messages_s == Approx(forward).epsilon(1e-12));
  // The last empty ask's round trip on the host's link, and the worker's result.
  CHECK(p.termination_s == Approx(2e-6 + 0.5e-6).epsilon(1e-12));
  CHECK(p.total_claims_s == Approx(p.root_s + forward + p.reverse_messages_s + 2.5e-6 + 6.75e-3).epsilon(1e-12));
  const auto one = predict_deferred(in, figures(), 1, 1);
  CHECK(one.total_claims_s == Approx(one.total_s).epsilon(1e-12));
  CHECK(one.termination_s == 0);
  // auto claims once the split's forward pass lasts 32 round trips of 2 us (64 us): 9 ms of it does.
  CHECK(p.claims);
  CHECK(p.total_auto_s == p.total_claims_s);
  deferred_inputs quick = figures();
  quick.forward_job_s = 0.2e-6;  // the root's 6 jobs at 0.6 us: 3.6 us, and 5.1 us of forward messages
  quick.sweep_job_s = 0.1e-6;
  const auto q = predict_deferred(in, quick, 2, 1);
  CHECK(q.forward_messages_s + q.compute_forward_s < 64e-6);
  CHECK_FALSE(q.claims);
  CHECK(q.total_auto_s == q.total_s);
  CHECK_FALSE(one.claims);
}

TEST_CASE("deferred model: auto's choice is deferred_pays on the site's shape", "[plan]") {
  // 16 jobs of 100 outputs, M = 3 + 7: 1600 x 11 = 17600 doubles eager against 2 (3200 + 160) = 6720.
  cost_inputs in = free_site(16, 100);
  in.job_params = 8;
  CHECK(auto_runs_deferred(in));
  // The standard model: K = 1, M = 4 over 256 jobs: 1280 against 2 (512 + 1024) = 3072.
  cost_inputs standard = free_site(256, 1);
  standard.job_params = 2;
  CHECK_FALSE(auto_runs_deferred(standard));
  // M = 3: the bytes never pay (4K >= 4K + 6J fails); the sweeps do when K (K/J - 1) >= 2^14 node visits.
  CHECK_FALSE(auto_runs_deferred(free_site(16, 10)));  // 160 x 9 = 1,440
  CHECK(auto_runs_deferred(free_site(1, 100000)));
  // 1000 jobs of 1000 outputs, M = 200: 1.6 GB of partials, above auto's 1 GiB.
  cost_inputs big = free_site(1000, 1000);
  big.job_params = 198;
  CHECK_FALSE(auto_runs_deferred(big));
  big.jobs = 600;  // 0.97 GB
  CHECK(auto_runs_deferred(big));
}

TEST_CASE("deferred model: bad inputs name the value", "[plan]") {
  const cost_inputs in = free_site(4, 10);
  deferred_inputs d = figures();
  d.sweep_job_s = -1;
  CHECK_THROWS_WITH(predict_deferred(in, d, 2, 1), Catch::Contains("sweep_job_s"));
  CHECK_THROWS_AS(predict_deferred(in, figures(), 0, 1), std::invalid_argument);
  cost_inputs bad = in;
  bad.outputs_per_job = 0;
  CHECK_THROWS_WITH(auto_runs_deferred(bad), Catch::Contains("outputs_per_job"));
}

TEST_CASE("deferred model: the launched ranks' collectives wait what their empty phase measured", "[plan]") {
  cost_inputs in = free_site(12, 10);  // links that cost nothing: the model's empty phase is free
  const auto before = predict_deferred(in, figures(), 3, 1);
  in.phase_ranks = 3;
  in.phase_round_s = 40e-6;  // 20 us a collective
  const auto p = predict_deferred(in, figures(), 3, 1);
  CHECK(p.forward_messages_s - before.forward_messages_s == Approx(5 * 20e-6).epsilon(1e-9));
  CHECK(p.reverse_messages_s - before.reverse_messages_s == Approx(3 * 20e-6).epsilon(1e-9));
  CHECK(p.forward_claims_messages_s - before.forward_claims_messages_s == Approx(3 * 20e-6).epsilon(1e-9));
  CHECK(p.total_s - before.total_s == Approx(8 * 20e-6).epsilon(1e-9));
  CHECK(p.total_claims_s - before.total_claims_s == Approx(6 * 20e-6).epsilon(1e-9));
  const double unmeasured = predict_deferred(free_site(12, 10), figures(), 2, 1).total_s;
  CHECK(predict_deferred(in, figures(), 2, 1).total_s == Approx(unmeasured).epsilon(1e-12));  // other ranks
  in.phase_round_s = -1e-6;
  CHECK_THROWS_WITH(predict_deferred(in, figures(), 3, 1), Catch::Contains("phase_round_s = -1e-06, must be >= 0"));
}
