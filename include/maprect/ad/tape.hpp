#pragma once
/// \file The thread's tape: the order in which nodes were made, their memory, and nested regions.

#include <cstddef>
#include <memory>
#include <vector>

#include "arena.hpp"

namespace maprect {

class vari;

/// Start of a nested region of the tape.
struct tape_mark {
  std::size_t stack_size;  ///< nodes on the tape when the region began
  arena_mark memory;       ///< arena position when the region began
};

/// One thread's tape. Each thread has its own, so threads differentiate independently.
struct tape {
  std::vector<vari*> stack;      ///< every node, in creation order (reverse sweeps walk it backwards)
  arena memory;                  ///< where nodes and their operand arrays live
  std::vector<tape_mark> nests;  ///< open nested regions, innermost last

  tape() { stack.reserve(1 << 12); }

  /// Records a new node.
  void push(vari* v) { stack.push_back(v); }

  /// First node of the innermost open region (0 when none is open).
  std::size_t region_begin() const { return nests.empty() ? 0 : nests.back().stack_size; }

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

}  // namespace maprect
