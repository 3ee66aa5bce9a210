// host_memory, the window a root shares with the workers of its host: every rank agrees on the slots'
// capacity, what one side writes before a message the other reads after it crosses in both directions, and
// the claim words in the same window still work after the slots grew.
#include <catch2/catch.hpp>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "src/transport/host_memory.hpp"
#include "support/catch_session.hpp"

using maprect::detail::host_memory;
using maprect::detail::job_range;
using maprect::detail::host_slots;

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

/// Rank r's pace, as every rank reads it in host memory.
double read_pace(const host_memory& host, int r) { return host.claims.pace(r); }

/// The pace beside each claim word: the root and rank 1 each run two front batches of their 8 jobs with a
/// sleep between, which publishes their paces, and rank 1 then claims from the root's back the part the grant
/// rule gives at the two paces it reads (the expectation derives from those, not from the sleeps), from the
/// rank with the most work left at those paces. Each
/// front batch is one job: the first untimed, the second worth more than 50 us.
void check_paced_claim(host_memory& host, MPI_Comm comm, int rank, int size) {
  if (rank == 0)
    for (int r = 0; r < size; ++r) host.claims.reset(r, 8);
  MPI_Barrier(comm);
  if (rank <= 1) {
    CHECK(host.claims.claim_batch_front(1).size() == 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(rank == 0 ? 20 : 1));
    CHECK(host.claims.claim_batch_front(1).size() == 1);
    CHECK(read_pace(host, rank) >= (rank == 0 ? 20e-3 : 1e-3));
  }
  MPI_Barrier(comm);
  if (rank == 1) {
    const double share = maprect::detail::grant_share(read_pace(host, 0), read_pace(host, 1), size);
    const int take = std::max(1, maprect::detail::granted_jobs(6, 0, share));
    // The slower the root, the larger its thief's part: more than among ranks alike once the root is slower.
    CHECK((share > 1.0 / size) == (read_pace(host, 0) > read_pace(host, 1)));
    // The most work left: the root's 6 jobs at its pace against rank 2's 8 untimed ones, counted as rank 1's.
    const bool root_richer = 6 * read_pace(host, 0) / read_pace(host, 1) > 8;
    CHECK(host.claims.richest(1, size) == (size == 2 || root_richer ? 0 : 2));
    const job_range got = host.claims.claim_batch_back(0, 1);
    CHECK(got.begin == 8 - take);
    CHECK(got.end == 8);
  }
  MPI_Barrier(comm);
}

}  // namespace

// Every rank runs this test: the slots are collective, and a worker's checks count as much as the root's.
TEST_CASE("host memory: slots usable on one host, capacities agreed, data crosses both ways, claims survive growth") {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  host_memory host;
  host.open(comm, true, true);
  const host_slots& slots = host.slots;
  CHECK(slots.usable() == (size > 1));  // CTest starts every rank on this machine
  CHECK(slots.capacity() == 0);

  // Each rank asks for a different size: all see the largest, rounded up to whole cache lines.
  host.reserve(10 * rank + 5, comm);
  const auto [lo, hi] = spread(slots.capacity(), comm);
  CHECK(lo == hi);
  if (size > 1) {
    CHECK(slots.capacity() >= 10 * (size - 1) + 5);
    CHECK(slots.capacity() % 8 == 0);
  }

  // A request past the limit leaves the slots as they are; a smaller one too; a larger one grows them.
  const long long before = slots.capacity();
  host.reserve(host_slots::max_doubles + 1, comm);
  CHECK(slots.capacity() == before);
  host.reserve(1, comm);
  CHECK(slots.capacity() == before);
  host.reserve(rank == size - 1 ? 3000 : 0, comm);
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
  // The claim words live in the same window, placed again when the slots grew: the root claims a batch from the
  // back of a worker's 8 jobs (neither timed: its part among `size` ranks alike, 8 / size), the worker from the
  // front (one job while none of its own is timed), and each sees the other's claim.
  CHECK(host.claims.in_use() == (size > 1));
  if (rank == 0)
    for (int r = 1; r < size; ++r) host.claims.reset(r, 8);
  job_range back;
  if (rank == 0 && size > 1) back = host.claims.claim_batch_back(size - 1, 1);
  MPI_Barrier(comm);
  const int granted = std::max(1, 8 / size), kept = 8 - granted;
  if (rank > 0) {
    const job_range front = host.claims.claim_front();
    CHECK(front.begin == 0);
    CHECK(front.end == 1);
    CHECK(host.claims.claim_rest() == (rank == size - 1 ? kept : 8));
  }
  MPI_Barrier(comm);
  if (rank == 0 && size > 1) {
    CHECK(back.begin == kept);
    CHECK(back.end == 8);
    CHECK(host.claims.worker_end(size - 1) == kept);
  }
  if (size > 1) check_paced_claim(host, comm, rank, size);
  host.close();
  CHECK_FALSE(slots.usable());
  CHECK_FALSE(host.claims.in_use());
  MPI_Comm_free(&comm);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int failed = run_catch_session(argc, argv);
  MPI_Finalize();
  return failed == 0 ? 0 : 1;
}
