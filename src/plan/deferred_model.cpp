// The deferred reverse mode's arithmetic (see deferred_model.hpp and docs/cost-model.md).
#include "deferred_model.hpp"

#include <maprect/detail/claims_pay.hpp>
#include <maprect/detail/reverse_mode.hpp>

#include <sstream>
#include <stdexcept>

namespace maprect::plan {

namespace {

constexpr double bytes_per_double = 8;
/// An output count in the forward command's reports (an int per job).
constexpr double bytes_per_count = 4;
/// The forward command's go-ahead for the values' gather: one value from the root.
constexpr double go_bytes = 8;

void require_at_least_zero(const char* name, double value) {
  if (!(value >= 0)) {
    std::ostringstream msg;
    msg << "cost model: " << name << " = " << value << ", must be >= 0";
    throw std::invalid_argument(msg.str());
  }
}

/// The site with every job's time scaled so that their mean is `job_s`: the forward passes' or the sweeps'.
cost_inputs with_job_time(const cost_inputs& in, double job_s) {
  cost_inputs out = in;
  const double scale = in.job_s > 0 ? job_s / in.job_s : 0;
  out.job_s = job_s;
  out.job_spread_s = in.job_spread_s * scale;
  for (double& t : out.job_times_s) t = in.job_s > 0 ? t * scale : job_s;
  return out;
}

/// A flat scatter following a request on the same path: its first message waits behind the request's.
double scatter_after_request(const cost_inputs& in, int ranks, double bytes_per_job) {
  return collective_seconds(in, ranks, bytes_per_job, gather_kind::flat) - scatter_overlap_seconds(in, ranks);
}

double forward_messages(const cost_inputs& in, int ranks) {
  if (ranks == 1) return 0;
  const double request = broadcast_seconds(in, ranks, in.request_bytes + bytes_per_double * in.shared_params);
  // The request, the parameters, the output counts, the go-ahead and the values: five collectives.
  return request + scatter_after_request(in, ranks, scatter_bytes_per_job(in)) +
         5 * collective_wait_seconds(in, ranks) +
         collective_seconds(in, ranks, bytes_per_count, gather_kind::flat) + broadcast_seconds(in, ranks, go_bytes) +
         collective_seconds(in, ranks, deferred_values_bytes_per_job(in), gather_kind::flat);
}

/// By claims the values come with each rank's result: no output counts, no go-ahead.
double forward_claims_messages(const cost_inputs& in, int ranks) {
  if (ranks == 1) return 0;
  const double request = broadcast_seconds(in, ranks, in.request_bytes + bytes_per_double * in.shared_params);
  // The request, the parameters and each rank's values.
  return request + scatter_after_request(in, ranks, scatter_bytes_per_job(in)) +
         3 * collective_wait_seconds(in, ranks) +
         collective_seconds(in, ranks, deferred_values_bytes_per_job(in), gather_kind::flat);
}

/// The end of a deferred call's claims, by message on any host: the last rank out of work asks the root once
/// more and hears "none" (a round trip of the farthest link), and the root takes every worker's result.
double message_termination(const cost_inputs& in, int ranks, int hosts) {
  if (ranks == 1) return 0;
  const link_figures& l = hosts > 1 ? in.remote : in.local;
  return 2 * l.alpha_s + (ranks - 1) * l.overhead_s;
}

double reverse_messages(const cost_inputs& in, int ranks) {
  if (ranks == 1) return 0;
  // The request, the outputs' adjoints and the parameters' adjoints.
  return broadcast_seconds(in, ranks, in.request_bytes) + 3 * collective_wait_seconds(in, ranks) +
         scatter_after_request(in, ranks, deferred_seed_bytes_per_job(in)) +
         collective_seconds(in, ranks, deferred_adjoint_bytes_per_job(in), gather_kind::flat);
}

}  // namespace

void validate(const deferred_inputs& d) {
  require_at_least_zero("forward_job_s", d.forward_job_s);
  require_at_least_zero("sweep_job_s", d.sweep_job_s);
  require_at_least_zero("deferred root_output_s", d.root_output_s);
  require_at_least_zero("deferred root_call_s", d.root_call_s);
}

double deferred_values_bytes_per_job(const cost_inputs& in) { return bytes_per_double * in.outputs_per_job; }

double deferred_seed_bytes_per_job(const cost_inputs& in) { return bytes_per_double * in.outputs_per_job; }

double deferred_adjoint_bytes_per_job(const cost_inputs& in) {
  return bytes_per_double * (in.shared_params + in.job_params);
}

bool auto_runs_deferred(const cost_inputs& in) {
  validate(in);
  return detail::deferred_pays(static_cast<long long>(in.outputs_per_job) * in.jobs, in.jobs,
                               static_cast<long long>(in.shared_params) + in.job_params);
}

const char* reverse_name(bool deferred) { return deferred ? "deferred" : "eager"; }

deferred_prediction predict_deferred(const cost_inputs& in, const deferred_inputs& d, int ranks, int threads) {
  validate(in);
  validate(d);
  // predict() checks ranks and threads, and gives each pass's compute with the eager split's imbalance.
  const prediction forward = predict(with_job_time(in, d.forward_job_s), ranks, threads);
  // Only the forward pass waits for the root's data check.
  cost_inputs sweep_in = with_job_time(in, d.sweep_job_s);
  sweep_in.root_check_s_per_job = 0;
  const prediction sweep = predict(sweep_in, ranks, threads);
  deferred_prediction p;
  p.ranks = ranks;
  p.threads = threads;
  p.hosts = forward.hosts;
  p.core_sharing = forward.core_sharing;
  p.compute_forward_s = forward.compute_s;
  p.compute_sweep_s = sweep.compute_s;
  p.root_s = d.root_call_s + static_cast<double>(in.jobs) * in.outputs_per_job * d.root_output_s +
             forward.root_check_s;
  p.forward_messages_s = forward_messages(in, ranks);
  p.reverse_messages_s = reverse_messages(in, ranks);
  p.messages_s = p.forward_messages_s + p.reverse_messages_s;
  p.total_s = p.root_s + p.messages_s + p.compute_forward_s + p.compute_sweep_s;
  // A rank sweeps the jobs it ran: with sweeps in proportion to the forward passes, the claims divide them alike.
  p.compute_forward_claims_s = forward.compute_claims_s;
  p.compute_sweep_claims_s = sweep.compute_claims_s;
  p.forward_claims_messages_s = forward_claims_messages(in, ranks);
  p.termination_s = message_termination(in, ranks, forward.hosts);
  p.total_claims_s = p.root_s - forward.root_check_s + p.forward_claims_messages_s + p.reverse_messages_s +
                     p.termination_s + p.compute_forward_claims_s + p.compute_sweep_claims_s;
  const double round_trip = 2 * (forward.hosts > 1 ? in.remote : in.local).alpha_s;
  p.claims = ranks > 1 && detail::claims_pay(p.forward_messages_s + p.compute_forward_s, round_trip);
  p.total_auto_s = p.claims ? p.total_claims_s : p.total_s;
  return p;
}

std::vector<deferred_prediction> predict_deferred_table(const cost_inputs& in, const deferred_inputs& d,
                                                        const std::vector<int>& ranks, int threads) {
  std::vector<deferred_prediction> out;
  out.reserve(ranks.size());
  for (int p : ranks) out.push_back(predict_deferred(in, d, p, threads));
  return out;
}

}  // namespace maprect::plan
