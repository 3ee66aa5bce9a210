#pragma once
/// \file The slice runner of reduce_sum: slices of a call -> one block each (value, partials). A slice's
/// work reads only the packed var values, the data arguments and the arguments' shapes, and runs on this
/// thread's job tape, so whoever runs it (this thread, another thread, another rank) gets the same bits.

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "job_runner.hpp"
#include "reduce_flatten.hpp"
#include "reduce_layout.hpp"

namespace maprect::detail {

/// var when any of the types holds a var, else double: the result type of reduce_sum.
template <class... Ts>
using reduce_return_t = std::conditional_t<(holds_var_v<Ts> || ...), var, double>;

/// The value of a functor's result (var or any arithmetic type).
template <class R>
double double_of(const R& y) {
  if constexpr (is_var_v<R>) return y.val();
  else return static_cast<double>(y);
}

/// A shared argument as the functor sees it during a run: a parameter is rebuilt (fresh leaves, once per
/// run), data is the caller's (or the rank's) own object.
template <class T, bool = holds_var_v<T>>
class held_argument {
 public:
  template <class Shape>
  held_argument(const Shape& shape, const double*& in) {
    rebuild(value_, shape, in);
  }
  const T& get() const { return value_; }

 private:
  T value_;
};

template <class T>
class held_argument<T, false> {
 public:
  held_argument(const T& data, const double*&) : data_(data) {}
  const T& get() const { return data_; }

 private:
  const T& data_;
};

/// Adds a slice's block into a call's result: value += the slice's value, each shared partial += the slice's,
/// the slice's own partials copied to their places. Every path (in process, blocks from ranks or threads)
/// folds through this, in slice order, so that the sums are always made in the same order.
class slice_fold {
 public:
  /// A fold into `partials` (n_shared + n_sliced doubles; the shared ones are zeroed here).
  slice_fold(const reduce_layout& layout, double* partials) : layout_(layout), partials_(partials) {
    for (std::size_t k = 0; k < layout.n_shared(); ++k) partials_[k] = 0.0;
  }
  /// Adds slice s: its value, and `shared`, `own` yield d value / d var for the shared and own vars.
  template <class Shared, class Own>
  void add(int s, double value, Shared shared, Own own) {
    value_ += value;
    const std::size_t S = layout_.n_shared();
    for (std::size_t k = 0; k < S; ++k) partials_[k] += shared(k);
    const std::size_t n = layout_.slice_vars(s);
    if (n == 0) return;  // a call without vars has no partials at all
    double* mine = partials_ + S + layout_.term_at(layout_.plan().begin(s));
    for (std::size_t k = 0; k < n; ++k) mine[k] = own(k);
  }
  /// Adds slice s from its block.
  void add_block(int s, const double* block) {
    const double* shared = block + 1;
    const double* own = shared + layout_.n_shared();
    add(s, block[0], [shared](std::size_t k) { return shared[k]; }, [own](std::size_t k) { return own[k]; });
  }
  /// The sum of the values added.
  double value() const { return value_; }

 private:
  const reduce_layout& layout_;
  double* partials_;
  double value_ = 0.0;
};

/// Folds each slice into the result as soon as it has run (one thread, slices in order).
class slice_fold_sink {
 public:
  explicit slice_fold_sink(slice_fold& fold) : fold_(fold) {}
  /// Slice s's value, with the adjoints of the shared vars' leaves and of the slice's own leaves.
  void slice(int s, double value, vari* const* shared, vari* const* own) {
    fold_.add(s, value, [shared](std::size_t k) { return shared[k]->adj_; },
              [own](std::size_t k) { return own[k]->adj_; });
  }

 private:
  slice_fold& fold_;
};

/// Writes each slice's block at its place among the call's blocks (layout.block_at), for a fold later.
class slice_block_sink {
 public:
  slice_block_sink(const reduce_layout& layout, double* blocks) : layout_(layout), blocks_(blocks) {}
  void slice(int s, double value, vari* const* shared, vari* const* own) {
    double* b = blocks_ + layout_.block_at(s);
    *b++ = value;
    for (std::size_t k = 0; k < layout_.n_shared(); ++k) *b++ = shared[k]->adj_;
    for (std::size_t k = 0, n = layout_.slice_vars(s); k < n; ++k) *b++ = own[k]->adj_;
  }

 private:
  const reduce_layout& layout_;
  double* blocks_;
};

/// Runs slices of a reduce_sum call of functor F whose arguments have types (std::vector<T_slice>, Args...).
template <class F, class T_slice, class... Args>
struct slice_runner {
  /// Whether the call differentiates.
  static constexpr bool has_var = (holds_var_v<T_slice> || ... || holds_var_v<Args>);

  /// Runs slices [first, last) of `layout` in order, handing each to sink.slice(s, value, shared leaves,
  /// own leaves) (leaves null without vars). `sliced` holds the sliced argument or its skeleton, `args` the
  /// shared arguments or, for parameters, their skeletons; the vars' values are read from `sliced_values`
  /// (laid out by layout.term_at) and `shared_values`. `cursor` is the slice being run (to name it if it
  /// throws).
  template <class SliceShape, class... Shapes, class Sink>
  static void run(const reduce_layout& layout, int first, int last, const std::vector<SliceShape>& sliced,
                  const double* sliced_values, const double* shared_values, std::ostream* msgs,
                  const std::tuple<const Shapes&...>& args, Sink& sink, int& cursor) {
    static_assert(sizeof...(Shapes) == sizeof...(Args), "one shape per shared argument");
    runner_context& context = per_depth<runner_context>(functor_depth);
    std::vector<T_slice>& slice = per_depth<std::vector<T_slice>>(functor_depth);
    const functor_scope scope;
    if constexpr (!has_var) {
      run_values(layout, first, last, sliced, msgs, args, slice, sink, cursor);
    } else {
      tape& t = context.jobs;
      const current_tape_scope on_job_tape(t);
      const rewind_at_exit cleanup(t);
      const tape_mark& run_start = cleanup.start();
      const double* in = shared_values;
      // The shared parameters' leaves: made once per run, right after run_start on the tape's leaves.
      const std::tuple<held_argument<Args>...> held = hold(args, in, std::index_sequence_for<Args...>{});
      const F f{};
      for (int s = first; s < last; ++s) {
        cursor = s;
        const tape_mark slice_start = t.mark();
        const int b = layout.plan().begin(s), e = layout.plan().end(s);
        const double* own = sliced_values + layout.term_at(b);
        fill_slice(slice, sliced, b, e, own);
        const std::uint64_t sweeps_before = t.sweeps;
        const auto y = std::apply(
            [&](const auto&... a) { return f(std::as_const(slice), b, e - 1, msgs, a.get()...); }, held);
        // The shared leaves carry the last slice's adjoints. The slice's own nodes were made with none, unless
        // the functor swept part of its graph (an inner gradient); skipping that pass over a slice's nodes
        // matters once they outgrow the cache.
        if (t.sweeps != sweeps_before) zero_adjoints_since(t, run_start);
        else zero_leaf_adjoints(t, run_start.leaf_count, slice_start.leaf_count);
        if constexpr (is_var_v<decltype(y)>) sweep(t, y, run_start.stack_size);
        sink.slice(s, double_of(y), t.leaves.data() + run_start.leaf_count, t.leaves.data() + slice_start.leaf_count);
        t.rewind(slice_start);
      }
    }
    cursor = last;
  }

 private:
  template <class... Shapes, std::size_t... I>
  static std::tuple<held_argument<Args>...> hold(const std::tuple<const Shapes&...>& args, const double*& in,
                                                 std::index_sequence<I...>) {
    // Braced initialisation: the arguments are rebuilt in order, so their leaves follow the packed order.
    return std::tuple<held_argument<Args>...>{held_argument<Args>(std::get<I>(args), in)...};
  }

  /// The slice's terms [b, e), rebuilt from their shapes (fresh leaves for vars, values read from `own`).
  template <class SliceShape>
  static void fill_slice(std::vector<T_slice>& slice, const std::vector<SliceShape>& sliced, int b, int e,
                         const double* own) {
    slice.resize(static_cast<std::size_t>(e - b));
    for (int i = b; i < e; ++i)
      rebuild(slice[static_cast<std::size_t>(i - b)], sliced[static_cast<std::size_t>(i)], own);
  }

  /// Slices of a call without vars: values only, no tape.
  template <class SliceShape, class... Shapes, class Sink>
  static void run_values(const reduce_layout& layout, int first, int last, const std::vector<SliceShape>& sliced,
                         std::ostream* msgs, const std::tuple<const Shapes&...>& args, std::vector<T_slice>& slice,
                         Sink& sink, int& cursor) {
    const F f{};
    for (int s = first; s < last; ++s) {
      cursor = s;
      const int b = layout.plan().begin(s), e = layout.plan().end(s);
      fill_slice(slice, sliced, b, e, nullptr);
      const auto y = std::apply(
          [&](const auto&... a) { return f(std::as_const(slice), b, e - 1, msgs, a...); }, args);
      static_assert(std::is_arithmetic_v<std::decay_t<decltype(y)>>,
                    "reduce_sum: the partial-sum functor must return double when no argument holds a var");
      sink.slice(s, static_cast<double>(y), nullptr, nullptr);
    }
  }
};

}  // namespace maprect::detail
