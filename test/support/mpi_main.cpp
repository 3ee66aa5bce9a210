// Main of the MPI tests: every rank joins the cluster; workers serve while the root runs the tests.
#include <maprect/cluster.hpp>

#include "support/catch_session.hpp"
#include "support/mpi_test.hpp"

namespace maprect::test {
cluster* the_cluster = nullptr;
}

int main(int argc, char** argv) {
  maprect::cluster c(argc, argv);
  maprect::test::the_cluster = &c;
  if (!c.is_root()) {
    c.serve();
    return 0;
  }
  const int failed = run_catch_session(argc, argv);
  c.stop();
  return failed == 0 ? 0 : 1;
}
