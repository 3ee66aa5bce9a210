// What this MPI offers for claims across hosts: the latency of a passive-target atomic on another rank's
// word (MPI_Fetch_and_op, MPI_Compare_and_swap, each followed by MPI_Win_flush), while that rank waits in
// MPI and while it computes without calling MPI (whether its word is served without its help); and how late a
// rank that computes and calls MPI_Iprobe every 50 us notices a message. Rank 0 claims on rank 1's word and
// sends to it; other ranks only join the window.
//
//   mpirun -np 2 claim_probe [repeats]
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

using clock_type = std::chrono::steady_clock;

double micros_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - start).count();
}

/// Mean microseconds of one fetch-and-add (op 0) or compare-and-swap (op 1) on rank 1's word, flushed.
double time_atomics(MPI_Win win, int repeats, int op) {
  const std::uint64_t one = 1;
  std::uint64_t old = 0, expected = 0;
  const auto start = clock_type::now();
  for (int i = 0; i < repeats; ++i) {
    if (op == 0)
      MPI_Fetch_and_op(&one, &old, MPI_UINT64_T, 1, 0, MPI_SUM, win);
    else
      MPI_Compare_and_swap(&one, &expected, &old, MPI_UINT64_T, 1, 0, win);
    MPI_Win_flush(1, win);
    expected = old;
  }
  return micros_since(start) / repeats;
}

/// Spins for `ms` milliseconds without calling MPI.
double compute_for(int ms) {
  volatile double x = 0;
  const auto start = clock_type::now();
  while (micros_since(start) < 1000.0 * ms) x = x + 1.0;
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 2000;
  if (size < 2) {
    std::fprintf(stderr, "claim_probe: needs 2 ranks or more\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  std::uint64_t* word = nullptr;
  MPI_Win win;
  MPI_Win_allocate(sizeof(std::uint64_t), sizeof(std::uint64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &word, &win);
  *word = 0;
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  MPI_Barrier(MPI_COMM_WORLD);
  char host[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  MPI_Get_processor_name(host, &len);
  if (rank <= 1) std::printf("rank %d on %s\n", rank, host);

  // 1. The target waits in MPI (a barrier it enters at once; rank 0 enters it after its atomics).
  if (rank == 0) {
    const double fetch = time_atomics(win, repeats, 0);
    const double cas = time_atomics(win, repeats, 1);
    std::printf("target in MPI: fetch_and_op+flush %.2f us, compare_and_swap+flush %.2f us (%d each)\n", fetch, cas,
                repeats);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  // 2. The target computes for 300 ms without calling MPI; rank 0 starts a claim 50 ms in.
  const int busy_ms = 300;
  double answered_after = 0;
  if (rank == 1) compute_for(busy_ms);
  if (rank == 0) {
    compute_for(50);
    const auto start = clock_type::now();
    time_atomics(win, 1, 0);
    answered_after = micros_since(start) / 1000.0;
    std::printf("target computing for %d ms: one fetch_and_op+flush issued 50 ms in took %.2f ms (%s)\n", busy_ms,
                answered_after, answered_after < 10 ? "served without the target" : "waited for the target");
  }
  MPI_Barrier(MPI_COMM_WORLD);

  // 3. Two-sided instead: rank 1 computes in 50 us slices and calls MPI_Iprobe between them (as a worker
  // serving claims between its batches); rank 0 sends at 20 ms. How late does rank 1 notice?
  const int tag = 7;
  if (rank == 0) {
    compute_for(20);
    int ask = 1;
    MPI_Send(&ask, 1, MPI_INT, 1, tag, MPI_COMM_WORLD);
  }
  if (rank == 1) {
    const auto start = clock_type::now();
    int seen = 0;
    while (!seen) {
      const auto slice = clock_type::now();
      while (micros_since(slice) < 50) {
      }
      MPI_Iprobe(0, tag, MPI_COMM_WORLD, &seen, MPI_STATUS_IGNORE);
    }
    int ask = 0;
    MPI_Recv(&ask, 1, MPI_INT, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    std::printf("computing in 50 us slices with MPI_Iprobe between them: a message sent 20 ms in was seen at %.2f ms\n",
                micros_since(start) / 1000.0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_unlock_all(win);
  if (rank == 1) std::printf("rank 1's word after the probe: %llu\n", static_cast<unsigned long long>(*word));
  MPI_Win_free(&win);
  MPI_Finalize();
  return 0;
}
