#pragma once
// The runtime's one clock for timing calls, batches and jobs: steady, so that a change of the system's time
// never makes a call look longer or shorter than it was.
#include <chrono>

namespace maprect::detail {

/// Seconds from `start` to now.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// `seconds` as a duration of the steady clock, to add to its time points.
inline std::chrono::steady_clock::duration steady_seconds(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

/// Seconds from `a` to `b`.
inline double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace maprect::detail
