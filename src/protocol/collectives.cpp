// The hosts of the hierarchical collectives, split once per cluster, and the root's choice of a kind.
#include "src/protocol/collectives.hpp"

#include <algorithm>
#include <climits>
#include <utility>

namespace maprect::detail {

void collective_hosts::open(MPI_Comm comm, int test_host_ranks) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  host_ = mpi_comm::host_of(comm);  // keyed by rank: the lowest rank of a host leads it
  if (test_host_ranks > 0) {
    MPI_Comm split = MPI_COMM_NULL;
    MPI_Comm_split(host_.get(), host_.rank() / test_host_ranks, rank, &split);
    host_ = mpi_comm::adopt(split);
  }
  host_size_ = host_.size();
  const bool leader = host_.rank() == 0;
  MPI_Comm made = MPI_COMM_NULL;
  MPI_Comm_split(comm, leader ? 0 : MPI_UNDEFINED, rank, &made);
  leaders_ = mpi_comm::adopt(made);
  int counts[2] = {leader ? 1 : 0, host_size_};
  MPI_Allreduce(MPI_IN_PLACE, &counts[0], 1, MPI_INT, MPI_SUM, comm);
  MPI_Allreduce(MPI_IN_PLACE, &counts[1], 1, MPI_INT, MPI_MAX, comm);
  hosts_ = counts[0];
  largest_host_ = counts[1];
  // The root learns each rank's leader: its hosts, in the leaders' (rank) order, give the places.
  int leader_rank = leader ? rank : 0;
  MPI_Bcast(&leader_rank, 1, MPI_INT, 0, host_.get());
  std::vector<int> leader_of(static_cast<std::size_t>(rank == 0 ? size : 0));
  MPI_Gather(&leader_rank, 1, MPI_INT, leader_of.data(), 1, MPI_INT, 0, comm);
  order_.clear();
  host_sizes_.clear();
  if (rank != 0) return;
  order_.resize(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) order_[r] = r;
  std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) { return leader_of[a] < leader_of[b]; });
  for (int p = 0; p < size; ++p) {
    if (p == 0 || leader_of[order_[p]] != leader_of[order_[p - 1]]) host_sizes_.push_back(0);
    ++host_sizes_.back();
  }
}

void collective_hosts::close() {
  leaders_.reset();
  host_.reset();
}

collective_kind choose_collective(int forced, bool timeout, const collective_hosts& hosts, int ranks, int jobs,
                                  double out_bytes, double back_bytes, long long largest_part) {
  if (ranks <= 1 || timeout || largest_part * ranks > INT_MAX) return collective_kind::flat;
  if (forced >= 0) return static_cast<collective_kind>(forced);
  plan::cost_inputs in;
  in.jobs = std::max(1, jobs);
  in.ranks_per_host = hosts.largest_host();
  in.local = plan::assumed_local_link;
  in.remote = plan::assumed_remote_link;
  return plan::auto_collective(in, ranks, hosts.hosts(), out_bytes / in.jobs, back_bytes / in.jobs);
}

}  // namespace maprect::detail
