#pragma once
/// \file The node of the tape: a value, its adjoint, and how to pass the adjoint on.

#include <cstddef>

#include "tape.hpp"

namespace maprect {

/// Tag for allocating a leaf node: `new (leaf) vari(x)`.
struct leaf_t {};
/// The leaf tag.
inline constexpr leaf_t leaf{};

/// A tape node: value, adjoint, and chain() that adds this node's adjoint into its operands'.
/// Nodes live in the thread's arena; they are never deleted one by one.
class vari {
 public:
  double val_;      ///< value
  double adj_ = 0;  ///< adjoint, d(result of the sweep)/d(this)

  /// A node with value `v`; operator new has already recorded it on the thread's tape.
  explicit vari(double v) : val_(v) {}

  vari(const vari&) = delete;
  vari& operator=(const vari&) = delete;

  /// Propagates adj_ into the operands; leaves have nothing to do.
  virtual void chain() {}

  /// Nodes are allocated on the thread's arena and recorded on its tape in one step (one thread-local
  /// lookup per node); vari is the primary base of every node, so the address is the node's.
  MAPRECT_ALWAYS_INLINE static void* operator new(std::size_t bytes) {
    tape& t = tape::current();
    void* p = t.memory.allocate(bytes);
    t.push(static_cast<vari*>(p));
    return p;
  }
  /// A leaf (no operands): recorded apart, so that reverse sweeps need not visit it.
  MAPRECT_ALWAYS_INLINE static void* operator new(std::size_t bytes, leaf_t) {
    tape& t = tape::current();
    void* p = t.memory.allocate(bytes);
    t.push_leaf(static_cast<vari*>(p));
    return p;
  }
  /// Arena memory is released all at once by recover_memory() or a nested tape's end.
  static void operator delete(void*) noexcept {}
  /// Matches the leaf operator new.
  static void operator delete(void*, leaf_t) noexcept {}

 protected:
  ~vari() = default;
};

}  // namespace maprect
