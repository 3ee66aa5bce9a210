#pragma once
// A call's timeout (MAPRECT_TIMEOUT) and the ways a call ends the job, shared by map_rect's and reduce_sum's
// commands: the deadline, the workers' "done" messages that let the root name the late ones, the gather of
// the answers within the deadline, and the aborts that say why (a late worker, or a root that failed between
// a call's collectives: the workers would wait for the rest forever).
#include <mpi.h>

#include <chrono>
#include <vector>

#include "src/cluster/rank_context.hpp"

namespace maprect::detail {

/// How a call is named in an abort's message: `kind` "" for map_rect ("call id 3"), "reduce_sum " for
/// reduce_sum ("reduce_sum call id 3").
struct call_name {
  const char* kind;
  int call_id;
};

/// Root: the deadline of a call that starts now under `timeout` seconds; never when `timeout` is 0.
std::chrono::steady_clock::time_point deadline_after(double timeout);

/// Root, with a timeout: posts the receive of each worker's "done" message for the call under way.
void expect_done_messages(rank_context& s);

/// Worker: with a timeout, tells the root that this rank's jobs are done (so that it can name the ranks that
/// are not); the request completes after the answer. Without one: nothing is sent.
MPI_Request announce_done(rank_context& s);

/// Worker: completes announce_done()'s message (no-op without a timeout).
void finish_done(rank_context& s, MPI_Request& done);

/// Root: the gather that carries a call's answers (root 0, in place), given up at `deadline`: then the
/// workers whose "done" message has not come are named and the job aborted (if all are done, the gather is
/// merely slow and is waited for). With a timeout, the done messages are complete when it returns.
void gather_within_deadline(rank_context& s, call_name call, std::chrono::steady_clock::time_point deadline,
                            const collective& how, MPI_Datatype type, void* recvbuf, const int* counts,
                            const int* displs);

/// Root: names the workers in `late` that did not answer `call` within the timeout, and aborts the job.
[[noreturn]] void abort_late(rank_context& s, call_name call, const std::vector<int>& late);

/// Root: `what` went wrong between the collectives of `call`; says so and aborts the job.
[[noreturn]] void abort_mid_call(rank_context& s, call_name call, const char* what);

/// Any rank, once it has said why on stderr: aborts the job with exit status `code` (1: a rank failed or was
/// late, 3: the ranks disagree on the protocol), this rank's exit guard disarmed, since the exit is explained.
[[noreturn]] void abort_job(rank_context& s, int code);

}  // namespace maprect::detail
