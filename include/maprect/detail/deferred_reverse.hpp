#pragma once
/// \file The reverse pass of a deferred map_rect call, run by its node's chain(): each job's kept tape is swept
/// from its outputs' adjoints (on the installed thread team when there is one: the parallel reverse sweep), and
/// the calling thread then adds the parameters' adjoints to the caller's nodes in job order. Each job's sweep
/// touches only its own nodes, and the sums across jobs run in one order, so the bits do not depend on the threads.

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstddef>
#include <vector>

#include "job_error.hpp"
#include "kept_tapes.hpp"
#include "thread_jobs.hpp"

namespace maprect::detail {

/// An output's adjoint as a seed: the caller's node's in process, a value sent by the root over a cluster.
inline double seed_value(const vari& output) { return output.adj_; }
/// An output's adjoint as a seed, as sent.
inline double seed_value(double adjoint) { return adjoint; }

/// Sweeps job `job` from `seeds` (its outputs' adjoints): zeroes what an earlier sweep left on its nodes
/// first, so grad() after set_zero_all_adjoints gives the same bits again. Throws what a chain() throws.
template <class Seed>
void sweep_deferred_job(const deferred_job& job, const Seed* seeds) {
  tape& t = *job.on;
  vari* const* stack = t.stack.data();
  for (std::size_t i = job.stack_begin; i < job.stack_end; ++i) stack[i]->adj_ = 0;
  for (std::size_t i = job.leaf_begin; i < job.leaf_end; ++i) t.leaves[i]->adj_ = 0;
  for (int k = 0; k < job.count; ++k) job.outputs[k]->adj_ += seed_value(seeds[k]);
  // A chain() that makes nodes makes them on the job's tape, not on the caller's being swept.
  const current_tape_scope on_job_tape(t);
  for (std::size_t i = job.stack_end; i-- > job.stack_begin;) stack[i]->chain();
}

/// The reverse pass of one call on a team: each team thread sweeps the jobs it claims from `seeds` (job j's
/// from seeds + first_output[j]), and keeps its lowest failing job.
template <class Seed>
class deferred_team_sweep {
 public:
  deferred_team_sweep(deferred_call& call, const Seed* seeds, std::vector<std::size_t>& first_output)
      : call_(call), seeds_(seeds), first_output_(first_output) {}

  /// Sweeps every job on `team`; returns the lowest failing job (INT_MAX: none) and its error in `error`.
  int run(thread_team& team, job_error& error) {
    failures_.assign(static_cast<std::size_t>(team.size()), failure{});
    const int n = static_cast<int>(call_.jobs.size());
    team.run(n, std::max(1, n / (8 * team.size())), &sweep_batch, this);
    const int lowest = lowest_.load(std::memory_order_relaxed);
    for (const failure& f : failures_)
      if (f.job == lowest) error = f.error;
    return lowest;
  }

 private:
  struct failure {
    int job = INT_MAX;
    job_error error;
  };

  static void sweep_batch(void* self, int thread, int begin, int end) noexcept {
    auto& me = *static_cast<deferred_team_sweep*>(self);
    failure& mine = me.failures_[static_cast<std::size_t>(thread)];
    for (int j = begin; j < end; ++j) {
      try {
        sweep_deferred_job(me.call_.jobs[j], me.seeds_ + me.first_output_[j]);
      } catch (...) {
        record_team_failure(mine.job, mine.error, me.lowest_, j);
      }
    }
  }

  deferred_call& call_;
  const Seed* seeds_;
  const std::vector<std::size_t>& first_output_;
  std::vector<failure> failures_;
  std::atomic<int> lowest_{INT_MAX};
};

/// Adds each job's parameter adjoints to the caller's nodes, in job order.
inline void add_deferred_adjoints(const deferred_call& call) {
  const int S = call.n_shared_var, P = call.n_job_var;
  vari* const* shared = call.caller_shared.data();
  for (std::size_t j = 0; j < call.jobs.size(); ++j) {
    const vari* params = call.jobs[j].params;
    for (int s = 0; s < S; ++s) shared[s]->adj_ += params[s].adj_;
    vari* const* own = call.caller_job_params.data() + j * static_cast<std::size_t>(P);
    for (int p = 0; p < P; ++p) own[p]->adj_ += params[S + p].adj_;
  }
}

/// Sweeps every job of `call` from `seeds`, the outputs' adjoints of all its jobs side by side, on `team` or,
/// when it is null, this thread. Returns the lowest failing job, its error in `error`, or -1; the kept tapes
/// stay as they are, so the call can be swept again.
template <class Seed>
int sweep_kept_jobs(deferred_call& call, const Seed* seeds, thread_team* team, job_error& error) {
  thread_local std::vector<std::size_t> first_output;  // where each job's outputs start among the call's
  first_output.resize(call.jobs.size());
  std::size_t k = 0;
  for (std::size_t j = 0; j < call.jobs.size(); ++j) {
    first_output[j] = k;
    k += static_cast<std::size_t>(call.jobs[j].count);
  }
  if (team != nullptr) {
    deferred_team_sweep<Seed> sweep(call, seeds, first_output);
    const int failed = sweep.run(*team, error);
    return failed == INT_MAX ? -1 : failed;
  }
  std::size_t j = 0;
  try {
    for (; j < call.jobs.size(); ++j) sweep_deferred_job(call.jobs[j], seeds + first_output[j]);
  } catch (...) {
    error = current_job_error();
    return static_cast<int>(j);
  }
  return -1;
}

/// The reverse pass of `call` in process: sweeps its jobs, then adds their adjoints to the caller's nodes. A
/// job whose sweep throws is rethrown as its forward pass's errors are, naming the (lowest such) job, before
/// anything is added.
inline void sweep_deferred_call(deferred_call& call) {
  job_error error;
  const int failed = sweep_kept_jobs(call, call.caller_outputs, team_for_call(), error);
  if (failed >= 0) throw_job_error(error, failed, -1);
  add_deferred_adjoints(call);
}

}  // namespace maprect::detail
