#pragma once
// Moving a steady call's data through memory instead of messages. When every worker runs on the root's
// node, the root writes each worker's job parameters into a slot of memory they share, and the worker
// writes its blocks behind them; the call's messages shrink to the request and a few status doubles per
// worker, or to the request alone when the workers claim their jobs and leave their status beside their
// claim words (wire::call_route). At many small jobs those messages pass the shared-memory transport's eager
// limit and go by rendezvous, a handshake each way that costs more than the copies (see README, Performance).
#include <mpi.h>

#include <cstddef>

#include "src/transport/mpi_handles.hpp"

namespace maprect::detail {

/// Where a worker's blocks start in its slot: behind its job parameters (P × its jobs). The root and the
/// worker each compute it, and must agree.
inline std::ptrdiff_t slot_blocks_at(int n_job_params, int jobs) { return static_cast<std::ptrdiff_t>(n_job_params) * jobs; }

/// Doubles a worker's slot must hold for a steady call: its job parameters, then its answer.
inline long long slot_doubles(int n_job_params, int jobs, int answer) { return slot_blocks_at(n_job_params, jobs) + answer; }

/// Per rank, a slot of doubles in memory all ranks share (an MPI shared-memory window). In a steady call it
/// holds the rank's job parameters, then its blocks (slot_blocks_at). The root's slot is used by calls whose
/// every job any rank may run (src/map_rect/host_claims.cpp).
class host_slots {
 public:
  /// Doubles a slot may grow to (8 MiB): beyond that a message costs no more than the copies.
  static constexpr long long max_doubles = 1 << 20;

  /// Uses `capacity` doubles per worker at `base` in `window` (host_memory places them; capacity 0: none yet).
  void place(double* base, long long capacity, const shared_window* window) {
    base_ = base;
    capacity_ = capacity;
    window_ = window;
  }
  /// Whether the slots can be used at all: every worker shares the root's host.
  bool usable() const { return window_ != nullptr; }
  /// Doubles each slot holds now (0 before the first host_memory::reserve()).
  long long capacity() const { return capacity_; }
  /// Rank r's slot.
  double* slot(int r) const { return base_ + static_cast<std::ptrdiff_t>(r) * capacity_; }
  /// Orders this rank's accesses to the slots with its messages: called after writing a slot and before
  /// the message that announces it, and after receiving such a message and before reading.
  void sync() const { window_->sync(); }

 private:
  const shared_window* window_ = nullptr;
  long long capacity_ = 0;
  double* base_ = nullptr;  ///< the slots, the root's first
};

}  // namespace maprect::detail
