#pragma once
// Where this run's ranks sit (hosts of MAPRECT_TEST_HOST_RANKS ranks on one machine, or real hosts filled
// round-robin), which rank a held rank's jobs go to, the report's check, and the jobs, for the tests of claims
// in host memory.
#include <Eigen/Dense>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <vector>

#include "support/mpi_test.hpp"

namespace maprect::test {

/// An integer setting of this run's environment, or `otherwise`.
inline int setting(const char* name, int otherwise) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? std::atoi(v) : otherwise;
}

/// The host of rank r: rank r % N of N hosts filled round-robin (PEER_CLAIMS_HOSTS_BY_NODE=N), else hosts of
/// MAPRECT_TEST_HOST_RANKS ranks in rank order (one host where neither is set).
inline int host_of(int r, int ranks) {
  const int by_node = setting("PEER_CLAIMS_HOSTS_BY_NODE", 0);
  return by_node > 0 ? r % by_node : r / setting("MAPRECT_TEST_HOST_RANKS", ranks);
}

/// Whether rank r shares its host with another rank (every rank of a host claims there, the root too).
inline bool has_host_peer(int r, int ranks) {
  for (int q = 0; q < ranks; ++q)
    if (q != r && host_of(q, ranks) == host_of(r, ranks)) return true;
  return false;
}

/// Checks rank r's jobs (or slices) claimed in host memory, `in_host`, of the `taken` it ran of other ranks'
/// ranges among `ranks`: none where r has no other rank on its host.
inline void check_taken_in_host(int r, int in_host, int taken, int ranks) {
  CHECK(in_host >= 0);
  CHECK(in_host <= taken);
  if (!has_host_peer(r, ranks)) CHECK(in_host == 0);
}

/// The held rank's host peer where MAPRECT_TEST_HOLD_RANK holds a rank that shares its host with exactly one
/// worker and no other rank but the root: that worker then runs every job of the held rank's chunk that the
/// held rank does not run itself. Else -1 (the root claims only by message).
inline int pinned_peer(int ranks) {
  const int held = setting("MAPRECT_TEST_HOLD_RANK", -1);
  if (held < 0 || held >= ranks) return -1;
  int peer = -1, peers = 0;
  for (int q = 1; q < ranks; ++q)
    if (q != held && host_of(q, ranks) == host_of(held, ranks)) peer = q, ++peers;
  return peers == 1 ? peer : -1;
}

/// The first job of rank r's chunk in a call of J jobs over R ranks with `root_jobs` of the root's (chunk_plan's
/// split); J for r = R.
inline int first_of(int r, int J, int root_jobs, int R) {
  return r == 0 ? 0 : r >= R ? J : root_jobs + (J - root_jobs) * (r - 1) / (R - 1);
}

/// The jobs of rank r's chunk in that call.
inline int chunk_of(int r, int J, int root_jobs, int R) {
  return first_of(r + 1, J, root_jobs, R) - first_of(r, J, root_jobs, R);
}

/// `jobs` jobs spinning 50 us, job j with j % 3 outputs, the last rank sleeping 3 ms more in each of its own.
struct peer_data {
  std::vector<std::vector<double>> x_r;
  std::vector<std::vector<int>> x_i;
  Eigen::VectorXd phi = Eigen::VectorXd::Constant(2, 0.25);
  std::vector<Eigen::VectorXd> theta;
  explicit peer_data(int jobs) {
    const int slow = the_cluster->size() - 1;
    for (int j = 0; j < jobs; ++j) {
      x_r.push_back({0.25 * j + 0.5});
      x_i.push_back({50, j % 3, 0, slow, 3000});
      theta.push_back(Eigen::VectorXd::LinSpaced(2, 0.05 * j, 1.0 - 0.02 * j));
    }
  }
};

}  // namespace maprect::test
