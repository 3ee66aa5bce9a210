#pragma once
/// \file Reverse sweeps and tape housekeeping.

#include <stdexcept>

#include "var.hpp"

namespace maprect {

namespace detail {
/// Seeds dy/dy = 1 and runs chain() over t's nodes from the newest down to position `begin`.
inline void sweep(tape& t, const var& y, std::size_t begin) {
  ++t.sweeps;
  y.vi_->adj_ = 1.0;
  vari* const* stack = t.stack.data();
  for (std::size_t i = t.stack.size(); i-- > begin;) stack[i]->chain();
}

/// Zeroes the adjoints of the leaves [first, last) of t.
inline void zero_leaf_adjoints(tape& t, std::size_t first, std::size_t last) {
  for (std::size_t i = first; i < last; ++i) t.leaves[i]->adj_ = 0;
}

/// Zeroes the adjoints of the nodes t gained since `m`.
inline void zero_adjoints_since(tape& t, const tape_mark& m) {
  for (std::size_t i = m.stack_size; i < t.stack.size(); ++i) t.stack[i]->adj_ = 0;
  for (std::size_t i = m.leaf_count; i < t.leaves.size(); ++i) t.leaves[i]->adj_ = 0;
}
}  // namespace detail

/// Reverse sweep from y: seeds dy/dy = 1 and runs chain() over the innermost open region (the whole
/// tape when no nested_tape is open); afterwards x.adj() holds dy/dx for every x on that region.
inline void grad(const var& y) {
  tape& t = tape::current();
  detail::sweep(t, y, t.region_begin().stack_size);
}

/// Zeroes the adjoint of every node on the thread's tape.
inline void set_zero_all_adjoints() {
  tape& t = tape::current();
  for (vari* v : t.stack) v->adj_ = 0;
  for (vari* v : t.leaves) v->adj_ = 0;
}

/// Zeroes the adjoints of the innermost open region only.
inline void set_zero_nested_adjoints() {
  tape& t = tape::current();
  detail::zero_adjoints_since(t, t.region_begin());
}

/// Frees the whole tape; every var made before becomes invalid. Keeps the memory blocks for reuse.
/// Throws std::logic_error inside a nested_tape (the region owns part of the tape).
inline void recover_memory() {
  tape& t = tape::current();
  if (!t.nests.empty()) throw std::logic_error("recover_memory: called while a nested_tape is open");
  t.stack.clear();
  t.leaves.clear();
  t.memory.clear();
  detail::notify_tape_rewound(t);
}

/// Number of nodes on the thread's tape (leaves included).
inline std::size_t tape_size() {
  const tape& t = tape::current();
  return t.stack.size() + t.leaves.size();
}

/// Bytes of node memory in use on the thread's tape.
inline std::size_t tape_bytes() { return tape::current().memory.used(); }

}  // namespace maprect
