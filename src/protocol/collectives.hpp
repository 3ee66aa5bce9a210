#pragma once
// The shapes of a cluster's scatters and gathers (plan::gather_kind), which the root picks per call site and
// names in every request's header, so that every rank runs the same one:
//  flat          MPI_Scatterv / MPI_Gatherv on the cluster's communicator (Open MPI runs them linearly at the root);
//  tree          fixed-size MPI_Scatter / MPI_Gather on it, every worker's part padded to the largest one's (the
//                header's chunk), which MPI may run down a tree; the root packs and unpacks its counts/displs;
//  hierarchical  the same padded parts through one leader per host: the members of a host to and from their
//                leader (MPI_Gather / MPI_Scatter on the host's communicator), the leaders to and from the root
//                (MPI_Gatherv / MPI_Scatterv on the leaders' communicator).
// The values are moved, never combined: every kind gives the same bits.
#include <mpi.h>

#include <vector>

#include "src/transport/mpi_handles.hpp"
#include "src/plan/cost_model.hpp"

namespace maprect::detail {

/// flat, hierarchical or tree.
using collective_kind = plan::gather_kind;

/// How one scatter or gather runs: its kind and, for tree and hierarchical, every worker's padded part.
struct collective {
  collective_kind kind = collective_kind::flat;  ///< its kind
  int chunk = 0;                                 ///< values of the largest worker's part (tree, hierarchical)
};

/// A cluster's hosts as its collectives see them: one communicator per host and one of the hosts' leaders,
/// split once per cluster. Host rank 0 leads its host; the root leads its own and is leader rank 0.
class collective_hosts {
 public:
  /// Splits `comm` by host (MPI_COMM_TYPE_SHARED), each host again into groups of `test_host_ranks` ranks
  /// when it is above 0 (a test of several hosts on one machine), and makes the leaders' communicator.
  /// Collective over comm.
  void open(MPI_Comm comm, int test_host_ranks);
  /// Frees the communicators (collective over the one given to open()).
  void close();

  /// This rank's host.
  MPI_Comm host() const { return host_.get(); }
  /// The hosts' leaders; MPI_COMM_NULL on the other ranks.
  MPI_Comm leaders() const { return leaders_.get(); }
  /// Ranks on this rank's host.
  int host_size() const { return host_size_; }
  /// Hosts of the cluster.
  int hosts() const { return hosts_; }
  /// Ranks on the largest host.
  int largest_host() const { return largest_host_; }
  /// Root: the cluster rank at each place of a hierarchical collective's padded parts (host after host, in
  /// the leaders' order; place 0 is the root).
  const std::vector<int>& order() const { return order_; }
  /// Root: ranks on each host, in the leaders' order.
  const std::vector<int>& host_sizes() const { return host_sizes_; }
  std::vector<double> staging;                   ///< padded parts on their way (root, leaders, short parts)
  std::vector<int> leader_counts, leader_displs;  ///< root: each host's padded parts in `staging`
  collective_kind gathered = collective_kind::flat;  ///< root: the kind of its last gather, as it ran
  int gathered_from = 0;  ///< root: the ranks whose parts that gather's stages collected (flat, tree: every
                          ///< worker; hierarchical: the other ranks of its host, then the other hosts' leaders)

 private:
  mpi_comm host_, leaders_;
  int host_size_ = 1, hosts_ = 1, largest_host_ = 1;
  std::vector<int> order_, host_sizes_;
};

/// The root's choice of a call site's collectives from the cluster's settings: MAPRECT_COLLECTIVES when it
/// forces a kind, else (auto) plan::auto_collective at this cluster's ranks, hosts and largest host, with the
/// assumed link figures, for `jobs` jobs moving `out_bytes` and `back_bytes` per call outside the root. Flat
/// with a call timeout (the root gives up only on a flat gather) and where a padded collective would not
/// fit one message (`largest_part` values per rank).
collective_kind choose_collective(int forced, bool timeout, const collective_hosts& hosts, int ranks, int jobs,
                                  double out_bytes, double back_bytes, long long largest_part);

}  // namespace maprect::detail
