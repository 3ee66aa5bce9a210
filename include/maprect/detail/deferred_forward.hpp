#pragma once
/// \file The forward pass of a deferred map_rect call in process: each job runs its functor on a kept tape (the
/// calling thread's, or on a thread team each team thread's own), with its parameters as leaves of that tape, and
/// only its output values reach the caller. The caller's tape gets the outputs as leaves and one call node
/// (deferred_call_vari) after them, whose chain() runs the reverse pass (deferred_reverse.hpp).

#include <Eigen/Dense>
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstddef>
#include <new>
#include <type_traits>
#include <vector>

#include "call_io.hpp"
#include "deferred_reverse.hpp"
#include "job_error.hpp"
#include "kept_tapes.hpp"
#include "message_limits.hpp"
#include "reverse_mode.hpp"
#include "thread_jobs.hpp"

namespace maprect::detail {

/// `n` leaves of value 0, made side by side on tape t: a job's parameters, read back as one array after a sweep.
inline vari* make_parameter_leaves(tape& t, int n) {
  auto* leaves = static_cast<vari*>(t.memory.allocate(sizeof(vari) * static_cast<std::size_t>(n)));
  for (int i = 0; i < n; ++i) t.push_leaf(::new (leaves + i) vari(0.0));
  return leaves;
}

/// Runs the jobs of `in` in order on kept tape t (made current for the scope), writing records[j] for job j, and
/// calling done(j) after each job. `cursor` is the job being run (to name it if it throws).
template <class F, param_kinds Kinds, class Jobs, class Done>
void run_deferred_jobs(const Jobs& in, tape& t, deferred_job* records, int& cursor, Done&& done) {
  constexpr bool shared_var = shared_is_var(Kinds), job_var = job_is_var(Kinds);
  using T_shared = std::conditional_t<shared_var, var, double>;
  using T_job = std::conditional_t<job_var, var, double>;
  const int S = in.n_shared(), P = in.n_job_params();
  const int n_shared_leaves = shared_var ? S : 0, n_leaves = n_shared_leaves + (job_var ? P : 0);
  const F f{};
  const functor_scope scope;  // a map_rect inside a job runs eager, on buffers of its own
  const current_tape_scope on_kept_tape(t);
  Eigen::Matrix<T_shared, Eigen::Dynamic, 1> shared(S);
  Eigen::Matrix<T_job, Eigen::Dynamic, 1> job(P);
  Eigen::VectorXd shared_scratch, job_scratch;
  for (int j = 0; j < in.n_jobs(); ++j) {
    cursor = j;
    const tape_mark start = t.mark();
    vari* const leaves = make_parameter_leaves(t, n_leaves);
    if constexpr (shared_var) {
      for (int s = 0; s < S; ++s) shared(s).vi_ = leaves + s, leaves[s].val_ = in.shared(s);
    }
    if constexpr (job_var) {
      for (int p = 0; p < P; ++p)
        job(p).vi_ = leaves + n_shared_leaves + p, leaves[n_shared_leaves + p].val_ = in.job_param(j, p);
    }
    const auto& shared_in = [&]() -> const auto& {
      if constexpr (shared_var) return shared;
      else return in.shared_doubles(shared_scratch);
    }();
    const auto& job_in = [&]() -> const auto& {
      if constexpr (job_var) return job;
      else return in.job_param_doubles(j, job_scratch);
    }();
    const Eigen::Matrix<var, Eigen::Dynamic, 1> y = f(shared_in, job_in, in.x_r(j), in.x_i(j), in.msgs());
    const int K = static_cast<int>(y.size());
    vari** outputs = t.memory.allocate_array<vari*>(static_cast<std::size_t>(K));
    for (int k = 0; k < K; ++k) outputs[k] = y(k).vi_;
    records[j] = deferred_job{&t, start.stack_size, t.stack.size(), start.leaf_count, t.leaves.size(), leaves,
                              outputs, K};
    done(j);
  }
  cursor = in.n_jobs();
}

/// The forward pass of one deferred call on a team: each team thread runs the jobs it claims on its own kept
/// tape of the call; their messages are kept apart, by job, as team_call keeps them. The jobs' records are the
/// last in.n_jobs() of call.jobs.
template <class F, param_kinds Kinds, class Jobs>
class deferred_team_forward {
 public:
  deferred_team_forward(const Jobs& in, deferred_call& call, team_call_buffers& buffers)
      : in_(in), call_(call), buffers_(buffers),
        records_(call.jobs.data() + (call.jobs.size() - static_cast<std::size_t>(in.n_jobs()))) {}

  /// Runs every job on the team; returns the lowest failing job, or INT_MAX when none failed.
  int run(thread_team& team) {
    const int n = in_.n_jobs();
    buffers_.prepare(n, team.size());
    team.run(n, std::max(1, n / (8 * team.size())), &run_batch, this);
    return lowest_.load(std::memory_order_relaxed);
  }

 private:
  static void run_batch(void* self, int thread, int begin, int end) noexcept {
    auto& me = *static_cast<deferred_team_forward*>(self);
    if (begin > me.lowest_.load(std::memory_order_relaxed)) return;  // the lowest failure is the call's error
    team_thread_share& share = *me.buffers_.shares[static_cast<std::size_t>(thread)];
    const bool with_text = me.in_.msgs() != nullptr;
    const jobs_slice<Jobs> range(me.in_, begin, end - begin, with_text ? &share.text : nullptr);
    const auto done = [&](int j) {
      const std::size_t text_end = with_text ? static_cast<std::size_t>(share.text.tellp()) : 0;
      me.buffers_.jobs[static_cast<std::size_t>(begin + j)] = {thread, 0, 0, share.text_mark, text_end};
      share.text_mark = text_end;
    };
    int cursor = 0;
    try {
      run_deferred_jobs<F, Kinds>(range, *me.call_.tapes[static_cast<std::size_t>(thread)],
                                  me.records_ + begin, cursor, done);
    } catch (...) {
      record_team_failure(share.failed_job, share.error, me.lowest_, begin + cursor);
    }
  }

  const Jobs& in_;
  deferred_call& call_;
  team_call_buffers& buffers_;
  deferred_job* records_;
  std::atomic<int> lowest_{INT_MAX};
};

/// Runs the forward pass of every job of `in` into `call` (on the installed team, if any); throws the lowest
/// failing job's error as an eager call does.
template <class F, param_kinds Kinds, class Jobs>
void run_deferred_forward(const Jobs& in, deferred_call& call, thread_team* team) {
  call.jobs.assign(static_cast<std::size_t>(in.n_jobs()), deferred_job{});
  if (team == nullptr) {
    int cursor = 0;
    try {
      run_deferred_jobs<F, Kinds>(in, *call.tapes[0], call.jobs.data(), cursor, [](int) {});
    } catch (...) {
      throw_job_error(current_job_error(), cursor, -1);
    }
    return;
  }
  team_call_buffers& buffers = per_depth<team_call_buffers>(functor_depth);
  deferred_team_forward<F, Kinds, Jobs> forward(in, call, buffers);
  const int failed = forward.run(*team);
  if (failed != INT_MAX) throw_team_failure(buffers, in.msgs(), failed);
  write_team_messages(buffers, in.msgs(), in.n_jobs());
}

template <class F, param_kinds Kinds>
int run_kept_chunk(const chunk_input& in, deferred_call& call, thread_team* team, job_error& error) {
  const packed_jobs jobs(in);
  const std::size_t first = call.jobs.size();
  call.jobs.resize(first + static_cast<std::size_t>(in.n_jobs), deferred_job{});
  call.reserve_tapes(team != nullptr ? team->size() : 1);
  call.n_shared_var = shared_is_var(Kinds) ? in.n_shared : 0;
  call.n_job_var = job_is_var(Kinds) ? in.n_job_params : 0;
  if (team == nullptr) {
    int cursor = 0;
    try {
      run_deferred_jobs<F, Kinds>(jobs, *call.tapes[0], call.jobs.data() + first, cursor, [](int) {});
    } catch (...) {
      error = current_job_error();
      return cursor;
    }
    return -1;
  }
  team_call_buffers& buffers = per_depth<team_call_buffers>(functor_depth);
  deferred_team_forward<F, Kinds, packed_jobs> forward(jobs, call, buffers);
  const int failed = forward.run(*team);
  write_team_messages(buffers, in.msgs, failed == INT_MAX ? in.n_jobs : failed);
  if (failed == INT_MAX) return -1;
  for (const auto& share : buffers.shares)
    if (share->failed_job == failed) error = share->error;
  return failed;
}

/// Puts a finished forward pass on the caller's tape t: the outputs as leaves (copies of `values`, or without
/// them of the jobs' values), the caller's parameter nodes the reverse pass adds to, and the call node after
/// the outputs, whose chain() runs `sweep`. Returns the outputs.
template <class T_shared, class T_job>
Eigen::Matrix<var, Eigen::Dynamic, 1> make_deferred_outputs(tape& t, deferred_call& call, long long n_outputs,
                                                            const Eigen::Matrix<T_shared, Eigen::Dynamic, 1>& shared,
                                                            const std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>>&
                                                                job_params,
                                                            const double* values = nullptr,
                                                            void (*sweep)(deferred_call&) = &sweep_deferred_call) {
  auto* outputs = static_cast<vari*>(t.memory.allocate(sizeof(vari) * static_cast<std::size_t>(n_outputs)));
  Eigen::Matrix<var, Eigen::Dynamic, 1> out(n_outputs);
  if (values == nullptr) {
    Eigen::Index i = 0;
    for (const deferred_job& job : call.jobs)
      for (int k = 0; k < job.count; ++k, ++i) {
        t.push_leaf(::new (outputs + i) vari(job.outputs[k]->val_));
        out.coeffRef(i).vi_ = outputs + i;
      }
  } else {
    for (Eigen::Index i = 0; i < n_outputs; ++i) {
      t.push_leaf(::new (outputs + i) vari(values[i]));
      out.coeffRef(i).vi_ = outputs + i;
    }
  }
  call.caller_outputs = outputs;
  call.n_shared_var = is_var_v<T_shared> ? static_cast<int>(shared.size()) : 0;
  call.n_job_var = is_var_v<T_job> ? static_cast<int>(job_params[0].size()) : 0;
  if constexpr (is_var_v<T_shared>) call.caller_shared.assign(nodes_of(shared), nodes_of(shared) + shared.size());
  if constexpr (is_var_v<T_job>)
    for (const auto& v : job_params) call.caller_job_params.insert(call.caller_job_params.end(), nodes_of(v),
                                                                  nodes_of(v) + v.size());
  call.sweep = sweep;
  call.owner = &t;
  call.node = new deferred_call_vari(&call, call.id);  // on t's stack, after every output
  call.node_index = t.stack.size() - 1;
  return out;
}

/// Runs a call with var arguments deferred, in process: forward passes on kept tapes, outputs on the caller's
/// tape (see make_deferred_outputs).
/// Kept out of line: the eager paths it sits beside do not grow by it.
template <class F, class T_shared, class T_job>
__attribute__((noinline)) Eigen::Matrix<var, Eigen::Dynamic, 1> run_deferred(
    int call_id, const Eigen::Matrix<T_shared, Eigen::Dynamic, 1>& shared_params,
    const std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>>& job_params,
    const std::vector<std::vector<double>>& x_r, const std::vector<std::vector<int>>& x_i, std::ostream* msgs) {
  const caller_jobs<T_shared, T_job> in(shared_params, job_params, x_r, x_i, msgs);
  tape& t = tape::current();
  kept_calls& calls = kept_calls::of_thread();
  thread_team* const team = team_for_call();
  deferred_call& call = calls.take(t, team != nullptr ? team->size() : 1);
  long long n_outputs = 0;
  try {
    run_deferred_forward<F, kinds_of<T_shared, T_job>()>(in, call, team);
    for (const deferred_job& job : call.jobs) n_outputs += job.count;
    if (!fits_one_message(n_outputs)) throw_too_many_outputs(call_id, n_outputs);
  } catch (...) {
    calls.give_back(call);
    throw;
  }
  if (n_outputs == 0) {  // no adjoint can reach the jobs: nothing to keep
    calls.give_back(call);
    return Eigen::Matrix<var, Eigen::Dynamic, 1>(0);
  }
  return make_deferred_outputs(t, call, n_outputs, shared_params, job_params);
}

}  // namespace maprect::detail
