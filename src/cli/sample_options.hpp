#pragma once
// `maprect sample`'s options: their CLI11 definitions, the checks that refuse arguments that cannot work
// before any sampling, the chain settings they make, the metric file and the checkpoint fingerprint of them.
#include <maprect/sample.hpp>

#include <cstdint>
#include <string>

#include "commands.hpp"
#include "metric_file.hpp"

namespace maprect::cli {

/// --seed as an unsigned 64-bit integer; throws std::invalid_argument naming the text.
std::uint64_t parse_seed(const std::string& text);
/// --metric as the sampler's metric_kind.
metric_kind parse_metric(const std::string& text);
/// Throws std::invalid_argument naming the option and value of the first sampler argument that cannot work.
void check_sampler_arguments(const sample_command_options& o);
/// A chain's settings from the command's options, the model's parameter count and the chain number (reads the
/// metric file, if any).
sample_options chain_options(const sample_command_options& o, int dim, int chain);
/// "key=value ..." of the sampler arguments, for the checkpoint fingerprint (the metric file by its bytes).
std::string sampler_fingerprint(const sample_command_options& o);
/// The warnings Stan prints for the adaptation windows (empty when none): too few warm-up iterations for the
/// buffers and window, which are then rescaled to 15% / 75% / 10%, or none adapted for 1 to 19.
std::string window_warning(const sample_command_options& o);

}  // namespace maprect::cli
