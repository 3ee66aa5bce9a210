#pragma once
/// \file The sampler's random numbers: a 64-bit Mersenne twister whose whole state is text (for checkpoints),
/// and uniform and normal draws computed here so that they are the same on every platform and library.

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>

namespace maprect {

/// Random numbers of one chain: std::mt19937_64 plus draws that keep no state outside the engine.
class sampler_rng {
 public:
  /// Seeded from (seed, chain): chains of one seed get unrelated streams.
  sampler_rng(std::uint64_t seed, int chain) {
    std::seed_seq sequence{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                           static_cast<std::uint32_t>(chain), 0x6d617072u};
    engine_.seed(sequence);
  }

  /// Uniform on [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  /// Uniform on (lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Standard normal by Box-Muller (the second value is dropped so that no draw is cached between calls).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]: log(u1) is finite
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  /// The engine's full state as text.
  std::string state() const {
    std::ostringstream out;
    out << engine_;
    return out.str();
  }
  /// Restores a state written by state(); throws std::invalid_argument if the text is not one.
  void set_state(const std::string& text) {
    std::istringstream in(text);
    std::mt19937_64 engine;
    in >> engine;
    if (!in) throw std::invalid_argument("sampler_rng: the random number state is damaged");
    engine_ = engine;
  }
  /// True when both engines are in the same state.
  bool operator==(const sampler_rng& other) const { return engine_ == other.engine_; }

 private:
  std::mt19937_64 engine_;
};

}  // namespace maprect
