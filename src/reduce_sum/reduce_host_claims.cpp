// reduce_sum by claims between all ranks of one host, both sides. Every rank holds the call site's payload,
// so any rank can run any slice: each rank, the root included, runs its range from the front, and a rank out
// of slices claims a batch from the back of the rank with the most unclaimed ones (src/balance/job_claims.hpp),
// reading their values from, and writing their blocks to, the owner's host slot. The root folds every block in
// slice order, so the sum is the in-process one whoever ran a slice.
#include "src/reduce_sum/reduce_host_claims.hpp"

#include <algorithm>
#include <climits>
#include <maprect/detail/reduce_site.hpp>

#include "src/balance/job_claims.hpp"

namespace maprect::detail {

namespace {

/// Where rank r's status and blocks start in its slot: behind the values of its range.
double* answer_in_slot(const rank_context& s, const reduce_layout& layout, const reduce_split& split, int r) {
  const std::size_t values = layout.slice_values_at(split.first(r + 1)) - layout.slice_values_at(split.first(r));
  return s.host.slots.slot(r) + values;
}

/// Where slice `slice` of rank r's range has its block in r's slot.
double* block_in_slot(const rank_context& s, const reduce_layout& layout, const reduce_split& split, int r,
                      int slice) {
  return answer_in_slot(s, layout, split, r) + wire::status_doubles +
         (layout.block_at(slice) - layout.block_at(split.first(r)));
}

/// The claim loop (claim_until_none) over ranges of slices: `run(owner, first, last)` (global slices) runs one
/// batch and returns false to stop. Returns the slices run.
template <class RunBatch>
int claim_from_richest(rank_context& s, const reduce_split& split, RunBatch&& run) {
  int taken = 0;
  claim_until_none(s.host.claims, s.rank, s.size, s.settings.threads, [&](int r) { return split.first(r); },
                   [&](int owner, job_range got, int first) {
                     taken += got.size();
                     return run(owner, first, first + got.size());
                   });
  return taken;
}

}  // namespace

lowest_failure run_reduce_claims(rank_context& s, reduce_root_buffers& b, const reduce_request& req,
                                 const reduce_split& split, bool want) {
  job_claims& claims = s.host.claims;
  const reduce_layout& layout = *req.layout;
  lowest_failure failure;
  // With stale data on the workers nobody runs anything: the call runs again with the new payload.
  if (!want) claims.stop();
  bool kept = req.messages;
  auto next = [&]() -> job_range {
    if (!kept) return claims.claim_batch_front(s.settings.threads);
    kept = false;
    return {0, split.first(1)};
  };
  for (job_range got = want ? next() : job_range{}; !got.empty(); got = next()) {
    job_error error;
    const int f = req.session->run(got.begin, got.end, b.own.data() + layout.block_at(got.begin), true, error);
    if (f == INT_MAX) continue;
    keep_slice_failure(failure, f, std::move(error));
    claims.note_failure(f);
    claims.claim_rest();
    break;
  }
  b.ends.assign(static_cast<std::size_t>(s.size), 0);
  b.ends[0] = claims.worker_end(0);
  b.taken_doubles = 0;
  if (!want || failure.failed()) return failure;
  job_error error;
  s.last_profile.taken_jobs += claim_from_richest(s, split, [&](int owner, int first, int last) {
    const int f = req.session->run(first, last, block_in_slot(s, layout, split, owner, first), false, error);
    if (f != INT_MAX) {
      claims.note_failure(f);
      keep_slice_failure(failure, f, std::move(error));
    } else {
      claims.add_claimed_done(owner, last - first);
      b.taken_doubles += static_cast<long long>(layout.block_at(last) - layout.block_at(first));
    }
    return true;
  });
  return failure;
}

void note_reduce_claims(rank_context& s, reduce_root_buffers& b, const reduce_layout& layout,
                        const reduce_split& split) {
  b.answers.counts.assign(static_cast<std::size_t>(s.size), 0);
  b.answers.displs.assign(static_cast<std::size_t>(s.size), 0);
  for (int r = 1; r < s.size; ++r) b.ends[r] = split.first(r + 1);  // every block of its range is in its slot
  // Who ran what, as last_reduce_balance() reports it.
  b.claim_firsts.resize(static_cast<std::size_t>(s.size) + 1);
  for (int r = 0; r <= s.size; ++r) b.claim_firsts[r] = split.first(r);
  b.claim_ends.assign(static_cast<std::size_t>(s.size), 0);
  b.claim_taken.assign(static_cast<std::size_t>(s.size), 0);
  b.claim_batches.assign(static_cast<std::size_t>(s.size), 0);
  b.claim_taken_in_host.clear();
  for (int r = 0; r < s.size; ++r) {
    b.claim_ends[r] = split.first(r) + s.host.claims.worker_end(r);
    b.claim_taken[r] = r == 0 ? s.last_profile.taken_jobs : s.host.claims.report(r).taken;
  }
  // Every block of a slice the root did not run reached it through host memory, with each worker's status.
  const long long root_blocks = static_cast<long long>(layout.block_at(b.ends[0])) + b.taken_doubles;
  const long long received = static_cast<long long>(layout.block_doubles()) - root_blocks +
                             static_cast<long long>(wire::status_doubles) * (s.size - 1);
  s.last_traffic.received += sizeof(double) * static_cast<std::uint64_t>(received);
  s.last_traffic.through_memory += sizeof(double) * static_cast<std::uint64_t>(received);
}

const double* claimed_root_block(const rank_context& s, const reduce_layout& layout, const reduce_split& split,
                                 int slice) {
  return block_in_slot(s, layout, split, 0, slice);
}

// ---- the worker's side ----

int serve_reduce_claims_in_memory(rank_context& s, reduce_worker_site& site, const double* shared,
                                  const reduce_split& split, lowest_failure& failure) {
  job_claims& claims = s.host.claims;
  const reduce_layout& layout = site.layout;
  job_error error;
  return claim_from_richest(s, split, [&](int owner, int first, int last) {
    // The owner's values of these slices, from its slot into their places in this rank's copy.
    const std::size_t owner_at = layout.slice_values_at(split.first(owner)), at = layout.slice_values_at(first);
    std::copy_n(s.host.slots.slot(owner) + (at - owner_at), layout.slice_values_at(last) - at, site.sliced.data() + at);
    const int f =
        site.run(first, last, shared, s.team.get(), block_in_slot(s, layout, split, owner, first), error);
    if (f != INT_MAX) claims.note_failure(f);
    else claims.add_claimed_done(owner, last - first);
    keep_worker_slice_failure(s, failure, f, std::move(error));
    return true;
  });
}

}  // namespace maprect::detail
