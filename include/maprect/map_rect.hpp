#pragma once
/// \file map_rect: apply a functor to J jobs and return the concatenated outputs, with gradients.

#include <Eigen/Dense>
#include <algorithm>
#include <climits>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "ad.hpp"
#include "detail/call.hpp"
#include "detail/call_io.hpp"
#include "detail/deferred_forward.hpp"
#include "detail/job_error.hpp"
#include "detail/job_runner.hpp"
#include "detail/message_limits.hpp"
#include "detail/registry.hpp"
#include "detail/reverse_mode.hpp"
#include "detail/thread_jobs.hpp"
#include "job_data.hpp"

namespace maprect {

namespace detail {

/// The message of a size that differs from what the call expects: argument, index, size and expectation.
inline std::string size_mismatch(const char* what, std::size_t index, std::size_t got, const char* expected_what,
                                 std::size_t expected) {
  return std::string("map_rect: ") + what + "[" + std::to_string(index) + "] has size " + std::to_string(got) +
         ", expected " + std::to_string(expected) + " (" + expected_what + ")";
}

/// Throws std::invalid_argument naming the argument, job and sizes of the first inconsistency.
template <class T_job>
void check_map_rect_arguments(const std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>>& job_params,
                              const std::vector<std::vector<double>>& x_r,
                              const std::vector<std::vector<int>>& x_i) {
  const std::size_t J = job_params.size();
  if (x_r.size() != J)
    throw std::invalid_argument("map_rect: x_r has " + std::to_string(x_r.size()) + " rows but job_params has " +
                                std::to_string(J) + " jobs (one row per job)");
  if (x_i.size() != J)
    throw std::invalid_argument("map_rect: x_i has " + std::to_string(x_i.size()) + " rows but job_params has " +
                                std::to_string(J) + " jobs (one row per job)");
  if (J == 0) return;
  const Eigen::Index n_params = job_params[0].size();
  const std::size_t n_real = x_r[0].size(), n_int = x_i[0].size();
  for (std::size_t j = 1; j < J; ++j) {
    // One test per job on the common path; which size differs is worked out only for the error.
    if (job_params[j].size() == n_params && x_r[j].size() == n_real && x_i[j].size() == n_int) continue;
    if (job_params[j].size() != n_params)
      throw std::invalid_argument(size_mismatch("job_params", j, job_params[j].size(), "the size of job_params[0]",
                                                n_params));
    if (x_r[j].size() != n_real)
      throw std::invalid_argument(size_mismatch("x_r", j, x_r[j].size(), "the size of x_r[0]", n_real));
    throw std::invalid_argument(size_mismatch("x_i", j, x_i[j].size(), "the size of x_i[0]", n_int));
  }
  const long long n_values = static_cast<long long>(n_params) * static_cast<long long>(J);
  if (!fits_one_message(n_values) || !fits_one_message(static_cast<long long>(J)))
    throw_too_large_for_message(n_values, "job_params (" + std::to_string(J) + " jobs of " +
                                              std::to_string(n_params) + " parameters)");
}

/// Runs the whole call in this process on a thread team: the jobs run the job runner's code on the team's
/// threads into blocks kept by job index; then this thread, which owns the tape, makes the outputs from
/// them in job order, as run_in_process makes them as the jobs finish. The bits are the same. Kept out of
/// line: inlined into map_rect_call it used up the compiler's growth budget for the serial and cluster paths,
/// which then ran about 175 more instructions per call (callgrind, root of a 2x1 cluster call).
template <class F, class T_shared, class T_job>
__attribute__((noinline)) Eigen::Matrix<return_type_t<T_shared, T_job>, Eigen::Dynamic, 1> run_on_team(
    thread_team& team, int call_id, const Eigen::Matrix<T_shared, Eigen::Dynamic, 1>& shared_params,
    const std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>>& job_params,
    const std::vector<std::vector<double>>& x_r, const std::vector<std::vector<int>>& x_i, std::ostream* msgs) {
  constexpr param_kinds kinds = kinds_of<T_shared, T_job>();
  using jobs_t = caller_jobs<T_shared, T_job>;
  const jobs_t in(shared_params, job_params, x_r, x_i, msgs);
  team_call<F, kinds, jobs_t> call(in, msgs, per_depth<team_call_buffers>(functor_depth));
  const int failed = call.run(team);
  if (failed != INT_MAX) call.throw_failure(failed);
  const int J = in.n_jobs();
  call.write_messages(J);
  const long long n_outputs = call.n_outputs();
  if (!fits_one_message(n_outputs)) throw_too_many_outputs(call_id, n_outputs);
  int count = 0;
  if constexpr (kinds == param_kinds::dd) {
    block_buffer& values = thread_local_buffers().values;
    values.resize(0);
    for (int j = 0; j < J; ++j) {
      const double* block = call.blocks_of(j, count);
      values.append(block, static_cast<std::size_t>(count));
    }
    return Eigen::Map<const Eigen::VectorXd>(values.data(), static_cast<Eigen::Index>(values.size()));
  } else {
    tape& t = tape::current();
    const std::size_t first = t.stack.size();
    node_sink<T_shared, T_job> sink(t, shared_params, job_params);
    for (int j = 0; j < J; ++j) {
      const double* block = call.blocks_of(j, count);
      sink.begin_job(j, count);
      for (int k = 0; k < count; ++k) sink.output(block + static_cast<std::ptrdiff_t>(k) * call.rows());
    }
    Eigen::Matrix<var, Eigen::Dynamic, 1> out(n_outputs);
    vari* const* nodes = t.stack.data() + first;
    for (Eigen::Index k = 0; k < n_outputs; ++k) out.coeffRef(k).vi_ = nodes[k];
    return out;
  }
}

/// Runs the whole call in this process, eager, through the same job runner the workers use, reading the
/// parameters in place and building the outputs on the caller's tape as the jobs finish. With a
/// thread team installed on this thread (team_scope) the jobs run on the team (run_on_team).
template <class F, class T_shared, class T_job>
Eigen::Matrix<return_type_t<T_shared, T_job>, Eigen::Dynamic, 1> run_eager_in_process(
    int call_id, const Eigen::Matrix<T_shared, Eigen::Dynamic, 1>& shared_params,
    const std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>>& job_params,
    const std::vector<std::vector<double>>& x_r, const std::vector<std::vector<int>>& x_i, std::ostream* msgs) {
  if (thread_team* team = team_for_call())
    return run_on_team<F>(*team, call_id, shared_params, job_params, x_r, x_i, msgs);
  constexpr param_kinds kinds = kinds_of<T_shared, T_job>();
  const caller_jobs<T_shared, T_job> in(shared_params, job_params, x_r, x_i, msgs);
  int cursor = 0;
  if constexpr (kinds == param_kinds::dd) {
    block_buffer& values = thread_local_buffers().values;
    values.resize(0);
    value_sink sink(values);
    try {
      run_jobs<F, kinds>(in, sink, cursor);
    } catch (...) {
      throw_job_error(current_job_error(), cursor, -1);
    }
    if (!fits_one_message(static_cast<long long>(values.size())))
      throw_too_many_outputs(call_id, static_cast<long long>(values.size()));
    return Eigen::Map<const Eigen::VectorXd>(values.data(), static_cast<Eigen::Index>(values.size()));
  } else {
    tape& t = tape::current();
    const tape_mark start = t.mark();
    node_sink<T_shared, T_job> sink(t, shared_params, job_params);
    try {
      run_jobs<F, kinds>(in, sink, cursor);
    } catch (...) {
      t.rewind(start);  // the outputs of the jobs before the failing one
      throw_job_error(current_job_error(), cursor, -1);
    }
    // The outputs are exactly the nodes the call added to the tape, in order.
    const long long n_outputs = static_cast<long long>(t.stack.size() - start.stack_size);
    if (!fits_one_message(n_outputs)) {
      t.rewind(start);
      throw_too_many_outputs(call_id, n_outputs);
    }
    Eigen::Matrix<var, Eigen::Dynamic, 1> out(n_outputs);
    vari* const* nodes = t.stack.data() + start.stack_size;
    for (Eigen::Index k = 0; k < n_outputs; ++k) out.coeffRef(k).vi_ = nodes[k];
    return out;
  }
}

/// M of a call: its var parameters per job, the shared ones included.
template <class T_shared, class T_job>
long long var_params_per_job(const Eigen::Matrix<T_shared, Eigen::Dynamic, 1>& shared_params,
                             const std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>>& job_params) {
  return (std::is_same_v<T_shared, var> ? shared_params.size() : 0) +
         (std::is_same_v<T_job, var> ? job_params[0].size() : 0);
}

/// Runs the whole call in this process: a call with var arguments deferred (run_deferred) when `site` says so
/// (MAPRECT_REVERSE, or auto's record of the site's last call, which this call updates), eager
/// (run_eager_in_process) otherwise. Calls inside a job run eager.
template <class F, class T_shared, class T_job>
Eigen::Matrix<return_type_t<T_shared, T_job>, Eigen::Dynamic, 1> run_in_process(
    int call_id, reverse_site& site, const Eigen::Matrix<T_shared, Eigen::Dynamic, 1>& shared_params,
    const std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>>& job_params,
    const std::vector<std::vector<double>>& x_r, const std::vector<std::vector<int>>& x_i, std::ostream* msgs) {
  if constexpr (kinds_of<T_shared, T_job>() != param_kinds::dd) {
    if (functor_depth == 0) {
      const int J = static_cast<int>(job_params.size());
      const long long M = var_params_per_job(shared_params, job_params);
      const reverse_mode mode = site.mode(J, M);
      auto out = mode == reverse_mode::deferred
                     ? run_deferred<F>(call_id, shared_params, job_params, x_r, x_i, msgs)
                     : run_eager_in_process<F>(call_id, shared_params, job_params, x_r, x_i, msgs);
      site.record(J, M, mode, out.size());
      return out;
    }
  }
  return run_eager_in_process<F>(call_id, shared_params, job_params, x_r, x_i, msgs);
}

/// A cluster call's values, copied out of its result blocks (the backend reuses them at its next call).
inline Eigen::VectorXd values_of(const call_result& res) {
  Eigen::VectorXd out(res.n_outputs);
  int k = 0;
  for (int s = 0; s < res.n_segments; ++s) {
    const result_segment& seg = res.segments[s];
    int n = 0;
    for (int j = seg.job_begin; j < seg.job_end; ++j) n += res.counts[j];
    std::copy_n(seg.blocks, n, out.data() + k);
    k += n;
  }
  return out;
}

/// Runs call `req` deferred over the cluster: the forward pass on every rank's kept tapes, the outputs' values
/// on the caller's tape as leaves, and one node whose chain() runs the reverse pass on the ranks that keep the
/// jobs (remote_deferred_sweep). Kept out of line, as run_deferred is.
template <class T_shared, class T_job>
__attribute__((noinline)) Eigen::Matrix<var, Eigen::Dynamic, 1> run_deferred_on_cluster(
    const call_request& req, const Eigen::Matrix<T_shared, Eigen::Dynamic, 1>& shared_params,
    const std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>>& job_params) {
  tape& t = tape::current();
  kept_calls& calls = kept_calls::of_thread();
  deferred_call& call = calls.take(t, 1);
  call_result result;
  try {
    result = remote_deferred_backend(req, call);
  } catch (...) {
    calls.give_back(call);
    throw;
  }
  if (result.n_outputs == 0) {  // no adjoint can reach the jobs: nothing to keep
    calls.give_back(call);
    return Eigen::Matrix<var, Eigen::Dynamic, 1>(0);
  }
  const Eigen::VectorXd values = values_of(result);
  return make_deferred_outputs(t, call, result.n_outputs, shared_params, job_params, values.data(),
                               remote_deferred_sweep);
}

/// The body of map_rect, for a call site whose functor entry was checked. It does not depend on the call
/// id, so a program with many call sites of one functor compiles it once. `data_id` is the job_data the
/// rows belong to, 0 for rows the caller may change (see call_request::data_id). `site` is auto's record of the
/// call site (reverse_site_of).
template <class F, class T_shared, class T_job>
Eigen::Matrix<return_type_t<T_shared, T_job>, Eigen::Dynamic, 1> map_rect_call(
    int call_id, const functor_entry& functor, reverse_site& site,
    const Eigen::Matrix<T_shared, Eigen::Dynamic, 1>& shared_params,
    const std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>>& job_params,
    const std::vector<std::vector<double>>& x_r, const std::vector<std::vector<int>>& x_i, std::ostream* msgs,
    std::uint64_t data_id = 0) {
  using R = return_type_t<T_shared, T_job>;
  check_map_rect_arguments(job_params, x_r, x_i);
  const int J = static_cast<int>(job_params.size());
  if (J == 0) return Eigen::Matrix<R, Eigen::Dynamic, 1>(0);

  if (remote_backend == nullptr || functor_depth > 0)
    return run_in_process<F>(call_id, site, shared_params, job_params, x_r, x_i, msgs);

  // Over the cluster: the parameters travel as packed values.
  constexpr param_kinds kinds = kinds_of<T_shared, T_job>();
  const int S = static_cast<int>(shared_params.size());
  const int P = static_cast<int>(job_params[0].size());
  local_buffers& b = thread_local_buffers();
  b.shared.resize(static_cast<std::size_t>(S));
  for (int s = 0; s < S; ++s) b.shared[s] = value_of(shared_params(s));
  b.job_params.resize(static_cast<std::size_t>(P) * J);
  for (int j = 0; j < J; ++j)
    for (int p = 0; p < P; ++p) b.job_params[static_cast<std::size_t>(j) * P + p] = value_of(job_params[j](p));

  auto request = [&](call_session* session) {
    return call_request{call_id,         &functor, kinds, b.shared.data(), S,        b.job_params.data(), P,
                        J,               &x_r,     &x_i,  msgs,            session,  data_id};
  };
  if constexpr (kinds == param_kinds::dd) {
    return values_of(remote_backend(request(nullptr)));
  } else {
    const long long M = var_params_per_job(shared_params, job_params);
    if (site.mode(J, M) == reverse_mode::deferred) {
      auto out = run_deferred_on_cluster(request(nullptr), shared_params, job_params);
      site.record(J, M, reverse_mode::deferred, out.size());
      return out;
    }
    tape& t = tape::current();
    const tape_mark start = t.mark();
    node_sink<T_shared, T_job> sink(t, shared_params, job_params);
    const caller_jobs<T_shared, T_job> in(shared_params, job_params, x_r, x_i, msgs);
    cluster_session<F, T_shared, T_job> session(in, sink, t, b.later);
    try {
      auto out = session.finish(remote_backend(request(&session)));
      site.record(J, M, reverse_mode::eager, out.size());
      return out;
    } catch (...) {
      t.rewind(start);  // the root's own outputs, made before the call failed
      throw;
    }
  }
}

}  // namespace detail

/// Applies functor F to every job j, F()(shared_params, job_params[j], x_r[j], x_i[j], msgs), and returns
/// the outputs of all jobs concatenated in job order. Each output with var inputs is one node on the
/// caller's tape whose operands are the job's var parameters. Call site CallId must be registered with
/// MAPRECT_REGISTER(CallId, F). Runs over the cluster's ranks when a cluster of more than one rank is
/// live on this thread, in process otherwise, with identical results.
template <int CallId, class F, class T_shared, class T_job>
Eigen::Matrix<return_type_t<T_shared, T_job>, Eigen::Dynamic, 1> map_rect(
    const Eigen::Matrix<T_shared, Eigen::Dynamic, 1>& shared_params,
    const std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>>& job_params,
    const std::vector<std::vector<double>>& x_r, const std::vector<std::vector<int>>& x_i,
    std::ostream* msgs = nullptr) {
  static_assert(std::is_same_v<T_shared, double> || std::is_same_v<T_shared, var>, "shared_params: double or var");
  static_assert(std::is_same_v<T_job, double> || std::is_same_v<T_job, var>, "job_params: double or var");
  return detail::map_rect_call<F>(CallId, detail::checked_functor_entry<CallId, F>(), detail::reverse_site_of<CallId>,
                                  shared_params, job_params, x_r, x_i, msgs);
}

/// map_rect with the jobs' rows in a job_data: the same results, bit for bit, as with its x_r() and x_i().
/// Over a cluster, a call site fed the same job_data object (or a copy of it) call after call sends no data
/// and checks nothing; another job_data object under the same CallId is shipped as new data.
template <int CallId, class F, class T_shared, class T_job>
Eigen::Matrix<return_type_t<T_shared, T_job>, Eigen::Dynamic, 1> map_rect(
    const Eigen::Matrix<T_shared, Eigen::Dynamic, 1>& shared_params,
    const std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>>& job_params, const job_data& data,
    std::ostream* msgs = nullptr) {
  static_assert(std::is_same_v<T_shared, double> || std::is_same_v<T_shared, var>, "shared_params: double or var");
  static_assert(std::is_same_v<T_job, double> || std::is_same_v<T_job, var>, "job_params: double or var");
  return detail::map_rect_call<F>(CallId, detail::checked_functor_entry<CallId, F>(), detail::reverse_site_of<CallId>,
                                  shared_params, job_params, data.x_r(), data.x_i(), msgs, data.id());
}

}  // namespace maprect
