#pragma once
// The start-up command, which every rank of a new cluster executes: the settings agreed, the ranks' facts
// gathered on the root. The only start-up steps that talk over the cluster's communicator.
#include <mpi.h>

#include <vector>

#include "src/cluster/rank_facts.hpp"
#include "src/cluster/settings.hpp"

namespace maprect::detail {

/// The settings from the environment as the root has it (read_environment; MAPRECT_WAIT=auto: sleep when some
/// host runs more ranks, or threads of their teams, than the CPUs they may use). Collective over comm:
/// every rank returns the same settings (but for `threads`, which auto resolves per rank), or every rank
/// throws std::invalid_argument with the message of the first rank whose value is invalid (the variable,
/// the value and that rank). Below MPI_THREAD_FUNNELED every rank runs on one thread (rank 0 says so).
cluster_settings choose_cluster_settings(MPI_Comm comm, int threads_asked = threads_from_environment);

/// The CPUs that the ranks of `host`, the ranks of one host (mpi_comm::host_of), may run on: the union of their
/// affinity masks, which a batch system's cpuset or the launcher's binding narrows; 0 where some rank's mask
/// is unknown. Collective over `host`.
int host_cpus(MPI_Comm host);

/// Root: every rank's facts, in rank order; other ranks: empty. Collective over comm; the round trips are
/// measured one worker after another, and a worker's own (from its answer to the root's next message) is
/// left in `round_trip` (0 on the root).
std::vector<rank_fact> gather_rank_facts(MPI_Comm comm, int threads, double& round_trip);

}  // namespace maprect::detail
