// maprect-steady-instructions [jobs [points [calls]]]: steady var/var gradients of the standard model (scalar
// kernel, 2 jobs of 1 point and 1000 calls unless given) at the cluster's default settings, with callgrind's
// collection on around the timed calls only (after 300 warm-up calls). Run the root under
// `valgrind --tool=callgrind --collect-atstart=no` and the workers without it
// (scripts/callgrind-root.sh): the root's instructions divided by `calls` are its instructions per gradient,
// the figure that compares two builds of the runtime without the machine's noise.
#include <maprect/maprect.hpp>

#include <cstdio>
#include <cstdlib>
#include <vector>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define MAPRECT_TOGGLE_COLLECT CALLGRIND_TOGGLE_COLLECT
#else
#define MAPRECT_TOGGLE_COLLECT
#endif

#include "test/support/benchmark_model.hpp"

MAPRECT_REGISTER(1, maprect::test::logistic_job)

int main(int argc, char** argv) {
  maprect::cluster cluster(argc, argv);
  if (!cluster.is_root()) {
    cluster.serve();
    return 0;
  }
  const int J = argc > 1 ? std::atoi(argv[1]) : 2, N = argc > 2 ? std::atoi(argv[2]) : 1;
  const int calls = argc > 3 ? std::atoi(argv[3]) : 1000;
  const maprect::test::benchmark_data d(J, N);
  double sum_of_adjoints = 0;
  auto gradient = [&] {
    const maprect::vector_v phi = maprect::to_var(d.phi);
    std::vector<maprect::vector_v> theta;
    for (const auto& t : d.theta) theta.push_back(maprect::to_var(t));
    const maprect::var lp = maprect::map_rect<1, maprect::test::logistic_job>(phi, theta, d.x_r, d.x_i).sum();
    maprect::grad(lp);
    sum_of_adjoints += phi(0).adj();
    maprect::recover_memory();
  };
  for (int i = 0; i < 300; ++i) gradient();
  MAPRECT_TOGGLE_COLLECT;
  for (int i = 0; i < calls; ++i) gradient();
  MAPRECT_TOGGLE_COLLECT;
  std::printf("calls %d, d lp / d phi[0] summed %a\n", calls, sum_of_adjoints);
  return 0;
}
