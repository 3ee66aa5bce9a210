#pragma once
// Shared by the MPI tests: the cluster that the SPMD main made (tests run on its root).
#include <maprect/cluster.hpp>

#include <cstdlib>
#include <cstring>
#include <string>

#include "src/balance/claims_engine.hpp"

namespace maprect::test {
/// The live cluster of this test run (size 1 when run without mpirun or with -np 1).
extern cluster* the_cluster;

/// Whether every rank of this test run shares one node (set by the MPI test main before the tests start).
extern bool one_node;

/// Whether the MPI test main pins every rank's round trips at zero (claims_always_pay.hpp).
extern bool claims_pay_pinned;

/// Whether the cluster's steady calls move their data through shared memory: more than one rank, all on
/// one node and not split into test hosts (MAPRECT_TEST_HOST_RANKS below the rank count), MAPRECT_TRANSPORT
/// not `messages` and MAPRECT_BALANCE not `hosts`.
inline bool through_host_memory() {
  const char* v = std::getenv("MAPRECT_TRANSPORT");
  const char* balance = std::getenv("MAPRECT_BALANCE");  // hosts: claims by message, so are the data
  const char* host_ranks = std::getenv("MAPRECT_TEST_HOST_RANKS");
  const bool split = host_ranks != nullptr && host_ranks[0] != '\0' && std::atoi(host_ranks) < the_cluster->size();
  return the_cluster->size() > 1 && one_node && !split && (v == nullptr || std::strcmp(v, "messages") != 0) &&
         (balance == nullptr || std::strcmp(balance, "hosts") != 0);
}

/// Whether the workers also leave their status in shared memory (no gather): through host memory, with the
/// root taking over jobs (MAPRECT_BALANCE auto, the default).
inline bool reports_through_host_memory() {
  const char* v = std::getenv("MAPRECT_BALANCE");
  return through_host_memory() && (v == nullptr || v[0] == '\0' || std::strcmp(v, "auto") == 0);
}

/// Whether a job's error message names the rank that ran it: `rank`, whose chunk holds the job, or the root
/// (rank 0), which may take a worker's job over; when the last steady call went by claims (it reports who
/// ran what), any rank of the cluster may have claimed it. Any message passes at one rank, where none is named.
inline bool names_rank_or_root(const std::string& what, int rank, int ranks) {
  auto names = [&](int r) { return what.find("rank " + std::to_string(r) + " ") != std::string::npos; };
  if (ranks == 1 || names(rank) || names(0)) return true;
  if (detail::last_call_balance().ends.empty()) return false;
  for (int r = 1; r < ranks; ++r)
    if (names(r)) return true;
  return false;
}
}  // namespace maprect::test
