#pragma once
// What a cluster holds on each rank. Private to the library.
#include <mpi.h>

#include <maprect/detail/call.hpp>
#include <maprect/thread_team.hpp>

#include "src/cluster/rank_context.hpp"
#include "src/map_rect/map_rect_state.hpp"
#include "src/reduce_sum/reduce_sites.hpp"

namespace maprect::detail {

/// What a cluster holds on each rank: what map_rect's commands reach (map_rect_context: the rank and map_rect's
/// state), reduce_sum's state, and the cluster's own life: who owns MPI, and what it put back at its stop.
class cluster_state : public map_rect_context {
 public:
  bool owns_mpi = false;   ///< this cluster initialised MPI and finalises it
  int threads_asked = threads_from_environment;  ///< cluster::options::threads
  thread_team* previous_team = nullptr;  ///< root: the team installed on its thread before the cluster's
  bool serving = false;    ///< root: workers are in their serve loop
  remote_call previous_backend = nullptr;  ///< root: the thread's backend before this cluster's, put back at stop
  remote_deferred_call previous_deferred = nullptr;  ///< root: its deferred backend before, put back at stop
  void (*previous_sweep)(deferred_call&) = nullptr;  ///< root: its deferred sweep before, put back at stop
  reduce_state reduce;
};

/// Sets up the cluster on a duplicate of `comm`; on a root with workers, installs the remote backend.
void start_cluster(cluster_state& s, MPI_Comm comm);
/// Workers: the serve loop. Root: returns at once.
void serve(cluster_state& s);
/// Root: releases the workers (idempotent).
void stop_cluster(cluster_state& s);
/// Frees the communicator.
void finish_cluster(cluster_state& s);
/// The cluster whose root side serves this thread's calls, or null.
cluster_state* live_cluster_root();
/// Workers: runs a reduce request that the serve loop received (src/reduce_sum/reduce_command.cpp).
void serve_reduce(rank_context& s, reduce_state& reduce, const wire::request& v, const double* shared);

}  // namespace maprect::detail
