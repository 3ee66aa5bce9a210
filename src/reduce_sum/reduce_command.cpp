// The reduce command, written once as the ordered steps that the root and every worker execute. Root and
// workers differ only inside a step: which buffers they pass, and the root's bookkeeping. Each rank runs a
// contiguous range of the call's slices (reduce_split, the root's share in the request):
//  1. request  the root picks the route and broadcasts the request (a worker's serve loop received it).
//  2. ship     a new payload, where the workers' copy is stale; then each worker lays the call out by its copy.
//  3. post     the sliced values of each rank's range: scattered, or read from its host slot.
//  4. run      each rank's range; under claims in host memory also the batches it claims from the others.
//  5. collect  each worker's status and blocks: gathered, or its status alone (the blocks in its slot), or
//              nothing (both in host memory, the root waiting for each worker's report).
//  4 and 5 by claims by message: the claims engine runs and collects together (claimed_slices.cpp).
//  then        a call that ships a payload or moves the split sizes every rank's host slot (collective).
// The root plans the call before these steps, and throws the first failure and folds after them (reduce_root.cpp).
#include "src/reduce_sum/reduce_command.hpp"

#include <boost/archive/binary_iarchive.hpp>
#include <algorithm>
#include <climits>
#include <maprect/detail/reduce_site.hpp>
#include <sstream>

#include "src/protocol/exchange.hpp"
#include "src/reduce_sum/reduce_host_claims.hpp"

namespace maprect::detail {

namespace {

/// Doubles a rank's slot needs for its slices [first, last): their values, then its status and blocks.
long long slot_need(const reduce_layout& layout, int first, int last) {
  return static_cast<long long>(layout.slice_values_at(last) - layout.slice_values_at(first)) +
         wire::status_doubles + static_cast<long long>(layout.block_at(last) - layout.block_at(first));
}

/// Whether a call through host memory goes by claims between all ranks of the host (every rank holds the
/// payload): under MAPRECT_BALANCE=auto when every rank shares the root's host memory.
bool claims_between_all(const rank_context& s) {
  return s.settings.memory_claims && s.host.claims.shared_with_all();
}

/// Whether every worker's values and answer (as the root laid them out) fit its host slot: then they go
/// through memory, and the call's messages shrink to the request and a status per worker. Messages past the
/// shared-memory transport's eager limit (4 KiB) go by rendezvous, a handshake that costs more than the copy.
bool fits_slots(const rank_context& s, const reduce_root_buffers& b) {
  if (!s.host.slots.usable()) return false;
  // By claims between all ranks the root's slot holds its values and blocks too.
  for (int r = claims_between_all(s) ? 0 : 1; r < s.size; ++r)
    if (static_cast<long long>(b.values.counts[r]) + b.answers.counts[r] > s.host.slots.capacity()) return false;
  return true;
}

/// A worker's new payload: reads its key and term offsets, and loads the rest into a runner of that key;
/// without one (or if the data cannot be read) records why, for the slices' error.
void load_payload(rank_context& s, reduce_worker_site& site) {
  site.runner.reset();
  site.missing.clear();
  site.term_offsets.clear();
  const std::string rank = "rank " + std::to_string(s.rank);
  try {
    std::istringstream in(site.payload);
    boost::archive::binary_iarchive archive(in, boost::archive::no_header);
    std::string key;
    archive >> key >> site.term_offsets;
    const reduce_runner_factory make = find_reduce_runner(key);
    if (make == nullptr) {
      site.missing = rank + " has no slice runner for " + readable_reduce_key(key) +
                     " (every rank must run a program that instantiates this reduce_sum)";
      return;
    }
    std::unique_ptr<reduce_site_runner> runner = make();
    runner->load(archive);
    site.runner = std::move(runner);
  } catch (const std::exception& e) {
    site.missing = rank + " could not read the call site's data: " + e.what();
  }
}

/// Runs a worker's slices [a, b) of its range [first, ...) into their places in `answer` (behind the status).
/// Returns the first failing slice, its exception in `error`, or INT_MAX.
int run_range(rank_context& s, reduce_worker_site& site, const double* shared, double* answer, int first, int a,
              int b, job_error& error) {
  if (a >= b) return INT_MAX;
  double* blocks = answer + wire::status_doubles + (site.layout.block_at(a) - site.layout.block_at(first));
  return site.run(a, b, shared, s.team.get(), blocks, error);
}

/// A worker's own range [first, last) into `answer`; under claims in host memory (`claiming`) only the
/// batches it claims, front first (after a failure it claims the rest, so that no other rank runs them).
/// Keeps its first failing slice in `failure`, and the slice's error for fetch_error.
void run_own_range(rank_context& s, reduce_worker_site& site, const double* shared, double* answer, int first,
                   int last, bool claiming, lowest_failure& failure) {
  job_error error;
  int failed = INT_MAX;
  if (!claiming) {
    failed = run_range(s, site, shared, answer, first, first, last, error);
  } else {
    for (job_range got = s.host.claims.claim_front(); !got.empty(); got = s.host.claims.claim_front()) {
      failed = run_range(s, site, shared, answer, first, first + got.begin, first + got.end, error);
      if (failed == INT_MAX) continue;
      s.host.claims.claim_rest();
      break;
    }
  }
  keep_worker_slice_failure(s, failure, failed, std::move(error));
}

}  // namespace

void send_reduce_request(rank_context& s, wire::request h, const double* shared) {
  h.sequence = ++s.sequence;
  exchange_request(s.ends(), h, s.request, shared, s.shared_rest);
  s.last_traffic.sent += request_bytes(s.ends(), shared != nullptr ? h.n_shared : 0);
}

reduce_command::reduce_command(rank_context& s, reduce_state& reduce, reduce_root_site& site,
                               const reduce_request& req, const reduce_split& split, const std::string* payload,
                               bool reserve, bool compare)
    : s_(s), reduce_(reduce), root_(true), req_(&req), root_site_(&site), payload_(payload), layout_(req.layout),
      split_(split), last_(split.first(1)), kind_(reduce.root.collective), chunk_out_(reduce.root.chunk_out),
      chunk_back_(reduce.root.chunk_back), compare_(compare) {
  h_.call_id = req.call_id;
  h_.payload_bytes = payload != nullptr ? static_cast<int>(payload->size()) : 0;
  h_.reserve_slots = payload != nullptr || reserve;
}

reduce_command::reduce_command(rank_context& s, reduce_state& reduce, const wire::request& v, const double* shared)
    : s_(s), reduce_(reduce), root_(false), h_(wire::reduce_header::of(v)), site_(&reduce.worker_sites[h_.call_id]),
      shared_(shared), layout_(&site_->layout), kind_(static_cast<collective_kind>(v.collective)),
      chunk_out_(v.chunk_out), chunk_back_(v.chunk_back) {}

void reduce_command::run() {
  send_request();
  ship_payload();
  post_values();
  start_run();
  if (claims_by_message(h_.route)) {
    claim_by_message();
  } else {
    run_slices();
    collect();
  }
  if (h_.reserve_slots) grow_slots();
}

/// Step 1. Root: the route (claims go through host memory where every rank shares it, else by message with
/// every answer; without claims the values and blocks still go through the slots where they fit), the
/// values in the slots before the request names them, then the request. A call that grows the slots
/// moves them, so it goes by message.
void reduce_command::send_request() {
  if (!root_) return;  // the serve loop received it, to dispatch it here
  reduce_root_buffers& b = reduce_.root;
  const bool fits = !h_.reserve_slots && fits_slots(s_, reduce_.root);
  const bool by_message = claims_by_message_pay(claims_of(s_), root_site_->last_call_s);
  b.route = fits && claims_between_all(s_) ? wire::call_route::memory
            : by_message                   ? wire::call_route::claims
            : fits                         ? wire::call_route::slots
                                           : wire::call_route::messages;
  h_.route = b.route;
  // A functor's messages reach the caller's stream only from the root: with one, its slices stay its own.
  if (b.route == wire::call_route::memory)
    s_.host.claims.reset_all(s_.size, [&](int r) { return split_.first(r + 1) - split_.first(r); }, req_->messages);
  if (via_slots()) {
    for (int r = b.route == wire::call_route::memory ? 0 : 1; r < s_.size; ++r)
      std::copy_n(req_->sliced + b.values.displs[r], b.values.counts[r], s_.host.slots.slot(r));
    s_.host.slots.sync();
  }
  h_.n_shared = static_cast<int>(layout_->n_shared());
  h_.n_terms = layout_->plan().n_terms;
  h_.grainsize = layout_->plan().grainsize;
  h_.root_slices = split_.root_slices;
  wire::request request = h_.to_request();
  name_collectives(request, kind_, chunk_out_, chunk_back_);
  send_reduce_request(s_, request, req_->shared);
}

/// Step 2: the payload, where the workers' copy is stale; the root keeps what it sent, to compare later
/// calls with. Then a worker lays the call out by its copy, as the root laid it out by the caller's.
void reduce_command::ship_payload() {
  if (h_.payload_bytes > 0 && root_) {
    reduce_root_site& sent = *root_site_;
    sent.shipped = false;  // until the workers hold it
    sent.payload = *payload_;
    exchange_payload(s_.ends(), sent.payload, h_.payload_bytes);
    sent.n_terms = layout_->plan().n_terms;
    sent.n_shared = layout_->n_shared();
    sent.term_offsets = layout_->term_offsets();
    sent.shipped = true;
    s_.last_traffic.sent += static_cast<std::uint64_t>(h_.payload_bytes) * static_cast<std::uint64_t>(s_.size - 1);
  } else if (h_.payload_bytes > 0) {
    exchange_payload(s_.ends(), site_->payload, h_.payload_bytes);
    load_payload(s_, *site_);
  }
  if (root_) return;
  site_->layout.assign_offsets(slice_plan{h_.n_terms, h_.grainsize}, site_->term_offsets,
                               static_cast<std::size_t>(h_.n_shared));
  split_ = {site_->layout.plan().n_slices(), s_.size, h_.root_slices};
  first_ = split_.first(s_.rank);
  last_ = split_.first(s_.rank + 1);
}

/// Step 3: the values of each rank's range, at their places as on the root: scattered, or (through the
/// slots, written before the request) read from the start of the worker's slot.
void reduce_command::post_values() {
  if (!root_) {
    if (via_slots()) s_.host.slots.sync();
    site_->sliced.resize(layout_->n_sliced());
  }
  if (layout_->n_sliced() == 0) return;
  const std::size_t at = layout_->slice_values_at(first_);
  const int count = static_cast<int>(layout_->slice_values_at(last_) - at);
  if (root_) {
    const std::uint64_t out = sizeof(double) * (layout_->n_sliced() - static_cast<std::size_t>(count));
    s_.last_traffic.sent += out;
    if (via_slots()) s_.last_traffic.through_memory += out;
    else post_parameters(s_.ends(), {kind_, chunk_out_}, req_->sliced, reduce_.root.values, nullptr, 0);
  } else if (via_slots()) {
    std::copy_n(s_.host.slots.slot(s_.rank), count, site_->sliced.data() + at);
  } else {
    post_parameters(s_.ends(), {kind_, chunk_out_}, nullptr, {}, site_->sliced.data() + at, count);
  }
}

/// Before step 4: the root checks its data against the workers' copy (while they run), and starts the
/// deadline; with a timeout and answers by gather, it posts a receive for each worker's "done" message, to
/// name the late ones (by claims the root hears from every worker, or watches its report, anyway).
void reduce_command::start_run() {
  if (root_ && compare_) current_ = req_->session->unchanged();
  start_ = std::chrono::steady_clock::now();
  if (!root_) return;
  if (s_.settings.timeout > 0 && h_.route != wire::call_route::memory &&
      !claims_by_message(h_.route))
    expect_done_messages(s_);
  deadline_ = deadline_after(s_.settings.timeout);
}

/// Step 4: each rank's range (the root's into reduce.root.own); under claims in host memory its own front
/// first and then batches claimed from the back of others' (none for the root when the workers' data are
/// stale: the call runs again).
void reduce_command::run_slices() {
  if (!root_) return run_worker_slices();
  if (h_.route == wire::call_route::memory) failure_ = run_reduce_claims(s_, reduce_.root, *req_, split_, current_);
  else {
    job_error error;
    const int failed = req_->session->run(0, last_, reduce_.root.own.data(), true, error);
    keep_slice_failure(failure_, failed, std::move(error));
  }
  s_.last_profile.root_seconds = seconds_since(start_);
}

/// Step 4 on a worker: its answer behind its values in its slot, or in a buffer of its own; its slices; and
/// the status at the answer's front (code, first failing slice, seconds).
void reduce_command::run_worker_slices() {
  reduce_worker_site& site = *site_;
  const reduce_layout& layout = site.layout;
  if (via_slots()) {
    answer_ = s_.host.slots.slot(s_.rank) + (layout.slice_values_at(last_) - layout.slice_values_at(first_));
  } else {
    site.answer.assign(wire::status_doubles + layout.block_at(last_) - layout.block_at(first_), 0.0);
    answer_ = site.answer.data();
  }
  const bool in_memory = h_.route == wire::call_route::memory && s_.host.claims.shared_with(0);
  run_own_range(s_, site, shared_, answer_, first_, last_, in_memory, failure_);
  if (in_memory) {
    if (failure_.failed()) s_.host.claims.note_failure(failure_.job);
    taken_ = serve_reduce_claims_in_memory(s_, site, shared_, split_, failure_);
  }
  answer_[0] = static_cast<int>(failure_.code);
  answer_[failed_slice_at] = failure_.job;
  answer_[2] = seconds_since(start_);
}

/// Step 5: through host memory each worker flags its report beside its claim word and the root waits for
/// them all; else each worker's status and blocks are gathered (through the slots its status alone, the
/// blocks behind its values). Past the deadline the root names the late workers, and aborts.
void reduce_command::collect() {
  const collective how{kind_, via_slots() ? wire::status_doubles : chunk_back_};
  if (root_ && h_.route == wire::call_route::memory) {
    for (int r = 1; r < s_.size; ++r)
      if (!await_finished(s_.host.claims, r, s_.settings.policy, deadline_))
        abort_late(s_, reduce_call(h_.call_id), unfinished(s_.host.claims, s_.size));
    note_reduce_claims(s_, reduce_.root, *layout_, split_);
  } else if (root_) {
    reduce_root_buffers& b = reduce_.root;
    lay_out_answers();
    gather_within_deadline(s_, reduce_call(h_.call_id), deadline_, how, MPI_DOUBLE, b.received.data(),
                           b.answers.counts.data(), b.answers.displs.data());
  } else if (h_.route == wire::call_route::memory) {
    s_.host.claims.finish({static_cast<int>(failure_.code), failure_.job, answer_[2], 0.0, 0.0, taken_});
  } else {
    MPI_Request done = announce_done(s_);
    const int doubles = wire::status_doubles + (via_slots() ? 0 : static_cast<int>(layout_->block_at(last_) -
                                                                                    layout_->block_at(first_)));
    if (via_slots()) s_.host.slots.sync();
    MPI_Request unused = MPI_REQUEST_NULL;
    collect_answers(s_.ends(), how, MPI_DOUBLE, answer_, doubles, nullptr, nullptr, nullptr,
                    std::chrono::steady_clock::time_point::max(), unused);
    finish_done(s_, done);
  }
  if (root_ && via_slots()) s_.host.slots.sync();
}

/// Step 5 on the root, without claims: each worker's answer, its status and the blocks of its range, by
/// message or (the blocks) through its slot.
void reduce_command::lay_out_answers() {
  reduce_root_buffers& b = reduce_.root;
  const reduce_layout& layout = *layout_;
  int at = 0;  // at most the planned answers, which the root checked before the call
  b.ends.assign(static_cast<std::size_t>(s_.size), 0);
  b.ends[0] = split_.first(1);
  for (int r = 1; r < s_.size; ++r) {
    b.ends[r] = split_.first(r + 1);
    const int answer =
        wire::status_doubles + static_cast<int>(layout.block_at(b.ends[r]) - layout.block_at(split_.first(r)));
    s_.last_traffic.received += sizeof(double) * static_cast<std::uint64_t>(answer);
    if (via_slots())
      s_.last_traffic.through_memory += sizeof(double) * static_cast<std::uint64_t>(answer - wire::status_doubles);
    b.answers.displs[r] = at;
    b.answers.counts[r] = via_slots() ? wire::status_doubles : answer;
    at += b.answers.counts[r];
  }
}

/// Steps 4 and 5 by claims by message (claimed_slices.cpp): each rank runs its range from the front and is
/// claimed from the back, and the root brokers the claims and collects every result as it comes; the blocks
/// of a worker's range that others ran land in the root's b.taken. With stale workers' data (not current_)
/// nobody runs another batch. Past the deadline the root names the late workers, and aborts.
void reduce_command::claim_by_message() {
  if (!root_) return serve_reduce_claims(s_, *site_, shared_, split_);
  reduce_root_buffers& b = reduce_.root;
  reduce_claimed_slices work(s_, reduce_.root, *req_, split_, failure_);
  claims_broker broker(claims_of(s_), work);
  // A functor's messages reach the caller's stream only from the root: with one, its slices stay its own.
  broker.reset(last_, current_ && !req_->messages);
  share_root_slices(s_, *req_, split_, broker, current_ && !req_->messages);
  int failed_slice = INT_MAX;
  broker.run_own(work, failed_slice);
  b.claim_ends[0] = broker.jobs().end();
  std::vector<int> late;
  if (broker.run(current_, late) < 0) abort_late(s_, reduce_call(h_.call_id), late);
  b.claim_taken_in_host = broker.taken_in_host();
  s_.last_profile.root_seconds = seconds_since(start_);
  broker.traffic().add_to(s_.last_traffic);
  // Every worker answered the root directly: a flat gather in all but name.
  s_.last_traffic.collective = plan::gather_name(plan::gather_kind::flat);
  s_.last_traffic.gather_peers = s_.size - 1;
  b.ends.assign(static_cast<std::size_t>(s_.size), 0);
  b.ends[0] = broker.jobs().end();
  for (int r = 1; r < s_.size; ++r) b.ends[r] = split_.first(r);  // the fold reads their blocks from b.taken
}

/// After a call that shipped a payload or moved the split: every rank sizes its host slot for its values and
/// answer in the next calls (the root's only by claims between all ranks). Collective; growing moves the
/// claim words, which the next request resets.
void reduce_command::grow_slots() {
  const bool holds = !root_ || claims_between_all(s_);
  s_.host.reserve(holds ? slot_need(*layout_, first_, last_) : 0, s_.comm,
                  most_rank_values(*layout_, split_, s_.size));
}

void serve_reduce(rank_context& s, reduce_state& reduce, const wire::request& v, const double* shared) {
  reduce_command(s, reduce, v, shared).run();
}

}  // namespace maprect::detail
