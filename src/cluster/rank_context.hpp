#pragma once
// What every command reaches of its rank: its end of the protocol, the settings all ranks agreed on, its
// threads, the memory it shares with its host, the request and call under way, and the root's report of the
// last call. A command's own state (its call sites and buffers) lives with the command, not here.
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <maprect/cluster.hpp>
#include <maprect/detail/job_error.hpp>
#include <maprect/detail/thread_chunk.hpp>
#include <maprect/detail/wire.hpp>
#include <maprect/thread_team.hpp>
#include <memory>
#include <vector>

#include "src/balance/answer_cost.hpp"
#include "src/balance/batch_aside.hpp"
#include "src/balance/claims_rank.hpp"
#include "src/cluster/rank_facts.hpp"
#include "src/cluster/settings.hpp"
#include "src/protocol/collectives.hpp"
#include "src/protocol/exchange.hpp"
#include "src/transport/host_memory.hpp"

namespace maprect::detail {

/// What every command reaches of its rank (map_rect_context and reduce_state add the commands' own state).
class rank_context {
 public:
  MPI_Comm comm = MPI_COMM_NULL;  ///< our duplicate of the user's communicator
  int rank = 0;
  int size = 1;
  cluster_settings settings;  ///< as the root read them; memory_claims as it applies here
  std::unique_ptr<thread_team> team;  ///< this rank's team of settings.threads threads (null for one)
  team_chunks chunks;      ///< runs this rank's chunks on the team
  batch_aside aside;       ///< runs an owner's long batches of claimed work while this thread answers asks
  answer_cost answers;     ///< what answering asks between its batches costs this rank (claims by message)
  host_memory host;        ///< the claims (root and workers of its host) and the slots (all on one host)
  /// The hosts of tree and hierarchical collectives. Mutable: their buffers change in any call's collectives.
  mutable collective_hosts collectives;
  std::vector<rank_fact> ranks;  ///< root: every rank's host, threads and CPUs, gathered at start-up
  double round_trip = 0;         ///< worker: seconds of a round trip from the root, measured at start-up
  std::uint64_t sequence = 0;  ///< calls made (root) or served (workers)
  double request[wire::request_doubles] = {};  ///< the opening broadcast of the current request
  std::vector<double> shared_rest;  ///< workers: the shared parameters beyond the inline ones
  bool mid_call = false;   ///< root: a call's messages are under way (leaving now would strand the workers)
  std::chrono::steady_clock::time_point deadline;  ///< root, with a timeout: when the current call expires
  std::vector<MPI_Request> done;  ///< root, with a timeout: per worker, the receive of its "done" message
  cluster::traffic last_traffic;  ///< root: what the last call moved
  cluster::profile last_profile;  ///< root: where the last call's time went
  double judged_round_trip = -1;  ///< root: a test's round trip for claims_pay (judge_claims_at_round_trip), or -1
  job_error last_error;           ///< worker: its last job failure, sent on fetch_error

  /// This rank's end of the protocol.
  endpoint ends() const { return {comm, rank, size, settings.policy, &collectives}; }
};

/// Until unguard_exit(s), a process exit (std::exit, quick_exit, return from main) aborts the job with a
/// message naming this rank: the other ranks would wait for it forever, or Open MPI name it only by
/// process id. Root: while the workers serve; workers: inside serve().
void guard_exit(rank_context& s);
/// Disarms the exit guard if `s` holds it.
void unguard_exit(rank_context& s);

/// This rank as the claims engine sees it in the call under way.
inline claims_rank claims_of(rank_context& s) {
  claims_rank c;
  c.comm = s.comm;
  c.rank = s.rank;
  c.size = s.size;
  c.threads = s.settings.threads;
  c.policy = s.settings.policy;
  c.timeout = s.settings.timeout;
  c.held_rank = s.settings.test_held_rank;
  c.automatic = s.settings.balance == balance_mode::automatic;
  c.ranks = &s.ranks;
  c.own_round_trip = s.round_trip;
  c.judged_round_trip = s.judged_round_trip;
  c.call_deadline = s.deadline;
  c.aside = &s.aside;
  c.answers = &s.answers;
  c.chunks = &s.chunks;
  return c;
}

/// Root: records in the call's traffic how its last gather ran.
inline void note_gather(rank_context& s) {
  s.last_traffic.collective = plan::gather_name(s.collectives.gathered);
  s.last_traffic.gather_peers = s.collectives.gathered_from;
}

}  // namespace maprect::detail
