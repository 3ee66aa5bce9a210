#pragma once
// How ranks wait inside collectives. Every rank of a cluster uses the same policy: MPI never matches a
// blocking collective with a non-blocking one.
#include <mpi.h>

namespace maprect::detail {

/// spin: blocking collectives (lowest latency; a waiting rank keeps its core busy).
/// sleep: non-blocking collectives polled with a short spin, then sleeps that back off, so idle ranks
/// leave the CPU to busy ones when there are more ranks than cores.
enum class wait_policy : int { spin = 0, sleep = 1 };

/// The policy from MAPRECT_WAIT (spin | sleep | auto; default auto: sleep when some node runs more ranks
/// than it has cores). Collective over comm; every rank returns the same policy.
wait_policy choose_wait_policy(MPI_Comm comm);

/// Completes `request`, polling as the policy says.
void wait(MPI_Request& request, wait_policy policy);

/// MPI_Bcast under the policy.
void bcast(void* buffer, int count, MPI_Datatype type, MPI_Comm comm, wait_policy policy);

/// MPI_Scatterv under the policy (root 0; the root passes MPI_IN_PLACE as recvbuf when it keeps its part).
void scatterv(const void* sendbuf, const int* counts, const int* displs, MPI_Datatype type, void* recvbuf,
              int recvcount, MPI_Comm comm, wait_policy policy);

/// MPI_Gatherv under the policy (root 0).
void gatherv(const void* sendbuf, int sendcount, MPI_Datatype type, void* recvbuf, const int* counts,
             const int* displs, MPI_Comm comm, wait_policy policy);

}  // namespace maprect::detail
