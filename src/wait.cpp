// Waiting inside collectives: blocking, or polled with yields and sleeps that leave the core to others.
#include "src/wait.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>

#include <sched.h>

namespace maprect::detail {

namespace {
// The sleep policy's schedule, from scripts/bench-oversubscribe.sh at np=4 on 2 cores: a 200 us window
// keeps back-to-back gradients as fast as spinning; 2 ms windows cost the root up to 2x when it computes
// alone for a few ms between calls; no window (naps at once) costs 2x on back-to-back gradients.
constexpr std::chrono::microseconds kYieldWindow{200};  // polling with sched_yield
constexpr std::chrono::microseconds kFirstNap{50};       // about the kernel's default timer slack
constexpr std::chrono::microseconds kLongestNap{1000};
}  // namespace

namespace {

/// This rank's reading of the environment, and what was wrong with it.
struct environment_reading {
  int policy = -1;  // -1: auto
  double timeout = 0;
  int balance = 2;  // 0: even, 1: static, 2: auto
  bool node_memory = true;  // MAPRECT_TRANSPORT=auto
  std::string error;
};

environment_reading read_environment() {
  environment_reading e;
  if (const char* v = std::getenv("MAPRECT_WAIT"); v != nullptr && v[0] != '\0') {
    if (std::strcmp(v, "spin") == 0) e.policy = static_cast<int>(wait_policy::spin);
    else if (std::strcmp(v, "sleep") == 0) e.policy = static_cast<int>(wait_policy::sleep);
    else if (std::strcmp(v, "auto") != 0) e.error = std::string("MAPRECT_WAIT must be spin, sleep or auto, not '") + v + "'";
  }
  // MAPRECT_TIMEOUT=<seconds>: the root aborts the job, naming the late ranks, when a call's workers
  // have not all answered that long after it started (unset or 0: wait forever).
  if (const char* v = std::getenv("MAPRECT_TIMEOUT"); v != nullptr && v[0] != '\0') {
    char* end = nullptr;
    e.timeout = std::strtod(v, &end);
    if (*end != '\0' || !(e.timeout >= 0) || e.timeout > 1e9) {
      e.error = std::string("MAPRECT_TIMEOUT must be a number of seconds, not '") + v + "'";
      e.timeout = 0;
    }
  }
  if (const char* v = std::getenv("MAPRECT_BALANCE"); v != nullptr && v[0] != '\0') {
    if (std::strcmp(v, "even") == 0) e.balance = 0;
    else if (std::strcmp(v, "static") == 0) e.balance = 1;
    else if (std::strcmp(v, "auto") != 0)
      e.error = std::string("MAPRECT_BALANCE must be auto, static or even, not '") + v + "'";
  }
  if (const char* v = std::getenv("MAPRECT_TRANSPORT"); v != nullptr && v[0] != '\0') {
    if (std::strcmp(v, "messages") == 0) e.node_memory = false;
    else if (std::strcmp(v, "auto") != 0)
      e.error = std::string("MAPRECT_TRANSPORT must be auto or messages, not '") + v + "'";
  }
  return e;
}

/// Whether some node runs more of comm's ranks than the CPUs those ranks may run on (the union of their
/// affinity masks, which a batch system's cpuset or the launcher's binding narrows). Collective.
bool oversubscribed(MPI_Comm comm) {
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int ranks_on_node = 1;
  MPI_Comm_size(node, &ranks_on_node);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  int mine = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, node);
  MPI_Allreduce(MPI_IN_PLACE, &cpus, static_cast<int>(sizeof cpus), MPI_BYTE, MPI_BOR, node);
  MPI_Comm_free(&node);
  const int usable = all ? CPU_COUNT(&cpus) : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int over = ranks_on_node > usable ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &over, 1, MPI_INT, MPI_MAX, comm);
  return over != 0;
}

}  // namespace

cluster_settings choose_cluster_settings(MPI_Comm comm) {
  const environment_reading e = read_environment();
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // Every rank learns of the first rank with an invalid value, and all of them throw alike.
  int bad_rank = e.error.empty() ? std::numeric_limits<int>::max() : rank;
  MPI_Allreduce(MPI_IN_PLACE, &bad_rank, 1, MPI_INT, MPI_MIN, comm);
  if (bad_rank != std::numeric_limits<int>::max()) {
    if (bad_rank == rank) throw std::invalid_argument(e.error + " (rank " + std::to_string(rank) + ")");
    throw std::invalid_argument("maprect::cluster: a MAPRECT_* environment variable is invalid on rank " +
                                std::to_string(bad_rank));
  }
  const bool over = oversubscribed(comm);
  wait_policy policy = e.policy >= 0 ? static_cast<wait_policy>(e.policy) : over ? wait_policy::sleep : wait_policy::spin;
  // The root can only give up on a non-blocking collective, and MPI matches a non-blocking collective
  // only with non-blocking ones: with a timeout every rank polls.
  if (e.timeout > 0 && policy == wait_policy::spin) policy = wait_policy::poll;
  // The root's settings decide, so that every rank agrees even if environments differ.
  double agreed[4] = {static_cast<double>(policy), e.timeout, static_cast<double>(e.balance),
                      e.node_memory ? 1.0 : 0.0};
  MPI_Bcast(agreed, 4, MPI_DOUBLE, 0, comm);
  return {static_cast<wait_policy>(static_cast<int>(agreed[0])), agreed[1], agreed[2] >= 1, agreed[2] >= 2,
          agreed[3] != 0};
}

bool wait_until(bool (*ready)(void* context), void* context, wait_policy policy,
                std::chrono::steady_clock::time_point deadline) {
  using clock = std::chrono::steady_clock;
  if (policy != wait_policy::sleep) {
    const bool forever = deadline == clock::time_point::max();
    while (true) {
      if (ready(context)) return true;
      if (!forever && clock::now() >= deadline) return false;
    }
  }
  // First poll, yielding the core between polls: a rank that shares its core with a busy one lets it
  // run, and one that does not answers within microseconds, as a spin would. Waits inside a call and
  // between back-to-back calls are shorter than the window. After it the rank is idle: sleeps growing to
  // 1 ms cost almost no CPU. (A pure spin, even a short one, would hold a shared core away from the rank doing the work.)
  const auto yield_until = std::min(deadline, clock::now() + kYieldWindow);
  while (true) {
    if (ready(context)) return true;
    if (clock::now() >= yield_until) break;
    sched_yield();
  }
  auto nap = kFirstNap;
  while (true) {
    const auto now = clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(std::min<clock::duration>(nap, deadline - now));
    if (ready(context)) return true;
    nap = std::min(nap * 2, kLongestNap);
  }
}

bool wait_until(MPI_Request& request, wait_policy policy, std::chrono::steady_clock::time_point deadline) {
  auto completed = [](void* r) {
    int done = 0;
    MPI_Test(static_cast<MPI_Request*>(r), &done, MPI_STATUS_IGNORE);
    return done != 0;
  };
  return wait_until(completed, &request, policy, deadline);
}

void wait(MPI_Request& request, wait_policy policy) {
  if (policy != wait_policy::sleep) {
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    return;
  }
  wait_until(request, policy, std::chrono::steady_clock::time_point::max());
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
  scatterv_typed(sendbuf, counts, displs, type, recvbuf, recvcount, type, comm, policy);
}

void scatterv_typed(const void* sendbuf, const int* counts, const int* displs, MPI_Datatype send_type, void* recvbuf,
                    int recvcount, MPI_Datatype recv_type, MPI_Comm comm, wait_policy policy) {
  if (policy == wait_policy::spin) {
    MPI_Scatterv(sendbuf, counts, displs, send_type, recvbuf, recvcount, recv_type, 0, comm);
    return;
  }
  MPI_Request r;
  MPI_Iscatterv(sendbuf, counts, displs, send_type, recvbuf, recvcount, recv_type, 0, comm, &r);
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
