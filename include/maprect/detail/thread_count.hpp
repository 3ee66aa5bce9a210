#pragma once
/// \file MAPRECT_THREADS: how many threads each rank runs its jobs on.

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace maprect::detail {

/// The most threads MAPRECT_THREADS may ask for.
constexpr int max_thread_count = 1024;

/// The CPUs this process may run on (its affinity mask, which a batch system's cpuset or the launcher's
/// binding narrows); 1 if the mask cannot be read.
inline int cpus_in_affinity_mask() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof cpus, &cpus) != 0) return 1;
  return std::max(1, CPU_COUNT(&cpus));
}

/// The thread count a MAPRECT_THREADS value asks for on rank `rank`: unset or empty -> 1; "N" -> N
/// (1 .. max_thread_count, decimal digits only); "auto" -> cpus_in_mask / ranks_sharing, at least 1, where
/// ranks_sharing is how many ranks share those CPUs. Throws std::invalid_argument naming the variable, the
/// value and the rank for anything else.
inline int parse_thread_count(const char* value, int rank, int cpus_in_mask, int ranks_sharing) {
  if (value == nullptr || value[0] == '\0') return 1;
  const std::string text(value);
  if (text == "auto") return std::max(1, cpus_in_mask / std::max(1, ranks_sharing));
  const bool digits = text.find_first_not_of("0123456789") == std::string::npos;
  long n = 0;
  if (digits && text.size() <= 9) n = std::strtol(value, nullptr, 10);
  if (n < 1 || n > max_thread_count)
    throw std::invalid_argument("MAPRECT_THREADS must be auto or a thread count from 1 to " +
                                std::to_string(max_thread_count) + ", not '" + text + "' (rank " +
                                std::to_string(rank) + ")");
  return static_cast<int>(n);
}

}  // namespace maprect::detail
