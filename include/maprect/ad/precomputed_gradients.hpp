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

/// Operands every job of a call shares.
struct call_operands {
  vari* const* shared;  ///< the shared parameters' nodes (none when they are double)
  int n_shared;         ///< how many shared operands
  int n_own;            ///< how many operands each job has of its own
};

/// Operands of every output of one job: the call's, then the job's own, whose n_own node pointers are
/// stored right after this header (allocate with make()).
struct job_operands {
  const call_operands* call;  ///< what the call's jobs share

  /// The job's own operands.
  vari* const* own() const { return reinterpret_cast<vari* const*>(this + 1); }

  /// A record on `mem` for a job whose own operands are `own` (n_own of them, from `call`).
  static const job_operands* make(arena& mem, const call_operands* call, vari* const* own) {
    void* p = mem.allocate(sizeof(job_operands) + sizeof(vari*) * static_cast<std::size_t>(call->n_own));
    auto* record = new (p) job_operands{call};
    vari** slots = reinterpret_cast<vari**>(record + 1);
    for (int k = 0; k < call->n_own; ++k) new (slots + k) vari*(own[k]);
    return record;
  }
};

/// One output of a job: value, and partials laid out as [shared..., own...] in a buffer the node does
/// not own (it lives on the same arena). The operand record is shared by all outputs of the job, so an
/// output costs this node, its tape slot and its partials.
class job_output_vari final : public vari {
 public:
  job_output_vari(double value, const double* partials, const job_operands* operands)
      : vari(value), partials_(partials), operands_(operands) {}
  void chain() override {
    const call_operands& call = *operands_->call;
    const double* d = partials_;
    for (int k = 0; k < call.n_shared; ++k) call.shared[k]->adj_ += adj_ * d[k];
    d += call.n_shared;
    vari* const* own = operands_->own();
    for (int k = 0; k < call.n_own; ++k) own[k]->adj_ += adj_ * d[k];
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
