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

std::chrono::steady_clock::time_point start_deadline(cluster_state& s) {
  // By claims by message the root hears from every worker during the claims, and names the late ones there.
  const wire::call_route route = s.root.reduce.route;
  if (s.settings.timeout > 0 && route != wire::call_route::memory && !claims_by_message(s.settings, s.size, route))
    expect_done_messages(s);
  return deadline_after(s.settings.timeout);
}

void gather_answers(cluster_state& s, int call_id, std::chrono::steady_clock::time_point deadline) {
  reduce_root_buffers& b = s.root.reduce;
  const collective how{b.collective, b.via_slots() ? wire::status_doubles : b.chunk_back};
  gather_within_deadline(s, reduce_call(call_id), deadline, how, MPI_DOUBLE, b.received.data(),
                         b.answers.counts.data(), b.answers.displs.data());
}

void await_reports(cluster_state& s, int call_id, std::chrono::steady_clock::time_point deadline) {
  for (int r = 1; r < s.size; ++r)
    if (!await_finished(s.host.claims, r, s.settings.policy, deadline))
      abort_late(s, reduce_call(call_id), unfinished(s.host.claims, s.size));
}

void send_request(cluster_state& s, wire::request h, const double* shared) {
  h.sequence = ++s.sequence;
  exchange_request(s.ends(), h, s.request, shared, s.call.shared_rest);
  s.root.last_traffic.sent += request_bytes(s.ends(), shared != nullptr ? h.n_shared : 0);
}

}  // namespace maprect::detail::reduce_root_steps
