#pragma once
/// \file Nodes whose partials are known in advance: the form map_rect results take on the root tape.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "var.hpp"

namespace maprect {

namespace detail {

/// Operands of every output of one job: the call's shared operands, then the job's own.
struct job_operands {
  vari* const* shared;  ///< operands every job of the call has (null when the shared params are double)
  vari* const* own;     ///< this job's operands (null when the job params are double)
  int n_shared;         ///< number of shared operands
  int n_own;            ///< number of own operands
};

/// One output of a job: value, and partials laid out as [shared..., own...] in a buffer the node does
/// not own (it lives on the same arena). The operand list is shared by all outputs of the job, so an
/// output costs this node, its tape slot and its partials.
class job_output_vari final : public vari {
 public:
  job_output_vari(double value, const double* partials, const job_operands* operands)
      : vari(value), partials_(partials), operands_(operands) {}
  void chain() override {
    const job_operands& ops = *operands_;
    const double* d = partials_;
    for (int k = 0; k < ops.n_shared; ++k) ops.shared[k]->adj_ += adj_ * d[k];
    d += ops.n_shared;
    for (int k = 0; k < ops.n_own; ++k) ops.own[k]->adj_ += adj_ * d[k];
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
