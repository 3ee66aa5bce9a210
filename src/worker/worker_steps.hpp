#pragma once
// The worker's side of a map_rect call: the steps its commands share (the job parameters in, its jobs run,
// its part's layout; the "done" message under a timeout is call_timeout.hpp's). Each command is one sequence
// of steps that every rank runs (src/map_rect/first_call.cpp, steady_call.cpp); these are a worker's parts.
#include <mpi.h>

#include "src/protocol/call_timeout.hpp"
#include "src/map_rect/map_rect_state.hpp"

namespace maprect::detail {

/// The error of a call whose functor, call id `call_id`, is not registered on rank `rank`.
job_error unregistered_call(int call_id, int rank);

/// Step 3 by message: this rank's job parameters.
void receive_job_parameters(map_rect_context& s, worker_site& site, const wire::request& v);

/// Runs this rank's jobs into site.out after `status_slots` doubles: all of them, or with `claiming` those it
/// claims, front first, until none are left (other ranks claimed the rest). Each chunk or claimed batch
/// runs on the rank's team; its blocks land in job order as serially. Sets `end` to where this rank's
/// jobs end. On failure records the error and returns the failing job's global index, else -1; while
/// claiming, a changed output count ends the claims as well. With `slot_blocks` (only while claiming), each
/// claimed batch's blocks are copied there as it ends and published (job_claims::publish), so that the root
/// makes their nodes while this rank runs on.
int run_jobs(map_rect_context& s, worker_site& site, const wire::request& v, const double* shared,
             const double* job_params, int status_slots, bool claiming, int& end, double* slot_blocks = nullptr);

/// The steady-state layout of this rank's part of a call site, from its output counts (as the root lays out
/// every rank's). Grows the host slots to fit (collective, as on the root).
void lay_out_site(map_rect_context& s, worker_site& site, const wire::request& v);

// ---- the worker's side of each command ----

/// A worker's run of the first call `v` (first_call_command): the rows, its jobs, its status and output
/// counts, and on the root's go its blocks.
void serve_first_call(map_rect_context& s, const wire::request& v, const double* shared);

/// Steps 4 and 5 of a steady call by claims between all ranks of the host (src/map_rect/host_claims.cpp):
/// this rank's jobs from the front of its chunk, then batches claimed from others; its report in host memory.
void serve_call_claiming(map_rect_context& s, worker_site& site, const wire::request& v, const double* shared);

/// A worker's run of the reverse pass `v` of a deferred call (reverse_command).
void serve_reverse(map_rect_context& s, const wire::request& v);

/// A worker's run of the steady call `v` (steady_call_command).
void serve_call(map_rect_context& s, const wire::request& v, const double* shared);

}  // namespace maprect::detail
