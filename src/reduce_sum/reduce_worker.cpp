// The worker side of a reduce_sum call: keep the call site's payload loaded into the runner its key names,
// receive this rank's sliced values, run its slices on its team (under claims in host memory, those it
// claims, front first; other ranks run the others), and send one message of status and blocks. Under claims
// by message (MAPRECT_BALANCE=hosts, or auto where the ranks cannot claim in host memory)
// the claims engine runs steps 4 and 5 (src/reduce_sum/claimed_slices.cpp): the root may grant this rank's
// unstarted slices to any other, and this rank others'.
// Every branch joins exactly the collectives the root joins (src/reduce_sum/reduce_root.cpp).
#include <boost/archive/binary_iarchive.hpp>
#include <algorithm>
#include <chrono>
#include <climits>
#include <maprect/detail/reduce_site.hpp>
#include <sstream>
#include <string>

#include "src/cluster/cluster_state.hpp"
#include "src/protocol/exchange.hpp"
#include "src/reduce_sum/claimed_slices.hpp"
#include "src/cluster/call_timeout.hpp"
#include "src/reduce_sum/reduce_host_claims.hpp"

namespace maprect::detail {

namespace {

/// Step 2 on a worker: receives a new payload, reads its key and term offsets, and loads the rest into a
/// runner of that key; without one (or if the data cannot be read) records why, for the slices' error.
void load_payload(cluster_state& s, reduce_worker_site& site, int bytes) {
  exchange_payload(s.ends(), site.payload, bytes);
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

/// Step 3 on a worker: the values of its slices' terms, at their places as on the root: from the start of its
/// host slot, or by message.
void receive_values(cluster_state& s, reduce_worker_site& site, int first, int last, bool via_slots,
                    const collective& how) {
  const reduce_layout& layout = site.layout;
  site.sliced.resize(layout.n_sliced());
  if (layout.n_sliced() == 0) return;
  const std::size_t at = layout.slice_values_at(first);
  const int count = static_cast<int>(layout.slice_values_at(last) - at);
  if (via_slots) std::copy_n(s.host.slots.slot(s.rank), count, site.sliced.data() + at);
  else post_parameters(s.ends(), how, nullptr, {}, site.sliced.data() + at, count);
}

/// Doubles this rank's slot needs for its slices [first, last): their values, then its status and blocks.
long long slot_need(const reduce_layout& layout, int first, int last) {
  return static_cast<long long>(layout.slice_values_at(last) - layout.slice_values_at(first)) +
         wire::status_doubles + static_cast<long long>(layout.block_at(last) - layout.block_at(first));
}

/// Runs slices [a, b) of this rank's range [first, ...) into their places in `answer` (behind the status).
/// Returns the first failing slice, its exception in `error`, or INT_MAX.
int run_range(cluster_state& s, reduce_worker_site& site, const double* shared, double* answer, int first, int a,
              int b, job_error& error) {
  if (a >= b) return INT_MAX;
  if (site.runner == nullptr) {
    error = {error_type::invalid_argument, site.missing};
    return a;
  }
  const reduce_layout& layout = site.layout;
  double* blocks = answer + wire::status_doubles + (layout.block_at(a) - layout.block_at(first));
  return site.runner->run(layout, a, b, shared, site.sliced.data(), s.team.get(), blocks, error);
}

/// Step 4 on a worker: runs slices [first, last) into `answer` behind the status; under claims in host memory
/// (`claiming`), those it claims, front first, until none are left (after a failure it claims the rest, so
/// that no other rank runs them). Sets `end` to where its slices end (others ran the rest). Returns the first
/// failing slice, its error kept for fetch_error, or INT_MAX.
int run_slices(cluster_state& s, reduce_worker_site& site, const double* shared, double* answer, int first, int last,
               bool claiming, int& end) {
  job_error error;
  int failed = INT_MAX;
  end = last;
  if (!claiming) {
    failed = run_range(s, site, shared, answer, first, first, last, error);
  } else {
    end = first;
    for (job_range got = s.host.claims.claim_front(); !got.empty(); got = s.host.claims.claim_front()) {
      end = first + got.end;
      failed = run_range(s, site, shared, answer, first, first + got.begin, first + got.end, error);
      if (failed == INT_MAX) continue;
      end = first + s.host.claims.claim_rest();
      break;
    }
  }
  if (failed != INT_MAX) s.worker.last_error = error;
  return failed;
}

/// Step 5 by message: the status and the blocks of slices [first, end) this rank ran, as the root expects
/// once the claims are made; through the slot, the status alone tells the root that the blocks are there.
void send_answer(cluster_state& s, const reduce_worker_site& site, const double* answer, int first, int end,
                 const collective& how, bool via_slots) {
  MPI_Request done = announce_done(s);
  const int doubles = via_slots ? wire::status_doubles
                                : wire::status_doubles +
                                      static_cast<int>(site.layout.block_at(end) - site.layout.block_at(first));
  if (via_slots) s.host.slots.sync();
  MPI_Request unused = MPI_REQUEST_NULL;
  collect_answers(s.ends(), how, MPI_DOUBLE, answer, doubles, nullptr, nullptr, nullptr,
                  std::chrono::steady_clock::time_point::max(), unused);
  finish_done(s, done);
}

}  // namespace

void serve_reduce(cluster_state& s, const wire::request& v, const double* shared) {
  const wire::reduce_header h = wire::reduce_header::of(v);
  reduce_worker_site& site = s.worker.reduce_sites[h.call_id];
  if (h.payload_bytes > 0) load_payload(s, site, h.payload_bytes);
  site.layout.assign_offsets(slice_plan{h.n_terms, h.grainsize}, site.term_offsets,
                             static_cast<std::size_t>(h.n_shared));
  const reduce_split split{site.layout.plan().n_slices(), s.size, h.root_slices};
  const int first = split.first(s.rank), last = split.first(s.rank + 1);
  const bool via_slots = h.route != wire::call_route::messages;
  if (via_slots) s.host.slots.sync();
  receive_values(s, site, first, last, via_slots, named_collective(v, v.chunk_out));
  if (claims_by_message(s.settings, s.size, h.route)) {  // answers by message (src/reduce_sum/claimed_slices.cpp)
    serve_reduce_claims(s, site, shared, split);
    if (h.reserve_slots) s.host.reserve(slot_need(site.layout, first, last), s.comm);
    return;
  }
  double* answer = nullptr;
  if (via_slots) {
    answer = s.host.slots.slot(s.rank) + (site.layout.slice_values_at(last) - site.layout.slice_values_at(first));
  } else {
    site.answer.assign(wire::status_doubles + site.layout.block_at(last) - site.layout.block_at(first), 0.0);
    answer = site.answer.data();
  }
  const auto start = std::chrono::steady_clock::now();
  int end = last;
  const bool in_memory = h.route == wire::call_route::memory && s.host.claims.shared_with(0);
  int failed = run_slices(s, site, shared, answer, first, last, in_memory, end);
  int taken = 0;
  if (in_memory) {  // claims between all ranks
    if (failed != INT_MAX) s.host.claims.note_failure(failed);
    taken = serve_reduce_claims_in_memory(s, site, shared, split, failed);
  }
  answer[0] = static_cast<int>(failed == INT_MAX ? wire::status::ok : wire::status::failed);
  answer[1] = failed == INT_MAX ? -1 : failed;
  answer[2] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (h.route == wire::call_route::memory) {
    // The status and blocks are in the slot; the root reads them once it sees this rank finished.
    s.host.claims.finish({static_cast<int>(answer[0]), static_cast<int>(answer[1]), answer[2], 0.0, 0.0, taken});
  } else {
    send_answer(s, site, answer, first, end, named_collective(v, via_slots ? wire::status_doubles : v.chunk_back),
                via_slots);
  }
  // After a new payload or split the slots grow to what this rank's values and answer need, for the next calls.
  if (h.reserve_slots) s.host.reserve(slot_need(site.layout, first, last), s.comm);
}

}  // namespace maprect::detail
