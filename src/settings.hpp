#pragma once
// The settings a cluster's ranks agree on at start-up, read from the environment as the root has it.
#include <mpi.h>

#include "src/wait.hpp"

namespace maprect::detail {

/// How a cluster's ranks wait and plan, agreed by all of them at start-up.
struct cluster_settings {
  wait_policy policy = wait_policy::spin;  ///< how collectives wait
  double timeout = 0;                      ///< seconds the root waits for a call's answers; 0: forever
  bool tune_shares = true;                 ///< the root tunes its share of each call site's jobs
  bool take_over = true;                   ///< the root runs jobs of host-local workers it finishes before
  bool host_transport = true;                 ///< steady calls' data go through host memory when they can
};

/// The settings from the environment as the root has it: MAPRECT_WAIT (spin | sleep | auto; default auto:
/// sleep when some host runs more ranks than the CPUs they may use), MAPRECT_TIMEOUT (seconds) and
/// MAPRECT_BALANCE (auto | static | even) and MAPRECT_TRANSPORT (auto | messages). Collective over comm: every rank returns the same settings, or
/// every rank throws std::invalid_argument naming the variable and a rank where its value is invalid.
cluster_settings choose_cluster_settings(MPI_Comm comm);

}  // namespace maprect::detail
