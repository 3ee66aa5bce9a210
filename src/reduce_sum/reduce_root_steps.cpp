// The root's steps of a reduce_sum call that do not depend on its layout (reduce_root_steps.hpp).
#include "src/reduce_sum/reduce_root_steps.hpp"

#include <cstdio>
#include <cstdlib>
#include <maprect/detail/message_limits.hpp>
#include <stdexcept>
#include <string>

#include "src/protocol/exchange.hpp"

namespace maprect::detail::reduce_root_steps {

void check_fits(int call_id, long long count, const char* what) {
  if (!fits_one_message(count))
    throw std::invalid_argument("reduce_sum: call id " + std::to_string(call_id) + ": " + what + " holds " +
                                std::to_string(count) + " values, more than the 2^31-1 one MPI message can carry");
}

[[noreturn]] void abort_mid_call(cluster_state& s, int call_id, const char* what) {
  std::fprintf(stderr, "maprect: the root failed during reduce_sum call id %d, request %llu (%s); aborting the job\n",
               call_id, static_cast<unsigned long long>(s.sequence), what);
  std::fflush(stderr);
  unguard_exit(s);  // this exit is deliberate and explained
  MPI_Abort(s.comm, 1);
  std::abort();  // MPI_Abort does not return
}

[[noreturn]] void abort_late(cluster_state& s, int call_id, const std::vector<int>& late) {
  for (int q : late)
    std::fprintf(stderr, "maprect: rank %d did not answer reduce_sum call id %d within %g s (request %llu, host %s)\n",
                 q, call_id, s.settings.timeout, static_cast<unsigned long long>(s.sequence), host_of(s.ranks, q));
  std::fprintf(stderr, "maprect: aborting the job (MAPRECT_TIMEOUT=%g)\n", s.settings.timeout);
  std::fflush(stderr);
  unguard_exit(s);  // this exit is deliberate and explained
  MPI_Abort(s.comm, 1);
  std::abort();  // MPI_Abort does not return
}

std::chrono::steady_clock::time_point start_deadline(cluster_state& s) {
  if (s.settings.timeout <= 0) return std::chrono::steady_clock::time_point::max();
  if (s.root.reduce.route != wire::call_route::memory)
    for (int r = 1; r < s.size; ++r) MPI_Irecv(nullptr, 0, MPI_BYTE, r, done_tag, s.comm, &s.root.done[r]);
  return std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                std::chrono::duration<double>(s.settings.timeout));
}

void gather_answers(cluster_state& s, int call_id, std::chrono::steady_clock::time_point deadline) {
  reduce_root_buffers& b = s.root.reduce;
  MPI_Request pending = MPI_REQUEST_NULL;
  const collective how{b.collective, b.via_slots() ? wire::status_doubles : b.chunk_back};
  if (!collect_answers(s.ends(), how, MPI_DOUBLE, nullptr, 0, b.received.data(), b.answers.counts.data(),
                       b.answers.displs.data(), deadline, pending)) {
    std::vector<int> late;
    for (int q = 1; q < s.size; ++q) {
      int answered = 0;
      MPI_Test(&s.root.done[q], &answered, MPI_STATUS_IGNORE);
      if (!answered) late.push_back(q);
    }
    if (!late.empty()) abort_late(s, call_id, late);
    wait(pending, s.settings.policy);
  }
  note_gather(s);
  if (s.settings.timeout > 0) MPI_Waitall(s.size - 1, s.root.done.data() + 1, MPI_STATUSES_IGNORE);
}

void await_reports(cluster_state& s, int call_id, std::chrono::steady_clock::time_point deadline) {
  for (int r = 1; r < s.size; ++r)
    if (!await_finished(s.host.claims, r, s.settings.policy, deadline))
      abort_late(s, call_id, unfinished(s.host.claims, s.size));
}

void send_request(cluster_state& s, wire::request h, const double* shared) {
  h.sequence = ++s.sequence;
  exchange_request(s.ends(), h, s.request, shared, s.call.shared_rest);
  s.root.last_traffic.sent += request_bytes(s.ends(), shared != nullptr ? h.n_shared : 0);
}

}  // namespace maprect::detail::reduce_root_steps
