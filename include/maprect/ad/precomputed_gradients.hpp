#pragma once
/// \file Nodes whose partials are known in advance: the form map_rect results take on the root tape.

#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "var.hpp"

namespace maprect {

namespace detail {

/// Operands every job of a call shares: the shared parameters' n_shared node pointers are stored right
/// after this header (build with make()).
struct call_operands {
  int n_shared;  ///< how many shared operands (none when they are double)
  int n_job_params;     ///< how many operands each job adds: its var job parameters

  /// The shared parameters' nodes.
  vari* const* shared() const { return reinterpret_cast<vari* const*>(this + 1); }

  /// Bytes of a record with n_shared shared operands.
  static constexpr std::size_t bytes(int n_shared) {
    return sizeof(call_operands) + sizeof(vari*) * static_cast<std::size_t>(n_shared);
  }

  /// Builds, at `where` (bytes(n_shared) of arena memory), the record of a call whose shared operands are
  /// `shared` (n_shared of them) and whose jobs have n_job_params operands each.
  static const call_operands* make(void* where, vari* const* shared, int n_shared, int n_job_params) {
    auto* record = new (where) call_operands{n_shared, n_job_params};
    vari** slots = reinterpret_cast<vari**>(record + 1);
    for (int k = 0; k < n_shared; ++k) new (slots + k) vari*(shared[k]);
    return record;
  }
};

/// Operands of every output of one job: the call's, then the job's own, whose n_job_params node pointers are
/// stored right after this header (allocate with make()).
struct job_operands {
  const call_operands* call;  ///< what the call's jobs share

  /// The job's own operands.
  vari* const* job_nodes() const { return reinterpret_cast<vari* const*>(this + 1); }

  /// Bytes of a record with n_job_params own operands.
  static constexpr std::size_t bytes(int n_job_params) {
    return sizeof(job_operands) + sizeof(vari*) * static_cast<std::size_t>(n_job_params);
  }

  /// Builds, at `where` (bytes(call->n_job_params) of arena memory), the record of a job whose own operands are
  /// `job_nodes` (call->n_job_params of them; null when the job's parameters are double).
  static const job_operands* make(void* where, const call_operands* call, vari* const* job_nodes) {
    auto* record = new (where) job_operands{call};
    vari** slots = reinterpret_cast<vari**>(record + 1);
    for (int k = 0; k < call->n_job_params; ++k) new (slots + k) vari*(job_nodes[k]);
    return record;
  }
};

/// One output of a job: value, and partials laid out as [shared..., job parameters...] in a buffer the node does
/// not own (it lives on the same arena). The operand record is shared by all outputs of the job, so an
/// output costs this node, its tape slot and its partials.
class job_output_vari final : public vari {
 public:
  job_output_vari(double value, const double* partials, const job_operands* operands)
      : vari(value), partials_(partials), operands_(operands) {}
  void chain() override {
    const double a = adj_;  // a local: the operands' adjoints cannot alias it
    const call_operands& call = *operands_->call;
    const double* d = partials_;
    vari* const* shared = call.shared();
    for (int k = 0, n = call.n_shared; k < n; ++k) shared[k]->adj_ += a * d[k];
    d += call.n_shared;
    vari* const* job_nodes = operands_->job_nodes();
    for (int k = 0, n = call.n_job_params; k < n; ++k) job_nodes[k]->adj_ += a * d[k];
  }

 private:
  const double* partials_;
  const job_operands* operands_;
};

/// A value with any number of operands and their partials, both copied onto the arena.
class precomputed_gradients_vari final : public vari {
 public:
  precomputed_gradients_vari(double value, vari** operands, double* partials, std::size_t n)
      : vari(value), operands_(operands), partials_(partials), n_(n) {}
  void chain() override {
    for (std::size_t k = 0; k < n_; ++k) operands_[k]->adj_ += adj_ * partials_[k];
  }

 private:
  vari** operands_;
  double* partials_;
  std::size_t n_;
};

}  // namespace detail

/// A var with value `value` whose partial derivative with respect to operands[k] is gradients[k].
inline var precomputed_gradients(double value, const std::vector<var>& operands, const std::vector<double>& gradients) {
  if (operands.size() != gradients.size())
    throw std::invalid_argument("precomputed_gradients: " + std::to_string(operands.size()) + " operands but " +
                                std::to_string(gradients.size()) + " gradients");
  arena& mem = tape::current().memory;
  const std::size_t n = operands.size();
  vari** ops = mem.allocate_array<vari*>(n);
  double* partials = mem.allocate_array<double>(n);
  for (std::size_t k = 0; k < n; ++k) {
    ops[k] = operands[k].vi_;
    partials[k] = gradients[k];
  }
  return var(new detail::precomputed_gradients_vari(value, ops, partials, n));
}

}  // namespace maprect
