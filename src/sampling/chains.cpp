// Chains on sub-communicators (chains.hpp): the groups, each chain root's outcome, and the failure signals.
#include "src/sampling/chains.hpp"

#include <cstddef>
#include <exception>

namespace maprect {
namespace {

/// The tag of a failed chain's signal to the other roots; their communicator carries nothing else.
constexpr int chain_failure_tag = 7301;

/// Every rank gets each chain root's (code, message): code 0 ok, 1 failed, 2 stopped; -1 from other ranks.
std::vector<chain_outcome> gather_outcomes(MPI_Comm comm, int chains, int my_chain, int code,
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

/// What a group's root learnt of its chain: the outcome's code and message, and the failure signals it sent.
struct root_result {
  int code = -1;                   ///< as gather_outcomes takes it
  std::string message;             ///< the exception's message
  std::vector<MPI_Request> sends;  ///< the failure signals to the other roots, completed after the gather
  int signal = 0;                  ///< the buffer of those sends: it must outlive them
};

/// Runs the body on a group's root, turning its end into a code; a failure tells every other root at once,
/// so that their stop checks end their chains.
void run_root(const chain_group& g, MPI_Comm roots,
              const std::function<void(const chain_group&, const std::function<void()>&)>& body, root_result& r) {
  auto stop_check = [&] {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, chain_failure_tag, roots, &flag, &status);
    if (flag) throw chain_stopped(status.MPI_SOURCE + 1);
  };
  try {
    body(g, stop_check);
    r.code = 0;
  } catch (const chain_stopped& e) {
    r.code = 2;
    r.message = e.what();
  } catch (const std::exception& e) {
    r.code = 1;
    r.message = e.what();
    r.sends.resize(static_cast<std::size_t>(g.chains - 1));
    for (int other = 0, k = 0; other < g.chains; ++other)
      if (other != g.chain - 1)
        MPI_Isend(&r.signal, 1, MPI_INT, other, chain_failure_tag, roots, &r.sends[k++]);
  }
}

/// Takes in the failure signals addressed to this root, so that none is left pending, and completes its own.
void drain_failure_signals(const std::vector<chain_outcome>& outcomes, int my_chain, MPI_Comm roots,
                           std::vector<MPI_Request>& sends) {
  for (const chain_outcome& o : outcomes) {
    if (!o.failed || o.chain == my_chain) continue;
    int value = 0;
    MPI_Recv(&value, 1, MPI_INT, o.chain - 1, chain_failure_tag, roots, MPI_STATUS_IGNORE);
  }
  if (!sends.empty()) MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
}

}  // namespace

int chain_of_rank(int rank, int size, int chains) {
  const int base = size / chains, extra = size % chains;
  const int big = extra * (base + 1);  // ranks in the first `extra` groups, one rank larger
  return rank < big ? rank / (base + 1) : extra + (rank - big) / base;
}

std::vector<chain_outcome> run_chains(
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

  root_result result;
  result.signal = chain + 1;
  {
    cluster c(group_comm);
    if (!root) {
      c.serve();
    } else {
      run_root(chain_group{chain + 1, chains, rank, group_size, &c}, roots, body, result);
      c.stop();
    }
  }
  std::vector<chain_outcome> outcomes = gather_outcomes(comm, chains, chain + 1, result.code, result.message);
  if (root) {
    drain_failure_signals(outcomes, chain + 1, roots, result.sends);
    MPI_Comm_free(&roots);
  }
  MPI_Comm_free(&group_comm);
  return outcomes;
}

}  // namespace maprect
