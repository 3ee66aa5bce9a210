#pragma once
// The root's steps of a reduce_sum call that do not depend on its layout: the request, the deadline and the
// answers within it, and the aborts that name a late worker or a root that failed between collectives.
#include <chrono>
#include <exception>
#include <vector>

#include "src/cluster/call_timeout.hpp"
#include "src/cluster/cluster_state.hpp"

namespace maprect::detail::reduce_root_steps {

/// Throws std::invalid_argument when `count` values of call `call_id`'s `what` do not fit one MPI message.
void check_fits(int call_id, long long count, const char* what);

/// reduce_sum call `call_id` as an abort's message names it.
inline call_name reduce_call(int call_id) { return {"reduce_sum ", call_id}; }

/// With a timeout: the round's deadline, and a receive posted for each worker's "done" message (sent when
/// its slices end), so that the late ones can be named. Without one: never.
std::chrono::steady_clock::time_point start_deadline(cluster_state& s);

/// The gather of the workers' answers, within the deadline: past it, the workers whose "done" message has
/// not come are named and the job aborted (if all are done, the gather is merely slow and is waited for).
void gather_answers(cluster_state& s, int call_id, std::chrono::steady_clock::time_point deadline);

/// Step 5 through host memory: waits until every worker has finished (its status and blocks are in its slot
/// then); past the deadline names those that have not, and aborts.
void await_reports(cluster_state& s, int call_id, std::chrono::steady_clock::time_point deadline);

/// Step 1 on the root: numbers and broadcasts a request, with `shared` (h.n_shared values) if not null.
void send_request(cluster_state& s, wire::request h, const double* shared);

/// Runs `step` (messages the workers take part in) and aborts the job if the root fails inside it.
template <class Step>
void between_collectives(cluster_state& s, int call_id, Step&& step) {
  s.root.mid_call = true;
  try {
    step();
  } catch (const std::exception& e) {
    abort_mid_call(s, reduce_call(call_id), e.what());
  } catch (...) {
    abort_mid_call(s, reduce_call(call_id), "unknown exception");
  }
  s.root.mid_call = false;
}

}  // namespace maprect::detail::reduce_root_steps
