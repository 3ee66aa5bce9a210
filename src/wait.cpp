// Waiting inside collectives: blocking, or polled with sleeps that leave the core to others.
#include "src/wait.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

namespace maprect::detail {

wait_policy choose_wait_policy(MPI_Comm comm) {
  int wanted = -1;  // -1: auto
  if (const char* env = std::getenv("MAPRECT_WAIT")) {
    if (std::strcmp(env, "spin") == 0) wanted = static_cast<int>(wait_policy::spin);
    else if (std::strcmp(env, "sleep") == 0) wanted = static_cast<int>(wait_policy::sleep);
    else if (std::strcmp(env, "auto") != 0 && env[0] != '\0')
      throw std::invalid_argument(std::string("MAPRECT_WAIT must be spin, sleep or auto, not '") + env + "'");
  }
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int ranks_on_node = 1;
  MPI_Comm_size(node, &ranks_on_node);
  MPI_Comm_free(&node);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int oversubscribed = ranks_on_node > cores ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &oversubscribed, 1, MPI_INT, MPI_MAX, comm);
  // The root's setting decides, so that every rank agrees even if environments differ.
  int policy = wanted >= 0 ? wanted : static_cast<int>(oversubscribed ? wait_policy::sleep : wait_policy::spin);
  MPI_Bcast(&policy, 1, MPI_INT, 0, comm);
  return static_cast<wait_policy>(policy);
}

void wait(MPI_Request& request, wait_policy policy) {
  if (policy == wait_policy::spin) {
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    return;
  }
  // A short spin keeps back-to-back calls fast; after it, sleeps grow to 1 ms so an idle rank costs
  // almost no CPU.
  using clock = std::chrono::steady_clock;
  const auto spin_until = clock::now() + std::chrono::microseconds(50);
  int done = 0;
  while (true) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (clock::now() >= spin_until) break;
  }
  auto nap = std::chrono::microseconds(5);
  while (true) {
    std::this_thread::sleep_for(nap);
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    nap = std::min(nap * 2, std::chrono::microseconds(1000));
  }
}

void bcast(void* buffer, int count, MPI_Datatype type, MPI_Comm comm, wait_policy policy) {
  if (policy == wait_policy::spin) {
    MPI_Bcast(buffer, count, type, 0, comm);
    return;
  }
  MPI_Request r;
  MPI_Ibcast(buffer, count, type, 0, comm, &r);
  wait(r, policy);
}

void scatterv(const void* sendbuf, const int* counts, const int* displs, MPI_Datatype type, void* recvbuf,
              int recvcount, MPI_Comm comm, wait_policy policy) {
  if (policy == wait_policy::spin) {
    MPI_Scatterv(sendbuf, counts, displs, type, recvbuf, recvcount, type, 0, comm);
    return;
  }
  MPI_Request r;
  MPI_Iscatterv(sendbuf, counts, displs, type, recvbuf, recvcount, type, 0, comm, &r);
  wait(r, policy);
}

void gatherv(const void* sendbuf, int sendcount, MPI_Datatype type, void* recvbuf, const int* counts,
             const int* displs, MPI_Comm comm, wait_policy policy) {
  if (policy == wait_policy::spin) {
    MPI_Gatherv(sendbuf, sendcount, type, recvbuf, counts, displs, type, 0, comm);
    return;
  }
  MPI_Request r;
  MPI_Igatherv(sendbuf, sendcount, type, recvbuf, counts, displs, type, 0, comm, &r);
  wait(r, policy);
}

}  // namespace maprect::detail
