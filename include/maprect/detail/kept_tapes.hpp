#pragma once
/// \file What a deferred map_rect call keeps between its forward pass and grad(): its jobs' tapes, the record of
/// each job on them, and the one node on the caller's tape whose chain() sweeps them. A thread's calls are held
/// by that thread's kept_calls, which drops (and reuses) a call once its node is no longer on the caller's tape.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <typeinfo>
#include <vector>

#include "../ad.hpp"

namespace maprect::detail {

/// Where one job of a deferred call lies on the kept tape it ran on: nodes and leaves it made, its parameters'
/// leaves (shared ones first, then the job's own) and its outputs.
struct deferred_job {
  tape* on = nullptr;            ///< the kept tape the job ran on
  std::size_t stack_begin = 0;   ///< its nodes with operands: [stack_begin, stack_end) of on->stack
  std::size_t stack_end = 0;
  std::size_t leaf_begin = 0;    ///< its leaves: [leaf_begin, leaf_end) of on->leaves
  std::size_t leaf_end = 0;
  vari* params = nullptr;        ///< its parameters' leaves, contiguous: d(seeded outputs)/d(parameter) after a sweep
  vari* const* outputs = nullptr;  ///< its K output nodes
  int count = 0;                 ///< K
};

struct deferred_call;

/// The one node a deferred call puts on the caller's stack, after its outputs: a sweep reaches it once every
/// consumer of the outputs has added to their adjoints. Its value means nothing.
class deferred_call_vari final : public vari {
 public:
  deferred_call_vari(deferred_call* call, std::uint64_t id) : vari(0.0), call_(call), id_(id) {}
  /// Runs the call's reverse pass (deferred_call::sweep).
  inline void chain() override;
  /// The serial number of the call it stands for (nodes at a reused address differ in it).
  std::uint64_t id() const { return id_; }

 private:
  deferred_call* call_;
  std::uint64_t id_;
};

/// One deferred call: its kept tapes (one per thread that may run its jobs), its jobs, and the caller's nodes
/// the reverse pass adds to. Reused after it is dropped, so a steady state allocates nothing.
struct deferred_call {
  std::vector<std::unique_ptr<tape>> tapes;  ///< by team thread; rewound when the call is dropped
  std::vector<deferred_job> jobs;            ///< by job index
  std::vector<vari*> caller_shared;          ///< the shared parameters' nodes (none when they are double)
  std::vector<vari*> caller_job_params;      ///< the job parameters' nodes, J x P (none when they are double)
  vari* caller_outputs = nullptr;            ///< the outputs' leaves on the caller's tape, contiguous
  int n_shared_var = 0;                      ///< leading parameter leaves of a job that stand for shared ones
  int n_job_var = 0;                         ///< the job's own after them
  void (*sweep)(deferred_call&) = nullptr;   ///< the reverse pass (set by the forward pass's code)
  tape* owner = nullptr;                     ///< the caller's tape
  std::size_t node_index = 0;                ///< where its node is on owner->stack
  vari* node = nullptr;                      ///< its node
  std::uint64_t id = 0;                      ///< serial number, as in its node
  // Over a cluster (jobs holds the root's own jobs; the workers keep theirs under the same id):
  std::uint64_t remote_id = 0;               ///< its number among the root's deferred calls over the cluster
  std::uint64_t cluster = 0;                 ///< the cluster that keeps its other jobs (cluster_state::serial)
  int call_id = 0;                           ///< the call site
  int kinds = 0;                             ///< param_kinds of the call
  int n_jobs = 0;                            ///< J, every rank's jobs (0: a call in process)
  int root_jobs = 0;                         ///< the root's share of the chunk plan the jobs ran by
  std::vector<int> counts;                   ///< outputs per job, J of them
  std::vector<int> job_index;                ///< the call's index of each of jobs (claims: any rank's)
  std::vector<int> ran_first;                ///< the root: where rank r's kept jobs start in ran_jobs (ranks + 1)
  std::vector<int> ran_jobs;                 ///< the root: every rank's kept jobs' indices, in the order it keeps them

  /// Makes room for `threads` kept tapes; new ones are made once and reused.
  void reserve_tapes(int threads) {
    while (static_cast<int>(tapes.size()) < threads) tapes.push_back(std::make_unique<tape>());
  }
  /// Empties the kept tapes (keeping their memory) and forgets the caller.
  void clear() {
    for (auto& t : tapes) {
      t->stack.clear();
      t->leaves.clear();
      t->nests.clear();
      t->memory.clear();
    }
    jobs.clear();
    counts.clear();
    job_index.clear();
    ran_first.clear();
    ran_jobs.clear();
    n_jobs = 0;
    remote_id = 0;
    cluster = 0;
    caller_shared.clear();
    caller_job_params.clear();
    owner = nullptr;
    node = nullptr;
  }
  /// True while its node is still where it was put on the caller's tape (not rewound or recovered).
  bool live() const {
    if (node_index >= owner->stack.size() || owner->stack[node_index] != node) return false;
    const vari* v = owner->stack[node_index];  // a node is there: its dynamic type can be read
    return typeid(*v) == typeid(deferred_call_vari) && static_cast<const deferred_call_vari*>(v)->id() == id;
  }
};

inline void deferred_call_vari::chain() { call_->sweep(*call_); }

/// Figures of a thread's kept tapes, for tests and diagnostics.
struct kept_tapes_stats {
  std::size_t live_calls = 0;      ///< calls whose node may still be swept
  std::size_t spare_calls = 0;     ///< dropped calls kept for reuse
  std::size_t capacity_bytes = 0;  ///< memory their tapes reserve
  std::uint64_t calls_made = 0;    ///< deferred calls this thread has made
};

/// A thread's deferred calls: those whose node may still be swept, and dropped ones kept for reuse.
class kept_calls {
 public:
  /// The calling thread's.
  static kept_calls& of_thread() {
    static thread_local kept_calls calls;
    return calls;
  }

  /// A cleared call with at least `threads` kept tapes, after dropping those `caller` no longer holds.
  deferred_call& take(tape& caller, int threads) {
    drop_rewound(caller);
    if (spare_.empty()) spare_.push_back(std::make_unique<deferred_call>());
    live_.push_back(std::move(spare_.back()));
    spare_.pop_back();
    deferred_call& call = *live_.back();
    call.reserve_tapes(threads);
    call.id = ++serial_;
    ++made_;
    tape_rewound_hook.store(&drop_rewound_on_thread, std::memory_order_relaxed);
    return call;
  }

  /// Gives back `call` (the newest taken) unused: its forward pass failed or it has no outputs.
  void give_back(deferred_call& call) {
    call.clear();
    for (std::size_t i = live_.size(); i-- > 0;)
      if (live_[i].get() == &call) return release(i);
  }

  /// Drops the calls whose nodes `caller` no longer holds.
  void drop_rewound(tape& caller) {
    for (std::size_t i = live_.size(); i-- > 0;) {
      deferred_call& call = *live_[i];
      if (call.owner == &caller && !call.live()) {
        call.clear();
        release(i);
      }
    }
  }

  /// The number (remote_id) of the oldest call over cluster `cluster` whose node may still be swept, or
  /// `newest` when there is none older: the workers drop what they keep of calls before it.
  std::uint64_t oldest_remote_id(std::uint64_t newest, std::uint64_t cluster) const {
    for (const auto& call : live_)
      if (call->cluster == cluster && call->remote_id != 0) newest = std::min(newest, call->remote_id);
    return newest;
  }

  /// The figures of this thread's calls.
  kept_tapes_stats stats() const {
    kept_tapes_stats s{live_.size(), spare_.size(), 0, made_};
    for (const auto* list : {&live_, &spare_})
      for (const auto& call : *list)
        for (const auto& t : call->tapes) s.capacity_bytes += t->memory.capacity();
    return s;
  }

 private:
  static void drop_rewound_on_thread(tape& t) { of_thread().drop_rewound(t); }

  void release(std::size_t i) {
    spare_.push_back(std::move(live_[i]));
    live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
  }

  std::vector<std::unique_ptr<deferred_call>> live_;
  std::vector<std::unique_ptr<deferred_call>> spare_;
  std::uint64_t serial_ = 0;
  std::uint64_t made_ = 0;
};

/// The figures of the calling thread's kept tapes.
inline kept_tapes_stats kept_tapes_of_thread() { return kept_calls::of_thread().stats(); }

}  // namespace maprect::detail
