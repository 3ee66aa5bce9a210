#pragma once
/// \file The job runner: one chunk of jobs -> (M+1)-row blocks. Root and workers run exactly this code,
/// which is why one process and N ranks give the same bits.

#include <Eigen/Dense>
#include <algorithm>
#include <cstddef>
#include <memory>
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

/// Rows of one output's block: its value, then one partial per var parameter (shared first, then the job's).
constexpr int rows_per_output(param_kinds k, int n_shared, int n_job_params) {
  return 1 + (shared_is_var(k) ? n_shared : 0) + (job_is_var(k) ? n_job_params : 0);
}

/// Doubles that grow at the end without being zero-filled first (blocks are written right after).
class block_buffer {
 public:
  /// Number of doubles held.
  std::size_t size() const { return size_; }
  /// The doubles.
  double* data() { return data_.get(); }
  /// The doubles.
  const double* data() const { return data_.get(); }
  /// Appends n uninitialised doubles and returns where they start.
  double* extend(std::size_t n) {
    if (size_ + n > capacity_) grow(size_ + n);
    double* p = data_.get() + size_;
    size_ += n;
    return p;
  }
  /// Appends n doubles.
  void append(const double* values, std::size_t n) { std::copy(values, values + n, extend(n)); }
  /// Makes room for n doubles in all.
  void reserve(std::size_t n) {
    if (n > capacity_) grow(n);
  }
  /// Sets the size to n; new doubles are zero.
  void resize(std::size_t n) {
    if (n > size_) std::fill_n(extend(n - size_), n - size_, 0.0);
    size_ = n;
  }
  /// n copies of v.
  void assign(std::size_t n, double v) {
    size_ = 0;
    std::fill_n(extend(n), n, v);
  }

 private:
  void grow(std::size_t at_least) {
    const std::size_t capacity = std::max(at_least, 2 * capacity_ + 64);
    std::unique_ptr<double[]> bigger(new double[capacity]);
    std::copy(data_.get(), data_.get() + size_, bigger.get());
    data_ = std::move(bigger);
    capacity_ = capacity;
  }
  std::unique_ptr<double[]> data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

/// What a chunk of jobs needs, as plain values (no vars): the same on every rank.
struct chunk_input {
  const double* shared;                    ///< S shared parameter values
  int n_shared;                            ///< S
  const double* job_params;                       ///< P x n_jobs job parameter values, column-major
  int n_job_params;                               ///< P
  const std::vector<double>* x_r;          ///< n_jobs rows of real data
  const std::vector<int>* x_i;             ///< n_jobs rows of integer data
  int n_jobs;                              ///< jobs in the chunk
  std::ostream* msgs;                      ///< passed to the functor
};

/// Runs the jobs of a chunk in order, appending each output's block to `out` and each job's output
/// count to `counts`. `cursor` is the local index of the job being run (to name it if it throws).
using chunk_runner = void (*)(const chunk_input& in, block_buffer& out, int* counts, int& cursor);

/// Thread-local nesting depth of functor calls: map_rect inside a functor runs in process.
inline thread_local int functor_depth = 0;

struct functor_scope {
  functor_scope() { ++functor_depth; }
  ~functor_scope() { --functor_depth; }
  functor_scope(const functor_scope&) = delete;
  functor_scope& operator=(const functor_scope&) = delete;
};

/// The calling thread's T for functor depth `depth`, made on first use and kept until the thread ends: a
/// map_rect inside a functor must not reuse its caller's buffers. A lookup is one thread-local load.
template <class T>
T& per_depth(int depth) {
  static thread_local std::vector<std::unique_ptr<T>>* slots = nullptr;  // constant-initialised: no TLS wrapper
  const auto d = static_cast<std::size_t>(depth);
  if (__builtin_expect(slots != nullptr && d < slots->size(), 1)) return *(*slots)[d];
  static thread_local std::unique_ptr<std::vector<std::unique_ptr<T>>> owner;  // frees them with the thread
  if (!owner) owner = std::make_unique<std::vector<std::unique_ptr<T>>>();
  while (owner->size() <= d) owner->push_back(std::make_unique<T>());
  slots = owner.get();
  return *(*slots)[d];
}

/// The job runner's parameter vectors, reused by every chunk at one functor depth. With var parameters
/// their nodes are leaves kept here rather than on the tape: each job only sets their values.
class runner_vectors {
 public:
  /// A leaf that is not on any tape: sweeps never visit leaves, and the runner zeroes its adjoint.
  struct kept_leaf final : vari {
    kept_leaf() : vari(0.0) {}
  };

  /// Makes room for n kept leaves; call before shared() and job_params(), whose leaves it may replace.
  void keep_leaves(int n) {
    if (n <= n_nodes_) return;
    // New nodes: the vectors' entries point at the old ones, so both are emptied.
    nodes_ = std::make_unique<kept_leaf[]>(static_cast<std::size_t>(n));
    n_nodes_ = n;
    shared_v_.resize(0);
    job_v_.resize(0);
  }
  /// The shared vector of scalar type T, sized n; var entries are kept leaves.
  template <class T>
  Eigen::Matrix<T, Eigen::Dynamic, 1>& shared(int n) {
    if constexpr (is_var_v<T>) return leaves(shared_v_, n, 0);
    else return sized(shared_d_, n);
  }
  /// The job vector of scalar type T, sized n; var entries are kept leaves (after the shared ones).
  template <class T>
  Eigen::Matrix<T, Eigen::Dynamic, 1>& job_params(int n, int after) {
    if constexpr (is_var_v<T>) return leaves(job_v_, n, after);
    else return sized(job_d_, n);
  }
  /// The kept leaves, shared ones first (those shared() and job_params() hand out).
  kept_leaf* kept() { return nodes_.get(); }

 private:
  template <class V>
  static V& sized(V& v, int n) {
    if (v.size() != n) v.resize(n);
    return v;
  }

  /// v sized n, its entries the kept leaves [first, first + n) (within keep_leaves()).
  MAPRECT_ALWAYS_INLINE Eigen::Matrix<var, Eigen::Dynamic, 1>& leaves(Eigen::Matrix<var, Eigen::Dynamic, 1>& v, int n,
                                                                      int first) {
    if (v.size() != n || (n > 0 && v(0).vi_ != &nodes_[first])) point_at_leaves(v, n, first);
    return v;
  }
  /// Resizes v to n and points its entries at the kept leaves [first, first + n): once per call site shape.
  __attribute__((noinline)) void point_at_leaves(Eigen::Matrix<var, Eigen::Dynamic, 1>& v, int n, int first) {
    v.resize(n);
    for (int i = 0; i < n; ++i) v(i).vi_ = &nodes_[first + i];
  }

  std::unique_ptr<kept_leaf[]> nodes_;
  int n_nodes_ = 0;
  Eigen::Matrix<var, Eigen::Dynamic, 1> shared_v_, job_v_;
  Eigen::VectorXd shared_d_, job_d_;
};

/// What the runner keeps per thread and functor depth: the parameter vectors, and the tape the jobs run
/// on. Jobs never touch their caller's tape, so a caller can receive outputs on its own tape meanwhile.
struct runner_context {
  runner_vectors vectors;  ///< parameters handed to the functor
  tape jobs;               ///< where the jobs' expression graphs are built, swept and freed
};

/// Makes a tape the thread's current one for a scope.
class current_tape_scope {
 public:
  explicit current_tape_scope(tape& t) : saved_(tape::exchange_current(&t)) {}
  ~current_tape_scope() { tape::exchange_current(saved_); }
  current_tape_scope(const current_tape_scope&) = delete;
  current_tape_scope& operator=(const current_tape_scope&) = delete;

 private:
  tape* saved_;
};

/// Frees what a tape gained since the scope began, also when a job throws.
class rewind_at_exit {
 public:
  explicit rewind_at_exit(tape& t) : tape_(t), start_(t.mark()) {}
  ~rewind_at_exit() { tape_.rewind(start_); }
  rewind_at_exit(const rewind_at_exit&) = delete;
  rewind_at_exit& operator=(const rewind_at_exit&) = delete;
  /// Where the tape stood when the scope began.
  const tape_mark& start() const { return start_; }

 private:
  tape& tape_;
  tape_mark start_;
};

/// A chunk's parameters and data in the packed form ranks exchange (chunk_input).
class packed_jobs {
 public:
  explicit packed_jobs(const chunk_input& in) : in_(in) {}
  int n_jobs() const { return in_.n_jobs; }
  int n_shared() const { return in_.n_shared; }
  int n_job_params() const { return in_.n_job_params; }
  double shared(int s) const { return in_.shared[s]; }
  double job_param(int j, int p) const { return in_.job_params[static_cast<std::ptrdiff_t>(j) * in_.n_job_params + p]; }
  /// The shared parameters as a double vector (copied into `scratch`).
  const Eigen::VectorXd& shared_doubles(Eigen::VectorXd& scratch) const {
    scratch = Eigen::Map<const Eigen::VectorXd>(in_.shared, in_.n_shared);
    return scratch;
  }
  /// Job j's parameters as a double vector (copied into `scratch`).
  const Eigen::VectorXd& job_param_doubles(int j, Eigen::VectorXd& scratch) const {
    scratch = Eigen::Map<const Eigen::VectorXd>(in_.job_params + static_cast<std::ptrdiff_t>(j) * in_.n_job_params, in_.n_job_params);
    return scratch;
  }
  const std::vector<double>& x_r(int j) const { return in_.x_r[j]; }
  const std::vector<int>& x_i(int j) const { return in_.x_i[j]; }
  std::ostream* msgs() const { return in_.msgs; }

 private:
  const chunk_input& in_;
};

/// The core of every runner: runs the jobs of `in` in order on this depth's job tape and hands each job's
/// outputs to `sink`, which decides where they go. With var results, for each output k of job j:
/// sink.begin_job(j, K) once, then sink.output(k, value, leaves, n_leaves) with the parameters' leaves
/// holding d output / d parameter (shared first, then the job's). With double results: sink.values(j, y).
/// `cursor` is the index of the job being run (to name it if it throws).
template <class F, param_kinds Kinds, class Jobs, class Sink>
void run_jobs(const Jobs& in, Sink& sink, int& cursor) {
  constexpr bool shared_var = shared_is_var(Kinds);
  constexpr bool job_var = job_is_var(Kinds);
  using T_shared = std::conditional_t<shared_var, var, double>;
  using T_job = std::conditional_t<job_var, var, double>;
  using R = return_type_t<T_shared, T_job>;
  const int S = in.n_shared();
  const int P = in.n_job_params();
  const int n_jobs = in.n_jobs();
  const F f{};
  runner_context& context = per_depth<runner_context>(functor_depth);
  runner_vectors& vectors = context.vectors;
  functor_scope scope;

  // The parameters' leaves, as one array: shared ones (if var), then the job's (if var). They are kept
  // across jobs and chunks; each job only sets their values.
  const int n_shared_leaves = shared_var ? S : 0, n_leaves = n_shared_leaves + (job_var ? P : 0);
  vectors.keep_leaves(n_leaves);
  runner_vectors::kept_leaf* const leaves = vectors.kept();
  const Eigen::Matrix<T_shared, Eigen::Dynamic, 1>* shared = nullptr;
  if constexpr (shared_var) {
    shared = &vectors.shared<var>(S);
    for (int s = 0; s < S; ++s) leaves[s].val_ = in.shared(s);
  } else {
    shared = &in.shared_doubles(vectors.shared<double>(S));
  }

  if constexpr (!shared_var && !job_var) {
    Eigen::VectorXd& job_scratch = vectors.job_params<double>(P, 0);
    for (int j = 0; j < n_jobs; ++j) {
      cursor = j;
      sink.values(j, f(*shared, in.job_param_doubles(j, job_scratch), in.x_r(j), in.x_i(j), in.msgs()));
    }
  } else {
    tape& t = context.jobs;
    const current_tape_scope on_job_tape(t);
    const rewind_at_exit cleanup(t);
    const tape_mark& job_start = cleanup.start();
    Eigen::Matrix<T_job, Eigen::Dynamic, 1>& job_scratch = vectors.job_params<T_job>(P, n_shared_leaves);
    for (int j = 0; j < n_jobs; ++j) {
      cursor = j;
      const Eigen::Matrix<T_job, Eigen::Dynamic, 1>* job = &job_scratch;
      if constexpr (job_var) {
        for (int p = 0; p < P; ++p) leaves[n_shared_leaves + p].val_ = in.job_param(j, p);
      } else {
        job = &in.job_param_doubles(j, job_scratch);
      }
      const Eigen::Matrix<R, Eigen::Dynamic, 1> y = f(*shared, *job, in.x_r(j), in.x_i(j), in.msgs());
      const int K = static_cast<int>(y.size());
      sink.begin_job(j, K);
      for (int k = 0; k < K; ++k) {
        // The leaves carry the previous sweep's adjoints; the job's nodes do after its first output.
        for (int i = 0; i < n_leaves; ++i) leaves[i].adj_ = 0;
        if (k > 0) zero_adjoints_since(t, job_start);
        detail::sweep(t, y(k), job_start.stack_size);
        sink.output(k, y(k).val(), leaves, n_leaves);
      }
      t.rewind(job_start);
    }
  }
  cursor = n_jobs;
}

/// Appends each output's (M+1)-row block to a block buffer and each job's output count to `counts`:
/// the form results cross ranks in.
class block_sink {
 public:
  block_sink(block_buffer& out, int* counts, int rows) : out_(out), counts_(counts), rows_(rows) {}
  void values(int j, const Eigen::VectorXd& y) {
    counts_[j] = static_cast<int>(y.size());
    out_.append(y.data(), static_cast<std::size_t>(y.size()));
  }
  void begin_job(int j, int K) {
    counts_[j] = K;
    col_ = out_.extend(static_cast<std::size_t>(K) * rows_);
  }
  void output(int, double value, const runner_vectors::kept_leaf* leaves, int n_leaves) {
    col_[0] = value;
    for (int i = 0; i < n_leaves; ++i) col_[1 + i] = leaves[i].adj_;
    col_ += rows_;
  }

 private:
  block_buffer& out_;
  int* counts_;
  int rows_;
  double* col_ = nullptr;
};

/// The chunk runner of functor F for one combination of parameter kinds.
template <class F, param_kinds Kinds>
void run_chunk(const chunk_input& in, block_buffer& out, int* counts, int& cursor) {
  const int rows = rows_per_output(Kinds, in.n_shared, in.n_job_params);
  out.reserve(out.size() + static_cast<std::size_t>(in.n_jobs) * rows);
  block_sink sink(out, counts, rows);
  run_jobs<F, Kinds>(packed_jobs(in), sink, cursor);
}

}  // namespace maprect::detail
