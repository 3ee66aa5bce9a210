#pragma once
/// \file One map_rect call as plain data: what the front door hands to a backend and gets back.

#include <cstdint>
#include <vector>

#include "registry.hpp"

namespace maprect::detail {

/// What the backend does every few of the root's own jobs: make the nodes of the workers' jobs that are done.
class job_poller {
 public:
  /// Called between the root's own jobs; may call call_session::drain.
  virtual void poll() = 0;

 protected:
  ~job_poller() = default;
};

/// The front door's side of one cluster call on the root, which the backend drives: begin runs the root's own
/// jobs, [0, n), as an in-process call runs them (each output becomes its node on the caller's tape as its job
/// ends, so no block of the root's is written or read back); drain makes the nodes of jobs run elsewhere as
/// their blocks arrive, in job order, while the root's jobs still run. Once the backend returns, the front door
/// finishes the call from the call_result (the outputs of jobs made here take their places first).
class call_session {
 public:
  /// Runs jobs [0, n), first removing whatever an earlier begin of this call made; writes each job's output
  /// count to counts and keeps in cursor the job being run; polls `poller` every few jobs unless it is null.
  /// Throws what the functor throws.
  virtual void begin(int n, int* counts, int& cursor, job_poller* poller) = 0;
  /// Runs jobs [first, end) behind those begin and earlier runs made, as begin runs its jobs (cursor counts
  /// from `first`): the root's own jobs in batches, so that others can claim those it has not started.
  virtual void run(int first, int end, int* counts, int& cursor) = 0;
  /// Makes the output nodes of jobs [begin, end), run elsewhere, from their blocks (`counts[j]` blocks of
  /// rows-per-output doubles per job, side by side). Calls follow the root's own jobs in job order: the nodes
  /// take their places on the tape behind the root's own when the call finishes.
  virtual void drain(const double* blocks, int begin, int end, const int* counts) = 0;

 protected:
  ~call_session() = default;
};

/// A call, with parameters as values: shared (S) and job parameters packed P x J column-major.
struct call_request {
  int call_id;                                    ///< the call site
  const functor_entry* functor;                   ///< its registered functor
  param_kinds kinds;                              ///< which parameters are var
  const double* shared;                           ///< S values
  int n_shared;                                   ///< S
  const double* job_params;                              ///< P x J values, column-major
  int n_job_params;                                      ///< P
  int n_jobs;                                     ///< J
  const std::vector<std::vector<double>>* x_r;    ///< J rows
  const std::vector<std::vector<int>>* x_i;       ///< J rows
  std::ostream* msgs;                             ///< functor messages (root's own chunk)
  call_session* session;                          ///< makes the root's own outputs in place; null: by blocks
  /// The job_data the rows belong to (job_data::id): rows that cannot change, so the workers' copy needs no
  /// check while the call site is fed the same one. 0: rows the caller may change, checked on every call.
  std::uint64_t data_id = 0;
};

/// A run of consecutive jobs whose output blocks stand side by side.
struct result_segment {
  const double* blocks;  ///< rows x (outputs of these jobs), column-major
  int job_begin;         ///< first job
  int job_end;           ///< one past the last job
};

/// A call's results: output blocks in job order, in segments, plus output counts per job. Block memory
/// belongs to the backend and lives until its next call.
struct call_result {
  const result_segment* segments;  ///< in job order
  int n_segments;                  ///< how many
  const int* counts;               ///< J output counts
  int rows;                        ///< rows per output block
  int n_outputs;                   ///< sum of counts
  int jobs_made;                   ///< leading jobs whose outputs the session made (begin and drain): whole segments, not read
};

/// A backend that runs calls elsewhere (the MPI runtime's root side).
using remote_call = call_result (*)(const call_request&);

/// The cluster's root side, installed by a live cluster of more than one rank on the thread that made
/// it; null otherwise (calls run in process).
inline thread_local remote_call remote_backend = nullptr;

/// A backend that runs a deferred call's forward pass elsewhere: every output's value in the result (one row
/// per output), the root's own jobs kept in `keep`, whose id names the call to the ranks that keep the rest.
using remote_deferred_call = call_result (*)(const call_request& req, deferred_call& keep);

/// The cluster's deferred forward pass, installed with remote_backend.
inline thread_local remote_deferred_call remote_deferred_backend = nullptr;

/// The cluster's reverse pass of a deferred call (its node's chain()), installed with remote_backend.
inline thread_local void (*remote_deferred_sweep)(deferred_call&) = nullptr;

}  // namespace maprect::detail
