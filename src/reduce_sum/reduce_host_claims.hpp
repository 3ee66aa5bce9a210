#pragma once
// reduce_sum by claims between all ranks of one host (reduce_host_claims.cpp): the root's and the worker's
// steps 4 and 5 when a call's values, blocks and status go through host memory.
#include <maprect/detail/reduce_call.hpp>

#include "src/reduce_sum/claimed_slices.hpp"
#include "src/cluster/rank_context.hpp"
#include "src/reduce_sum/reduce_sites.hpp"

namespace maprect::detail {

/// Root, steps 4 and 5: its own slices from the front of its range into b.own (none when `want` is
/// false: the workers' data are stale, and the claims stop), then batches claimed from the back of the rank
/// with the most unclaimed slices, into that rank's slot. Sets ends[0] (where its own ended). Returns the
/// lowest failing slice it ran.
lowest_failure run_reduce_claims(rank_context& s, reduce_root_buffers& b, const reduce_request& req,
                                const reduce_split& split, bool want);

/// Root, once every worker has finished: every slice of a worker's range is in its slot (ends), and the
/// traffic of the call: every block of a slice the root did not run came through host memory.
void note_reduce_claims(rank_context& s, reduce_root_buffers& b, const reduce_layout& layout,
                        const reduce_split& split);

/// Root: where the block of slice `slice` of its own range is when another rank ran it (in the root's slot).
const double* claimed_root_block(const rank_context& s, const reduce_layout& layout, const reduce_split& split,
                                 int slice);

/// Worker, after its own slices: batches claimed from the back of the rank with the most unclaimed slices,
/// their values read from and their blocks written to that rank's slot. Keeps a failing slice in `failure`
/// where it is the lowest, and then its error for fetch_error. Returns the slices it ran.
int serve_reduce_claims_in_memory(rank_context& s, reduce_worker_site& site, const double* shared,
                                  const reduce_split& split, lowest_failure& failure);

}  // namespace maprect::detail
