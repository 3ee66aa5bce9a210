#pragma once
// What the root learns of every rank at start-up: its host, for error messages that name where a rank runs,
// its threads against its CPUs, to warn of threads that a launcher's binding leaves without cores, and the
// round trip of a message to it, below which a batch of jobs is not worth shipping there.
#include <string>
#include <vector>

namespace maprect::detail {

/// One rank as the root sees it.
struct rank_fact {
  std::string host;  ///< MPI_Get_processor_name on that rank
  int threads = 1;   ///< its team's threads (settings.threads there)
  int cpus = 1;      ///< the CPUs of its affinity mask
  double round_trip = 0;  ///< seconds: the shortest of a few round trips of a small message from the root
};

/// The one-line warning for ranks that run more threads than their affinity mask has CPUs (ranks grouped
/// by threads and CPUs, and the fixes), or "" when every rank has a CPU per thread.
std::string bound_threads_warning(const std::vector<rank_fact>& facts);

/// The host of rank `rank` as gathered, or "unknown" when it is not known.
const char* host_of(const std::vector<rank_fact>& facts, int rank);

}  // namespace maprect::detail
