#pragma once
// The settings a cluster's ranks agree on at start-up, read from the environment as the root has it.
#include <mpi.h>

#include "src/transport/wait.hpp"

namespace maprect::detail {

/// MAPRECT_COLLECTIVES=auto: the cost model picks each call site's kind.
constexpr int collectives_auto = -1;

/// MAPRECT_BALANCE: how a call's jobs move between ranks (`even` is an alias of `static`; `hosts` of `auto`
/// with MAPRECT_TRANSPORT=messages, so that every claim goes by message).
enum class balance_mode {
  static_share = 1,  ///< `static`: the even split, nothing claimed
  automatic = 2,     ///< `auto`: claims between all ranks, in host memory where the ranks can, else by message
};

/// How a cluster's ranks wait and plan, agreed by all of them at start-up.
struct cluster_settings {
  wait_policy policy = wait_policy::spin;  ///< how collectives wait
  double timeout = 0;                      ///< seconds the root waits for a call's answers; 0: forever
  bool memory_claims = true;               ///< ranks of the root's host claim jobs through claim words in its memory
  bool host_transport = true;              ///< steady calls' data go through host memory when they can
  int threads = 1;                         ///< threads this rank runs its jobs on (MAPRECT_THREADS, resolved here)
  int collectives = collectives_auto;      ///< MAPRECT_COLLECTIVES: collectives_auto, or a plan::gather_kind forced
  int test_host_ranks = 0;                 ///< MAPRECT_TEST_HOST_RANKS (tests only): the collectives' hosts hold
                                           ///< this many ranks each; 0: the real hosts
  int test_held_rank = -1;                 ///< MAPRECT_TEST_HOLD_RANK (tests only): the rank whose claims by
                                           ///< reduce_sum's messages or in host memory wait for others to claim
                                           ///< from it after its first batch; -1: none
  balance_mode balance = balance_mode::automatic;  ///< MAPRECT_BALANCE, from which memory_claims follows
};

/// What a program asks of MAPRECT_THREADS in code (cluster::options::threads): 0 leaves it to the
/// environment, -1 is auto, N >= 1 is N.
constexpr int threads_from_environment = 0;
constexpr int threads_auto = -1;

/// The settings from the environment as the root has it: MAPRECT_WAIT (spin | sleep | auto; default auto:
/// sleep when some host runs more ranks, or threads of their teams, than the CPUs they may use), MAPRECT_TIMEOUT (seconds) and
/// MAPRECT_BALANCE (auto | static | even | hosts), MAPRECT_TRANSPORT (auto | messages), MAPRECT_COLLECTIVES
/// (auto | flat | tree | hierarchical), MAPRECT_TEST_HOST_RANKS (a rank count) and MAPRECT_TEST_HOLD_RANK (a rank),
/// both for tests only, and MAPRECT_THREADS
/// (1 | N | auto; `threads_asked` other than threads_from_environment replaces it). Collective over comm:
/// every rank returns the same settings (but for `threads`, which auto resolves per rank), or every rank
/// throws std::invalid_argument with the message of the first rank whose value is invalid (the variable,
/// the value and that rank). Below MPI_THREAD_FUNNELED every rank runs on one thread (rank 0 says so).
cluster_settings choose_cluster_settings(MPI_Comm comm, int threads_asked = threads_from_environment);

}  // namespace maprect::detail
