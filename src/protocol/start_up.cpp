// The start-up command: the steps every rank of a new cluster executes, in this order, before the first
// request. The ranks agree on the root's settings, resolve their teams against the CPUs of their hosts, and
// the root gathers every rank's facts and times its round trip to each worker.
#include "src/protocol/start_up.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <maprect/detail/thread_count.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "src/protocol/tags.hpp"
#include "src/transport/mpi_handles.hpp"

namespace maprect::detail {

namespace {

/// Whether some host runs more threads of comm's ranks (`threads` on this rank: its team, the caller included)
/// than the CPUs those ranks may run on (the union of their affinity masks, which a batch system's cpuset or
/// the launcher's binding narrows). Collective.
bool oversubscribed(MPI_Comm comm, int threads) {
  const mpi_comm host = mpi_comm::host_of(comm);
  const int ranks_on_host = host.size();
  const int cpus = host_cpus(host.get());
  const int usable = cpus > 0 ? cpus : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int threads_on_host = threads;
  MPI_Allreduce(MPI_IN_PLACE, &threads_on_host, 1, MPI_INT, MPI_SUM, host.get());
  int over = std::max(ranks_on_host, threads_on_host) > usable ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &over, 1, MPI_INT, MPI_MAX, comm);
  return over != 0;
}

/// How many ranks of this rank's host may run on some CPU of its affinity mask, itself included. Collective.
int ranks_sharing_my_cpus(MPI_Comm comm) {
  const mpi_comm host = mpi_comm::host_of(comm);
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0)
    for (int c = 0; c < CPU_SETSIZE; ++c) CPU_SET(c, &mine);  // unknown: shares with everyone
  std::vector<cpu_set_t> all(static_cast<std::size_t>(host.size()));
  MPI_Allgather(&mine, static_cast<int>(sizeof mine), MPI_BYTE, all.data(), static_cast<int>(sizeof mine), MPI_BYTE,
                host.get());
  int sharing = 0;
  for (cpu_set_t& other : all) {
    cpu_set_t both;
    CPU_AND(&both, &mine, &other);
    if (CPU_COUNT(&both) > 0) ++sharing;
  }
  return std::max(1, sharing);
}

/// The team size of this rank for the root's MAPRECT_THREADS reading `asked`: auto divides the CPUs of the
/// rank's affinity mask among the ranks of its host that share them. One thread when some rank's MPI was
/// initialised below MPI_THREAD_FUNNELED (the team's threads never call MPI, but they must be allowed to
/// exist). Collective.
int resolve_threads(MPI_Comm comm, int rank, int asked) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  MPI_Allreduce(MPI_IN_PLACE, &provided, 1, MPI_INT, MPI_MIN, comm);
  const int threads = asked == threads_auto ? std::max(1, cpus_in_affinity_mask() / ranks_sharing_my_cpus(comm)) : asked;
  if (provided >= MPI_THREAD_FUNNELED || asked == 1) return threads;
  if (rank == 0)
    std::fprintf(stderr,
                 "maprect: MPI was initialised with a thread level below MPI_THREAD_FUNNELED; every rank runs its "
                 "jobs on 1 thread, not MAPRECT_THREADS=%s\n",
                 asked == threads_auto ? "auto" : std::to_string(asked).c_str());
  return 1;
}

/// Every rank learns of the first rank with an invalid value, and all of them throw alike: that rank with
/// its message, the others naming it and repeating its message.
void agree_on_errors(MPI_Comm comm, int rank, const std::string& error) {
  int bad_rank = error.empty() ? std::numeric_limits<int>::max() : rank;
  MPI_Allreduce(MPI_IN_PLACE, &bad_rank, 1, MPI_INT, MPI_MIN, comm);
  if (bad_rank == std::numeric_limits<int>::max()) return;
  const std::string own = error + " (rank " + std::to_string(rank) + ")";
  int length = static_cast<int>(own.size());
  MPI_Bcast(&length, 1, MPI_INT, bad_rank, comm);
  std::string theirs = bad_rank == rank ? own : std::string(static_cast<std::size_t>(length), ' ');
  MPI_Bcast(&theirs[0], length, MPI_CHAR, bad_rank, comm);
  if (bad_rank == rank) throw std::invalid_argument(own);
  throw std::invalid_argument("maprect::cluster: a MAPRECT_* environment variable is invalid on rank " +
                              std::to_string(bad_rank) + ": " + theirs);
}

/// The fixed-size record each rank sends: host name (cut to fit, always terminated), threads, CPUs.
struct fact_record {
  char host[64] = {};
  int threads = 1;
  int cpus = 1;
};

/// Root: the shortest of a few round trips of an empty message to each worker (the first may open the
/// connection); a worker echoes the root's, and times its own from its echo to the root's next message
/// (into `own`). Collective over comm.
std::vector<double> round_trips(MPI_Comm comm, int rank, int size, double& own) {
  constexpr int rounds = 4;
  std::vector<double> shortest(rank == 0 ? static_cast<std::size_t>(size) : 0, 0.0);
  own = 0;
  for (int r = 1; r < size; ++r) {
    if (rank != 0 && rank != r) continue;
    double echoed = 0;
    for (int k = 0; k <= rounds; ++k) {
      if (rank != 0) {
        MPI_Recv(nullptr, 0, MPI_BYTE, 0, round_trip_tag, comm, MPI_STATUS_IGNORE);
        if (k > 1) own = k == 2 ? MPI_Wtime() - echoed : std::min(own, MPI_Wtime() - echoed);
        echoed = MPI_Wtime();
        if (k < rounds) MPI_Send(nullptr, 0, MPI_BYTE, 0, round_trip_tag, comm);
        continue;
      }
      if (k == rounds) {  // the last message only ends the worker's last timing
        MPI_Send(nullptr, 0, MPI_BYTE, r, round_trip_tag, comm);
        continue;
      }
      const double start = MPI_Wtime();
      MPI_Send(nullptr, 0, MPI_BYTE, r, round_trip_tag, comm);
      MPI_Recv(nullptr, 0, MPI_BYTE, r, round_trip_tag, comm, MPI_STATUS_IGNORE);
      const double seconds = MPI_Wtime() - start;
      shortest[r] = k == 0 ? seconds : std::min(shortest[r], seconds);
    }
  }
  return shortest;
}

}  // namespace

int host_cpus(MPI_Comm host) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  int known = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &known, 1, MPI_INT, MPI_MIN, host);
  MPI_Allreduce(MPI_IN_PLACE, &cpus, static_cast<int>(sizeof cpus), MPI_BYTE, MPI_BOR, host);
  return known ? CPU_COUNT(&cpus) : 0;
}

cluster_settings choose_cluster_settings(MPI_Comm comm, int threads_asked) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const environment_reading e = read_environment(threads_asked, rank);
  agree_on_errors(comm, rank, e.error);
  // The root's MAPRECT_THREADS decides; auto resolves on each rank, and the threads count towards the cores.
  double threads_asked_at_root = e.threads;
  MPI_Bcast(&threads_asked_at_root, 1, MPI_DOUBLE, 0, comm);
  const int threads = resolve_threads(comm, rank, static_cast<int>(threads_asked_at_root));
  const bool over = oversubscribed(comm, threads);
  wait_policy policy = e.policy >= 0 ? static_cast<wait_policy>(e.policy) : over ? wait_policy::sleep : wait_policy::spin;
  // The root can only give up on a non-blocking collective, and MPI matches a non-blocking collective
  // only with non-blocking ones: with a timeout every rank polls.
  if (e.timeout > 0 && policy == wait_policy::spin) policy = wait_policy::poll;
  // The root's settings decide, so that every rank agrees even if environments differ.
  double agreed[7] = {static_cast<double>(policy), e.timeout, static_cast<double>(static_cast<int>(e.balance)),
                      e.host_transport ? 1.0 : 0.0, static_cast<double>(e.collectives),
                      static_cast<double>(e.test_host_ranks), static_cast<double>(e.test_held_rank)};
  MPI_Bcast(agreed, 7, MPI_DOUBLE, 0, comm);
  // auto: calls claim through host memory where every rank can (map_rect's: every rank holds every row), else
  // by message.
  const auto balance = static_cast<balance_mode>(static_cast<int>(agreed[2]));
  cluster_settings settings{static_cast<wait_policy>(static_cast<int>(agreed[0])), agreed[1],
                            balance == balance_mode::automatic, agreed[3] != 0, threads, static_cast<int>(agreed[4]),
                            static_cast<int>(agreed[5])};
  settings.balance = balance;
  settings.test_held_rank = static_cast<int>(agreed[6]);
  return settings;
}

std::vector<rank_fact> gather_rank_facts(MPI_Comm comm, int threads, double& round_trip) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  fact_record mine;
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  if (MPI_Get_processor_name(name, &length) != MPI_SUCCESS) std::strcpy(name, "unknown");
  std::snprintf(mine.host, sizeof mine.host, "%s", name);  // a longer host name is cut at the record's size
  mine.threads = threads;
  mine.cpus = cpus_in_affinity_mask();
  std::vector<fact_record> all(rank == 0 ? static_cast<std::size_t>(size) : 0);
  MPI_Gather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, 0, comm);
  const std::vector<double> trips = round_trips(comm, rank, size, round_trip);
  std::vector<rank_fact> facts;
  for (std::size_t r = 0; r < all.size(); ++r) facts.push_back({all[r].host, all[r].threads, all[r].cpus, trips[r]});
  return facts;
}

}  // namespace maprect::detail
