#pragma once
/// \file The size limit of one MPI message, checked before anything is sent.

#include <stdexcept>
#include <string>

namespace maprect::detail {

/// Most values one MPI message carries: MPI counts are int.
inline constexpr long long max_message_values = 2147483647;

/// True when `count` values fit in one message.
constexpr bool fits_one_message(long long count) { return count <= max_message_values; }

/// Throws std::invalid_argument saying that `what` holds `count` values, too many for one message.
[[noreturn]] inline void throw_too_large_for_message(long long count, const std::string& what) {
  throw std::invalid_argument("map_rect: " + what + " holds " + std::to_string(count) +
                              " values, more than the 2^31-1 one MPI message can carry");
}

/// Throws std::length_error: call `call_id` returns more outputs than one call can hold.
[[noreturn]] inline void throw_too_many_outputs(int call_id, long long n_outputs) {
  throw std::length_error("map_rect: call id " + std::to_string(call_id) + " returns " + std::to_string(n_outputs) +
                          " outputs, more than 2^31-1 in one call");
}

}  // namespace maprect::detail
