// The ranks' hosts, threads and CPUs, gathered on the root at start-up.
#include "src/cluster/rank_facts.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <maprect/detail/thread_count.hpp>
#include <utility>

#include "src/protocol/tags.hpp"

namespace maprect::detail {

namespace {

/// The fixed-size record each rank sends: host name (cut to fit, always terminated), threads, CPUs.
struct fact_record {
  char host[64] = {};
  int threads = 1;
  int cpus = 1;
};

/// "0-3,5": the ranks as ranges, in order.
std::string rank_ranges(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ranks[i]);
    if (j > i) out += '-' + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

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

std::string bound_threads_warning(const std::vector<rank_fact>& facts) {
  std::map<std::pair<int, int>, std::vector<int>> groups;  // (threads, cpus) -> ranks with more threads than CPUs
  int most_threads = 1;
  for (std::size_t r = 0; r < facts.size(); ++r)
    if (facts[r].threads > facts[r].cpus) {
      groups[{facts[r].threads, facts[r].cpus}].push_back(static_cast<int>(r));
      most_threads = std::max(most_threads, facts[r].threads);
    }
  if (groups.empty()) return "";
  std::string line = "maprect: warning: more threads than CPUs on ";
  bool first = true;
  for (const auto& [counts, ranks] : groups) {
    line += first ? "" : "; ";
    first = false;
    line += (ranks.size() > 1 ? "ranks " : "rank ") + rank_ranges(ranks) + " (" + std::to_string(counts.first) +
            " threads, " + std::to_string(counts.second) + (counts.second == 1 ? " CPU" : " CPUs") +
            " in the affinity mask)";
  }
  const std::string t = std::to_string(most_threads);
  return line + ": the threads share those CPUs and gain nothing; give each rank " + t +
         " CPUs (mpirun --map-by slot:PE=" + t + ", or srun --cpus-per-task=" + t +
         ") or unbind the ranks (mpirun --bind-to none)";
}

const char* host_of(const std::vector<rank_fact>& facts, int rank) {
  if (rank < 0 || static_cast<std::size_t>(rank) >= facts.size()) return "unknown";
  return facts[static_cast<std::size_t>(rank)].host.c_str();
}

}  // namespace maprect::detail
