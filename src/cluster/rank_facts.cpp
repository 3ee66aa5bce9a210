// What the root learns of every rank at start-up (gathered by src/protocol/start_up.cpp), put in words.
#include "src/cluster/rank_facts.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace maprect::detail {

namespace {

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

}  // namespace

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
