// What the launched ranks' measured phases add to the cost model (cost_inputs::phase_sharing): on more ranks
// than cores, short compute runs by turns and every collective may wait for a rank that is not running.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cost_model.hpp"

namespace maprect::plan {

namespace {

/// A broadcast and a flat gather of a few bytes, as the model charges them at `ranks`.
double modelled_round_seconds(const cost_inputs& in, int ranks) {
  return broadcast_seconds(in, ranks, 4) + collective_seconds(in, ranks, 0, gather_kind::flat);
}

}  // namespace

double phase_core_sharing(const cost_inputs& in, int ranks, int threads, double phase_s, double counted) {
  const std::vector<double>& at = in.phase_lengths_s;
  if (ranks != in.phase_ranks || threads != 1 || at.empty()) return counted;
  if (phase_s <= at.front()) return in.phase_sharing.front();
  if (phase_s >= at.back()) return in.phase_sharing.back();
  const std::size_t i = static_cast<std::size_t>(std::upper_bound(at.begin(), at.end(), phase_s) - at.begin());
  const double w = std::log(phase_s / at[i - 1]) / std::log(at[i] / at[i - 1]);
  return in.phase_sharing[i - 1] + w * (in.phase_sharing[i] - in.phase_sharing[i - 1]);
}

double collective_wait_seconds(const cost_inputs& in, int ranks) {
  if (ranks != in.phase_ranks || ranks == 1) return 0;
  return std::max(0.0, 0.5 * (in.phase_round_s - modelled_round_seconds(in, ranks)));
}

}  // namespace maprect::plan
