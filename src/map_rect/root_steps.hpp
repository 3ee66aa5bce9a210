#pragma once
// The root's side of a map_rect call, in the steps that its commands share: the request, the parameters out,
// the root's own jobs, the answers in, and the layout of a call site's results. Each command is one sequence of
// steps that every rank runs: first_call.cpp and steady_call.cpp (with the claims between all ranks of a
// host in host_claims.cpp); root_call.cpp chooses among them, and the worker's serve loop (src/worker/serve.cpp)
// dispatches to them. A worker's parts of the steps are src/worker/worker_steps.hpp.
#include <algorithm>
#include <chrono>
#include <maprect/ad/inline.hpp>
#include <maprect/detail/job_error.hpp>
#include <maprect/detail/job_runner.hpp>
#include <maprect/detail/message_limits.hpp>
#include <utility>
#include <vector>

#include "src/balance/claims_broker.hpp"
#include "src/map_rect/claimed_jobs.hpp"
#include "src/protocol/call_timeout.hpp"
#include "src/map_rect/map_rect_state.hpp"
#include "src/protocol/exchange.hpp"

namespace maprect::detail {

using wire::command;

/// The largest count one MPI message takes.
constexpr long long int_max = max_message_values;

/// map_rect's side of the cluster whose root serves this thread, while it serves (live_cluster_root: the cluster).
extern thread_local map_rect_context* live_root;

/// Status and failing job of one rank's contribution.
struct rank_status {
  wire::status code = wire::status::ok;
  int job = -1;  ///< global index of the failing job
};

/// How a steady-state call ended.
enum class steady_outcome {
  done,            ///< the results are in
  data_changed,    ///< the workers' rows differ from the caller's: plan the call again with the new data
  counts_changed,  ///< a job returned a different number of outputs than planned: plan the call again
};

/// Step 1 on the root: numbers and broadcasts a request, with the shared parameters of a call. Inline: a call
/// of its own cost a steady call about 20 instructions.
MAPRECT_ALWAYS_INLINE void send_request(map_rect_context& s, wire::request& h, const double* shared = nullptr) {
  h.sequence = ++s.sequence;
  exchange_request(s.ends(), h, s.request, shared, s.shared_rest);
  const bool call = h.cmd == command::call || h.cmd == command::first_call || h.cmd == command::deferred_call;
  s.last_traffic.sent += request_bytes(s.ends(), call ? h.n_shared : 0);
}

/// Whether a steady call of `site` moves its data through the host slots rather than messages.
inline bool via_slots(const map_rect_context& s, const root_site& site) {
  return s.host.slots.usable() && site.slot_doubles <= s.host.slots.capacity();
}

/// Whether the steady calls of `site` claim through host memory: every rank holds every row, and the call's
/// parameters and blocks fit the slots.
inline bool claims_in_memory(const map_rect_context& s, const root_site& site) {
  return site.rows_everywhere && via_slots(s, site);
}

/// Whether the steady call under way went by claims by message (src/balance/claims_broker.hpp), as its request
/// said.
inline bool claims_this_call(const map_rect_context& s) { return s.call.route == wire::call_route::claims; }

/// Where worker r's blocks of a steady call start in its slot: behind its job parameters.
inline const double* slot_blocks(const map_rect_context& s, const root_site& site, const call_request& req, int r) {
  return s.host.slots.slot(r) + slot_blocks_at(req.n_job_params, site.plan.jobs(r));
}

/// Where worker r's blocks start in the root's answer buffer: behind its status doubles. The blocks of the
/// jobs other ranks claimed from it land there too.
template <class Double>  // double, or const double
inline Double* answer_blocks(Double* buffer, const root_site& site, int r) {
  return buffer + site.results.displs[r] + wire::status_doubles;
}

/// Call `req` as an abort's message names it.
inline call_name name_of(const call_request& req) { return {"", req.call_id}; }

/// Runs `body`, the root's part of call `req`. A failure that leaves the workers inside the call aborts the MPI
/// job (abort_mid_call): no later call could find them in step. Any other failure clears the call's profile
/// and propagates.
template <class Body>
call_result run_root_call(map_rect_context& s, const call_request& req, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    if (s.mid_call) abort_mid_call(s, name_of(req), e.what());
    s.last_profile = {};
    throw;
  } catch (...) {
    if (s.mid_call) abort_mid_call(s, name_of(req), "unknown exception");
    s.last_profile = {};
    throw;
  }
}

/// The leading jobs whose outputs the front door made itself: the root's own, when it runs them in place.
inline int jobs_made(const call_request& req, const root_site& site) {
  return req.session != nullptr ? site.plan.root_jobs : 0;
}

/// What the root did in a steady call while the workers ran: its data check, its own jobs, the jobs it took
/// over, and when each ended.
struct root_part {
  bool data_unchanged = true;
  rank_status status;        ///< of the root's own jobs
  job_error error;           ///< their failure, if any
  lowest_failure taken_failed;  ///< the first failure among the other ranks' jobs it ran
  int taken = 0;             ///< workers' jobs the root ran
  long long taken_doubles = 0;  ///< by claims between all ranks: the blocks of the other ranks' jobs it ran
  std::chrono::steady_clock::time_point checked, own_done, taken_done;
  int checked_rows = 0;      ///< workers' rows compared with the root's copy
  bool own_untimed = false;  ///< the root's own jobs ran in place without a team: own_done times them
  int own_end = 0;           ///< claims by message: where the root's own jobs ended (workers ran the rest)
  lowest_failure stolen;     ///< claims by message: the first failure among the batches workers ran
  claims_traffic claimed;    ///< claims by message: what they moved
};

// ---- the request, the parameters out and the answers in (root_steps.cpp) ----

/// The header of a request about call `req` (sizes and kinds), with command `cmd`.
wire::request header_of(command cmd, const call_request& req, int row_real, int row_int);

/// A request that carries no call: fetch_error, release.
wire::request bare_request(command cmd, int arg);

/// With a timeout: the call's clock starts now and, unless the workers report in host memory, a receive is
/// posted for each worker's "done" message. Without one the deadline is never.
void start_timeout(map_rect_context& s, bool done_messages = true);

/// The gather that carries a call's answers (root 0, in place). With a timeout, at the deadline the ranks
/// whose "done" message has not come are named and the job is aborted.
void gather_answers(map_rect_context& s, const call_request& req, const collective& how, MPI_Datatype type,
                    void* recvbuf, const int* counts, const int* displs);

/// Writes each worker's job parameters into its slot, where it reads them once the request arrives.
void place_own(map_rect_context& s, const root_site& site, const call_request& req);

/// Step 3 of a call by messages: each worker's job parameters, scattered.
void scatter_own(map_rect_context& s, const root_site& site, const call_request& req);
/// Root, every call that scatters: posts the job parameters of every worker's jobs (`layout`'s, rank 0's
/// staying) by `how`; returns the bytes it sent.
std::uint64_t post_worker_parameters(const map_rect_context& s, const collective& how, const call_request& req,
                                     const rank_layout& layout);

/// The gather of a call whose blocks wait in the host slots, behind each worker's parameters: only the
/// workers' status doubles come by message, into `buffer`. The blocks stay in the slots until the next call.
void gather_through_slots(map_rect_context& s, const root_site& site, const call_request& req, double* buffer);

/// The answers of a call through host memory: waits, as the policy says, until every worker has finished,
/// and copies each one's report into its status doubles in `buffer`. Nothing is received: the blocks stay
/// in the slots until the next call. Past the call's deadline, names the late workers and aborts.
void collect_reports(map_rect_context& s, const call_request& req, double* buffer, const int* displs);

/// Fetches the message of `rank`'s failure and throws it on the root.
[[noreturn]] void throw_remote_error(map_rect_context& s, int rank, int job);

/// Picks how the call site's scatter and gathers run (MAPRECT_COLLECTIVES, or the cost model under auto),
/// when its layout changes: from its job parameters, the `back_doubles` its workers answer per call and the
/// largest worker's answer `chunk_back` (a first call's: an estimate). Sets chunk_out and chunk_back.
void choose_site_collectives(const map_rect_context& s, root_site& site, long long back_doubles, int chunk_back);

/// The steady-state layout of a call site from its plan and output counts: each rank's status and blocks in
/// the answer buffer, where each job's blocks start, and the host slots' size. Collective (the slots grow).
void lay_out_results(map_rect_context& s, root_site& site);

// ---- the root's own jobs (own_jobs.cpp) ----

/// Whether the root runs its own jobs on its team: with a team of more than one thread, jobs to share, and
/// no message stream (which the threads would share).
bool own_jobs_on_team(const map_rect_context& s, const call_request& req, int n);

/// One batch of the root's own jobs, `got`: in place (`in_place`: the front door makes their outputs as they
/// end), else into s.call.own_out on the root's team if it has one.
void run_own_batch(map_rect_context& s, const call_request& req, job_range got, bool in_place, int& cursor);

/// Runs the root's own chunk (jobs [0, n)): in place when the front door makes its outputs, else into
/// s.call.own_out after `status_slots` reserved doubles. In place, `poller` (if not null) is polled between jobs.
/// On a team the jobs run into s.call.own_out in either case; the front door's output nodes are then made
/// from those blocks on this thread, in job order (its in-place run of no jobs first drops what an earlier
/// run of this call made).
rank_status run_own_chunk(map_rect_context& s, const call_request& req, int n, int status_slots, job_error& error,
                          job_poller* poller = nullptr);

/// By claims by message: runs the root's own jobs, [0, n), in batches from the front as a worker runs
/// its chunk, answering the workers' asks for them between batches (`own`, reset by the caller) and asking
/// worker 1 ahead (`early`). Jobs granted from the back are not run here: own.jobs().end() is where the
/// root's own end once the call's claims are done. Without the front door's in-place outputs, the blocks go
/// to s.call.own_out behind `status_doubles` slots and the front door's nodes are made from them, in job order.
rank_status run_own_claimable(map_rect_context& s, const root_site& site, const call_request& req,
                              claims_broker& own, job_error& error);

// ---- the commands ----

/// Whether call `req` has the sizes and kinds `site` was planned for.
bool same_shape(const root_site& site, const call_request& req, int row_real, int row_int);

/// Whether the workers' rows must be sent anew before call `req`: a job_data other than the one they
/// hold, or rows the caller may change where they hold a job_data's (the root has no copy to check).
inline bool other_data(const root_site& site, const call_request& req) { return req.data_id != site.data_id; }

/// True when the workers still hold the caller's rows. Rows of a job_data cannot change, and a call of
/// another job_data was planned anew (plan_or_call), so they need no check; rows the caller may change are
/// compared with the root's copy. `checked_rows` counts the rows compared.
bool workers_data_current(map_rect_context& s, const root_site& site, const call_request& req, int& checked_rows);

/// First call of a call site (or of new data or sizes, or changed output counts): ship each worker its rows,
/// run, learn the output counts, gather the blocks, and keep the plan for steady-state calls.
call_result first_call(map_rect_context& s, root_site& site, const call_request& req, int row_real, int row_int,
                       int root_jobs);

/// The local job before which worker r's jobs of this call end: other ranks ran the rest of its chunk, by
/// claims by message (known once the claims are over) or between all ranks of the host (final once every
/// rank has stopped claiming).
int worker_end(const map_rect_context& s, const root_site& site, int r);

// ---- claims between all ranks of one host (host_claims.cpp) ----

/// Whether a steady call of `site` by `route` goes by claims between all ranks of the host: every rank holds
/// every row, and the call's data go through host memory.
inline bool claims_everywhere(const root_site& site, wire::call_route route) {
  return site.rows_everywhere && route == wire::call_route::memory;
}

/// The root's part of a call by claims between all ranks: its own jobs from the front of its chunk, then
/// batches claimed from the back of the rank with the most unclaimed jobs, with the output nodes made in job
/// order as chunks complete when `during`. With stale workers' rows it runs nothing and stops the call.
void run_root_claims(map_rect_context& s, const root_site& site, const call_request& req, root_part& part, bool during);

/// Makes the output nodes of a call by claims between all ranks, in job order, up to the first chunk not yet
/// complete (its owner still running, or a claimed batch of it still out). Returns true once all are made;
/// stops for good (s.call.making_stopped) once a job has failed or an output count changed.
bool make_nodes_in_order(map_rect_context& s, const root_site& site, const call_request& req);

/// The traffic of a call by claims between all ranks: every block of a job the root did not run reached it
/// through host memory, whichever rank ran it.
void count_claimed_traffic(map_rect_context& s, const root_site& site, const root_part& part);

/// Who ran which jobs in a call by claims between all ranks, for last_call_balance().
void report_claimed_balance(map_rect_context& s, const root_part& part);

/// Where the blocks of a call by claims between all ranks are, in job order, into s.call.segments: the root's
/// own in s.call.own_out up to `own_end`, every other job's in its owner's slot.
void locate_claimed_blocks(map_rect_context& s, const root_site& site, int own_end);

/// A steady-state call: request and parameters out, the root's part, the answers in; then the result's
/// segments, with every output node already made when they were made during the call.
steady_outcome steady_call(map_rect_context& s, root_site& site, const call_request& req, call_result& result);

/// The forward pass of a deferred call (deferred_call.cpp): the first_call command's steps with its jobs on kept
/// tapes, the root's in `keep`; the rows go first when `rows_follow`, planned with `root_jobs` of the root's.
/// Returns one value per output, in job order.
call_result deferred_forward(map_rect_context& s, root_site& site, const call_request& req, int row_real, int row_int,
                             int root_jobs, bool rows_follow, deferred_call& keep);

/// The forward pass of a deferred call by claims by message (deferred_claims.cpp), its rows held and its sizes
/// those of the site's last deferred call: the first failure thrown; false when an output count differs (the
/// call runs again by the static split), else true with one value per output in `result`.
bool deferred_forward_claimed(map_rect_context& s, root_site& site, const call_request& req, deferred_call& keep,
                              call_result& result);

/// Numbers the deferred call `keep` (its remote_id) as the next the root sends, and returns how many older
/// ones the root still keeps: the workers drop what they keep of the rest.
int kept_calls_back(map_rect_context& s, deferred_call& keep);

/// The lengths of call `req`'s x_r and x_i rows; throws when all rows of either would not fit one message.
std::pair<int, int> row_sizes(const call_request& req);

/// The root's deferred backend while its cluster serves (remote_deferred_backend).
call_result root_deferred_call(const call_request& req, deferred_call& keep);

/// The reverse pass of a deferred call over the cluster (remote_deferred_sweep, reverse_call.cpp): the reverse
/// command, then each job's parameters' adjoints added to the caller's nodes in job order.
void sweep_on_cluster(deferred_call& call);

/// The root's map_rect backend while its cluster serves: plans a call site anew or runs a steady call.
call_result root_call(const call_request& req);

}  // namespace maprect::detail
