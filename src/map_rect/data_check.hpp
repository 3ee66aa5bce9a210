#pragma once
// Whether a call's x_r/x_i still equal the copy the workers hold: compared bit for bit on every steady call
// given x_r/x_i, so data changed in place under the same call id is never answered from a stale cache. (Rows
// in a job_data cannot change: its identity tells the root whether the workers hold them.)
#include <cstdint>
#include <cstring>
#include <vector>

namespace maprect::detail {

/// Bitwise equality of n values; short rows compare inline (a memcmp call costs more than they do).
template <class T>
inline bool values_equal(const T* a, const T* b, std::size_t n) {
  if (n * sizeof(T) > 64) return std::memcmp(a, b, n * sizeof(T)) == 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::memcmp(a + i, b + i, sizeof(T)) != 0) return false;  // bits, so NaN equals itself
  }
  return true;
}

/// True when every row in [first, last) equals the matching row of `flat` (rows of `width` values, back to
/// back).
template <class T>
bool rows_equal(const std::vector<T>* first, const std::vector<T>* last, const T* flat, int width) {
  for (; first != last; ++first) {
    if (!values_equal(first->data(), flat, static_cast<std::size_t>(width))) return false;
    flat += width;
  }
  return true;
}

}  // namespace maprect::detail
