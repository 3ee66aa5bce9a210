#pragma once
/// \file The thread's tape: the order in which nodes were made, their memory, and nested regions.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "arena.hpp"

namespace maprect {

class vari;

/// A position on the tape: where a nested region began, or where to rewind to.
struct tape_mark {
  std::size_t stack_size;  ///< nodes with work to do when the mark was taken
  std::size_t leaf_count;  ///< leaves when the mark was taken
  arena_mark memory;       ///< arena position when the mark was taken
};

/// One thread's tape. Each thread has its own, so threads differentiate independently.
struct tape {
  std::vector<vari*> stack;      ///< nodes with operands, in creation order (reverse sweeps walk it backwards)
  std::vector<vari*> leaves;     ///< nodes without operands: sweeps skip them, zeroing does not
  arena memory;                  ///< where nodes and their operand arrays live
  std::vector<tape_mark> nests;  ///< open nested regions, innermost last
  std::uint64_t sweeps = 0;      ///< reverse sweeps run on this tape: no sweep, no adjoint to clear

  tape() {
    stack.reserve(1 << 12);
    leaves.reserve(1 << 8);
  }

  /// Records a new node with operands.
  MAPRECT_ALWAYS_INLINE void push(vari* v) { stack.push_back(v); }
  /// Records a new leaf.
  MAPRECT_ALWAYS_INLINE void push_leaf(vari* v) { leaves.push_back(v); }

  /// The tape's current position.
  tape_mark mark() const { return {stack.size(), leaves.size(), memory.mark()}; }
  /// Frees every node made after `m`.
  MAPRECT_ALWAYS_INLINE void rewind(const tape_mark& m) {
    stack.resize(m.stack_size);
    leaves.resize(m.leaf_count);
    memory.rewind(m.memory);
  }

  /// Where the innermost open region began (the whole tape when none is open).
  tape_mark region_begin() const { return nests.empty() ? tape_mark{0, 0, {0, nullptr}} : nests.back(); }

  /// Makes `t` the calling thread's tape and returns the one it replaces (null if none was made yet).
  static tape* exchange_current(tape* t) {
    tape* old = instance_;
    instance_ = t;
    return old;
  }

  /// The calling thread's tape, created on first use.
  static tape& current() {
    tape* t = instance_;
    if (__builtin_expect(t != nullptr, 1)) return *t;
    return make_current();
  }

 private:
  // A plain pointer: thread_local with constant initialisation costs one load on the hot path.
  static inline thread_local tape* instance_ = nullptr;

  static tape& make_current() {
    static thread_local std::unique_ptr<tape> owner;  // frees the tape when the thread ends
    owner = std::make_unique<tape>();
    instance_ = owner.get();
    return *instance_;
  }
};

namespace detail {
/// Called with a tape that recover_memory() or a nested_tape's end has just rewound: drops what deferred map_rect
/// calls kept for nodes no longer on it. Null until the first deferred call, so that no other program pays for it.
inline std::atomic<void (*)(tape&)> tape_rewound_hook{nullptr};

/// Runs the hook, if any, for `t`.
inline void notify_tape_rewound(tape& t) {
  if (void (*hook)(tape&) = tape_rewound_hook.load(std::memory_order_relaxed)) hook(t);
}
}  // namespace detail

}  // namespace maprect
