// Reading MAPRECT_* from the environment and agreeing on the result across ranks.
#include "src/settings.hpp"

#include "src/mpi_handles.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>

#include <sched.h>

namespace maprect::detail {

namespace {

/// This rank's reading of the environment, and what was wrong with it.
struct environment_reading {
  int policy = -1;  // -1: auto
  double timeout = 0;
  int balance = 2;  // 0: even, 1: static, 2: auto
  bool host_transport = true;  // MAPRECT_TRANSPORT=auto
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
    if (std::strcmp(v, "messages") == 0) e.host_transport = false;
    else if (std::strcmp(v, "auto") != 0)
      e.error = std::string("MAPRECT_TRANSPORT must be auto or messages, not '") + v + "'";
  }
  return e;
}

/// Whether some host runs more of comm's ranks than the CPUs those ranks may run on (the union of their
/// affinity masks, which a batch system's cpuset or the launcher's binding narrows). Collective.
bool oversubscribed(MPI_Comm comm) {
  const mpi_comm host = mpi_comm::host_of(comm);
  const int ranks_on_host = host.size();
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  int mine = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, host.get());
  MPI_Allreduce(MPI_IN_PLACE, &cpus, static_cast<int>(sizeof cpus), MPI_BYTE, MPI_BOR, host.get());
  const int usable = all ? CPU_COUNT(&cpus) : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int over = ranks_on_host > usable ? 1 : 0;
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
                      e.host_transport ? 1.0 : 0.0};
  MPI_Bcast(agreed, 4, MPI_DOUBLE, 0, comm);
  return {static_cast<wait_policy>(static_cast<int>(agreed[0])), agreed[1], agreed[2] >= 1, agreed[2] >= 2,
          agreed[3] != 0};
}

}  // namespace maprect::detail
