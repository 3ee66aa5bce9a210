#pragma once
/// \file Chains on sub-communicators: a communicator split into C groups of ranks, each a maprect::cluster
/// whose root runs one chain while the group's other ranks serve its map_rect calls.

#include <mpi.h>

#include <maprect/cluster.hpp>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace maprect {

/// Where a chain runs: its number and its group.
struct chain_group {
  int chain = 1;             ///< chain number, 1-based
  int chains = 1;            ///< chains in the run
  int first_rank = 0;        ///< first rank of the group in the split communicator
  int ranks = 1;             ///< ranks of the group
  cluster* group = nullptr;  ///< the group's cluster (on its root)
};

/// Thrown by a chain's stop check when another chain has failed: the chain ends without being a failure.
struct chain_stopped : std::runtime_error {
  /// Names the chain that failed.
  explicit chain_stopped(int failed_chain)
      : std::runtime_error("stopped because chain " + std::to_string(failed_chain) + " failed") {}
};

/// How one chain ended, as every rank learns it.
struct chain_outcome {
  int chain = 1;        ///< chain number
  bool failed = false;  ///< the chain threw (not counting a stop for another chain's failure)
  bool stopped = false; ///< the chain ended early because another failed
  std::string message;  ///< the exception's message, empty if none
};

/// Which chain world rank `rank` of `size` serves: contiguous groups whose sizes differ by at most one.
int chain_of_rank(int rank, int size, int chains);

/// Collective on `comm`: splits it into `chains` groups (contiguous ranks, sizes differing by at most one),
/// makes each a cluster, and on each group's root calls body(group, stop_check); the other ranks serve. The body
/// should call stop_check() between iterations: it throws chain_stopped once another chain has failed, so
/// that one chain's failure ends every chain. Returns every chain's outcome, the same on every rank. Throws
/// std::invalid_argument (on every rank alike) when chains < 1 or chains > the ranks of `comm`.
std::vector<chain_outcome> run_chains(
    MPI_Comm comm, int chains, const std::function<void(const chain_group&, const std::function<void()>&)>& body);

}  // namespace maprect
