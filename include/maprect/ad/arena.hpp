#pragma once
/// \file Bump allocator behind every tape: memory is handed out in order and returned all at once.

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

#include "inline.hpp"

namespace maprect {

/// A position in an arena, to rewind to (nested tapes).
struct arena_mark {
  std::size_t block;  ///< index of the block in use
  char* next;         ///< first free byte in that block
};

/// Bump allocator made of growing blocks that are kept for reuse, so a steady state allocates nothing.
class arena {
 public:
  static constexpr std::size_t alignment = 8;  ///< every allocation is aligned to this (nodes hold doubles and pointers)

  arena() { add_block(initial_block_bytes); }
  arena(const arena&) = delete;
  arena& operator=(const arena&) = delete;
  ~arena() {
    for (auto& b : blocks_) std::free(b.begin);
  }

  /// Returns `bytes` of uninitialised memory that lives until the arena is rewound past it.
  MAPRECT_ALWAYS_INLINE void* allocate(std::size_t bytes) {
    bytes = (bytes + alignment - 1) & ~(alignment - 1);
    char* p = next_;
    if (static_cast<std::size_t>(end_ - p) < bytes) return allocate_slow(bytes);
    next_ = p + bytes;
    return p;
  }

  /// Typed array of `n` uninitialised elements.
  template <class T>
  T* allocate_array(std::size_t n) {
    return static_cast<T*>(allocate(n * sizeof(T)));
  }

  /// Where the arena stands now.
  arena_mark mark() const { return {current_, next_}; }

  /// Frees everything allocated after `m` (keeps the blocks).
  void rewind(const arena_mark& m) {
    current_ = m.block;
    next_ = m.next;
    end_ = blocks_[current_].end;
  }

  /// Frees everything (keeps the blocks).
  void clear() { rewind({0, blocks_[0].begin}); }

  /// Bytes reserved from the system by all blocks.
  std::size_t capacity() const {
    std::size_t n = 0;
    for (auto& b : blocks_) n += static_cast<std::size_t>(b.end - b.begin);
    return n;
  }

  /// Bytes handed out since the last clear().
  std::size_t used() const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < current_; ++i) n += static_cast<std::size_t>(blocks_[i].end - blocks_[i].begin);
    return n + static_cast<std::size_t>(next_ - blocks_[current_].begin);
  }

 private:
  struct block {
    char* begin;
    char* end;
  };
  static constexpr std::size_t initial_block_bytes = std::size_t(1) << 16;

  void add_block(std::size_t bytes) {
    char* p = static_cast<char*>(std::aligned_alloc(64, bytes));  // cache-line aligned blocks
    if (!p) throw std::bad_alloc();
    blocks_.push_back({p, p + bytes});
    current_ = blocks_.size() - 1;
    next_ = p;
    end_ = p + bytes;
  }

  void* allocate_slow(std::size_t bytes) {
    // Move on to the next kept block that fits; blocks double so a tape of n bytes needs O(log n) of them.
    while (current_ + 1 < blocks_.size()) {
      ++current_;
      next_ = blocks_[current_].begin;
      end_ = blocks_[current_].end;
      if (static_cast<std::size_t>(end_ - next_) >= bytes) {
        char* p = next_;
        next_ += bytes;
        return p;
      }
    }
    std::size_t size = 2 * static_cast<std::size_t>(blocks_.back().end - blocks_.back().begin);
    while (size < bytes) size *= 2;
    add_block(size);
    char* p = next_;
    next_ += bytes;
    return p;
  }

  std::vector<block> blocks_;
  std::size_t current_ = 0;
  char* next_ = nullptr;
  char* end_ = nullptr;
};

}  // namespace maprect
