// A call's timeout and the aborts that end a job with their reason (call_timeout.hpp).
#include "src/protocol/call_timeout.hpp"

#include <cstdio>
#include <cstdlib>

#include "src/cluster/clock.hpp"
#include "src/protocol/exchange.hpp"
#include "src/protocol/tags.hpp"

namespace maprect::detail {

std::chrono::steady_clock::time_point deadline_after(double timeout) {
  if (timeout <= 0) return std::chrono::steady_clock::time_point::max();
  return std::chrono::steady_clock::now() + steady_seconds(timeout);
}

void expect_done_messages(rank_context& s) {
  for (int r = 1; r < s.size; ++r) MPI_Irecv(nullptr, 0, MPI_BYTE, r, done_tag, s.comm, &s.done[r]);
}

MPI_Request announce_done(rank_context& s) {
  MPI_Request done = MPI_REQUEST_NULL;
  if (s.settings.timeout > 0) MPI_Isend(nullptr, 0, MPI_BYTE, 0, done_tag, s.comm, &done);
  return done;
}

void finish_done(rank_context& s, MPI_Request& done) {
  if (s.settings.timeout > 0) MPI_Wait(&done, MPI_STATUS_IGNORE);
}

void gather_within_deadline(rank_context& s, call_name call, std::chrono::steady_clock::time_point deadline,
                            const collective& how, MPI_Datatype type, void* recvbuf, const int* counts,
                            const int* displs) {
  MPI_Request pending = MPI_REQUEST_NULL;
  if (!collect_answers(s.ends(), how, type, nullptr, 0, recvbuf, counts, displs, deadline, pending)) {
    std::vector<int> late;
    for (int q = 1; q < s.size; ++q) {
      int answered = 0;
      MPI_Test(&s.done[q], &answered, MPI_STATUS_IGNORE);
      if (!answered) late.push_back(q);
    }
    if (!late.empty()) abort_late(s, call, late);
    wait(pending, s.settings.policy);  // every worker has answered (the root's own part was the slow one)
  }
  note_gather(s);
  if (s.settings.timeout > 0) MPI_Waitall(s.size - 1, s.done.data() + 1, MPI_STATUSES_IGNORE);
}

[[noreturn]] void abort_late(rank_context& s, call_name call, const std::vector<int>& late) {
  for (int q : late)
    std::fprintf(stderr, "maprect: rank %d did not answer %scall id %d within %g s (request %llu, host %s)\n", q,
                 call.kind, call.call_id, s.settings.timeout, static_cast<unsigned long long>(s.sequence),
                 host_of(s.ranks, q));
  std::fprintf(stderr, "maprect: aborting the job (MAPRECT_TIMEOUT=%g)\n", s.settings.timeout);
  abort_job(s, 1);
}

[[noreturn]] void abort_mid_call(rank_context& s, call_name call, const char* what) {
  std::fprintf(stderr, "maprect: the root failed during %scall id %d, request %llu (%s); aborting the job\n",
               call.kind, call.call_id, static_cast<unsigned long long>(s.sequence), what);
  abort_job(s, 1);
}

void abort_job(rank_context& s, int code) {
  std::fflush(stderr);
  unguard_exit(s);
  MPI_Abort(s.comm, code);
  std::abort();  // MPI_Abort does not return
}

}  // namespace maprect::detail
