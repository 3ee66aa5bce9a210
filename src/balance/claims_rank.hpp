#pragma once
// What the claims engine by message reaches of a rank, and nothing else of its cluster: the engine's code takes
// a claims_rank, never the cluster's whole state, so that what steers the claims is in one place.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <maprect/detail/thread_chunk.hpp>
#include <vector>

#include "src/balance/answer_cost.hpp"
#include "src/balance/batch_aside.hpp"
#include "src/cluster/rank_facts.hpp"
#include "src/transport/wait.hpp"

namespace maprect::detail {

/// A rank as the claims engine sees it in one call: its end of the protocol, the settings that steer claims,
/// the ranks' round trips, the call's deadline, and what the rank keeps across calls (its aside thread, its
/// answers' cost, its team's busy times). A command makes one per call from its cluster (claims_of).
struct claims_rank {
  MPI_Comm comm = MPI_COMM_NULL;  ///< the cluster's communicator
  int rank = 0;
  int size = 1;
  int threads = 1;                ///< the rank's team threads
  wait_policy policy = wait_policy::spin;
  double timeout = 0;             ///< MAPRECT_TIMEOUT's seconds (0: none)
  int held_rank = -1;             ///< MAPRECT_TEST_HOLD_RANK's rank, or -1
  bool automatic = true;          ///< MAPRECT_BALANCE is auto: claims by message where they pay
  const std::vector<rank_fact>* ranks = nullptr;  ///< root: every rank's facts, with its round trip
  double own_round_trip = 0;      ///< worker: its round trip from the root, measured at start-up
  double judged_round_trip = -1;  ///< root: a test's round trip for claims_pay (judge_claims_at_round_trip), or -1
  std::chrono::steady_clock::time_point call_deadline;  ///< with a timeout: when the call expires
  batch_aside* aside = nullptr;   ///< runs an owner's long batches while the MPI thread answers asks
  answer_cost* answers = nullptr; ///< what answering asks has cost this rank
  team_chunks* chunks = nullptr;  ///< runs this rank's chunks on its team, and times the team's threads

  /// Root: the round trip between it and worker r, measured at start-up (0 for itself, or unknown).
  double round_trip(int r) const {
    return ranks != nullptr && r > 0 && r < static_cast<int>(ranks->size()) ? (*ranks)[r].round_trip : 0.0;
  }
  /// Root: the round trip to its farthest worker, or a test's.
  double farthest_round_trip() const {
    if (judged_round_trip >= 0) return judged_round_trip;
    double farthest = 0;
    for (int r = 1; r < size; ++r) farthest = std::max(farthest, round_trip(r));
    return farthest;
  }
};

}  // namespace maprect::detail
