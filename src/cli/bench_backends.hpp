#pragma once
// The backends `maprect bench` compares on the standard model (docs/benchmark-model.md): the closed form in
// double (analytic, the floor of AD), the functor for every job on one plain tape (single_tape), map_rect,
// in process or over the cluster, each size on call sites of its own, and reduce_sum over the groups; and the
// call sites on which bench measures the root's serial work per call.
#include <maprect/maprect.hpp>

#include <cstddef>
#include <vector>

#include "bench_harness.hpp"
#include "logreg.hpp"

namespace maprect::cli {

/// Sizes one run can time: each has a call site per kernel for its steady calls.
constexpr int max_bench_sizes = 16;
/// Fresh call sites per size and kernel, each used for one first call only, so that every timed first call
/// is a true first call.
constexpr int first_call_samples = 5;

/// The standard model's two functors: one output per job computed with scalars, or with vector operations.
enum class bench_kernel { scalar, vector };
/// "scalar" or "vector".
const char* kernel_name(bench_kernel k);

/// Per (size, kernel) and backend: parameter containers reused by every evaluation, so that no backend pays for
/// allocations the others do not, and what the last evaluation produced.
struct bench_workspace {
  const models::logreg_standard_problem* problem = nullptr;
  vector_v phi = vector_v(2);
  std::vector<vector_v> theta;
  Eigen::VectorXd gradient;
  double value = 0;
  std::size_t call_tape_bytes = 0;  ///< arena bytes the last counted map_rect call added to the root tape
  std::size_t call_tape_nodes = 0;  ///< nodes it added
  int grainsize = 1;                ///< reduce_sum's grainsize, for its backend
  const job_data* data = nullptr;   ///< the problem's rows as a job_data, which map_rect is then given; null: x_r/x_i
  double call_cpu_us = 0;           ///< thread CPU microseconds of the last measured map_rect call (root work)

  /// A workspace for `p`, which must outlive it.
  explicit bench_workspace(const models::logreg_standard_problem& p);
  /// Fresh leaves on the tape for the problem's parameters.
  void make_leaves();
  /// Gradient of `lp` into `value` and `gradient`, then the tape's memory back.
  void finish(const var& lp);
};

/// The closed form's log density and gradient, in double.
void analytic_gradient(bench_workspace& w);
/// The functor of `k` for every job on one plain tape.
gradient_fn single_tape_gradient(bench_kernel k);
/// map_rect of `k` on the steady call site of size number `size_index`.
gradient_fn map_rect_gradient(bench_kernel k, std::size_t size_index);
/// The same call site, also recording what the call added to the root's tape.
gradient_fn counted_map_rect_gradient(bench_kernel k, std::size_t size_index);
/// reduce_sum of `k` over the groups with the workspace's grainsize: alpha and beta shared, each group's (u, v)
/// sliced, the groups' data shared; each group's term is what map_rect's job of `k` returns. Over the cluster
/// when one is live.
gradient_fn reduce_sum_gradient(bench_kernel k);
/// map_rect of `k` on the root-work call site of size number `size_index`, recording the CPU time of the
/// root's thread in the call alone into the workspace's call_cpu_us (not the leaves, not the reverse pass).
gradient_fn root_work_gradient(bench_kernel k, std::size_t size_index);
/// The call id of that call site.
int root_work_call_id(bench_kernel k, std::size_t size_index);
/// The `first_call_samples` fresh call sites of size number `size_index`.
std::vector<gradient_fn> first_call_gradients(bench_kernel k, std::size_t size_index);

}  // namespace maprect::cli
