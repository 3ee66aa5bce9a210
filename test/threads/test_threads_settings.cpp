// MAPRECT_THREADS at a cluster's start, on every rank (CTest sets MAPRECT_THREADS=two, or =3 with the
// argument `single`):
//  - an invalid value is std::invalid_argument on every rank, naming the variable, the value and the rank;
//  - cluster::options::threads replaces the variable; an invalid option fails alike on every rank;
//  - `single`: MPI initialised at MPI_THREAD_SINGLE by the application: one thread, whatever was asked.
// Prints what failed and returns 1 on any rank whose checks fail.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <maprect/cluster.hpp>
#include <stdexcept>
#include <string>

namespace {

int failures = 0;

void check(bool ok, const std::string& what, int rank) {
  if (ok) return;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
  ++failures;
}

bool contains(const std::string& text, const std::string& piece) { return text.find(piece) != std::string::npos; }

/// Starts a cluster with `opts` that must fail; returns its message ("" if it started).
std::string start_error(const maprect::cluster::options& opts) {
  try {
    maprect::cluster c(MPI_COMM_WORLD, opts);
    if (!c.is_root()) c.serve();
    c.stop();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

/// Starts a cluster with `opts` and returns the threads its ranks run on.
int started_threads(const maprect::cluster::options& opts) {
  maprect::cluster c(MPI_COMM_WORLD, opts);
  const int threads = c.threads();
  if (!c.is_root()) c.serve();
  c.stop();
  return threads;
}

}  // namespace

int main(int argc, char** argv) {
  const bool single = argc > 1 && std::strcmp(argv[argc - 1], "single") == 0;
  int provided = 0;
  if (single) MPI_Init(&argc, &argv);
  else MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Query_thread(&provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (single) {
    // Open MPI grants MPI_Init the level it was built for; only a level below FUNNELED must fall back.
    const int expected = provided < MPI_THREAD_FUNNELED ? 1 : 3;
    check(started_threads({}) == expected, "MAPRECT_THREADS=3 at thread level " + std::to_string(provided), rank);
    check(started_threads({2}) == (expected == 1 ? 1 : 2), "options.threads = 2 at a low thread level", rank);
  } else {
    const std::string e = start_error({});
    check(contains(e, "MAPRECT_THREADS") && contains(e, "'two'") && contains(e, "(rank 0)"),
          "MAPRECT_THREADS=two: '" + e + "'", rank);
    check(started_threads({2}) == 2, "options.threads = 2 replaces MAPRECT_THREADS", rank);
    const int automatic = started_threads({-1});
    check(automatic >= 1, "options.threads = auto gives " + std::to_string(automatic), rank);
    const std::string o = start_error({-7});
    check(contains(o, "options.threads") && contains(o, "-7") && contains(o, "(rank 0)"),
          "options.threads = -7: '" + o + "'", rank);
  }
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s: %d failed check(s) over %d rank(s)\n", single ? "single" : "funneled", failures, size);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
