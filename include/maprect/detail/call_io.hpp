#pragma once
/// \file The inputs and outputs of a map_rect call where the caller holds them: its parameters read in place
/// (caller_jobs), double outputs appended (value_sink), var outputs made nodes on the caller's tape in job order
/// (node_sink), and the root's session of a cluster call that makes them as the workers' blocks arrive.
#include <Eigen/Dense>
#include <algorithm>
#include <vector>

#include "../ad.hpp"
#include "call.hpp"
#include "job_runner.hpp"
#include "thread_jobs.hpp"

namespace maprect {
namespace detail {

/// The nodes of a vector's var entries, which become operands (a var is exactly its node pointer, so the
/// vector reads as them); null for a double vector.
template <class T>
vari* const* nodes_of(const Eigen::Matrix<T, Eigen::Dynamic, 1>& v) {
  static_assert(std::is_standard_layout_v<var> && sizeof(var) == sizeof(vari*));
  if constexpr (is_var_v<T>) return reinterpret_cast<vari* const*>(v.data());
  else return nullptr;
}

/// Reusable per-thread buffers of map_rect, per functor depth.
struct local_buffers {
  std::vector<double> shared;  ///< shared parameter values sent to the cluster
  std::vector<double> job_params;     ///< job parameter values sent to the cluster, P x J
  block_buffer values;         ///< outputs of an in-process call with double results
  std::vector<vari*> later;    ///< nodes of a cluster call's other jobs, made while the root's own jobs ran
};

/// The buffers for the current functor depth (a functor may itself call map_rect).
inline local_buffers& thread_local_buffers() { return per_depth<local_buffers>(functor_depth); }

/// A call's parameters and data where the caller holds them: the in-process runner reads them in place.
template <class T_shared, class T_job>
class caller_jobs {
 public:
  caller_jobs(const Eigen::Matrix<T_shared, Eigen::Dynamic, 1>& shared_params,
              const std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>>& job_params,
              const std::vector<std::vector<double>>& x_r, const std::vector<std::vector<int>>& x_i,
              std::ostream* msgs)
      : shared_(shared_params), job_params_(job_params), x_r_(x_r), x_i_(x_i), msgs_(msgs),
        n_jobs_(static_cast<int>(job_params.size())) {}
  /// The same call restricted to its first n jobs.
  caller_jobs first(int n) const {
    caller_jobs prefix = *this;
    prefix.n_jobs_ = n;
    return prefix;
  }
  int n_jobs() const { return n_jobs_; }
  int n_shared() const { return static_cast<int>(shared_.size()); }
  int n_job_params() const { return job_params_.empty() ? 0 : static_cast<int>(job_params_[0].size()); }
  double shared(int s) const { return value_of(shared_.coeff(s)); }
  double job_param(int j, int p) const { return value_of(job_params_[j].coeff(p)); }
  /// The shared parameters, when they are double.
  const Eigen::VectorXd& shared_doubles(Eigen::VectorXd&) const { return shared_; }
  /// Job j's parameters, when they are double.
  const Eigen::VectorXd& job_param_doubles(int j, Eigen::VectorXd&) const { return job_params_[j]; }
  const std::vector<double>& x_r(int j) const { return x_r_[j]; }
  const std::vector<int>& x_i(int j) const { return x_i_[j]; }
  std::ostream* msgs() const { return msgs_; }

 private:
  const Eigen::Matrix<T_shared, Eigen::Dynamic, 1>& shared_;
  const std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>>& job_params_;
  const std::vector<std::vector<double>>& x_r_;
  const std::vector<std::vector<int>>& x_i_;
  std::ostream* msgs_;
  int n_jobs_;
};

/// Appends double outputs to a buffer.
class value_sink {
 public:
  explicit value_sink(block_buffer& out) : out_(out) {}
  void values(int, const Eigen::VectorXd& y) { out_.append(y.data(), static_cast<std::size_t>(y.size())); }

 private:
  block_buffer& out_;
};

/// Makes a call's outputs job_output_vari nodes on tape t: the call's operand record first, then per job with
/// outputs one allocation of its operand record and each output's node followed by its partials. In process
/// each output is made as soon as its job has run (no result blocks, no second pass); over a cluster from its
/// received block. Either way the tape records the nodes in job order.
template <class T_shared, class T_job>
class node_sink {
 public:
  node_sink(tape& t, const Eigen::Matrix<T_shared, Eigen::Dynamic, 1>& shared_params,
            const std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>>& job_params)
      : t_(t),
        job_params_(job_params),
        call_(make_call(t, shared_params, job_params)),
        n_partials_(static_cast<std::size_t>(call_->n_shared + call_->n_job_params)),
        output_bytes_(sizeof(job_output_vari) + sizeof(double) * n_partials_) {}

  /// Job j has K outputs: its operand record, and room for their nodes and partials.
  MAPRECT_ALWAYS_INLINE void begin_job(int j, int K) {
    if (K == 0) return;
    const std::size_t record_bytes = job_operands::bytes(call_->n_job_params);
    char* p = static_cast<char*>(t_.memory.allocate(record_bytes + output_bytes_ * static_cast<std::size_t>(K)));
    operands_ = job_operands::make(p, call_, nodes_of(job_params_[j]));
    next_ = p + record_bytes;
  }

  /// An output of a job run here: its partials are the adjoints of the job's kept leaves.
  void output(int, double value, const runner_vectors::kept_leaf* leaves, int n_leaves) {
    double* partials = next_partials();
    for (int i = 0; i < n_leaves; ++i) partials[i] = leaves[i].adj_;
    push(value, partials);
  }

  /// An output run elsewhere, from its block: the value, then the partials. Returns its node.
  vari* output(const double* block) {
    vari* node = unrecorded_output(block);
    t_.push(node);
    return node;
  }

  /// output(block), but not yet recorded on the tape: the caller pushes it in its place in job order.
  vari* unrecorded_output(const double* block) {
    double* partials = next_partials();
    std::copy_n(block + 1, n_partials_, partials);
    vari* node = ::new (next_) job_output_vari(block[0], partials, operands_);
    next_ += output_bytes_;
    return node;
  }

  /// Doubles per output block: the value and the partials.
  std::size_t rows() const { return 1 + n_partials_; }

 private:
  /// The call's operand record: the shared parameters' nodes, and how many operands each job has.
  static const call_operands* make_call(tape& t, const Eigen::Matrix<T_shared, Eigen::Dynamic, 1>& shared_params,
                                        const std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>>& job_params) {
    const int S = is_var_v<T_shared> ? static_cast<int>(shared_params.size()) : 0;
    const int P = job_params.empty() || !is_var_v<T_job> ? 0 : static_cast<int>(job_params[0].size());
    return call_operands::make(t.memory.allocate(call_operands::bytes(S)), nodes_of(shared_params), S, P);
  }
  double* next_partials() const { return reinterpret_cast<double*>(next_ + sizeof(job_output_vari)); }
  vari* push(double value, const double* partials) {
    vari* node = ::new (next_) job_output_vari(value, partials, operands_);
    t_.push(node);
    next_ += output_bytes_;
    return node;
  }

  tape& t_;
  const std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>>& job_params_;
  const call_operands* call_;
  std::size_t n_partials_;
  std::size_t output_bytes_;
  const job_operands* operands_ = nullptr;
  char* next_ = nullptr;
};

/// The front door's session of a cluster call on the root. begin runs the root's own jobs as run_in_process
/// runs a call: reading the caller's parameters in place, each output a node on the caller's tape as soon as
/// its job has run. drain makes the nodes of the workers' jobs from their blocks as they arrive, between the
/// root's jobs and after them, and keeps them in `later`, so that the root's share of the node making overlaps
/// the workers' jobs instead of following them. finish records them behind the root's own, then makes the
/// rest from the call's result: the tape holds the outputs in job order, as an in-process call leaves it.
template <class F, class T_shared, class T_job>
class cluster_session final : public call_session {
 public:
  cluster_session(const caller_jobs<T_shared, T_job>& in, node_sink<T_shared, T_job>& sink, tape& t,
                  std::vector<vari*>& later)
      : in_(in), sink_(sink), t_(t), before_(t.mark()), later_(later) {
    later_.clear();
  }

  void begin(int n, int* counts, int& cursor, job_poller* poller) override {
    t_.rewind(before_);  // a call planned anew runs the root's jobs again
    later_.clear();
    polling_sink sink{sink_, counts, poller};
    run_jobs<F, kinds_of<T_shared, T_job>()>(in_.first(n), sink, cursor);
  }

  void run(int first, int end, int* counts, int& cursor) override {
    offset_sink sink{sink_, counts, first};
    const jobs_slice<caller_jobs<T_shared, T_job>> batch(in_, first, end - first, in_.msgs());
    run_jobs<F, kinds_of<T_shared, T_job>()>(batch, sink, cursor);
  }

  void drain(const double* blocks, int begin, int end, const int* counts) override {
    const std::size_t rows = sink_.rows();
    for (int j = begin; j < end; ++j) {
      sink_.begin_job(j, counts[j]);
      for (int c = 0; c < counts[j]; ++c, blocks += rows) later_.push_back(sink_.unrecorded_output(blocks));
    }
  }

  /// The call's outputs as nodes on the tape, in job order: those made by begin and drain (res.jobs_made
  /// leading jobs, whole segments), then the others from their blocks (copied: the backend reuses the blocks
  /// at its next call).
  Eigen::Matrix<var, Eigen::Dynamic, 1> finish(const call_result& res) {
    t_.stack.insert(t_.stack.end(), later_.begin(), later_.end());
    Eigen::Matrix<var, Eigen::Dynamic, 1> out(res.n_outputs);
    int k = 0;
    for (int j = 0; j < res.jobs_made; ++j) k += res.counts[j];
    vari* const* made = t_.stack.data() + before_.stack_size;
    for (int i = 0; i < k; ++i) out.coeffRef(i).vi_ = made[i];
    for (int s = 0; s < res.n_segments; ++s) {
      const result_segment& seg = res.segments[s];
      if (seg.job_end <= res.jobs_made) continue;
      const double* col = seg.blocks;
      for (int j = seg.job_begin; j < seg.job_end; ++j) {
        sink_.begin_job(j, res.counts[j]);
        for (int c = 0; c < res.counts[j]; ++c, col += res.rows, ++k) out.coeffRef(k).vi_ = sink_.output(col);
      }
    }
    return out;
  }

 private:
  /// Jobs between the backend's polls: a poll costs about what a tiny job does.
  static constexpr int poll_every = 8;

  /// Hands each job's output count to the backend on the way to the node sink, and lets it poll.
  struct polling_sink {
    node_sink<T_shared, T_job>& nodes;
    int* counts;
    job_poller* poller;
    int until_poll = poll_every;
    void begin_job(int j, int K) {
      if (poller != nullptr && --until_poll == 0) {
        until_poll = poll_every;
        poller->poll();
      }
      counts[j] = K;
      nodes.begin_job(j, K);
    }
    void output(int k, double value, const runner_vectors::kept_leaf* leaves, int n_leaves) {
      nodes.output(k, value, leaves, n_leaves);
    }
  };

  /// The node sink of a batch that starts at job `first`: the runner numbers the batch's jobs from 0.
  struct offset_sink {
    node_sink<T_shared, T_job>& nodes;
    int* counts;
    int first;
    void begin_job(int j, int K) {
      counts[first + j] = K;
      nodes.begin_job(first + j, K);
    }
    void output(int k, double value, const runner_vectors::kept_leaf* leaves, int n_leaves) {
      nodes.output(k, value, leaves, n_leaves);
    }
  };

  const caller_jobs<T_shared, T_job>& in_;
  node_sink<T_shared, T_job>& sink_;
  tape& t_;
  tape_mark before_;  ///< right after the call's operand record
  std::vector<vari*>& later_;
};

}  // namespace detail
}  // namespace maprect
