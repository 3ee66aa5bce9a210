#pragma once
// How ranks wait inside collectives. Every rank of a cluster uses the same policy: MPI never matches a
// blocking collective with a non-blocking one.
#include <mpi.h>

#include <chrono>

namespace maprect::detail {

/// spin: blocking collectives (lowest latency; a waiting rank keeps its core busy).
/// sleep: non-blocking collectives polled with sched_yield for 200 us, then with sleeps that back off, so
/// waiting ranks leave the CPU to busy ones when there are more ranks than cores.
/// poll: non-blocking collectives polled without sleeping: spin's latency, but the root can give up on a
/// deadline (used instead of spin when a call timeout is set).
enum class wait_policy : int { spin = 0, sleep = 1, poll = 2 };

/// Polls `ready(context)` as the policy says until it returns true (then returns true) or `deadline` passes
/// (then returns false). Spin and poll test back to back; sleep yields, then sleeps.
bool wait_until(bool (*ready)(void* context), void* context, wait_policy policy,
                std::chrono::steady_clock::time_point deadline);

/// Completes `request`, polling as the policy says.
void wait(MPI_Request& request, wait_policy policy);

/// Like wait(), but gives up at `deadline`: returns false if the request is still pending then.
bool wait_until(MPI_Request& request, wait_policy policy, std::chrono::steady_clock::time_point deadline);

/// MPI_Bcast under the policy.
void bcast(void* buffer, int count, MPI_Datatype type, MPI_Comm comm, wait_policy policy);

/// MPI_Scatterv under the policy (root 0; the root passes MPI_IN_PLACE as recvbuf when it keeps its part).
void scatterv(const void* sendbuf, const int* counts, const int* displs, MPI_Datatype type, void* recvbuf,
              int recvcount, MPI_Comm comm, wait_policy policy);

/// MPI_Gatherv under the policy (root 0).
void gatherv(const void* sendbuf, int sendcount, MPI_Datatype type, void* recvbuf, const int* counts,
             const int* displs, MPI_Comm comm, wait_policy policy);

/// MPI_Scatter under the policy (root 0; the root passes MPI_IN_PLACE as recvbuf when it keeps its part).
void scatter(const void* sendbuf, int count, MPI_Datatype type, void* recvbuf, MPI_Comm comm, wait_policy policy);

/// MPI_Gather under the policy (root 0; the root passes MPI_IN_PLACE as sendbuf when its part is in place).
void gather(const void* sendbuf, int count, MPI_Datatype type, void* recvbuf, MPI_Comm comm, wait_policy policy);

}  // namespace maprect::detail
