#pragma once
// The models' embedded data come from one small generator, so that they are the same bits on every platform.
#include <cmath>
#include <cstdint>

namespace maprect::models {

/// splitmix64 (Steele, Lea, Flood 2014): a tiny generator with fixed output on every platform, unlike std's
/// distributions.
class splitmix64 {
 public:
  /// The generator started at `seed`.
  explicit splitmix64(std::uint64_t seed) : state_(seed) {}
  /// The next 64 random bits.
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform on (0, 1): 53 random bits, shifted half a unit off zero so that log() is finite.
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
  /// Uniform on (lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Standard normal by Box-Muller; both values of a pair are used, in order.
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double radius = std::sqrt(-2.0 * std::log(uniform()));
    const double angle = 6.283185307179586477 * uniform();
    spare_ = radius * std::sin(angle);
    has_spare_ = true;
    return radius * std::cos(angle);
  }

 private:
  std::uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace maprect::models
