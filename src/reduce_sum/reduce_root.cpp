// The root's front door of a reduce_sum call over the cluster: it plans the call (the split of its slices, the
// layout of its messages, whether the workers' payload is current), runs the reduce command
// (reduce_command.cpp) once, or again when the workers' data turn out stale, then throws the first failing
// slice and hands all blocks to the front door's fold in slice order (never a reduction by MPI, which may
// reorder the sums).
#include <algorithm>
#include <chrono>
#include <climits>
#include <maprect/detail/message_limits.hpp>
#include <maprect/detail/reduce_call.hpp>
#include <maprect/detail/reduce_error.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/cluster/cluster_state.hpp"
#include "src/protocol/exchange.hpp"
#include "src/reduce_sum/reduce_command.hpp"
#include "src/reduce_sum/reduce_host_claims.hpp"
#include "src/cluster/test_hooks.hpp"

namespace maprect::detail {

namespace {

/// Throws std::invalid_argument when `count` values of call `call_id`'s `what` do not fit one MPI message.
void check_fits(int call_id, long long count, const char* what) {
  if (!fits_one_message(count))
    throw std::invalid_argument("reduce_sum: call id " + std::to_string(call_id) + ": " + what + " holds " +
                                std::to_string(count) + " values, more than the 2^31-1 one MPI message can carry");
}

/// Runs `step` (messages the workers take part in) and aborts the job if the root fails inside it: the
/// workers would wait for the rest of its messages forever.
template <class Step>
void between_collectives(rank_context& s, int call_id, Step&& step) {
  s.mid_call = true;
  try {
    step();
  } catch (const std::exception& e) {
    abort_mid_call(s, reduce_call(call_id), e.what());
  } catch (...) {
    abort_mid_call(s, reduce_call(call_id), "unknown exception");
  }
  s.mid_call = false;
}

/// How the call's scatter and gather run, chosen again only when its layout changes (MAPRECT_COLLECTIVES,
/// or the cost model under auto), for `answers` doubles of the workers' status and blocks.
void choose_collectives(const rank_context& s, reduce_root_buffers& b, const reduce_layout& layout,
                        const reduce_split& split, long long answers) {
  b.chunk_out = b.values.largest_worker_part();
  b.chunk_back = b.answers.largest_worker_part();
  const std::size_t key[3] = {static_cast<std::size_t>(split.n_slices), layout.n_sliced(), layout.block_doubles()};
  if (std::equal(key, key + 3, b.chosen_for) && b.chosen_for[0] != 0) return;
  std::copy(key, key + 3, b.chosen_for);
  const double out_bytes = sizeof(double) * static_cast<double>(layout.n_sliced() - b.values.counts[0]);
  b.collective = choose_collective(s.settings.collectives, s.settings.timeout > 0, s.collectives, s.size,
                                   split.n_slices, out_bytes, sizeof(double) * static_cast<double>(answers),
                                   2LL * std::max(b.chunk_out, b.chunk_back));
}

/// Lays out who receives which sliced values and where each worker's status and blocks land. Throws, before
/// any message, when a message would not fit.
void lay_out_call(const rank_context& s, reduce_root_buffers& b, const reduce_request& req,
                  const reduce_split& split) {
  const reduce_layout& layout = *req.layout;
  check_fits(req.call_id, static_cast<long long>(layout.n_sliced()), "the sliced argument's vars");
  check_fits(req.call_id, static_cast<long long>(layout.n_shared()), "the shared arguments' vars");
  const auto ranks = static_cast<std::size_t>(s.size);
  b.values.counts.assign(ranks, 0);
  b.values.displs.assign(ranks, 0);
  b.answers.counts.assign(ranks, 0);
  b.answers.displs.assign(ranks, 0);
  long long at = 0;
  for (int r = 0; r < s.size; ++r) {
    const int first = split.first(r), last = split.first(r + 1);
    b.values.displs[r] = static_cast<int>(layout.slice_values_at(first));
    b.values.counts[r] = static_cast<int>(layout.slice_values_at(last) - layout.slice_values_at(first));
    if (r == 0) continue;  // the root's blocks stay in b.own
    const long long answer =
        wire::status_doubles + static_cast<long long>(layout.block_at(last) - layout.block_at(first));
    check_fits(req.call_id, at + answer, "the blocks of the workers' slices");
    b.answers.displs[r] = static_cast<int>(at);
    b.answers.counts[r] = static_cast<int>(answer);
    at += answer;
  }
  b.received.resize(static_cast<std::size_t>(at));
  choose_collectives(s, b, layout, split, at);
  b.own.resize(layout.block_at(split.first(1)));
  if (s.settings.balance != balance_mode::static_share) b.taken.resize(layout.block_doubles());
}

/// Worker r's answer, its status and then the blocks of the slices it ran: in its slot, behind its values,
/// or where the gather put it.
const double* answer_of(const rank_context& s, const reduce_root_buffers& b, int r) {
  if (claims_by_message(b.route))
    return b.statuses.data() + static_cast<std::ptrdiff_t>(r) * wire::status_doubles;
  return b.via_slots() ? s.host.slots.slot(r) + b.values.counts[r] : b.received.data() + b.answers.displs[r];
}

/// The call's payload, written now, if it differs from what the workers of `site` hold; else null.
const std::string* new_payload(reduce_root_site& site, const reduce_request& req) {
  const std::string& payload = req.session->payload();
  if (site.shipped && site.payload == payload) return nullptr;
  if (!fits_one_message(static_cast<long long>(payload.size()))) {
    // The front door now takes this payload for the last one written: the next call must not trust the
    // workers' copy because its data compare equal to it.
    site.shipped = false;
    check_fits(req.call_id, static_cast<long long>(payload.size()), "the call site's data (bytes)");
  }
  return &payload;
}

/// Throws the error of worker r, which ran slice `slice` and failed there first, fetched from it.
[[noreturn]] void throw_worker_failure(rank_context& s, const reduce_request& req, int r, int slice) {
  job_error e;
  between_collectives(s, req.call_id, [&] {
    wire::request h;
    h.cmd = wire::command::fetch_error;
    h.arg = r;
    send_reduce_request(s, h, nullptr);
    exchange_error(s.ends(), r, e);
  });
  throw_slice_error(e, req.call_id, req.layout->plan(), slice, r);
}

/// Whether worker r's status says that a slice it ran failed.
bool failed_on(const rank_context& s, const reduce_root_buffers& b, int r) {
  return static_cast<wire::status>(static_cast<int>(answer_of(s, b, r)[0])) == wire::status::failed;
}

/// Step 6: throws the lowest failing slice any rank reported (each reports its lowest), if any: whoever ran it
/// under claims, and without claims the first failing rank's, since each rank ran its own range, in rank order.
void throw_first_failure(rank_context& s, const reduce_root_buffers& b, const reduce_request& req,
                         const lowest_failure& root) {
  lowest_failure first;  // the root's error stays in `root`
  first.keep(root.code, 0, root.job);
  for (int r = 1; r < s.size; ++r)
    if (failed_on(s, b, r)) first.keep(wire::status::failed, r, static_cast<int>(answer_of(s, b, r)[failed_slice_at]));
  if (!first.failed()) return;
  if (first.rank == 0) throw_slice_error(root.error, req.call_id, req.layout->plan(), first.job, 0);
  throw_worker_failure(s, req, first.rank, first.job);
}

/// The split of this call's slices: the even one (the root's range the larger, so that a call of one slice
/// sends nothing) for a new layout or rank count, else the last call's with a root share asked for since.
/// Returns whether the split moved: then every rank sizes its host slot for it after the call.
bool plan_split(const rank_context& s, reduce_root_site& site, int n_slices) {
  const reduce_split before = site.split;
  reduce_split& split = site.split;
  if (split.n_slices != n_slices || split.ranks != s.size) split = reduce_split::even(n_slices, s.size);
  if (site.next_root_slices >= 0) {
    split.root_slices = std::min(site.next_root_slices, n_slices);
    site.next_root_slices = -1;
  }
  return split.n_slices != before.n_slices || split.ranks != before.ranks || split.root_slices != before.root_slices;
}

/// Hands every slice's block to the front door's fold, in slice order: the root's, then each worker's (those
/// the root took over from its own buffer).
void fold_in_slice_order(const rank_context& s, const reduce_root_buffers& b, const reduce_request& req,
                         const reduce_split& split) {
  const reduce_layout& layout = *req.layout;
  // Under claims others ran [ends[0], first(1)): their blocks are in the root's slot, or came by message.
  for (int slice = 0; slice < split.first(1); ++slice)
    req.session->fold(slice, slice < b.ends[0]                         ? b.own.data() + layout.block_at(slice)
                             : b.route == wire::call_route::memory ? claimed_root_block(s, layout, split, slice)
                                                                     : b.taken.data() + layout.block_at(slice));
  for (int r = 1; r < s.size; ++r) {
    const double* blocks = answer_of(s, b, r) + wire::status_doubles;
    const std::size_t base = layout.block_at(split.first(r));
    const int end = b.ends[r];
    for (int slice = split.first(r); slice < end; ++slice)
      req.session->fold(slice, blocks + (layout.block_at(slice) - base));
    for (int slice = end; slice < split.first(r + 1); ++slice)
      req.session->fold(slice, b.taken.data() + layout.block_at(slice));
  }
}

}  // namespace

void plan_reduce_root_share(int call_id, int root_slices) {
  cluster_state* live = live_cluster_root();
  if (live != nullptr) live->reduce.root_sites[call_id].next_root_slices = std::max(0, root_slices);
}

void reduce_on_cluster(const reduce_request& req) {
  cluster_state* live = live_cluster_root();
  if (live == nullptr) throw std::logic_error("reduce_sum: no cluster serves this thread");
  rank_context& s = *live;
  reduce_state& reduce = live->reduce;
  s.last_traffic = {};
  s.last_profile = {};
  s.last_profile.threads = s.team != nullptr ? s.team->size() : 1;
  reduce_root_site& site = reduce.root_sites[req.call_id];
  const bool moved = plan_split(s, site, req.layout->plan().n_slices());
  const reduce_split split = site.split;
  lay_out_call(s, reduce.root, req, split);
  s.last_profile.root_jobs = split.first(1);
  // When the workers' payload lays the call out as the root does (the same messages on both sides), the
  // call runs at once and the root compares its data with theirs while they run; else a new payload first.
  const bool early = site.lays_out_as(*req.layout);
  const auto start = std::chrono::steady_clock::now();
  reduce_command call(s, reduce, site, req, split, early ? nullptr : new_payload(site, req), moved, early);
  between_collectives(s, req.call_id, [&] { call.run(); });
  lowest_failure failure = call.failure();
  // The workers ran on data that changed since they got them: their results go, the call runs again with
  // the new payload (unless it writes the same bytes after all).
  const std::string* payload = call.current() ? nullptr : new_payload(site, req);
  if (payload != nullptr) {
    reduce_command again(s, reduce, site, req, split, payload, false, false);
    between_collectives(s, req.call_id, [&] { again.run(); });
    failure = again.failure();
  }
  site.last_call_s = seconds_since(start);
  throw_first_failure(s, reduce.root, req, failure);
  fold_in_slice_order(s, reduce.root, req, split);
}

reduce_balance_report last_reduce_balance() {
  const cluster_state* s = live_cluster_root();
  if (s == nullptr || s->settings.balance == balance_mode::static_share) return {};
  const reduce_root_buffers& b = s->reduce.root;
  return {b.claim_firsts, b.claim_ends, b.claim_taken, b.claim_batches, b.claim_taken_in_host};
}

}  // namespace maprect::detail
