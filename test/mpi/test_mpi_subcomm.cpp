// A cluster on half of MPI_COMM_WORLD (from MPI_Comm_split) while the other ranks do their own MPI
// work, and a cluster on a communicator the application owns: MPI is neither initialised nor
// finalised by maprect there.
#include <catch2/catch.hpp>
#include <mpi.h>

#include "support/benchmark_model.hpp"
#include "support/catch_session.hpp"
#include "support/mpi_test.hpp"

MAPRECT_REGISTER(221, maprect::test::logistic_job);

namespace maprect::test {
cluster* the_cluster = nullptr;
}

namespace {
int world_rank = 0, world_size = 1;
MPI_Comm half = MPI_COMM_NULL;
}  // namespace

TEST_CASE("map_rect on a sub-communicator equals the closed form") {
  using namespace maprect;
  test::benchmark_data d(10, 8);
  vector_v phi = to_var(d.phi);
  std::vector<vector_v> theta;
  for (auto& t : d.theta) theta.push_back(to_var(t));
  for (int repeat = 0; repeat < 3; ++repeat) {
    var lp = map_rect<221, test::logistic_job>(phi, theta, d.x_r, d.x_i).sum();
    set_zero_all_adjoints();
    grad(lp);
    Eigen::VectorXd expected;
    CHECK(lp.val() == Approx(d.closed_form(expected)).epsilon(1e-13));
    CHECK(phi(1).adj() == Approx(expected(1)).epsilon(1e-12));
    CHECK(theta[9](0).adj() == Approx(expected(2 + 18)).epsilon(1e-12));
  }
  if (test::the_cluster->size() > 1) CHECK(test::the_cluster->last_call_traffic().received > 0);
  recover_memory();
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  // Even world ranks form the cluster; odd ones run a ring of their own meanwhile.
  const int colour = world_rank % 2;
  MPI_Comm_split(MPI_COMM_WORLD, colour, world_rank, &half);
  int failed = 0;
  if (colour == 0) {
    maprect::cluster c(half);
    maprect::test::the_cluster = &c;
    if (c.is_root()) {
      failed = run_catch_session(argc, argv) != 0;
      c.stop();
    } else {
      c.serve();
    }
  } else {
    int rank = 0, size = 1;
    MPI_Comm_rank(half, &rank);
    MPI_Comm_size(half, &size);
    long token = rank, sum = 0;
    for (int round = 0; round < 100; ++round) {
      MPI_Allreduce(&token, &sum, 1, MPI_LONG, MPI_SUM, half);
      if (sum != static_cast<long>(size) * (size - 1) / 2) failed = 1;
    }
  }
  MPI_Comm_free(&half);
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  int finalized = 0;
  MPI_Finalized(&finalized);  // the cluster must not have finalised MPI it did not initialise
  if (finalized) return 2;
  MPI_Finalize();
  return any_failed;
}
