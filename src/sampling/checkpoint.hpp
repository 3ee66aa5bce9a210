#pragma once
/// \file Checkpoints of a chain: its full state as text (doubles as hexadecimal floats, so exact), a
/// fingerprint of what produced it, a checksum, written atomically (a temporary file, then rename).

#include <maprect/sample/chain.hpp>

#include <cstdint>
#include <string>

namespace maprect {

/// What a checkpoint file holds.
struct chain_checkpoint {
  std::string fingerprint;        ///< "key=value ..." of model, data and settings; must match to resume
  std::uint64_t output_bytes = 0; ///< length of the chain's output file when the checkpoint was taken
  double warmup_seconds = 0;      ///< warm-up time so far
  double sampling_seconds = 0;    ///< sampling time so far
  chain_state state;              ///< the chain
  long draw_rows = -1;            ///< draw rows in the output file then (-1: not recorded)
};

namespace detail {

/// FNV-1a, 64 bits: a checksum against damage, not against tampering.
std::uint64_t fnv1a(const std::string& text, std::uint64_t h = 0xcbf29ce484222325ull);

}  // namespace detail

/// Writes the checkpoint to path atomically: a reader sees the old file or the new one, never a mix.
void write_checkpoint(const std::string& path, const chain_checkpoint& c);

/// Reads a checkpoint; throws std::runtime_error naming the file for a missing, damaged (checksum, syntax) or
/// mismatched one (its fingerprint differs from `expected_fingerprint`: the first differing setting is named).
chain_checkpoint read_checkpoint(const std::string& path, const std::string& expected_fingerprint);

/// The first "key=value" of `a` whose value differs in `b` (or is missing there), as a readable phrase.
std::string fingerprint_difference(const std::string& a, const std::string& b);

}  // namespace maprect
