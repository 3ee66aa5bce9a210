#pragma once
/// \file Where a reduce_sum call's slices begin and end, where each term's vars sit among the packed values,
/// and where each slice's block sits among the call's blocks. Computed from the arguments' shapes alone,
/// so every rank and thread that holds them computes the same layout.

#include <algorithm>
#include <cstddef>
#include <vector>

#include "reduce_flatten.hpp"

namespace maprect::detail {

/// The slices of a call: slice s holds terms [s * G, min(N, (s + 1) * G)), G the grainsize.
struct slice_plan {
  int n_terms = 0;    ///< N
  int grainsize = 1;  ///< G, at least 1

  /// Number of slices.
  int n_slices() const { return n_terms == 0 ? 0 : (n_terms - 1) / grainsize + 1; }
  /// First term of slice s.
  int begin(int s) const { return static_cast<int>(static_cast<long long>(s) * grainsize); }
  /// One past the last term of slice s.
  int end(int s) const {
    return static_cast<int>(std::min<long long>(n_terms, (static_cast<long long>(s) + 1) * grainsize));
  }
};

/// A call's slices, its shared vars, where each term's vars start among the packed sliced values, and the
/// layout of the per-slice blocks: value, then d value / d shared var (n_shared), then d value / d each of
/// the slice's own vars.
class reduce_layout {
 public:
  /// The layout of a sliced argument of element type T_slice, cut by `plan`, with n_shared vars in the shared
  /// arguments; `sliced` holds the argument or its skeleton.
  template <class T_slice, class Shape>
  void assign(const slice_plan& plan, const std::vector<Shape>& sliced, std::size_t n_shared) {
    plan_ = plan;
    n_shared_ = n_shared;
    term_at_.clear();
    if constexpr (holds_var_v<T_slice>) {
      term_at_.resize(sliced.size() + 1);
      term_at_[0] = 0;
      for (std::size_t i = 0; i < sliced.size(); ++i) term_at_[i + 1] = term_at_[i] + count_vars_as<T_slice>(sliced[i]);
    }
  }

  /// The same layout from the prefix sums of another's term_offsets(), for a rank that holds no arguments
  /// of the call's types (empty: the sliced argument holds no var).
  void assign_offsets(const slice_plan& plan, const std::vector<std::size_t>& term_offsets, std::size_t n_shared) {
    plan_ = plan;
    n_shared_ = n_shared;
    term_at_ = term_offsets;
  }

  /// Where each term's vars start among the packed sliced values, N + 1 prefix sums (empty: no var).
  const std::vector<std::size_t>& term_offsets() const { return term_at_; }
  /// The slicing.
  const slice_plan& plan() const { return plan_; }
  /// Vars in the shared arguments.
  std::size_t n_shared() const { return n_shared_; }
  /// Where term i's vars start among the packed sliced values (i = N: how many there are).
  std::size_t term_at(int i) const { return term_at_.empty() ? 0 : term_at_[static_cast<std::size_t>(i)]; }
  /// Vars in the sliced argument.
  std::size_t n_sliced() const { return term_at(plan_.n_terms); }
  /// Vars of slice s's own terms.
  std::size_t slice_vars(int s) const { return term_at(plan_.end(s)) - term_at(plan_.begin(s)); }
  /// Where slice s's terms' vars start among the packed sliced values (s = number of slices: how many there are).
  std::size_t slice_values_at(int s) const { return term_at(std::min(plan_.begin(s), plan_.n_terms)); }
  /// Where slice s's block starts among the call's blocks, stored back to back in slice order (s = number of
  /// slices: block_doubles()).
  std::size_t block_at(int s) const { return static_cast<std::size_t>(s) * (1 + n_shared_) + slice_values_at(s); }
  /// Doubles in all the call's blocks.
  std::size_t block_doubles() const {
    return static_cast<std::size_t>(plan_.n_slices()) * (1 + n_shared_) + n_sliced();
  }

 private:
  slice_plan plan_;
  std::size_t n_shared_ = 0;
  std::vector<std::size_t> term_at_;  // N + 1 prefix sums; empty when the sliced argument holds no var
};

}  // namespace maprect::detail
