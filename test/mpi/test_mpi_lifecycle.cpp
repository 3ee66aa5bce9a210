// The cluster's life: calls before and after stop(), stop() twice, a second cluster on the same
// communicator, a deferred call's grad() once its cluster has gone, and every rank leaving with exit code 0.
#include <catch2/catch.hpp>
#include <mpi.h>

#include <maprect/cluster.hpp>

#include "support/benchmark_model.hpp"
#include "src/cluster/test_hooks.hpp"

MAPRECT_REGISTER(231, maprect::test::logistic_job);

namespace {

/// Log density of the standard model at 12 x 5, through map_rect.
double standard_lp() {
  maprect::test::benchmark_data d(12, 5);
  return maprect::map_rect<231, maprect::test::logistic_job>(d.phi, d.theta, d.x_r, d.x_i).sum();
}

/// sum(map_rect) of the standard model at 12 x 5 as a deferred call: its grad() runs on the cluster that made it.
maprect::var deferred_lp() {
  const maprect::detail::reverse_mode_scope deferred("deferred");
  maprect::test::benchmark_data d(12, 5);
  const maprect::vector_v phi = maprect::to_var(d.phi);
  std::vector<maprect::vector_v> theta;
  for (const auto& t : d.theta) theta.push_back(maprect::to_var(t));
  const maprect::var lp = maprect::map_rect<231, maprect::test::logistic_job>(phi, theta, d.x_r, d.x_i).sum();
  return lp;
}

/// Whether grad(lp) throws std::logic_error.
bool grad_refused(const maprect::var& lp) {
  try {
    maprect::grad(lp);
  } catch (const std::logic_error&) {
    return true;
  }
  return false;
}

double closed_form_lp() {
  maprect::test::benchmark_data d(12, 5);
  Eigen::VectorXd g;
  return d.closed_form(g);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);  // owned here: the clusters below must neither initialise nor finalise it
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) {
      std::fprintf(stderr, "FAILED: %s\n", what);
      ++failures;
    }
  };
  maprect::var made_by_first;  // a deferred call of the first cluster, swept on the second
  for (int life = 0; life < 2; ++life) {  // two clusters, one after the other, on the same ranks
    maprect::cluster c(argc, argv);
    if (!c.is_root()) {
      c.serve();
      continue;  // released: the next cluster, or the end
    }
    expect(standard_lp() == Approx(closed_form_lp()).epsilon(1e-13), "call on the live cluster");
    expect(c.size() == 1 || c.last_call_traffic().received > 0, "the call crossed ranks");
    if (life == 0) made_by_first = deferred_lp();
    if (life == 1 && c.size() > 1) {
      // This cluster numbers its deferred calls from 1 too: the first cluster's call must not sweep its tapes.
      [[maybe_unused]] const maprect::var made_here = deferred_lp();
      expect(grad_refused(made_by_first), "a deferred call of a stopped cluster");
    }
    c.stop();
    c.stop();  // idempotent
    expect(standard_lp() == Approx(closed_form_lp()).epsilon(1e-13), "call after stop() runs in process");
  }
  maprect::recover_memory();
  int finalized = 0;
  MPI_Finalized(&finalized);
  expect(finalized == 0, "MPI is still usable after clusters that did not initialise it");
  int all = failures;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
