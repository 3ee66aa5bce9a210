#pragma once
// The reduce command: one reduce_sum call over the cluster, as the ordered steps that the root and every worker
// execute (reduce_command.cpp). The root plans the call before it and folds the blocks after it
// (reduce_root.cpp); a worker's serve loop hands it each reduce request.
#include <chrono>
#include <maprect/detail/reduce_call.hpp>
#include <string>

#include "src/protocol/call_timeout.hpp"
#include "src/cluster/rank_context.hpp"
#include "src/reduce_sum/claimed_slices.hpp"

namespace maprect::detail {

/// reduce_sum call `call_id` as an abort's message names it.
inline call_name reduce_call(int call_id) { return {"reduce_sum ", call_id}; }

/// Root: numbers and broadcasts request `h`, with `shared` (h.n_shared values) when not null.
void send_reduce_request(rank_context& s, wire::request h, const double* shared);

/// One reduce request, both sides: run() executes its steps in the same order on every rank, and a rank's
/// role shows only inside a step (the root's side of a collective or a worker's, and the root's bookkeeping).
class reduce_command {
 public:
  /// Root: call `req` of `site` over `split`, its buffers laid out (reduce.root); ships `payload` when not null.
  /// `reserve`: the split moved, so every rank sizes its host slot after the call. `compare`: the workers'
  /// payload lays the call out as `req` does, so the call runs at once and the root checks the data meanwhile.
  reduce_command(rank_context& s, reduce_state& reduce, reduce_root_site& site, const reduce_request& req,
                 const reduce_split& split, const std::string* payload, bool reserve, bool compare);
  /// Worker: the request `v` that the serve loop received, with the shared values it read (`shared`).
  reduce_command(rank_context& s, reduce_state& reduce, const wire::request& v, const double* shared);

  /// The command's steps, in order (reduce_command.cpp).
  void run();
  /// Root: whether the workers' data were current; if not, their results go and the call runs again.
  bool current() const { return current_; }
  /// Root: the first failing slice it ran, and its error.
  const lowest_failure& failure() const { return failure_; }

 private:
  void send_request();      ///< step 1
  void ship_payload();      ///< step 2
  void post_values();       ///< step 3
  void start_run();         ///< before step 4: the root's data check, the clocks
  void run_slices();        ///< step 4
  void run_worker_slices(); ///< step 4 on a worker
  void collect();           ///< step 5
  void lay_out_answers();   ///< step 5 on the root, without claims
  void claim_by_message();  ///< steps 4 and 5 by claims by message
  void grow_slots();        ///< after a new payload or split
  /// Whether the values and blocks go through the host slots.
  bool via_slots() const { return wire::in_slots(h_.route); }

  rank_context& s_;
  reduce_state& reduce_;
  bool root_;
  wire::reduce_header h_;
  const reduce_request* req_ = nullptr;      ///< root: the caller's call
  reduce_root_site* root_site_ = nullptr;    ///< root: its record of the call site
  const std::string* payload_ = nullptr;     ///< root: a payload to ship, or null
  reduce_worker_site* site_ = nullptr;       ///< worker: its copy of the call site
  const double* shared_ = nullptr;           ///< worker: the shared values
  const reduce_layout* layout_ = nullptr;    ///< the call's layout: the root's, or the worker's copy
  reduce_split split_;
  int first_ = 0, last_ = 0;                 ///< this rank's range of slices
  collective_kind kind_ = collective_kind::flat;
  int chunk_out_ = 0, chunk_back_ = 0;       ///< the largest worker's values, and its status and blocks
  bool compare_ = false;                     ///< root: it checks the workers' data during the call
  bool current_ = true;                      ///< root: the workers' data were current
  lowest_failure failure_;                   ///< the first failing slice this rank ran (a worker's error: s.last_error)
  std::chrono::steady_clock::time_point start_;     ///< the rank's slices started
  std::chrono::steady_clock::time_point deadline_;  ///< root: the call's deadline under a timeout
  double* answer_ = nullptr;                 ///< worker: its status, then its blocks
  int taken_ = 0;                            ///< worker: slices of others' ranges it claimed in host memory
};

}  // namespace maprect::detail
