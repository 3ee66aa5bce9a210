#pragma once
/// \file The job runner: one chunk of jobs -> (M+1)-row blocks. Root and workers run exactly this code,
/// which is why one process and N ranks give the same bits.

#include <Eigen/Dense>
#include <cstddef>
#include <ostream>
#include <type_traits>
#include <vector>

#include "../ad.hpp"

namespace maprect::detail {

/// Which arguments carry derivatives: shared_var * 2 + job_var.
enum class param_kinds : int { dd = 0, dv = 1, vd = 2, vv = 3 };

/// The kinds for a pair of scalar types.
template <class T_shared, class T_job>
constexpr param_kinds kinds_of() {
  return static_cast<param_kinds>((is_var_v<T_shared> ? 2 : 0) + (is_var_v<T_job> ? 1 : 0));
}

constexpr bool shared_is_var(param_kinds k) { return (static_cast<int>(k) & 2) != 0; }
constexpr bool job_is_var(param_kinds k) { return (static_cast<int>(k) & 1) != 0; }

/// Rows of one output's block: its value, then one partial per var parameter (shared first, then own).
constexpr int rows_per_output(param_kinds k, int n_shared, int n_own) {
  return 1 + (shared_is_var(k) ? n_shared : 0) + (job_is_var(k) ? n_own : 0);
}

/// What a chunk of jobs needs, as plain values (no vars): the same on every rank.
struct chunk_input {
  const double* shared;                    ///< S shared parameter values
  int n_shared;                            ///< S
  const double* own;                       ///< P x n_jobs job parameter values, column-major
  int n_own;                               ///< P
  const std::vector<double>* x_r;          ///< n_jobs rows of real data
  const std::vector<int>* x_i;             ///< n_jobs rows of integer data
  int n_jobs;                              ///< jobs in the chunk
  std::ostream* msgs;                      ///< passed to the functor
};

/// Runs the jobs of a chunk in order, appending each output's block to `out` and each job's output
/// count to `counts`. `cursor` is the local index of the job being run (to name it if it throws).
using chunk_runner = void (*)(const chunk_input& in, std::vector<double>& out, int* counts, int& cursor);

/// Thread-local nesting depth of functor calls: map_rect inside a functor runs in process.
inline thread_local int functor_depth = 0;

struct functor_scope {
  functor_scope() { ++functor_depth; }
  ~functor_scope() { --functor_depth; }
  functor_scope(const functor_scope&) = delete;
  functor_scope& operator=(const functor_scope&) = delete;
};

/// The chunk runner of functor F for one combination of parameter kinds.
template <class F, param_kinds Kinds>
void run_chunk(const chunk_input& in, std::vector<double>& out, int* counts, int& cursor) {
  constexpr bool shared_var = shared_is_var(Kinds);
  constexpr bool job_var = job_is_var(Kinds);
  using T_shared = std::conditional_t<shared_var, var, double>;
  using T_job = std::conditional_t<job_var, var, double>;
  using R = return_type_t<T_shared, T_job>;
  const int S = in.n_shared;
  const int P = in.n_own;
  const int rows = rows_per_output(Kinds, S, P);
  const F f{};
  functor_scope scope;

  // Parameter vectors are reused across the chunk's jobs; only their nodes are new per job.
  Eigen::Matrix<T_shared, Eigen::Dynamic, 1> shared(S);
  Eigen::Matrix<T_job, Eigen::Dynamic, 1> own(P);
  if constexpr (!shared_var) shared = Eigen::Map<const Eigen::VectorXd>(in.shared, S);

  for (int j = 0; j < in.n_jobs; ++j) {
    cursor = j;
    const double* own_values = in.own + static_cast<std::ptrdiff_t>(j) * P;
    if constexpr (!job_var) own = Eigen::Map<const Eigen::VectorXd>(own_values, P);
    if constexpr (!shared_var && !job_var) {
      const Eigen::Matrix<double, Eigen::Dynamic, 1> y = f(shared, own, in.x_r[j], in.x_i[j], in.msgs);
      counts[j] = static_cast<int>(y.size());
      out.insert(out.end(), y.data(), y.data() + y.size());
    } else {
      nested_tape region;
      if constexpr (shared_var)
        for (int s = 0; s < S; ++s) shared(s) = var(in.shared[s]);
      if constexpr (job_var)
        for (int p = 0; p < P; ++p) own(p) = var(own_values[p]);
      const Eigen::Matrix<R, Eigen::Dynamic, 1> y = f(shared, own, in.x_r[j], in.x_i[j], in.msgs);
      const int K = static_cast<int>(y.size());
      counts[j] = K;
      const std::size_t base = out.size();
      out.resize(base + static_cast<std::size_t>(K) * rows);
      double* col = out.data() + base;
      for (int k = 0; k < K; ++k, col += rows) {
        col[0] = y(k).val();
        if (k > 0) set_zero_nested_adjoints();  // nodes made by the region start at zero
        grad(y(k));
        double* d = col + 1;
        if constexpr (shared_var)
          for (int s = 0; s < S; ++s) *d++ = shared(s).adj();
        if constexpr (job_var)
          for (int p = 0; p < P; ++p) *d++ = own(p).adj();
      }
    }
  }
  cursor = in.n_jobs;
}

}  // namespace maprect::detail
