// The worker's serve loop: wait for a request, check its sequence, and hand it to its command's worker side;
// repeat until the root releases the cluster. Each command's worker side lives beside its root side
// (src/map_rect/, src/reduce_sum/), joining exactly the collectives the root joins.
#include <cstdio>

#include "src/cluster/cluster_state.hpp"
#include "src/protocol/call_timeout.hpp"
#include "src/protocol/exchange.hpp"
#include "src/worker/worker_steps.hpp"

namespace maprect::detail {

namespace {

using wire::command;

/// Arms the exit guard for the serve loop: a worker that exits inside it aborts the job, naming itself.
struct serving_scope {
  cluster_state& s;
  explicit serving_scope(cluster_state& state) : s(state) { guard_exit(s); }
  ~serving_scope() { unguard_exit(s); }
  serving_scope(const serving_scope&) = delete;
  serving_scope& operator=(const serving_scope&) = delete;
};

}  // namespace

void serve(cluster_state& s) {
  if (s.rank == 0) return;
  const serving_scope guard(s);
  while (true) {
    wire::request v;
    const double* shared = exchange_request(s.ends(), v, s.request, nullptr, s.shared_rest);
    if (v.sequence != ++s.sequence) {
      std::fprintf(stderr, "maprect: rank %d received request %llu, expected %llu; aborting\n", s.rank,
                   static_cast<unsigned long long>(v.sequence), static_cast<unsigned long long>(s.sequence));
      abort_job(s, 3);
    }
    switch (v.cmd) {
      case command::call: serve_call(s, v, shared); break;
      case command::first_call:
      case command::deferred_call: serve_first_call(s, v, shared); break;
      case command::reverse: serve_reverse(s, v); break;
      case command::reduce: serve_reduce(s, s.reduce, v, shared); break;
      case command::fetch_error: exchange_error(s.ends(), v.arg, s.last_error); break;
      case command::release: return;
    }
  }
}

}  // namespace maprect::detail
