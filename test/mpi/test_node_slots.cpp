// node_slots, the memory a root shares with the workers of its node: every rank agrees on the capacity,
// and what one side writes before a message the other reads after it, in both directions.
#include <catch2/catch.hpp>
#include <mpi.h>

#include "src/node_slots.hpp"
#include "support/catch_session.hpp"

using maprect::detail::node_slots;

namespace {

/// The smallest and largest of a value over the ranks of comm.
std::pair<long long, long long> spread(long long v, MPI_Comm comm) {
  long long lo = v, hi = v;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_LONG_LONG, MPI_MIN, comm);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_LONG_LONG, MPI_MAX, comm);
  return {lo, hi};
}

/// A value that tells apart the slot, the place in it and the direction.
double mark(int rank, long long i, bool answer) { return (answer ? -1.0 : 1.0) * (rank * 1e6 + static_cast<double>(i)); }

}  // namespace

// Every rank runs this test: the slots are collective, and a worker's checks count as much as the root's.
TEST_CASE("node slots: usable on one node, capacities agreed, data crosses both ways") {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  node_slots slots;
  slots.open(comm);
  CHECK(slots.usable() == (size > 1));  // CTest starts every rank on this machine
  CHECK(slots.capacity() == 0);

  // Each rank asks for a different size: all see the largest, rounded up to whole cache lines.
  slots.reserve(10 * rank + 5, comm);
  const auto [lo, hi] = spread(slots.capacity(), comm);
  CHECK(lo == hi);
  if (size > 1) {
    CHECK(slots.capacity() >= 10 * (size - 1) + 5);
    CHECK(slots.capacity() % 8 == 0);
  }

  // A request past the limit leaves the slots as they are; a smaller one too; a larger one grows them.
  const long long before = slots.capacity();
  slots.reserve(node_slots::max_doubles + 1, comm);
  CHECK(slots.capacity() == before);
  slots.reserve(1, comm);
  CHECK(slots.capacity() == before);
  slots.reserve(rank == size - 1 ? 3000 : 0, comm);
  if (size > 1) CHECK(slots.capacity() >= 3000);

  if (size > 1) {
    const long long n = slots.capacity();
    int token = 7;
    if (rank == 0)
      for (int r = 1; r < size; ++r)
        for (long long i = 0; i < n; ++i) slots.slot(r)[i] = mark(r, i, false);
    slots.sync();
    MPI_Bcast(&token, 1, MPI_INT, 0, comm);  // announces the root's writes
    slots.sync();
    long long wrong = 0;
    if (rank > 0) {
      for (long long i = 0; i < n; ++i) wrong += slots.slot(rank)[i] != mark(rank, i, false);
      for (long long i = 0; i < n; ++i) slots.slot(rank)[i] = mark(rank, i, true);
    }
    slots.sync();
    MPI_Reduce(rank == 0 ? MPI_IN_PLACE : &wrong, &wrong, 1, MPI_LONG_LONG, MPI_SUM, 0, comm);  // announces theirs
    slots.sync();
    if (rank == 0) {
      CHECK(wrong == 0);  // every worker read what the root wrote
      long long wrong_answers = 0;
      for (int r = 1; r < size; ++r)
        for (long long i = 0; i < n; ++i) wrong_answers += slots.slot(r)[i] != mark(r, i, true);
      CHECK(wrong_answers == 0);
    }
  }
  slots.close();
  CHECK_FALSE(slots.usable());
  MPI_Comm_free(&comm);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int failed = run_catch_session(argc, argv);
  MPI_Finalize();
  return failed == 0 ? 0 : 1;
}
