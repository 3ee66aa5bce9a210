// The root side of a reduce_sum call over the cluster: ship the call site's payload where the workers' copy
// differs, send the parameter values, run the root's own slices, gather every worker's blocks, and hand all
// blocks to the front door's fold in slice order (never a reduction by MPI, which may reorder the sums).
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <maprect/detail/message_limits.hpp>
#include <maprect/detail/reduce_call.hpp>
#include <maprect/detail/reduce_error.hpp>
#include <stdexcept>
#include <string>

#include "src/cluster_state.hpp"
#include "src/exchange.hpp"

namespace maprect::detail {

namespace {

/// Throws std::invalid_argument when `count` values of call `call_id`'s `what` do not fit one MPI message.
void check_fits(int call_id, long long count, const char* what) {
  if (!fits_one_message(count))
    throw std::invalid_argument("reduce_sum: call id " + std::to_string(call_id) + ": " + what + " holds " +
                                std::to_string(count) + " values, more than the 2^31-1 one MPI message can carry");
}

/// The root cannot take back messages it has sent: if it fails between a call's collectives, the workers
/// would wait for the rest forever. The job ends instead, with the reason.
[[noreturn]] void abort_mid_call(cluster_state& s, int call_id, const char* what) {
  std::fprintf(stderr, "maprect: the root failed during reduce_sum call id %d, request %llu (%s); aborting the job\n",
               call_id, static_cast<unsigned long long>(s.sequence), what);
  std::fflush(stderr);
  unguard_exit(s);  // this exit is deliberate and explained
  MPI_Abort(s.comm, 1);
  std::abort();  // MPI_Abort does not return
}

/// Runs `step` (messages the workers take part in) and aborts the job if the root fails inside it.
template <class Step>
void between_collectives(cluster_state& s, int call_id, Step&& step) {
  s.root.mid_call = true;
  try {
    step();
  } catch (const std::exception& e) {
    abort_mid_call(s, call_id, e.what());
  } catch (...) {
    abort_mid_call(s, call_id, "unknown exception");
  }
  s.root.mid_call = false;
}

/// Step 1 on the root: numbers and broadcasts a request, with `shared` (h.n_shared values) if not null.
void send_request(cluster_state& s, wire::request h, const double* shared) {
  h.sequence = ++s.sequence;
  exchange_request(s.ends(), h, s.request, shared, s.call.shared_rest);
  s.root.last_traffic.sent += request_bytes(s.ends(), shared != nullptr ? h.n_shared : 0);
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
    const long long answer = wire::status_doubles + static_cast<long long>(layout.block_at(last) - layout.block_at(first));
    check_fits(req.call_id, at + answer, "the blocks of the workers' slices");
    b.answers.displs[r] = static_cast<int>(at);
    b.answers.counts[r] = static_cast<int>(answer);
    at += answer;
  }
  b.received.resize(static_cast<std::size_t>(at));
  b.own.resize(layout.block_at(split.first(1)));
}

/// The payload this call ships, or null when the workers hold it: written only when they may lack it (the
/// call site's first call on this cluster, or changed data or shapes), shipped only when it differs.
const std::string* payload_to_ship(cluster_state& s, const reduce_request& req) {
  const reduce_root_site& site = s.root.reduce_sites[req.call_id];
  if (site.shipped && req.unchanged) return nullptr;
  const std::string& payload = req.payload(req.self);
  if (site.shipped && site.payload == payload) return nullptr;
  check_fits(req.call_id, static_cast<long long>(payload.size()), "the call site's data (bytes)");
  return &payload;
}

/// Steps 1 to 3 on the root: the request, the payload if `payload` is not null, the sliced values.
void post_call(cluster_state& s, const reduce_request& req, const std::string* payload) {
  const reduce_layout& layout = *req.layout;
  reduce_root_site& site = s.root.reduce_sites[req.call_id];
  const bool ship = payload != nullptr;
  const int bytes = ship ? static_cast<int>(payload->size()) : 0;
  const wire::reduce_header h{req.call_id, static_cast<int>(layout.n_shared()), layout.plan().n_terms,
                              layout.plan().grainsize, bytes};
  send_request(s, h.to_request(), req.shared);
  if (ship) {
    site.shipped = false;  // until the workers hold it
    site.payload = *payload;
    exchange_payload(s.ends(), site.payload, bytes);
    site.shipped = true;
    s.root.last_traffic.sent += static_cast<std::uint64_t>(bytes) * static_cast<std::uint64_t>(s.size - 1);
  }
  if (layout.n_sliced() == 0) return;
  reduce_root_buffers& b = s.root.reduce;
  post_parameters(s.ends(), req.sliced, b.values, nullptr, 0);
  s.root.last_traffic.sent += sizeof(double) * (layout.n_sliced() - static_cast<std::size_t>(b.values.counts[0]));
}

/// Steps 4 and 5 on the root: its own slices, then every worker's answer. Returns the root's first failing
/// slice, its exception in `error`, or INT_MAX.
int run_and_collect(cluster_state& s, const reduce_request& req, const reduce_split& split, job_error& error) {
  reduce_root_buffers& b = s.root.reduce;
  const auto start = std::chrono::steady_clock::now();
  const int failed = req.run_own(req.self, 0, split.first(1), b.own.data(), error);
  s.root.last_profile.root_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MPI_Request unused = MPI_REQUEST_NULL;
  collect_answers(s.ends(), MPI_DOUBLE, nullptr, 0, b.received.data(), b.answers.counts.data(),
                  b.answers.displs.data(), std::chrono::steady_clock::time_point::max(), unused);
  s.root.last_traffic.received += sizeof(double) * b.received.size();
  return failed;
}

/// Step 6: throws the first failing slice in slice order, if any: the root's own (its slices come first),
/// else that of the first worker in rank order whose slices failed, fetched from it.
void throw_first_failure(cluster_state& s, const reduce_request& req, int own_failed, const job_error& own_error) {
  const slice_plan& plan = req.layout->plan();
  if (own_failed != INT_MAX) throw_slice_error(own_error, req.call_id, plan, own_failed, 0);
  const reduce_root_buffers& b = s.root.reduce;
  for (int r = 1; r < s.size; ++r) {
    const double* status = b.received.data() + b.answers.displs[r];
    if (static_cast<wire::status>(static_cast<int>(status[0])) != wire::status::failed) continue;
    job_error e;
    between_collectives(s, req.call_id, [&] {
      wire::request h;
      h.cmd = wire::command::fetch_error;
      h.arg = r;
      send_request(s, h, nullptr);
      exchange_error(s.ends(), r, e);
    });
    throw_slice_error(e, req.call_id, plan, static_cast<int>(status[1]), r);
  }
}

/// Hands every slice's block to the front door's fold, in slice order: the root's, then each worker's.
void fold_in_slice_order(const cluster_state& s, const reduce_request& req, const reduce_split& split) {
  const reduce_layout& layout = *req.layout;
  const reduce_root_buffers& b = s.root.reduce;
  for (int slice = 0; slice < split.first(1); ++slice) req.fold(req.self, slice, b.own.data() + layout.block_at(slice));
  for (int r = 1; r < s.size; ++r) {
    const double* blocks = b.received.data() + b.answers.displs[r] + wire::status_doubles;
    const std::size_t base = layout.block_at(split.first(r));
    for (int slice = split.first(r); slice < split.first(r + 1); ++slice)
      req.fold(req.self, slice, blocks + (layout.block_at(slice) - base));
  }
}

}  // namespace

void reduce_on_cluster(const reduce_request& req) {
  cluster_state* live = live_cluster_root();
  if (live == nullptr) throw std::logic_error("reduce_sum: no cluster serves this thread");
  cluster_state& s = *live;
  s.root.last_traffic = {};
  s.root.last_profile = {};
  s.root.last_profile.threads = s.team != nullptr ? s.team->size() : 1;
  const reduce_split split{req.layout->plan().n_slices(), s.size};
  lay_out_call(s, req, split);
  s.root.last_profile.root_jobs = split.first(1);
  const std::string* payload = payload_to_ship(s, req);
  job_error own_error;
  int own_failed = INT_MAX;
  between_collectives(s, req.call_id, [&] {
    post_call(s, req, payload);
    own_failed = run_and_collect(s, req, split, own_error);
  });
  throw_first_failure(s, req, own_failed, own_error);
  fold_in_slice_order(s, req, split);
}

}  // namespace maprect::detail
