#pragma once
// The protocol of a call, as the steps that the root and every worker execute together. Each step is one
// function that every rank of the cluster calls at the same point of the same request; the rank only picks
// which buffers it passes (the root's side of a collective, or a worker's). Every collective of a call goes
// through these steps, with three exceptions: the claims by message (src/balance/claims_*, which also carry
// the batches' data that src/map_rect/claimed_jobs.cpp and src/reduce_sum/claimed_slices.cpp hand them) send
// their asks, grants and results point to point outside them; the workers' "done" messages under a timeout
// (call_timeout.hpp) are posted where a call starts and ends; and a call site whose layout grows its
// host slots joins the window's collective reallocation (src/transport/host_memory.cpp). Start-up (settings,
// rank facts, host and collectives communicators) runs its own collectives once, before any request.
//
//  1. request   every rank     broadcast of the fixed header (wire::request) with up to inline_shared shared
//                              parameters; a second broadcast carries the rest of them.
//  2. assign    first call (new data, new output counts, a new root share): the workers receive the rows
//                              of their jobs (exchange_rows), or every row (share_rows).
//  3. post      steady call    the job parameters, P x J column-major: scattered by message, or written by
//                              the root into each worker's host slot (no message).
//  4. run       every rank     its jobs on local tapes (no communication); a failed job writes the status.
//  5. collect   every rank     each worker's status and blocks: gathered by message; or its status only,
//                              with the blocks in its host slot; or nothing, with both in host memory.
//                              A first call gathers the statuses and output counts first, broadcasts go or
//                              no-go, then gathers the blocks.
//  6. error     on a failure   the root names the failing rank in a fetch_error request; that rank sends its
//                              job_error (Boost.Serialization) and the root rethrows it: same type and message.
//  7. release   every rank     a request with command release: the workers leave serve().
//
// Every scatter of step 3 and gather of step 5 runs as the kind the request's header names (s_collective,
// src/protocol/collectives.hpp): flat (MPI_Scatterv/MPI_Gatherv), tree (fixed-size MPI_Scatter/MPI_Gather, each
// worker's part padded to the header's s_chunk_out or s_chunk_back) or hierarchical (the same padded parts
// through one leader per host). The root picks the kind per call site when its layout changes
// (MAPRECT_COLLECTIVES; auto asks the cost model); a first call's blocks learn their chunk from the go
// broadcast. Flat under a timeout, and for the status gather under claims by message.
//
// A reduce_sum call (request command reduce) runs the same steps with its own buffers, written once for both
// sides (src/reduce_sum/reduce_command.cpp); each rank runs a contiguous range of the call's slices
// (reduce_split, the root's share in the header's s_root_jobs):
//  1. request   every rank     as above; the shared parameters are the values of the shared arguments' vars.
//  2. ship      new payload    broadcast of the call site's payload (exchange_payload): the runner's key,
//                              the term offsets, the data arguments and the parameters' shapes, as
//                              Boost.Serialization writes them; a worker keeps it until the next one. With
//                              an unchanged layout the root checks the data during step 4 instead, and
//                              runs the call again with a new payload if they changed.
//  3. post      every call     the values of the sliced argument's vars, scattered by slice range, or
//                              written into each worker's host slot.
//  4. run       every rank     its slices on its team, into per-slice blocks (no communication); under
//                              claims, claimed as a map_rect call's jobs are.
//  5. collect   every rank     one part per worker, gathered: its status (code, first failing slice,
//                              seconds) and the blocks of the slices it ran; through the slots the status
//                              alone, and with claims in host memory nothing (the status in the slot,
//                              flagged beside the claim word). The root folds all blocks in slice order.
//                              A call that ships a payload or moves the root's share then sizes every
//                              rank's host slot (collective).
//  6. error     on a failure   as above, for the first worker in rank order whose slices failed (the root's
//                              own failure comes first: its slices come first).
#include <mpi.h>

#include <algorithm>

#include <maprect/detail/job_error.hpp>
#include <maprect/detail/wire.hpp>
#include <string>
#include <vector>

#include "src/protocol/chunk_plan.hpp"
#include "src/protocol/collectives.hpp"
#include "src/transport/wait.hpp"

namespace maprect::detail {

/// This rank's end of the protocol: the cluster's communicator and how its collectives wait.
struct endpoint {
  MPI_Comm comm = MPI_COMM_NULL;            ///< the cluster's own duplicate of the user's communicator
  int rank = 0;                             ///< this rank
  int size = 1;                             ///< ranks in the cluster
  wait_policy policy = wait_policy::spin;   ///< how this rank waits inside collectives
  collective_hosts* hosts = nullptr;        ///< the hosts of tree and hierarchical collectives, and their buffers
  bool is_root() const { return rank == 0; }
};

/// Root: names a call's collectives in its request's header (kind, and the largest worker's part out and
/// back), for the workers to run the same.
inline void name_collectives(wire::request& header, collective_kind kind, int chunk_out, int chunk_back) {
  header.collective = static_cast<int>(kind);
  header.chunk_out = chunk_out;
  header.chunk_back = chunk_back;
}

/// Worker: the collective a request's header names, with `chunk` values per worker.
inline collective named_collective(const wire::request& header, int chunk) {
  return {static_cast<collective_kind>(header.collective), chunk};
}

/// Step 1. The root writes `header` and the shared parameters `shared` into `slots` (request_doubles) and
/// broadcasts them; a worker receives them and reads `header` back. Shared parameters beyond the inline ones
/// go in a second broadcast (a worker receives them into `rest`). Returns where this rank reads the shared
/// parameters. Inline: it is on every call's path, and a call of its own cost the root about 20 instructions.
inline const double* exchange_request(const endpoint& e, wire::request& header, double* slots, const double* shared,
                               std::vector<double>& rest) {
  const int inline_count = std::min(header.n_shared, wire::inline_shared);
  if (e.is_root()) {
    header.write(slots);
    const int copied = shared != nullptr ? inline_count : 0;
    std::copy_n(shared, copied, slots + wire::header_slots);  // the slots after them are not read
  }
  bcast(slots, wire::request_doubles, MPI_DOUBLE, e.comm, e.policy);
  if (!e.is_root()) header = wire::request::read(slots);
  const int more = header.n_shared - wire::inline_shared;
  // Only a call (map_rect's or reduce_sum's) carries shared parameters.
  if (header.cmd != wire::command::call && header.cmd != wire::command::first_call &&
      header.cmd != wire::command::reduce && header.cmd != wire::command::deferred_call)
    return shared;
  if (more <= 0) return e.is_root() ? shared : slots + wire::header_slots;
  if (e.is_root()) {
    bcast(const_cast<double*>(shared) + wire::inline_shared, more, MPI_DOUBLE, e.comm, e.policy);
    return shared;
  }
  rest.resize(static_cast<std::size_t>(header.n_shared));
  std::copy_n(slots + wire::header_slots, wire::inline_shared, rest.data());
  bcast(rest.data() + wire::inline_shared, more, MPI_DOUBLE, e.comm, e.policy);
  return rest.data();
}

/// Bytes the root sends for a request with n_shared shared parameters.
inline std::uint64_t request_bytes(const endpoint& e, int n_shared) {
  const int more = n_shared > wire::inline_shared ? n_shared - wire::inline_shared : 0;
  return sizeof(double) * static_cast<std::uint64_t>(wire::request_doubles + more) *
         static_cast<std::uint64_t>(e.size - 1);
}

/// Step 2, first call: the root scatters the workers' rows (`all`, `layout`: the workers' part only);
/// a worker receives its rows straight into `mine` (allocated, rows of equal length).
template <class T>
void exchange_rows(const endpoint& e, const T* all, const rank_layout& layout, std::vector<std::vector<T>>& mine);

/// Step 2, first call, when every rank holds every row: the root broadcasts all `n` rows of `length` values
/// (`all`, flat); a worker receives them straight into `every` (allocated: n rows of that length).
template <class T>
void share_rows(const endpoint& e, const T* all, int n, int length, std::vector<std::vector<T>>& every);

/// Step 5 of a first call, when every rank holds every row: the root broadcasts the `n` jobs' output counts,
/// which a worker receives into `counts` (sized n), so that it can place the blocks of any rank's jobs.
void share_counts(const endpoint& e, std::vector<int>& counts, int n);

/// Step 2 of a reduce call: the root broadcasts `payload` (`bytes` long); a worker receives it into `payload`.
void exchange_payload(const endpoint& e, std::string& payload, int bytes);

/// Step 3 by message: the root scatters the job parameters `all` by `layout` (keeping its own part); a
/// worker receives its part into `mine` (`count` values). `how`: the kind the request's header names, and
/// the largest worker's part.
void post_parameters(const endpoint& e, const collective& how, const double* all, const rank_layout& layout,
                     double* mine, int count);

/// Step 5 by message: a worker sends `count` values of `type` from `mine`; the root receives rank r's into
/// `all` at displs[r] (its own part stays in place). `how`: the kind the request's header names, and the
/// largest worker's answer. With a `deadline` (flat only), the root gives up waiting then and returns
/// false, leaving the gather in `pending` (the workers always complete theirs).
bool collect_answers(const endpoint& e, const collective& how, MPI_Datatype type, const void* mine, int count,
                     void* all, const int* counts, const int* displs, std::chrono::steady_clock::time_point deadline,
                     MPI_Request& pending);

/// Step 5 by message, flat: as above with collective{} (the status gather under claims by message).
inline bool collect_answers(const endpoint& e, MPI_Datatype type, const void* mine, int count, void* all,
                            const int* counts, const int* displs, std::chrono::steady_clock::time_point deadline,
                            MPI_Request& pending) {
  return collect_answers(e, collective{}, type, mine, count, all, counts, displs, deadline, pending);
}

/// Step 5 of a first call: the root's go (1) or no-go (0) for the blocks, broadcast to every worker with the
/// largest worker's blocks (`chunk`, in values, or -1 for a flat gather; a worker receives it there).
int exchange_go(const endpoint& e, int go, int& chunk);

/// Step 6: rank `from` sends its `error` to the root, which receives it into `error`; other ranks do nothing.
void exchange_error(const endpoint& e, int from, job_error& error);

}  // namespace maprect::detail
