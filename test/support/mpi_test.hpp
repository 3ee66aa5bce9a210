#pragma once
// Shared by the MPI tests: the cluster that the SPMD main made (tests run on its root).
#include <maprect/cluster.hpp>

namespace maprect::test {
/// The live cluster of this test run (size 1 when run without mpirun or with -np 1).
extern cluster* the_cluster;
}  // namespace maprect::test
