#pragma once
// What a cluster holds on every rank. Private to the library.
#include <mpi.h>

#include <cstdint>
#include <maprect/cluster.hpp>
#include <maprect/detail/call.hpp>

namespace maprect::detail {

class cluster_state {
 public:
  MPI_Comm comm = MPI_COMM_NULL;  ///< our duplicate of the user's communicator
  int rank = 0;
  int size = 1;
  bool owns_mpi = false;     ///< this cluster initialised MPI and finalises it
  bool serving = false;      ///< root: workers are waiting for requests
  cluster::traffic last_traffic;
};

}  // namespace maprect::detail

namespace maprect::detail {
/// Sets up the cluster on a duplicate of `comm`; on a root with workers, installs the remote backend.
void start_cluster(cluster_state& s, MPI_Comm comm);
/// Workers: the serve loop. Root: returns at once.
void serve(cluster_state& s);
/// Root: releases the workers (idempotent).
void stop_cluster(cluster_state& s);
/// Frees the communicator.
void finish_cluster(cluster_state& s);
}  // namespace maprect::detail
