#pragma once
/// \file One reduce_sum call over the cluster as plain data: what the front door hands to the root's side
/// of the runtime, and how that side hands the root's own slices and the fold back to the front door.

#include <string>

#include "job_error.hpp"
#include "reduce_layout.hpp"

namespace maprect::detail {

/// The front door's side of one reduce_sum call on the root, which the runtime drives: it compares and writes
/// the call site's payload on demand, runs slices on the root, and folds every slice's block, in slice order,
/// once every rank has run its slices without failure.
class reduce_session {
 public:
  /// Whether the data and the parameters' shapes equal those of the payload last written for this call
  /// site on this thread (then the workers' copy, if they got it, is current). One pass over the data: the
  /// root makes it while the workers run.
  virtual bool unchanged() = 0;
  /// Writes the call site's payload (detail/reduce_site.hpp) for this call's arguments.
  virtual const std::string& payload() = 0;
  /// Runs slices [first, last) on the root, on its team, into `blocks` (slice s's at layout->block_at(s) -
  /// layout->block_at(first)); returns the lowest failing slice, its exception in `error`, or INT_MAX.
  /// With `messages`, the functor writes to the call's stream (the root's own slices; not those it takes
  /// over from a worker, whose messages would otherwise be dropped).
  virtual int run(int first, int last, double* blocks, bool messages, job_error& error) = 0;
  /// Adds slice s's block to the call's result.
  virtual void fold(int s, const double* block) = 0;

 protected:
  ~reduce_session() = default;
};

/// A reduce_sum call for the cluster.
struct reduce_request {
  int call_id;                   ///< the call site
  const reduce_layout* layout;   ///< the call's slices, term offsets and block layout (the root's)
  const double* shared;          ///< layout->n_shared() values of the shared arguments' vars
  const double* sliced;          ///< layout->n_sliced() values of the sliced argument's vars, in term order
  reduce_session* session;       ///< the front door's side of the call
  bool messages = false;         ///< the call writes to a message stream: the root's own slices stay its own
};

/// Runs `req` over the ranks of the cluster live on this thread (root side): ships the payload where the
/// workers' copy differs, sends the values, runs the root's slices, gathers every worker's blocks and folds
/// all slices in slice order. Throws the first failing slice's error in slice order, naming its rank.
void reduce_on_cluster(const reduce_request& req);

}  // namespace maprect::detail
