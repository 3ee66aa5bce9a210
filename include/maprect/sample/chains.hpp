#pragma once
/// \file Chains on sub-communicators: a communicator split into C groups of ranks, each a maprect::cluster
/// whose root runs one chain while the group's other ranks serve its map_rect calls.

#include <mpi.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../cluster.hpp"

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
inline int chain_of_rank(int rank, int size, int chains) {
  const int base = size / chains, extra = size % chains;
  const int big = extra * (base + 1);  // ranks in the first `extra` groups, one rank larger
  return rank < big ? rank / (base + 1) : extra + (rank - big) / base;
}

namespace detail {

constexpr int chain_failure_tag = 7301;

/// Every rank gets each chain root's (code, message): code 0 ok, 1 failed, 2 stopped; -1 from other ranks.
inline std::vector<chain_outcome> gather_outcomes(MPI_Comm comm, int chains, int my_chain, int code,
                                                  const std::string& message) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  int mine[3] = {code, my_chain, static_cast<int>(message.size())};
  std::vector<int> all(3 * static_cast<std::size_t>(size));
  MPI_Allgather(mine, 3, MPI_INT, all.data(), 3, MPI_INT, comm);
  std::vector<int> lengths(size), offsets(size);
  int total = 0;
  for (int r = 0; r < size; ++r) lengths[r] = all[3 * r + 2], offsets[r] = total, total += lengths[r];
  std::string text(static_cast<std::size_t>(total), '\0');
  MPI_Allgatherv(message.data(), mine[2], MPI_CHAR, text.data(), lengths.data(), offsets.data(), MPI_CHAR, comm);
  std::vector<chain_outcome> out(static_cast<std::size_t>(chains));
  for (int c = 0; c < chains; ++c) out[c].chain = c + 1;
  for (int r = 0; r < size; ++r) {
    if (all[3 * r] < 0) continue;
    chain_outcome& o = out[all[3 * r + 1] - 1];
    o.failed = all[3 * r] == 1;
    o.stopped = all[3 * r] == 2;
    o.message = text.substr(offsets[r], lengths[r]);
  }
  return out;
}

}  // namespace detail

/// Collective on `comm`: splits it into `chains` groups (contiguous ranks, sizes differing by at most one),
/// makes each a cluster, and on each group's root calls body(group, stop_check); the other ranks serve. The body
/// should call stop_check() between iterations: it throws chain_stopped once another chain has failed, so
/// that one chain's failure ends every chain. Returns every chain's outcome, the same on every rank. Throws
/// std::invalid_argument (on every rank alike) when chains < 1 or chains > the ranks of `comm`.
inline std::vector<chain_outcome> run_chains(
    MPI_Comm comm, int chains, const std::function<void(const chain_group&, const std::function<void()>&)>& body) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (chains < 1 || chains > size)
    throw std::invalid_argument("--chains " + std::to_string(chains) + " needs between 1 and " +
                                std::to_string(size) + " chains: each chain needs at least one of the " +
                                std::to_string(size) + " MPI rank" + (size == 1 ? "" : "s"));
  const int chain = chain_of_rank(rank, size, chains);
  MPI_Comm group_comm = MPI_COMM_NULL, roots = MPI_COMM_NULL;
  MPI_Comm_split(comm, chain, rank, &group_comm);
  int group_rank = 0, group_size = 1;
  MPI_Comm_rank(group_comm, &group_rank);
  MPI_Comm_size(group_comm, &group_size);
  const bool root = group_rank == 0;
  MPI_Comm_split(comm, root ? 0 : MPI_UNDEFINED, chain, &roots);

  int code = -1;
  std::string message;
  std::vector<MPI_Request> sends;
  int signal = chain + 1;
  {
    cluster c(group_comm);
    if (!root) {
      c.serve();
    } else {
      chain_group g{chain + 1, chains, rank, group_size, &c};
      auto stop_check = [&] {
        int flag = 0;
        MPI_Status status;
        MPI_Iprobe(MPI_ANY_SOURCE, detail::chain_failure_tag, roots, &flag, &status);
        if (flag) throw chain_stopped(status.MPI_SOURCE + 1);
      };
      try {
        body(g, stop_check);
        code = 0;
      } catch (const chain_stopped& e) {
        code = 2;
        message = e.what();
      } catch (const std::exception& e) {
        code = 1;
        message = e.what();
        sends.resize(static_cast<std::size_t>(chains - 1));
        for (int other = 0, k = 0; other < chains; ++other)
          if (other != chain) MPI_Isend(&signal, 1, MPI_INT, other, detail::chain_failure_tag, roots, &sends[k++]);
      }
      c.stop();
    }
  }
  std::vector<chain_outcome> outcomes = detail::gather_outcomes(comm, chains, chain + 1, code, message);
  if (root) {  // take in the failure signals addressed to this root, so that none is left pending
    for (const chain_outcome& o : outcomes) {
      if (!o.failed || o.chain == chain + 1) continue;
      int value = 0;
      MPI_Recv(&value, 1, MPI_INT, o.chain - 1, detail::chain_failure_tag, roots, MPI_STATUS_IGNORE);
    }
    if (!sends.empty()) MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
    MPI_Comm_free(&roots);
  }
  MPI_Comm_free(&group_comm);
  return outcomes;
}

}  // namespace maprect
