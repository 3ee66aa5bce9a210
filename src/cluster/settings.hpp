#pragma once
// The settings a cluster's ranks agree on at start-up, read from the environment as the root has it.
#include <string>

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

/// This rank's reading of the environment, and what was wrong with it.
struct environment_reading {
  int policy = -1;                 ///< a wait_policy, or -1: auto
  double timeout = 0;              ///< MAPRECT_TIMEOUT
  balance_mode balance = balance_mode::automatic;  ///< MAPRECT_BALANCE
  bool host_transport = true;      ///< MAPRECT_TRANSPORT=auto, and not MAPRECT_BALANCE=hosts
  int threads = 1;                 ///< threads_auto, or a count
  int collectives = collectives_auto;  ///< MAPRECT_COLLECTIVES
  int test_host_ranks = 0;         ///< MAPRECT_TEST_HOST_RANKS
  int test_held_rank = -1;         ///< MAPRECT_TEST_HOLD_RANK
  std::string error;               ///< the first invalid value, named; empty: none
};


/// This rank's reading of MAPRECT_WAIT (spin | sleep | auto), MAPRECT_TIMEOUT (seconds), MAPRECT_BALANCE (auto |
/// static | even | hosts), MAPRECT_TRANSPORT (auto | messages), MAPRECT_COLLECTIVES (auto | flat | tree |
/// hierarchical), MAPRECT_TEST_HOST_RANKS (a rank count) and MAPRECT_TEST_HOLD_RANK (a rank), both for tests
/// only, and MAPRECT_THREADS (1 | N | auto; `threads_asked` other than threads_from_environment replaces it).
/// The ranks agree on the root's (choose_cluster_settings, src/protocol/start_up.hpp).
environment_reading read_environment(int threads_asked, int rank);

}  // namespace maprect::detail
