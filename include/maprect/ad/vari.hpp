#pragma once
/// \file The node of the tape: a value, its adjoint, and how to pass the adjoint on.

#include <cstddef>

#include "tape.hpp"

namespace maprect {

/// A tape node: value, adjoint, and chain() that adds this node's adjoint into its operands'.
/// Nodes live in the thread's arena; they are never deleted one by one.
class vari {
 public:
  double val_;      ///< value
  double adj_ = 0;  ///< adjoint, d(result of the sweep)/d(this)

  /// A node with value `v`, pushed on the current thread's tape.
  explicit vari(double v) : val_(v) { tape::current().push(this); }

  vari(const vari&) = delete;
  vari& operator=(const vari&) = delete;

  /// Propagates adj_ into the operands; leaves have nothing to do.
  virtual void chain() {}

  /// Nodes are allocated on the thread's arena.
  static void* operator new(std::size_t bytes) { return tape::current().memory.allocate(bytes); }
  /// Arena memory is released all at once by recover_memory() or a nested tape's end.
  static void operator delete(void*) noexcept {}

 protected:
  ~vari() = default;
};

}  // namespace maprect
