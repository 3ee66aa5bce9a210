#pragma once
// maprect bench --model pointwise_regression: the model whose jobs return one output per observation
// (src/models/pointwise_regression.hpp), where what a call moves grows with K (M + 1) per job: its gradient
// by the closed form, map_rect in process and over the cluster, and the bytes of one call.
#include <maprect/cluster.hpp>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace maprect::cli {

/// --sizes of the pointwise model when none are given: G x K (groups x observations per group).
inline constexpr const char* pointwise_default_sizes = "8x100,64x100,64x1000";

/// Runs the pointwise model's bench on the root at C covariates and the sizes (G, K), prints its table, and
/// writes its JSON to `json` when that is not null.
void bench_pointwise(const std::vector<std::pair<int, int>>& sizes, int covariates, int repeat, const cluster& c,
                     std::ostream* json, const std::string& command_line);

}  // namespace maprect::cli
