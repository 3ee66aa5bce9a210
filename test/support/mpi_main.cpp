// Main of the MPI tests: every rank joins the cluster; workers serve while the root runs the tests.
#include <maprect/cluster.hpp>

#include "src/cluster/test_hooks.hpp"
#include "support/catch_session.hpp"
#include "support/mpi_test.hpp"

namespace maprect::test {
cluster* the_cluster = nullptr;
bool one_node = true;
bool claims_pay_pinned = false;
}

int main(int argc, char** argv) {
  if (maprect::test::claims_pay_pinned) maprect::detail::pin_round_trips(0);
  maprect::cluster c(argc, argv);
  maprect::test::the_cluster = &c;
  // Every rank learns whether all share one node: tests run on the root alone, which cannot ask later.
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 1, world_size = 1;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  MPI_Comm_free(&node);
  maprect::test::one_node = node_size == world_size;
  if (!c.is_root()) {
    c.serve();
    return 0;
  }
  const int failed = run_catch_session(argc, argv);
  c.stop();
  return failed == 0 ? 0 : 1;
}
