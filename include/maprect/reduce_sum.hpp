#pragma once
/// \file reduce_sum: the sum of a partial-sum functor over slices of a sliced argument, with gradients, in
/// Stan Math's calling convention; the slices and the order of every sum are fixed by the call.

#include <climits>
#include <cstddef>
#include <ostream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <typeinfo>
#include <vector>

#include "ad.hpp"
#include "detail/call.hpp"
#include "detail/job_error.hpp"
#include "detail/job_runner.hpp"
#include "detail/reduce_error.hpp"
#include "detail/reduce_flatten.hpp"
#include "detail/reduce_call.hpp"
#include "detail/reduce_layout.hpp"
#include "detail/reduce_shipped.hpp"
#include "detail/reduce_site.hpp"
#include "detail/reduce_slices.hpp"
#include "detail/reduce_team.hpp"
#include "detail/registry.hpp"
#include "detail/thread_jobs.hpp"

namespace maprect {

namespace detail {

/// Reusable per-thread buffers of reduce_sum, per functor depth.
struct reduce_buffers {
  reduce_layout layout;        ///< the call's slices and where their vars and blocks go
  std::vector<double> shared;  ///< values of the shared arguments' vars, packed in argument order
  std::vector<double> sliced;  ///< values of the sliced argument's vars, packed in term order
  std::vector<double> blocks;  ///< the slices' blocks of a call run on a team, at layout.block_at
  std::string payload;         ///< a cluster call's payload (detail/reduce_site.hpp)
};

/// Packs the values of the shared arguments' vars (argument order) and of the sliced argument's (term
/// order) into b.shared and b.sliced, after laying out the call in b.layout.
template <class T_slice, class... Args>
void pack_call(reduce_buffers& b, const slice_plan& plan, const std::vector<T_slice>& sliced, const Args&... args) {
  const std::size_t S = (std::size_t{0} + ... + count_vars(args));
  b.layout.assign<T_slice>(plan, sliced, S);
  b.shared.resize(S);
  b.sliced.resize(b.layout.n_sliced());
  double* values = b.shared.data();
  (pack_values(args, values), ...);
  values = b.sliced.data();
  pack_values(sliced, values);
}

/// Runs every slice of a call on `team` into b.blocks, then folds them in slice order into `fold`: the same
/// sums, in the same order, as the serial run's fold as it goes. Throws the first failing slice's error.
template <class F, class T_slice, class... Args>
void run_on_team(thread_team& team, int call_id, reduce_buffers& b, slice_fold& fold,
                 const std::vector<T_slice>& sliced, const double* sliced_values, const double* shared_values,
                 std::ostream* msgs, const Args&... args) {
  const reduce_layout& layout = b.layout;
  const int n = layout.plan().n_slices();
  b.blocks.resize(layout.block_doubles());
  auto run_range = [&](int first, int last, std::ostream* m, auto& sink, int& cursor) {
    slice_runner<F, T_slice, Args...>::run(layout, first, last, sliced, sliced_values, shared_values, m,
                                           std::tie(args...), sink, cursor);
  };
  job_error error;
  const int failed = run_slice_range(&team, layout, 0, n, b.blocks.data(), msgs, run_range, error);
  if (failed != INT_MAX) throw_slice_error(error, call_id, layout.plan(), failed, -1);
  for (int s = 0; s < n; ++s) fold.add_block(s, b.blocks.data() + layout.block_at(s));
}

/// Throws std::invalid_argument for a grainsize below 1 or more terms than an int counts.
inline slice_plan checked_plan(int call_id, std::size_t n_terms, int grainsize) {
  const std::string id = "reduce_sum: call id " + std::to_string(call_id);
  if (grainsize < 1)
    throw std::invalid_argument(id + ": grainsize must be at least 1, got " + std::to_string(grainsize));
  if (n_terms > static_cast<std::size_t>(INT_MAX))
    throw std::invalid_argument(id + ": the sliced argument has " + std::to_string(n_terms) +
                                " terms, more than 2^31-1");
  return slice_plan{static_cast<int>(n_terms), grainsize};
}

/// Checks (once per instantiation) that call site CallId keeps its first call's argument types.
template <int CallId, class T_slice, class... Args>
void check_reduce_call_site() {
  static const bool checked = [] {
    std::string names = "(" + readable_type_name(typeid(std::vector<T_slice>));
    ((names += ", " + readable_type_name(typeid(Args))), ...);
    check_reduce_signature(CallId, typeid(std::tuple<std::vector<T_slice>, Args...>), names + ")");
    return true;
  }();
  (void)checked;
}

/// A call without vars: the values of the slices, summed in slice order.
template <class F, class T_slice, class... Args>
double reduce_values(int call_id, const slice_plan& plan, const std::vector<T_slice>& sliced, std::ostream* msgs,
                     const Args&... args) {
  reduce_buffers& b = per_depth<reduce_buffers>(functor_depth);
  reduce_layout& layout = b.layout;
  layout.assign<T_slice>(plan, sliced, 0);
  slice_fold fold(layout, nullptr);
  if (thread_team* team = team_for_call()) {
    run_on_team<F>(*team, call_id, b, fold, sliced, nullptr, nullptr, msgs, args...);
    return fold.value();
  }
  slice_fold_sink sink(fold);
  int cursor = 0;
  try {
    slice_runner<F, T_slice, Args...>::run(layout, 0, plan.n_slices(), sliced, nullptr, nullptr, msgs,
                                           std::tie(args...), sink, cursor);
  } catch (...) {
    throw_slice_error(current_job_error(), call_id, plan, cursor, -1);
  }
  return fold.value();
}

/// A call with vars: every slice folded, in slice order, into ONE node on the caller's tape whose operands
/// are the shared arguments' vars (in argument order) and then the sliced argument's (in term order).
template <class F, class T_slice, class... Args>
var reduce_gradients(int call_id, const slice_plan& plan, const std::vector<T_slice>& sliced, std::ostream* msgs,
                     const Args&... args) {
  reduce_buffers& b = per_depth<reduce_buffers>(functor_depth);
  pack_call(b, plan, sliced, args...);
  const std::size_t n = b.layout.n_shared() + b.layout.n_sliced();
  tape& t = tape::current();
  const tape_mark before = t.mark();
  vari** operands = t.memory.allocate_array<vari*>(n);
  vari** next = operands;
  (pack_nodes(args, next), ...);
  pack_nodes(sliced, next);
  double* partials = t.memory.allocate_array<double>(n);
  slice_fold fold(b.layout, partials);
  if (thread_team* team = team_for_call()) {
    try {
      run_on_team<F>(*team, call_id, b, fold, sliced, b.sliced.data(), b.shared.data(), msgs, args...);
    } catch (...) {
      t.rewind(before);
      throw;
    }
    return var(new precomputed_gradients_vari(fold.value(), operands, partials, n));
  }
  slice_fold_sink sink(fold);
  int cursor = 0;
  try {
    slice_runner<F, T_slice, Args...>::run(b.layout, 0, plan.n_slices(), sliced, b.sliced.data(), b.shared.data(),
                                           msgs, std::tie(args...), sink, cursor);
  } catch (...) {
    t.rewind(before);
    throw_slice_error(current_job_error(), call_id, plan, cursor, -1);
  }
  return var(new precomputed_gradients_vari(fold.value(), operands, partials, n));
}

/// The root's share of a cluster call, for the runtime: its own slices run on its team, the fold, and the
/// payload, compared and written on demand.
template <class RunRange, class WritePayload, class Unchanged>
class root_slices final : public reduce_session {
 public:
  root_slices(const reduce_layout& layout, std::ostream* msgs, const RunRange& run_range, slice_fold& fold,
              const WritePayload& write_payload, const Unchanged& same_payload)
      : layout_(layout), msgs_(msgs), run_range_(run_range), fold_(fold), write_payload_(write_payload),
        same_payload_(same_payload) {}

  bool unchanged() override { return same_payload_(); }
  const std::string& payload() override { return write_payload_(); }
  int run(int first, int last, double* blocks, bool messages, job_error& error) override {
    return run_slice_range(team_for_call(), layout_, first, last, blocks, messages ? msgs_ : nullptr, run_range_,
                           error);
  }
  void fold(int s, const double* block) override { fold_.add_block(s, block); }

 private:
  const reduce_layout& layout_;
  std::ostream* msgs_;
  const RunRange& run_range_;
  slice_fold& fold_;
  const WritePayload& write_payload_;
  const Unchanged& same_payload_;
};

/// A call over the cluster's ranks: the root packs the values (and writes the call site's payload when the
/// runtime asks for it: the workers lack it, or the data or shapes changed); the runtime runs every rank's
/// slices and hands back all blocks in slice order, folded here into ONE node (or a double) exactly as in
/// process.
template <class Site, class F, class T_slice, class... Args>
reduce_return_t<T_slice, Args...> reduce_over_ranks(int call_id, const slice_plan& plan,
                                                    const std::vector<T_slice>& sliced, std::ostream* msgs,
                                                    const Args&... args) {
  using R = reduce_return_t<T_slice, Args...>;
  reduce_buffers& b = per_depth<reduce_buffers>(functor_depth);
  pack_call(b, plan, sliced, args...);
  // What this call site's last payload held (on this thread, where its cluster lives).
  static thread_local kept_payload<T_slice, Args...> kept;
  auto write = [&]() -> const std::string& {
    write_payload(b.payload, Site::key(), b.layout, sliced, args...);
    kept.keep(sliced, args...);
    return b.payload;
  };
  const std::size_t n = b.layout.n_shared() + b.layout.n_sliced();
  tape& t = tape::current();
  const tape_mark before = t.mark();
  vari** operands = nullptr;
  double* partials = nullptr;
  if constexpr (is_var_v<R>) {
    operands = t.memory.allocate_array<vari*>(n);
    vari** next = operands;
    (pack_nodes(args, next), ...);
    pack_nodes(sliced, next);
    partials = t.memory.allocate_array<double>(n);
  }
  slice_fold fold(b.layout, partials);
  auto run_range = [&](int first, int last, std::ostream* m, auto& sink, int& cursor) {
    slice_runner<F, T_slice, Args...>::run(b.layout, first, last, sliced, b.sliced.data(), b.shared.data(), m,
                                           std::tie(args...), sink, cursor);
  };
  auto same = [&] { return kept.same(sliced, args...); };
  root_slices<decltype(run_range), decltype(write), decltype(same)> session(b.layout, msgs, run_range, fold, write,
                                                                             same);
  const reduce_request request{call_id, &b.layout, b.shared.data(), b.sliced.data(), &session, msgs != nullptr};
  try {
    reduce_on_cluster(request);
  } catch (...) {
    t.rewind(before);
    throw;
  }
  if constexpr (is_var_v<R>) return var(new precomputed_gradients_vari(fold.value(), operands, partials, n));
  else return fold.value();
}

}  // namespace detail

/// The sum over all terms of `sliced` of the partial sums F()(slice, start, end, msgs, args...), where each
/// slice holds the terms [start, end] (0-based, end inclusive) and slice s is terms [s * grainsize,
/// min(N, (s + 1) * grainsize) - 1]. The slices' values are summed, and their partials accumulated, in slice
/// order, so the result depends on F, the arguments and grainsize only. With any var among the arguments the
/// result is ONE node on the caller's tape whose operands are every var of `sliced` and `args`; otherwise a
/// double. Call site CallId must be registered with MAPRECT_REGISTER_REDUCE(CallId, F). Runs over the ranks
/// when a cluster of more than one rank is live on this thread (and not inside a functor), else in process on
/// the thread team installed on this thread (team_scope) if there is one: the same bits every way.
template <int CallId, class F, class T_slice, class... Args>
detail::reduce_return_t<T_slice, Args...> reduce_sum(const std::vector<T_slice>& sliced, int grainsize,
                                                     std::ostream* msgs, const Args&... args) {
  using R = detail::reduce_return_t<T_slice, Args...>;
  detail::checked_reduce_entry<CallId, F>();
  detail::check_reduce_call_site<CallId, T_slice, Args...>();
  const detail::slice_plan plan = detail::checked_plan(CallId, sliced.size(), grainsize);
  using site = detail::reduce_site_registration<CallId, F, T_slice, Args...>;
  (void)site::registered;  // instantiates the registration: every rank can run this call site's slices
  if (plan.n_terms == 0) return R(0.0);
  if (detail::remote_backend != nullptr && detail::functor_depth == 0)
    return detail::reduce_over_ranks<site, F>(CallId, plan, sliced, msgs, args...);
  if constexpr (is_var_v<R>) return detail::reduce_gradients<F>(CallId, plan, sliced, msgs, args...);
  else return detail::reduce_values<F>(CallId, plan, sliced, msgs, args...);
}

}  // namespace maprect
