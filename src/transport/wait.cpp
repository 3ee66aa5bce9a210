// Waiting inside collectives: blocking, or polled with yields and sleeps that leave the core to others.
#include "src/transport/wait.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include <sched.h>

namespace maprect::detail {

namespace {
// The sleep policy's schedule, from scripts/bench-oversubscribe.sh at np=4 on 2 cores: a 200 us window
// keeps back-to-back gradients as fast as spinning; 2 ms windows cost the root up to 2x when it computes
// alone for a few ms between calls; no window (naps at once) costs 2x on back-to-back gradients.
constexpr std::chrono::microseconds kYieldWindow{200};  // polling with sched_yield
constexpr std::chrono::microseconds kFirstNap{50};       // about the kernel's default timer slack
constexpr std::chrono::microseconds kLongestNap{1000};
}  // namespace

bool wait_until(bool (*ready)(void* context), void* context, wait_policy policy,
                std::chrono::steady_clock::time_point deadline) {
  using clock = std::chrono::steady_clock;
  if (policy != wait_policy::sleep) {
    const bool forever = deadline == clock::time_point::max();
    while (true) {
      if (ready(context)) return true;
      if (!forever && clock::now() >= deadline) return false;
    }
  }
  // First poll, yielding the core between polls: a rank that shares its core with a busy one lets it
  // run, and one that does not answers within microseconds, as a spin would. Waits inside a call and
  // between back-to-back calls are shorter than the window. After it the rank is idle: sleeps growing to
  // 1 ms cost almost no CPU. (A pure spin, even a short one, would hold a shared core away from the rank doing the work.)
  const auto yield_until = std::min(deadline, clock::now() + kYieldWindow);
  while (true) {
    if (ready(context)) return true;
    if (clock::now() >= yield_until) break;
    sched_yield();
  }
  auto nap = kFirstNap;
  while (true) {
    const auto now = clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(std::min<clock::duration>(nap, deadline - now));
    if (ready(context)) return true;
    nap = std::min(nap * 2, kLongestNap);
  }
}

bool wait_until(MPI_Request& request, wait_policy policy, std::chrono::steady_clock::time_point deadline) {
  auto completed = [](void* r) {
    int done = 0;
    MPI_Test(static_cast<MPI_Request*>(r), &done, MPI_STATUS_IGNORE);
    return done != 0;
  };
  return wait_until(completed, &request, policy, deadline);
}

void wait(MPI_Request& request, wait_policy policy) {
  if (policy != wait_policy::sleep) {
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    return;
  }
  wait_until(request, policy, std::chrono::steady_clock::time_point::max());
}

namespace {

/// Runs a collective as the policy says: `blocking` under spin; else `post`, which starts its non-blocking
/// form into a request, then waits for it (polled under poll and sleep).
template <class Blocking, class Post>
void under_policy(wait_policy policy, Blocking&& blocking, Post&& post) {
  if (policy == wait_policy::spin) {
    blocking();
    return;
  }
  MPI_Request r;
  post(&r);
  wait(r, policy);
}

}  // namespace

void bcast(void* buffer, int count, MPI_Datatype type, MPI_Comm comm, wait_policy policy) {
  under_policy(
      policy, [&] { MPI_Bcast(buffer, count, type, 0, comm); },
      [&](MPI_Request* r) { MPI_Ibcast(buffer, count, type, 0, comm, r); });
}

void scatterv(const void* sendbuf, const int* counts, const int* displs, MPI_Datatype type, void* recvbuf,
              int recvcount, MPI_Comm comm, wait_policy policy) {
  under_policy(
      policy, [&] { MPI_Scatterv(sendbuf, counts, displs, type, recvbuf, recvcount, type, 0, comm); },
      [&](MPI_Request* r) { MPI_Iscatterv(sendbuf, counts, displs, type, recvbuf, recvcount, type, 0, comm, r); });
}

void gatherv(const void* sendbuf, int sendcount, MPI_Datatype type, void* recvbuf, const int* counts,
             const int* displs, MPI_Comm comm, wait_policy policy) {
  under_policy(
      policy, [&] { MPI_Gatherv(sendbuf, sendcount, type, recvbuf, counts, displs, type, 0, comm); },
      [&](MPI_Request* r) { MPI_Igatherv(sendbuf, sendcount, type, recvbuf, counts, displs, type, 0, comm, r); });
}

void scatter(const void* sendbuf, int count, MPI_Datatype type, void* recvbuf, MPI_Comm comm, wait_policy policy) {
  under_policy(
      policy, [&] { MPI_Scatter(sendbuf, count, type, recvbuf, count, type, 0, comm); },
      [&](MPI_Request* r) { MPI_Iscatter(sendbuf, count, type, recvbuf, count, type, 0, comm, r); });
}

void gather(const void* sendbuf, int count, MPI_Datatype type, void* recvbuf, MPI_Comm comm, wait_policy policy) {
  under_policy(
      policy, [&] { MPI_Gather(sendbuf, count, type, recvbuf, count, type, 0, comm); },
      [&](MPI_Request* r) { MPI_Igather(sendbuf, count, type, recvbuf, count, type, 0, comm, r); });
}

}  // namespace maprect::detail
