#pragma once
/// \file The messages of one call, shared by the root, the workers and the raw-MPI floor benchmark.

#include <cstdint>

namespace maprect::detail::wire {

/// What a request asks the workers to do.
enum class command : int {
  call = 1,         ///< run a call (steady state: plan and data are cached)
  first_call = 2,   ///< ship a call site's data and plan, then run the call
  fetch_error = 3,  ///< the named rank sends its last error's message to the root
  release = 4,      ///< leave the serve loop
  reduce = 6,       ///< run a reduce_sum call (src/reduce_sum/reduce_sites.hpp: reduce_header)
  deferred_call = 7,  ///< a deferred call's forward pass: the jobs run on tapes each rank keeps, values back
  reverse = 8,        ///< a deferred call's reverse pass: outputs' adjoints out, parameters' adjoints back
};

/// Fixed-size broadcast that opens every request: a header, then the shared parameters when they fit.
/// Fixed so that workers can post the broadcast before they know the sizes.
constexpr int header_slots = 14;
constexpr int inline_shared = 18;                                 ///< shared parameters carried inline
constexpr int request_doubles = header_slots + inline_shared;     ///< doubles in the opening broadcast

/// Header slots (doubles holding exact integers).
enum slot : int {
  s_command = 0,  ///< a command
  s_call_id,      ///< the call site
  s_kinds,        ///< param_kinds of the call
  s_n_shared,     ///< S
  s_n_job,        ///< P: parameters per job
  s_n_jobs,       ///< J
  s_row_real,     ///< length of every x_r row
  s_row_int,      ///< length of every x_i row
  s_arg,          ///< command argument (fetch_error: the rank; call, reduce: a call_route; first_call,
                  ///< deferred_call: whether every row goes everywhere, and whether rows follow; reverse:
                  ///< how many deferred calls before the newest is the one swept)
  s_sequence,     ///< call number, checked by workers
  s_root_jobs,    ///< first_call: how many jobs the root keeps (the workers split the rest evenly)
  s_collective,   ///< how this request's scatter and gathers run (plan::gather_kind: flat, hierarchical, tree)
  s_chunk_out,    ///< the largest worker's part of the scatter: every part is padded to it (tree, hierarchical)
  s_chunk_back,   ///< the largest worker's answer, in values: every answer is padded to it (tree, hierarchical);
                  ///< deferred_call, whose collectives are flat: how many older deferred calls the root still keeps
};

/// The header of a request as values: written into the opening broadcast by the root and read back from
/// it by every worker, so that both sides agree on one encoding.
struct request {
  command cmd = command::call;  ///< what the workers do
  int call_id = 0;              ///< the call site
  int kinds = 0;                ///< param_kinds of the call
  int n_shared = 0;             ///< S
  int n_job = 0;                ///< P: parameters per job
  int n_jobs = 0;               ///< J
  int row_real = 0;             ///< length of every x_r row
  int row_int = 0;              ///< length of every x_i row
  int arg = 0;                  ///< command argument (fetch_error: the rank; call: a call_route)
  std::uint64_t sequence = 0;   ///< call number, checked by workers
  int root_jobs = 0;            ///< first_call: how many jobs the root keeps
  int collective = 0;           ///< how the scatter and gathers run (plan::gather_kind)
  int chunk_out = 0;            ///< the largest worker's part of the scatter, in values
  int chunk_back = 0;           ///< the largest worker's answer, in values

  /// Writes the header into the first header_slots doubles of `h`.
  void write(double* h) const {
    h[s_command] = static_cast<int>(cmd);
    h[s_call_id] = call_id;
    h[s_kinds] = kinds;
    h[s_n_shared] = n_shared;
    h[s_n_job] = n_job;
    h[s_n_jobs] = n_jobs;
    h[s_row_real] = row_real;
    h[s_row_int] = row_int;
    h[s_arg] = arg;
    h[s_sequence] = static_cast<double>(sequence);
    h[s_root_jobs] = root_jobs;
    h[s_collective] = collective;
    h[s_chunk_out] = chunk_out;
    h[s_chunk_back] = chunk_back;
  }
  /// The header held in the first header_slots doubles of `h`.
  static request read(const double* h) {
    auto at = [h](slot s) { return static_cast<int>(h[s]); };
    return {static_cast<command>(at(s_command)), at(s_call_id), at(s_kinds), at(s_n_shared), at(s_n_job),
            at(s_n_jobs), at(s_row_real), at(s_row_int), at(s_arg), static_cast<std::uint64_t>(h[s_sequence]),
            at(s_root_jobs), at(s_collective), at(s_chunk_out), at(s_chunk_back)};
  }
};

/// How a steady-state call's data travel (the argument of a call request).
enum class call_route : int {
  messages = 0,  ///< parameters by scatter, blocks and status by gather
  slots = 1,     ///< parameters and blocks through the host slots, status by gather
  memory = 2,    ///< through the host slots, every rank claiming any rank's jobs in host memory, the status
                 ///< in host memory beside the claims: no message but the request
  claims = 3,    ///< map_rect: by messages, any rank out of jobs claiming slower ranks' unstarted jobs
                 ///< through the root (src/balance/claims_broker.hpp); each worker's status and blocks by
                 ///< message as its jobs end
};

/// Whether a call by `route` finds its job parameters, and leaves its blocks, in the host slots.
inline bool in_slots(call_route route) { return route == call_route::slots || route == call_route::memory; }

/// Per rank, the results of a steady-state call begin with this many status doubles: status code, failing
/// job, the seconds the rank spent on its jobs (the root balances its share with them), and the busy
/// seconds of the rank's slowest and fastest team thread (cluster::profile).
constexpr int status_doubles = 5;

/// Status codes of a rank's part of a call.
enum class status : int {
  ok = 0,
  failed = 1,          ///< a job threw; details on fetch_error
  counts_changed = 2,  ///< a job returned a different number of outputs than the plan expects
};

}  // namespace maprect::detail::wire
