// maprect-pingpong [ROUND_TRIPS]: 8-byte MPI round trips between ranks 0 and 1 (after 20 untimed ones), and
// prints on rank 0 `one-way us: min <m> p10 <p> median <x>`: half a round trip at the least, at the 10th
// percentile and at the median. scripts/netns-hosts.sh checks with it that the delay switch adds its delay,
// comparing the fast end of the distribution (a busy machine only ever adds time). Other ranks only take part
// in MPI_Init and MPI_Finalize.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

/// Seconds of each of `n` timed round trips of 8 bytes from rank 0 to rank 1 (empty on other ranks).
std::vector<double> round_trips(int me, int n) {
  double word = 0;
  std::vector<double> times;
  for (int r = 0; r < n + 20; ++r) {
    if (me == 0) {
      const double t0 = MPI_Wtime();
      MPI_Send(&word, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(&word, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (r >= 20) times.push_back(MPI_Wtime() - t0);
    } else if (me == 1) {
      MPI_Recv(&word, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&word, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
    }
  }
  return times;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  if (size < 2 || n < 1) {
    if (me == 0) std::fprintf(stderr, "maprect-pingpong: needs 2 or more ranks and ROUND_TRIPS >= 1 (got %d, '%s')\n",
                              size, argc > 1 ? argv[1] : "1000");
    MPI_Finalize();
    return 2;
  }
  std::vector<double> times = round_trips(me, n);
  if (me == 0) {
    std::sort(times.begin(), times.end());
    std::printf("one-way us: min %.2f p10 %.2f median %.2f\n", 0.5e6 * times.front(), 0.5e6 * times[times.size() / 10],
                0.5e6 * times[times.size() / 2]);
  }
  MPI_Finalize();
  return 0;
}
