// Reading MAPRECT_* from the environment and agreeing on the result across ranks.
#include "src/cluster/settings.hpp"

#include "src/transport/mpi_handles.hpp"
#include "src/plan/cost_model.hpp"

#include <maprect/detail/thread_count.hpp>
#include <cstdio>
#include <vector>

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
  balance_mode balance = balance_mode::automatic;
  bool host_transport = true;  // MAPRECT_TRANSPORT=auto
  int threads = 1;             // threads_auto, or a count
  int collectives = collectives_auto;
  int test_host_ranks = 0;
  int test_held_rank = -1;
  std::string error;
};

/// MAPRECT_THREADS, or what the program asked in code instead: a count, or threads_auto.
int read_threads(int asked, int rank, std::string& error) {
  if (asked == threads_auto) return threads_auto;
  if (asked != threads_from_environment) {
    if (asked >= 1 && asked <= max_thread_count) return asked;
    error = "maprect::cluster: options.threads must be 0 (MAPRECT_THREADS decides), -1 (auto) or a thread count "
            "from 1 to " + std::to_string(max_thread_count) + ", not " + std::to_string(asked);
    return 1;
  }
  const char* v = std::getenv("MAPRECT_THREADS");
  if (v != nullptr && std::strcmp(v, "auto") == 0) return threads_auto;
  try {
    return parse_thread_count(v, rank, 1, 1);
  } catch (const std::invalid_argument& e) {
    error = e.what();
    const std::string suffix = " (rank " + std::to_string(rank) + ")";  // added once, with the others'
    if (error.size() >= suffix.size() && error.compare(error.size() - suffix.size(), suffix.size(), suffix) == 0)
      error.erase(error.size() - suffix.size());
    return 1;
  }
}

/// Variable `name`, when set, into `value`: a whole number from `least` to 10^6, else `error` says it must be
/// `what`.
void read_rank_number(const char* name, long least, const char* what, int& value, std::string& error) {
  const char* v = std::getenv(name);
  if (v == nullptr || v[0] == '\0') return;
  char* end = nullptr;
  const long k = std::strtol(v, &end, 10);
  if (*end != '\0' || k < least || k > 1000000)
    error = std::string(name) + " must be " + what + ", not '" + v + "'";
  else
    value = static_cast<int>(k);
}

/// MAPRECT_COLLECTIVES, MAPRECT_TEST_HOST_RANKS and MAPRECT_TEST_HOLD_RANK into `e`.
void read_collectives(environment_reading& e) {
  if (const char* v = std::getenv("MAPRECT_COLLECTIVES"); v != nullptr && v[0] != '\0') {
    if (std::strcmp(v, "flat") == 0) e.collectives = static_cast<int>(plan::gather_kind::flat);
    else if (std::strcmp(v, "tree") == 0) e.collectives = static_cast<int>(plan::gather_kind::tree);
    else if (std::strcmp(v, "hierarchical") == 0) e.collectives = static_cast<int>(plan::gather_kind::hierarchical);
    else if (std::strcmp(v, "auto") != 0)
      e.error = std::string("MAPRECT_COLLECTIVES must be auto, flat, tree or hierarchical, not '") + v + "'";
  }
  read_rank_number("MAPRECT_TEST_HOST_RANKS", 1, "a rank count of at least 1", e.test_host_ranks, e.error);
  read_rank_number("MAPRECT_TEST_HOLD_RANK", 0, "a rank", e.test_held_rank, e.error);
}

environment_reading read_environment(int threads_asked, int rank) {
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
    if (std::strcmp(v, "static") == 0 || std::strcmp(v, "even") == 0) e.balance = balance_mode::static_share;
    else if (std::strcmp(v, "hosts") == 0) e.host_transport = false;  // auto, every claim by message
    else if (std::strcmp(v, "auto") != 0)
      e.error = std::string("MAPRECT_BALANCE must be auto, static, even or hosts, not '") + v + "'";
  }
  if (const char* v = std::getenv("MAPRECT_TRANSPORT"); v != nullptr && v[0] != '\0') {
    if (std::strcmp(v, "messages") == 0) e.host_transport = false;
    else if (std::strcmp(v, "auto") != 0)
      e.error = std::string("MAPRECT_TRANSPORT must be auto or messages, not '") + v + "'";
  }
  read_collectives(e);
  std::string threads_error;
  e.threads = read_threads(threads_asked, rank, threads_error);
  if (!threads_error.empty()) e.error = threads_error;
  return e;
}

/// Whether some host runs more threads of comm's ranks (`threads` on this rank: its team, the caller included)
/// than the CPUs those ranks may run on (the union of their affinity masks, which a batch system's cpuset or
/// the launcher's binding narrows). Collective.
bool oversubscribed(MPI_Comm comm, int threads) {
  const mpi_comm host = mpi_comm::host_of(comm);
  const int ranks_on_host = host.size();
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  int mine = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, host.get());
  MPI_Allreduce(MPI_IN_PLACE, &cpus, static_cast<int>(sizeof cpus), MPI_BYTE, MPI_BOR, host.get());
  const int usable = all ? CPU_COUNT(&cpus) : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
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

}  // namespace

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

}  // namespace maprect::detail
