// Root side of the cluster (in progress): set-up and release only; calls run in process.
#include "src/cluster_state.hpp"

namespace maprect::detail {

void start_cluster(cluster_state& s, MPI_Comm comm) {
  MPI_Comm_dup(comm, &s.comm);
  MPI_Comm_rank(s.comm, &s.rank);
  MPI_Comm_size(s.comm, &s.size);
}

void stop_cluster(cluster_state&) {}

void finish_cluster(cluster_state& s) {
  if (s.comm != MPI_COMM_NULL) MPI_Comm_free(&s.comm);
}

}  // namespace maprect::detail
