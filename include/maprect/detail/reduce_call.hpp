#pragma once
/// \file One reduce_sum call over the cluster as plain data: what the front door hands to the root's side
/// of the runtime, and how that side hands the root's own slices and the fold back to the front door.

#include <string>

#include "job_error.hpp"
#include "reduce_layout.hpp"

namespace maprect::detail {

/// A reduce_sum call for the cluster. The blocks of every slice come back through `fold`, in slice order,
/// once every rank has run its slices without failure.
struct reduce_request {
  int call_id;                   ///< the call site
  const reduce_layout* layout;   ///< the call's slices, term offsets and block layout (the root's)
  const double* shared;          ///< layout->n_shared() values of the shared arguments' vars
  const double* sliced;          ///< layout->n_sliced() values of the sliced argument's vars, in term order
  void* self;                    ///< the front door's state for this call
  /// Whether the data and the parameters' shapes equal those of the payload last written for this call
  /// site on this thread (then the workers' copy, if they got it, is current). One pass over the data: the
  /// root makes it while the workers run.
  bool (*unchanged)(void* self);
  /// Writes the call site's payload (detail/reduce_site.hpp) for this call's arguments.
  const std::string& (*payload)(void* self);
  /// Runs slices [first, last) on the root, on its team, into `blocks` (slice s's at layout->block_at(s) -
  /// layout->block_at(first)); returns the lowest failing slice, its exception in `error`, or INT_MAX.
  /// With `messages`, the functor writes to the call's stream (the root's own slices; not those it takes
  /// over from a worker, whose messages would otherwise be dropped).
  int (*run)(void* self, int first, int last, double* blocks, bool messages, job_error& error);
  /// Adds slice s's block to the call's result.
  void (*fold)(void* self, int s, const double* block);
};

/// Runs `req` over the ranks of the cluster live on this thread (root side): ships the payload where the
/// workers' copy differs, sends the values, runs the root's slices, gathers every worker's blocks and folds
/// all slices in slice order. Throws the first failing slice's error in slice order, naming its rank.
void reduce_on_cluster(const reduce_request& req);

}  // namespace maprect::detail
