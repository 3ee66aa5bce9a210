#pragma once
/// \file deferred_model: the predicted time per gradient of a call site run deferred (MAPRECT_REVERSE=deferred) at
/// P ranks x T threads, beside the eager one of cost_model.hpp, and the mode MAPRECT_REVERSE=auto settles on.
/// Pure arithmetic, as cost_model is; the formula is in docs/cost-model.md.
#include <vector>

#include "cost_model.hpp"

namespace maprect::plan {

/// What a deferred call costs beyond the call site's cost_inputs (seconds).
struct deferred_inputs {
  double forward_job_s = 0;  ///< mean time of one job's forward pass onto a kept tape
  double sweep_job_s = 0;    ///< mean time of one sweep of a job's kept tape from its K outputs' adjoints
  double root_output_s = 0;  ///< root's time per output: its leaf, its adjoint sent back, the parameters' sums
  double root_call_s = 0;    ///< root's time per gradient whatever J: both commands' bookkeeping, the call node
};

/// The predicted time of one deferred gradient at P ranks x T threads, term by term (seconds).
struct deferred_prediction {
  int ranks = 1, threads = 1;
  int hosts = 1;                  ///< ceil(P / H)
  double core_sharing = 1;        ///< as the eager prediction's
  double compute_forward_s = 0;   ///< the slowest thread's forward passes under the site's static split
  double compute_sweep_s = 0;     ///< the slowest thread's sweeps, the same split
  double root_s = 0;              ///< root's serial work: per call, per output, data check
  double forward_messages_s = 0;  ///< request, job parameters out, output counts and go-ahead, K values back
  double reverse_messages_s = 0;  ///< the reverse request, K adjoints out, M parameters' adjoints back
  double messages_s = 0;          ///< forward + reverse messages
  double total_s = 0;             ///< root + messages + both computes: the static split (MAPRECT_BALANCE=static)
  double compute_forward_claims_s = 0;   ///< the forward passes under the claims engine's schedule
  double compute_sweep_claims_s = 0;     ///< the sweeps, each where its job ran: the same schedule of the sweeps
  double forward_claims_messages_s = 0;  ///< by claims: request, job parameters out, K values back
  double termination_s = 0;              ///< by claims: the last empty ask, every rank's result
  /// root + forward messages by claims + reverse messages + termination + both computes by claims: a
  /// deferred call under MAPRECT_BALANCE=auto, whose claims go by message even on one host.
  double total_claims_s = 0;
  /// Whether MAPRECT_BALANCE=auto runs it by claims: its forward pass by the split lasts long enough
  /// (detail::claims_pay, on a round trip of the farthest link).
  bool claims = false;
  double total_auto_s = 0;  ///< total_claims_s where claims, else total_s: MAPRECT_BALANCE=auto
};

/// Throws std::invalid_argument naming the first field of `d` below zero (or NaN).
void validate(const deferred_inputs& d);

/// Bytes a job's forward pass sends back: its K values (its output count travels in a gather of its own).
double deferred_values_bytes_per_job(const cost_inputs& in);
/// Bytes of a job's K outputs' adjoints, which the reverse command sends out to the rank that keeps its tape.
double deferred_seed_bytes_per_job(const cost_inputs& in);
/// Bytes a job's reverse pass sends back: its M = S + job parameters' adjoints.
double deferred_adjoint_bytes_per_job(const cost_inputs& in);

/// Whether MAPRECT_REVERSE=auto runs the site deferred once it has seen a call of its shape:
/// detail::deferred_pays on J jobs of K outputs and M = S + job parameters.
bool auto_runs_deferred(const cost_inputs& in);
/// "deferred" or "eager".
const char* reverse_name(bool deferred);

/// The predicted time per deferred gradient at `ranks` x `threads`: the forward command (the eager call's
/// request and scatter, a gather of output counts, a go-ahead broadcast, a gather of K values per job), the
/// reverse command (a request, K adjoints per job out, M back), every collective flat as the runtime runs a
/// deferred call's, the jobs' forward passes and sweeps each under the static split, and the root's work; and
/// the same by claims (total_claims_s): the claims engine's schedule of the forward passes and of the sweeps,
/// its termination by message, and the values coming with the claims' results (no counts, no go-ahead).
/// Throws std::invalid_argument for bad inputs, ranks < 1 or threads < 1.
deferred_prediction predict_deferred(const cost_inputs& in, const deferred_inputs& d, int ranks, int threads);

/// Predictions for each of `ranks` at `threads`.
std::vector<deferred_prediction> predict_deferred_table(const cost_inputs& in, const deferred_inputs& d,
                                                        const std::vector<int>& ranks, int threads);

}  // namespace maprect::plan
