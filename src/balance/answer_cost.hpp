#pragma once
// What a rank's answers to claims cost it, kept across calls (cluster_state::answers).

namespace maprect::detail {

/// What answering the asks between two batches costs a rank, as a running mean of its latest answers (most
/// find no ask: a poll of the network). Kept across calls: the network's cost does not change with the call.
class answer_cost {
 public:
  /// Adds an answer that took `seconds`.
  void add(double seconds) { mean_ = mean_ > 0 ? mean_ + (seconds - mean_) / 16 : seconds; }
  /// Seconds per answer (0: none timed yet).
  double seconds() const { return mean_; }

 private:
  double mean_ = 0;
};

}  // namespace maprect::detail
