// The root side of a reduce_sum call over the cluster: ship the call site's payload where the workers' copy
// differs, send the parameter values, run the root's own slices, then (under claims in host memory) those it
// claims, gather every worker's blocks, and hand all blocks to the front door's fold in slice order (never a
// reduction by MPI, which may reorder the sums). Under claims by message (MAPRECT_BALANCE=hosts, or auto
// where the ranks cannot claim in host memory) the claims engine over its slices
// (src/reduce_sum/claimed_slices.cpp) replaces the gather.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <maprect/detail/message_limits.hpp>
#include <maprect/detail/reduce_call.hpp>
#include <maprect/detail/reduce_error.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/cluster/cluster_state.hpp"
#include "src/protocol/exchange.hpp"
#include "src/reduce_sum/claimed_slices.hpp"
#include "src/reduce_sum/reduce_host_claims.hpp"
#include "src/reduce_sum/reduce_root_steps.hpp"
#include "src/cluster/test_hooks.hpp"

namespace maprect::detail {

namespace {

using namespace reduce_root_steps;

/// How the call's scatter and gather run, chosen again only when its layout changes (MAPRECT_COLLECTIVES,
/// or the cost model under auto), for `answers` doubles of the workers' status and blocks.
void choose_collectives(cluster_state& s, const reduce_layout& layout, const reduce_split& split, long long answers) {
  reduce_root_buffers& b = s.root.reduce;
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
void lay_out_call(cluster_state& s, const reduce_request& req, const reduce_split& split) {
  const reduce_layout& layout = *req.layout;
  reduce_root_buffers& b = s.root.reduce;
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
  choose_collectives(s, layout, split, at);
  b.own.resize(layout.block_at(split.first(1)));
  if (s.settings.balance != balance_mode::static_share) b.taken.resize(layout.block_doubles());
}

/// Whether a call through host memory goes by claims between all ranks of the host (every rank holds the
/// payload): under MAPRECT_BALANCE=auto when every rank shares the root's host memory.
bool claims_between_all(const cluster_state& s) {
  return s.settings.memory_claims && s.host.claims.shared_with_all();
}

/// Whether every worker's values and answer (as lay_out_call planned them) fit its host slot: then they go
/// through memory, and the call's messages shrink to the request and a status per worker. Messages past the
/// shared-memory transport's eager limit (4 KiB) go by rendezvous, a handshake that costs more than the copy.
bool fits_slots(const cluster_state& s) {
  if (!s.host.slots.usable()) return false;
  const reduce_root_buffers& b = s.root.reduce;
  // By claims between all ranks the root's slot holds its values and blocks too.
  for (int r = claims_between_all(s) ? 0 : 1; r < s.size; ++r)
    if (static_cast<long long>(b.values.counts[r]) + b.answers.counts[r] > s.host.slots.capacity()) return false;
  return true;
}

/// Step 3 through memory: each worker's sliced values at the start of its slot, before the request.
void place_values(cluster_state& s, const double* sliced) {
  const reduce_root_buffers& b = s.root.reduce;
  for (int r = b.route == wire::call_route::memory ? 0 : 1; r < s.size; ++r) std::copy_n(sliced + b.values.displs[r], b.values.counts[r], s.host.slots.slot(r));
  s.host.slots.sync();
}

/// Worker r's answer, its status and then the blocks of the slices it ran: in its slot, behind its values,
/// or where the gather put it.
const double* answer_of(const cluster_state& s, int r) {
  const reduce_root_buffers& b = s.root.reduce;
  if (claims_by_message(s.settings, s.size, b.route))
    return b.statuses.data() + static_cast<std::ptrdiff_t>(r) * wire::status_doubles;
  return b.via_slots() ? s.host.slots.slot(r) + b.values.counts[r] : b.received.data() + b.answers.displs[r];
}

/// The call's payload, written now, if it differs from what the workers hold; else null.
const std::string* new_payload(cluster_state& s, const reduce_request& req) {
  reduce_root_site& site = s.root.reduce_sites[req.call_id];
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

/// Steps 1 to 3 on the root: the request, the payload if `payload` is not null, the sliced values.
void post_call(cluster_state& s, const reduce_request& req, const std::string* payload, bool reserve) {
  const reduce_layout& layout = *req.layout;
  reduce_root_site& site = s.root.reduce_sites[req.call_id];
  const bool ship = payload != nullptr;
  const int bytes = ship ? static_cast<int>(payload->size()) : 0;
  const reduce_split& split = site.split;
  reduce_root_buffers& b = s.root.reduce;
  // A call that grows the slots moves them. Claims go through host memory where every rank shares it (the
  // statuses too: no gather at all), else by message, every answer with them; without claims the values and
  // blocks still go through the slots where they fit.
  const bool fits = !ship && !reserve && fits_slots(s);
  const bool claims = s.settings.balance != balance_mode::static_share;
  b.route = fits && claims_between_all(s) ? wire::call_route::memory
            : fits && !claims             ? wire::call_route::slots
                                          : wire::call_route::messages;
  // A functor's messages reach the caller's stream only from the root: with one, its slices stay its own.
  if (b.route == wire::call_route::memory)
    s.host.claims.reset_all(s.size, [&](int r) { return split.first(r + 1) - split.first(r); }, req.messages);
  if (b.via_slots()) place_values(s, req.sliced);
  const wire::reduce_header h{req.call_id,        static_cast<int>(layout.n_shared()),
                              layout.plan().n_terms, layout.plan().grainsize,
                              bytes,              b.route,
                              split.root_slices,  ship || reserve};
  wire::request request = h.to_request();
  name_collectives(request, b.collective, b.chunk_out, b.chunk_back);
  send_request(s, request, req.shared);
  if (ship) {
    site.shipped = false;  // until the workers hold it
    site.payload = *payload;
    exchange_payload(s.ends(), site.payload, bytes);
    site.n_terms = layout.plan().n_terms;
    site.n_shared = layout.n_shared();
    site.term_offsets = layout.term_offsets();
    site.shipped = true;
    s.root.last_traffic.sent += static_cast<std::uint64_t>(bytes) * static_cast<std::uint64_t>(s.size - 1);
  }
  if (layout.n_sliced() == 0) return;
  const std::uint64_t values_out = sizeof(double) * (layout.n_sliced() - static_cast<std::size_t>(b.values.counts[0]));
  s.root.last_traffic.sent += values_out;
  if (b.via_slots()) s.root.last_traffic.through_memory += values_out;
  else post_parameters(s.ends(), {b.collective, b.chunk_out}, req.sliced, b.values, nullptr, 0);
}

/// The first failing slice of the call that the root ran, and its exception.
using root_failure = slice_failure;

/// Each worker's answer without claims: its status and the blocks of its range, by message or (blocks)
/// through its slot.
void lay_out_answers(cluster_state& s, const reduce_layout& layout, const reduce_split& split) {
  reduce_root_buffers& b = s.root.reduce;
  int at = 0;  // at most the planned answers, which lay_out_call checked
  b.ends.assign(static_cast<std::size_t>(s.size), 0);
  b.ends[0] = split.first(1);
  for (int r = 1; r < s.size; ++r) {
    b.ends[r] = split.first(r + 1);
    const int answer = wire::status_doubles +
                       static_cast<int>(layout.block_at(b.ends[r]) - layout.block_at(split.first(r)));
    s.root.last_traffic.received += sizeof(double) * static_cast<std::uint64_t>(answer);
    if (b.via_slots())
      s.root.last_traffic.through_memory += sizeof(double) * static_cast<std::uint64_t>(answer - wire::status_doubles);
    b.answers.displs[r] = at;
    b.answers.counts[r] = b.via_slots() ? wire::status_doubles : answer;
    at += b.answers.counts[r];
  }
}

/// When the root's part of a call started and ended: its profile's root_seconds, and its time per slice.
struct call_clock {
  std::chrono::steady_clock::time_point own_start;   ///< after the request, the values and the data compare
  std::chrono::steady_clock::time_point own_done;    ///< the root's own slices done
  std::chrono::steady_clock::time_point taken_done;  ///< the slices it took over done
};

/// The root's own slices under claims by message, run by the broker's own-range loop into b.own; the lowest
/// failure is kept in `failure`.
class own_slices final : public own_batch_runner {
 public:
  own_slices(cluster_state& s, const reduce_request& req, slice_failure& failure)
      : s_(s), req_(req), failure_(failure) {}
  wire::status run(job_range got, int& failed_job) override {
    job_error error;
    double* blocks = s_.root.reduce.own.data() + req_.layout->block_at(got.begin);
    failed_job = req_.session->run(got.begin, got.end, blocks, true, error);
    if (failed_job == INT_MAX) return wire::status::ok;
    failure_.keep(failed_job, error);
    return wire::status::failed;
  }

 private:
  cluster_state& s_;
  const reduce_request& req_;
  slice_failure& failure_;
};

/// Steps 4 and 5 by claims by message (claims_broker over the call's slices): the root's own slices, the
/// workers' results as they come and the batches it brokers and takes; every block of a worker's range lands
/// in b.taken at its slice's place. `want`: the workers' data are current, so their slices are worth running.
/// Past the deadline names the late workers, and aborts.
void claim_and_collect(cluster_state& s, const reduce_request& req, const reduce_split& split, bool want,
                       root_failure& failure, call_clock& clock) {
  reduce_root_buffers& b = s.root.reduce;
  reduce_claimed_slices work(s, req, split, failure);
  claims_broker broker(s, work);
  // A functor's messages reach the caller's stream only from the root: with one, its slices stay its own.
  broker.reset(split.first(1), want && !req.messages);
  own_slices batches(s, req, failure);
  int failed_job = INT_MAX;
  broker.run_own(batches, true, failed_job);
  const int own = broker.jobs().end();
  clock.own_done = std::chrono::steady_clock::now();
  b.claim_ends[0] = own;
  std::vector<int> late;
  if (broker.run(want, late) < 0) abort_late(s, reduce_call(req.call_id), late);
  clock.taken_done = std::chrono::steady_clock::now();
  s.root.last_profile.root_seconds = std::chrono::duration<double>(clock.taken_done - clock.own_start).count();
  s.root.last_traffic.received += sizeof(double) * static_cast<std::uint64_t>(broker.received());
  // Every worker answered the root directly: a flat gather in all but name.
  s.root.last_traffic.collective = plan::gather_name(plan::gather_kind::flat);
  s.root.last_traffic.gather_peers = s.size - 1;
  b.ends.assign(static_cast<std::size_t>(s.size), 0);
  b.ends[0] = own;
  for (int r = 1; r < s.size; ++r) b.ends[r] = split.first(r);  // fold_in_slice_order reads b.taken
}

/// Steps 4 and 5 by claims between all ranks of the host: the root's part of the claims, then each worker's
/// report in host memory (past the deadline the late workers are named, and the job aborted).
root_failure run_and_await_claims(cluster_state& s, const reduce_request& req, const reduce_split& split,
                                  call_clock& clock, bool want, std::chrono::steady_clock::time_point deadline) {
  root_failure failure = run_reduce_claims(s, req, split, want);
  clock.own_done = clock.taken_done = std::chrono::steady_clock::now();
  s.root.last_profile.root_seconds = std::chrono::duration<double>(clock.taken_done - clock.own_start).count();
  await_reports(s, req.call_id, deadline);
  note_reduce_claims(s, *req.layout, split);
  s.host.slots.sync();
  return failure;
}

/// Steps 4 and 5 on the root: its own slices, those it claims (`want`: the workers' data are current, so
/// their slices are worth running), then every worker's answer. Returns the first failing slice the root ran
/// (its own come first; it claims nothing after a failure).
root_failure run_and_collect(cluster_state& s, const reduce_request& req, const reduce_split& split,
                             call_clock& clock, bool want) {
  reduce_root_buffers& b = s.root.reduce;
  clock.own_start = std::chrono::steady_clock::now();
  const auto deadline = start_deadline(s);
  if (b.route == wire::call_route::memory) return run_and_await_claims(s, req, split, clock, want, deadline);
  root_failure failure;
  if (claims_by_message(s.settings, s.size, b.route)) {
    claim_and_collect(s, req, split, want, failure, clock);
    return failure;
  }
  failure.slice = req.session->run(0, split.first(1), b.own.data(), true, failure.error);
  clock.own_done = std::chrono::steady_clock::now();
  clock.taken_done = std::chrono::steady_clock::now();
  s.root.last_profile.root_seconds = std::chrono::duration<double>(clock.taken_done - clock.own_start).count();
  lay_out_answers(s, *req.layout, split);
  gather_answers(s, req.call_id, deadline);
  if (b.via_slots()) s.host.slots.sync();
  return failure;
}

/// After a call that shipped a payload (its answers in hand, by message): the host slots grow to what each
/// worker's values and answer need for the next calls (each worker asks for its own). Collective; growing
/// moves the claim words, which the next request resets.
void grow_slots(cluster_state& s, const reduce_layout& layout, const reduce_split& split) {
  const reduce_root_buffers& b = s.root.reduce;
  const long long own = claims_between_all(s) ? b.values.counts[0] + wire::status_doubles +
                                                    static_cast<long long>(layout.block_at(split.first(1)))
                                              : 0;
  s.host.reserve(own, s.comm);
}

/// Throws the error of worker r, which ran slice `slice` and failed there first, fetched from it.
[[noreturn]] void throw_worker_failure(cluster_state& s, const reduce_request& req, int r, int slice) {
  job_error e;
  between_collectives(s, req.call_id, [&] {
    wire::request h;
    h.cmd = wire::command::fetch_error;
    h.arg = r;
    send_request(s, h, nullptr);
    exchange_error(s.ends(), r, e);
  });
  throw_slice_error(e, req.call_id, req.layout->plan(), slice, r);
}

/// Whether worker r's status says that a slice it ran failed.
bool failed_on(const cluster_state& s, int r) {
  return static_cast<wire::status>(static_cast<int>(answer_of(s, r)[0])) == wire::status::failed;
}

/// Step 6 under claims: whoever ran them, the lowest failing slice decides (each rank reports its lowest).
void throw_first_claimed_failure(cluster_state& s, const reduce_request& req, const root_failure& root) {
  int slice = root.slice, rank = 0;
  for (int r = 1; r < s.size; ++r) {
    if (!failed_on(s, r)) continue;
    const int failed = static_cast<int>(answer_of(s, r)[failed_slice_at]);
    if (failed < slice) {
      slice = failed;
      rank = r;
    }
  }
  if (slice == INT_MAX) return;
  if (rank == 0) throw_slice_error(root.error, req.call_id, req.layout->plan(), slice, 0);
  throw_worker_failure(s, req, rank, slice);
}

/// Step 6: throws the first failing slice in slice order, if any: under claims the lowest any rank reported,
/// else rank by rank (each ran its own range).
void throw_first_failure(cluster_state& s, const reduce_request& req, const reduce_split& split,
                         const root_failure& root) {
  if (s.settings.balance != balance_mode::static_share)
    return throw_first_claimed_failure(s, req, root);
  // Without claims the root runs only its own range, which comes first.
  if (root.slice < split.first(1)) throw_slice_error(root.error, req.call_id, req.layout->plan(), root.slice, 0);
  for (int r = 1; r < s.size; ++r)
    if (failed_on(s, r)) throw_worker_failure(s, req, r, static_cast<int>(answer_of(s, r)[1]));
}

/// The split of this call's slices: the even one (the root's range the larger, so that a call of one slice
/// sends nothing) for a new layout or rank count, else the last call's with a root share asked for since.
/// Returns whether the split moved: then every rank sizes its host slot for it after the call.
bool plan_split(const cluster_state& s, reduce_root_site& site, int n_slices) {
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
void fold_in_slice_order(const cluster_state& s, const reduce_request& req, const reduce_split& split) {
  const reduce_layout& layout = *req.layout;
  const reduce_root_buffers& b = s.root.reduce;
  // Under claims others ran [ends[0], first(1)): their blocks are in the root's slot, or came by message.
  for (int slice = 0; slice < split.first(1); ++slice)
    req.session->fold(slice, slice < b.ends[0]                         ? b.own.data() + layout.block_at(slice)
                             : b.route == wire::call_route::memory ? claimed_root_block(s, layout, split, slice)
                                                                     : b.taken.data() + layout.block_at(slice));
  for (int r = 1; r < s.size; ++r) {
    const double* blocks = answer_of(s, r) + wire::status_doubles;
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
  if (live != nullptr) live->root.reduce_sites[call_id].next_root_slices = std::max(0, root_slices);
}

void reduce_on_cluster(const reduce_request& req) {
  cluster_state* live = live_cluster_root();
  if (live == nullptr) throw std::logic_error("reduce_sum: no cluster serves this thread");
  cluster_state& s = *live;
  s.root.last_traffic = {};
  s.root.last_profile = {};
  s.root.last_profile.threads = s.team != nullptr ? s.team->size() : 1;
  reduce_root_site& site = s.root.reduce_sites[req.call_id];
  const bool moved = plan_split(s, site, req.layout->plan().n_slices());
  const reduce_split split = site.split;
  lay_out_call(s, req, split);
  s.root.last_profile.root_jobs = split.first(1);
  // When the workers' payload lays the call out as the root does (the same messages on both sides), the
  // call runs at once and the root compares its data with theirs while they run; else a new payload first.
  const bool early = site.lays_out_as(*req.layout);
  const std::string* payload = early ? nullptr : new_payload(s, req);
  bool current = true;
  root_failure failure;
  call_clock clock;
  between_collectives(s, req.call_id, [&] {
    post_call(s, req, payload, moved);
    if (early) current = req.session->unchanged();
    failure = run_and_collect(s, req, split, clock, current);
    if (payload != nullptr || moved) grow_slots(s, *req.layout, split);
  });
  // The workers ran on data that changed since they got them: their results go, the call runs again with
  // the new payload (unless it writes the same bytes after all).
  payload = current ? nullptr : new_payload(s, req);
  if (payload != nullptr)
    between_collectives(s, req.call_id, [&] {
      post_call(s, req, payload, false);
      failure = run_and_collect(s, req, split, clock, true);
      grow_slots(s, *req.layout, split);
    });
  throw_first_failure(s, req, split, failure);
  fold_in_slice_order(s, req, split);
}

}  // namespace maprect::detail
