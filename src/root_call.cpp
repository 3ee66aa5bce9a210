// The root side of a call: plan a call site, ship its data once, then per call broadcast the header and
// shared parameters, scatter the job parameters, run the root's own chunk, gather the blocks.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <maprect/ad/inline.hpp>
#include <maprect/detail/job_runner.hpp>
#include <maprect/detail/message_limits.hpp>
#include <stdexcept>
#include <string>
#include <time.h>

#include "src/cluster_state.hpp"
#include "src/data_check.hpp"
#include "src/exchange.hpp"
#include "src/steal.hpp"
#include <maprect/detail/job_error.hpp>

namespace maprect::detail {

namespace {

using wire::command;
constexpr long long int_max = max_message_values;

thread_local cluster_state* live_root = nullptr;  // the cluster whose root side serves this thread

/// Tells the CPU that this is a wait loop on memory another core writes.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Status and failing job of one rank's contribution.
struct rank_status {
  wire::status code = wire::status::ok;
  int job = -1;  ///< global index of the failing job
};

/// The header of a request about call `req` (sizes and kinds), with command `cmd`.
wire::request header_of(command cmd, const call_request& req, int row_real, int row_int) {
  wire::request h;
  h.cmd = cmd;
  h.call_id = req.call_id;
  h.kinds = static_cast<int>(req.kinds);
  h.n_shared = req.n_shared;
  h.n_job = req.n_job_params;
  h.n_jobs = req.n_jobs;
  h.row_real = row_real;
  h.row_int = row_int;
  return h;
}

/// Step 1 on the root: numbers and broadcasts a request, with the shared parameters of a call. Inline: a call
/// of its own cost a steady call about 20 instructions.
MAPRECT_ALWAYS_INLINE void send_request(cluster_state& s, wire::request& h, const double* shared = nullptr) {
  h.sequence = ++s.sequence;
  exchange_request(s.ends(), h, s.request, shared, s.call.shared_rest);
  const bool call = h.cmd == command::call || h.cmd == command::first_call;
  s.root.last_traffic.sent += request_bytes(s.ends(), call ? h.n_shared : 0);
}

/// A request that carries no call: fetch_error, release.
wire::request bare_request(command cmd, int arg) {
  wire::request h;
  h.cmd = cmd;
  h.arg = arg;
  return h;
}

/// With a timeout: the call's clock starts now and, unless the workers report in host memory, a receive is
/// posted for each worker's "done" message. Without one the deadline is never.
void start_timeout(cluster_state& s, bool done_messages = true) {
  if (s.settings.timeout <= 0) {
    s.call.deadline = std::chrono::steady_clock::time_point::max();
    return;
  }
  s.call.deadline = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s.settings.timeout));
  if (done_messages)
    for (int r = 1; r < s.size; ++r) MPI_Irecv(nullptr, 0, MPI_BYTE, r, done_tag, s.comm, &s.root.done[r]);
}

/// Names the workers that have not answered call `req` within the timeout, and aborts the job.
[[noreturn]] void abort_late(cluster_state& s, const call_request& req, const std::vector<int>& late) {
  for (int q : late)
    std::fprintf(stderr, "maprect: rank %d did not answer call id %d within %g s (request %llu, host %s)\n", q,
                 req.call_id, s.settings.timeout, static_cast<unsigned long long>(s.sequence), host_of(s.ranks, q));
  std::fprintf(stderr, "maprect: aborting the job (MAPRECT_TIMEOUT=%g)\n", s.settings.timeout);
  std::fflush(stderr);
  unguard_exit(s);  // this exit is deliberate and explained
  MPI_Abort(s.comm, 1);
  std::abort();  // MPI_Abort does not return
}

/// The gather that carries a call's answers (root 0, in place). With a timeout, at the deadline the ranks
/// whose "done" message has not come are named and the job is aborted.
void gather_answers(cluster_state& s, const call_request& req, const collective& how, MPI_Datatype type, void* recvbuf,
                    const int* counts, const int* displs) {
  MPI_Request pending = MPI_REQUEST_NULL;
  const auto deadline = s.settings.timeout > 0 ? s.call.deadline : std::chrono::steady_clock::time_point::max();
  if (!collect_answers(s.ends(), how, type, nullptr, 0, recvbuf, counts, displs, deadline, pending)) {
    std::vector<int> late;
    for (int q = 1; q < s.size; ++q) {
      int answered = 0;
      MPI_Test(&s.root.done[q], &answered, MPI_STATUS_IGNORE);
      if (!answered) late.push_back(q);
    }
    if (!late.empty()) abort_late(s, req, late);
    wait(pending, s.settings.policy);  // every worker has answered (the root's own jobs were the slow part)
  }
  note_gather(s);
  if (s.settings.timeout > 0) MPI_Waitall(s.size - 1, s.root.done.data() + 1, MPI_STATUSES_IGNORE);
}

/// Whether a steady call of `site` moves its data through the host slots rather than messages.
bool via_slots(const cluster_state& s, const root_site& site) {
  return s.host.slots.usable() && site.slot_doubles <= s.host.slots.capacity();
}

/// Whether this steady call of `site` goes by claims between any two ranks (src/steal.hpp): always under
/// MAPRECT_BALANCE=hosts; under auto across hosts, as the site's chooser says (it changes only between calls).
bool claims_this_call(const cluster_state& s, const root_site& site) {
  return s.settings.steal || (s.settings.choose_claims && site.claims.claims());
}

/// Where worker r's blocks of a steady call start in its slot: behind its job parameters.
const double* slot_blocks(const cluster_state& s, const root_site& site, const call_request& req, int r) {
  return s.host.slots.slot(r) + slot_blocks_at(req.n_job_params, site.plan.jobs(r));
}

/// Where worker r's blocks start in the root's answer buffer: behind its status doubles. The blocks of the
/// jobs the root takes over from it land there too.
template <class Double>  // double, or const double
Double* answer_blocks(Double* buffer, const root_site& site, int r) {
  return buffer + site.results.displs[r] + wire::status_doubles;
}

/// Writes each worker's job parameters into its slot, where it reads them once the request arrives.
void place_own(cluster_state& s, const root_site& site, const call_request& req) {
  for (int r = 1; r < s.size; ++r) {
    const auto n = static_cast<std::size_t>(slot_blocks_at(req.n_job_params, site.plan.jobs(r)));
    std::copy_n(req.job_params + static_cast<std::ptrdiff_t>(site.plan.first(r)) * req.n_job_params, n, s.host.slots.slot(r));
    s.root.last_traffic.sent += sizeof(double) * n;
    s.root.last_traffic.through_memory += sizeof(double) * n;
  }
  s.host.slots.sync();
}

/// The gather of a call whose blocks wait in the host slots, behind each worker's parameters: only the
/// workers' status doubles come by message, into `buffer`. The blocks stay in the slots until the next call.
void gather_through_slots(cluster_state& s, const root_site& site, const call_request& req, double* buffer) {
  s.call.status_counts.assign(static_cast<std::size_t>(s.size), wire::status_doubles);
  gather_answers(s, req, {site.collective, wire::status_doubles}, MPI_DOUBLE, buffer, s.call.status_counts.data(),
                 site.results.displs.data());
  s.host.slots.sync();
  for (int r = 1; r < s.size; ++r) {
    const int blocks = s.call.answer_counts[r] - wire::status_doubles;
    s.root.last_traffic.through_memory += sizeof(double) * static_cast<std::uint64_t>(blocks);
  }
}

/// The answers of a call through host memory: waits, as the policy says, until every worker has finished,
/// and copies each one's report into its status doubles in `buffer`. Nothing is received: the blocks stay
/// in the slots until the next call. Past the call's deadline, names the late workers and aborts.
void collect_reports(cluster_state& s, const call_request& req, double* buffer, const int* displs) {
  for (int r = 1; r < s.size; ++r) {
    if (!await_finished(s.host.claims, r, s.settings.policy, s.call.deadline))
      abort_late(s, req, unfinished(s.host.claims, s.size));
    const worker_report report = s.host.claims.report(r);
    double* status = buffer + displs[r];
    status[0] = report.code;
    status[1] = report.job;
    status[2] = report.busy;
    status[3] = report.slowest_thread;
    status[4] = report.fastest_thread;
    s.root.last_traffic.through_memory += sizeof(double) * static_cast<std::uint64_t>(s.call.answer_counts[r]);
  }
}

void scatter_own(cluster_state& s, const root_site& site, const call_request& req) {
  if (static_cast<long long>(req.n_job_params) * req.n_jobs == 0) return;
  post_parameters(s.ends(), {site.collective, site.chunk_out}, req.job_params, site.param_layout, nullptr, 0);
  s.root.last_traffic.sent += sizeof(double) * static_cast<std::uint64_t>(static_cast<long long>(req.n_job_params) * req.n_jobs -
                                                                     site.param_layout.counts[0]);
}


double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Whether the root runs its own jobs on its team: with a team of more than one thread, jobs to share, and
/// no message stream (which the threads would share).
bool own_jobs_on_team(const cluster_state& s, const call_request& req, int n) {
  return s.team != nullptr && n > 1 && req.msgs == nullptr;
}

/// Runs the root's own chunk (jobs [0, n)): in place when the front door makes its outputs, else into
/// s.call.own_out after `status_slots` reserved doubles. In place, `poller` (if not null) is polled between jobs.
/// On a team the jobs run into s.call.own_out in either case; the front door's output nodes are then made
/// from those blocks on this thread, in job order (its in-place run of no jobs first drops what an earlier
/// run of this call made).
rank_status run_own_chunk(cluster_state& s, const call_request& req, int n, int status_slots, job_error& error,
                          job_poller* poller = nullptr) {
  s.call.own_out.assign(static_cast<std::size_t>(status_slots), 0.0);
  s.call.own_counts.assign(static_cast<std::size_t>(n), 0);
  int cursor = 0;
  try {
    if (req.session != nullptr && !own_jobs_on_team(s, req, n)) {
      // Without a team the call's own timing (root_part::own_untimed) is this thread's busy time.
      const bool timed = s.team != nullptr;
      const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      req.session->begin(n, s.call.own_counts.data(), cursor, poller);
      if (timed) s.chunks.add_alone(seconds_since(start));
    } else {
      if (req.session != nullptr) req.session->begin(0, s.call.own_counts.data(), cursor, nullptr);
      const chunk_input in = root_jobs_input(req, 0, n);
      s.chunks.run(s.team.get(), req.functor->run[static_cast<int>(req.kinds)], in, s.call.own_out,
                   s.call.own_counts.data(), cursor);
      if (req.session != nullptr)
        req.session->drain(s.call.own_out.data() + status_slots, 0, n, s.call.own_counts.data());
    }
  } catch (...) {
    error = current_job_error();
    return {wire::status::failed, cursor};
  }
  return {};
}

/// One batch of the root's own jobs, `got`: in place (`in_place`: the front door makes their outputs as they
/// end), else into s.call.own_out on the root's team if it has one.
void run_own_batch(cluster_state& s, const call_request& req, job_range got, bool in_place, int& cursor) {
  int* counts = s.call.own_counts.data();
  if (in_place) {
    req.session->run(got.begin, got.end, counts, cursor);
    return;
  }
  s.chunks.run(s.team.get(), req.functor->run[static_cast<int>(req.kinds)], root_jobs_input(req, got.begin, got.size()),
               s.call.own_out, counts + got.begin, cursor);
}

/// By claims (MAPRECT_BALANCE=hosts, or auto's choice): runs the root's own jobs, [0, n), in batches from the front as a worker runs
/// its chunk, answering the workers' asks for them between batches (`own`, reset by the caller) and asking
/// worker 1 ahead (`early`). Jobs granted from the back are not run here: own.jobs().end() is where the
/// root's own end once the call's claims are done. Without the front door's in-place outputs, the blocks go
/// to s.call.own_out behind `status_doubles` slots and the front door's nodes are made from them, in job order.
rank_status run_own_claimable(cluster_state& s, const root_site& site, const call_request& req, job_owner& own,
                              early_ask& early, job_error& error) {
  const int n = site.plan.root_jobs;
  s.call.own_out.assign(static_cast<std::size_t>(wire::status_doubles), 0.0);
  s.call.own_counts.assign(static_cast<std::size_t>(n), 0);
  const bool in_place = req.session != nullptr && !own_jobs_on_team(s, req, n);
  int first = 0, cursor = 0;
  try {
    if (req.session != nullptr) req.session->begin(0, s.call.own_counts.data(), cursor, nullptr);
    for (job_range got = own.jobs().take_front(); !got.empty(); got = own.jobs().take_front()) {
      first = got.begin;
      const auto start = std::chrono::steady_clock::now();
      run_own_batch(s, req, got, in_place, cursor);
      const double seconds = seconds_since(start);
      if (in_place && s.team != nullptr) s.chunks.add_alone(seconds);
      if (!std::equal(s.call.own_counts.begin() + got.begin, s.call.own_counts.begin() + got.end,
                      site.counts.begin() + got.begin)) {
        own.jobs().drop_rest();  // the blocks no longer fit the plan
        return {wire::status::counts_changed, -1};
      }
      own.timed_batch(seconds, got.size());
      own.serve_asks();
      early.after_batch(got.end, own.jobs().left());
    }
  } catch (...) {
    error = current_job_error();
    own.jobs().drop_rest();
    return {wire::status::failed, first + cursor};
  }
  if (req.session != nullptr && !in_place)
    req.session->drain(s.call.own_out.data() + wire::status_doubles, 0, own.jobs().end(), s.call.own_counts.data());
  return {};
}

/// Fetches the message of `rank`'s failure and throws it on the root.
[[noreturn]] void throw_remote_error(cluster_state& s, int rank, int job) {
  s.root.mid_call = true;
  wire::request fetch = bare_request(command::fetch_error, rank);
  send_request(s, fetch);
  job_error e;
  exchange_error(s.ends(), rank, e);
  s.root.mid_call = false;
  throw_job_error(e, job, rank);
}

/// The leading jobs whose outputs the front door made itself: the root's own, when it runs them in place.
int jobs_made(const call_request& req, const root_site& site) {
  return req.session != nullptr ? site.plan.root_jobs : 0;
}

bool same_shape(const root_site& site, const call_request& req, int row_real, int row_int) {
  return site.planned && site.kinds == req.kinds && site.n_shared == req.n_shared && site.n_job_params == req.n_job_params &&
         site.plan.n_jobs == req.n_jobs && site.row_real == row_real && site.row_int == row_int;
}

/// True when rows [begin, end) of the workers' (counted from the first worker job) equal the copy they hold.
bool rows_current(const root_site& site, const call_request& req, int begin, int end) {
  const std::size_t w = static_cast<std::size_t>(site.plan.root_jobs);
  const auto real_at = static_cast<std::size_t>(begin) * static_cast<std::size_t>(site.row_real);
  const auto int_at = static_cast<std::size_t>(begin) * static_cast<std::size_t>(site.row_int);
  return rows_equal(req.x_r->data() + w + begin, req.x_r->data() + w + end, site.x_r.data() + real_at,
                    site.row_real) &&
         rows_equal(req.x_i->data() + w + begin, req.x_i->data() + w + end, site.x_i.data() + int_at, site.row_int);
}

/// The data check's batches on the root's team: any batch that differs marks the whole check failed.
struct team_row_check {
  const root_site& site;
  const call_request& req;
  std::atomic<bool> differs{false};
  static void run(void* self, int, int begin, int end) {
    auto& c = *static_cast<team_row_check*>(self);
    if (!c.differs.load(std::memory_order_relaxed) && !rows_current(c.site, c.req, begin, end))
      c.differs.store(true, std::memory_order_relaxed);
  }
};

/// Values of the workers' rows below which one thread checks them: a team's dispatch (about a microsecond)
/// costs what comparing some thousands of values does.
constexpr long long team_check_values = 32768;

/// True when the workers' rows equal the copy they hold, bit for bit; on the root's team when they are many
/// (the rows are independent). The root's own jobs read the caller's rows, so only the workers' can be stale.
bool same_data(cluster_state& s, const root_site& site, const call_request& req) {
  const int rows = site.plan.n_jobs - site.plan.root_jobs;
  const long long values = static_cast<long long>(rows) * (site.row_real + site.row_int);
  if (s.team == nullptr || values < team_check_values) {
    const std::size_t w = static_cast<std::size_t>(site.plan.root_jobs);
    return rows_equal(req.x_r->data() + w, req.x_r->data() + site.plan.n_jobs, site.x_r.data(), site.row_real) &&
           rows_equal(req.x_i->data() + w, req.x_i->data() + site.plan.n_jobs, site.x_i.data(), site.row_int);
  }
  team_row_check check{site, req};
  s.team->run(rows, std::max(1, rows / (4 * s.team->size())), &team_row_check::run, &check);
  return !check.differs.load(std::memory_order_relaxed);
}

/// True when the workers still hold the caller's rows. Rows of a job_data cannot change, and a call of
/// another job_data was planned anew (plan_or_call), so they need no check; rows the caller may change are
/// compared with the root's copy. `checked_rows` counts the rows compared.
bool workers_data_current(cluster_state& s, const root_site& site, const call_request& req, int& checked_rows) {
  if (req.data_id != 0) {
    checked_rows = 0;
    return true;
  }
  checked_rows = site.plan.n_jobs - site.plan.root_jobs;
  return same_data(s, site, req);
}

/// Whether the workers' rows must be sent anew before call `req`: a job_data other than the one they
/// hold, or rows the caller may change where they hold a job_data's (the root has no copy to check).
bool other_data(const root_site& site, const call_request& req) { return req.data_id != site.data_id; }

/// Frees the root's copy of the workers' rows once shipped, when they belong to a job_data: nothing reads it.
void drop_rows_copy(root_site& site) {
  if (site.data_id == 0) return;
  std::vector<double>().swap(site.x_r);
  std::vector<int>().swap(site.x_i);
}

/// Picks how the call site's scatter and gathers run (MAPRECT_COLLECTIVES, or the cost model under auto),
/// when its layout changes: from its job parameters, the `back_doubles` its workers answer per call and the
/// largest worker's answer `chunk_back` (a first call's: an estimate). Sets chunk_out and chunk_back.
void choose_site_collectives(const cluster_state& s, root_site& site, long long back_doubles, int chunk_back) {
  const chunk_plan& plan = site.plan;
  const int most_jobs = plan.most_worker_jobs();
  site.chunk_out = most_jobs * site.n_job_params;
  site.chunk_back = chunk_back;
  const double out_bytes = sizeof(double) * static_cast<double>(site.n_job_params) * (plan.n_jobs - plan.root_jobs);
  const long long largest = std::max<long long>({site.chunk_out, site.chunk_back, most_jobs + 2LL});
  site.collective = choose_collective(s.settings.collectives, s.settings.timeout > 0, s.collectives, s.size,
                                      plan.n_jobs, out_bytes, sizeof(double) * static_cast<double>(back_doubles),
                                      2 * largest);
}

/// The steady-state layout of a call site from its plan and output counts: each rank's status and blocks in
/// the answer buffer, where each job's blocks start, and the host slots' size. Collective (the slots grow).
void lay_out_results(cluster_state& s, root_site& site) {
  const int R = s.size;
  site.n_outputs = 0;
  for (int c : site.counts) site.n_outputs += c;
  site.results.counts.resize(R);
  site.results.displs.resize(R);
  site.block_at.resize(site.counts.size());
  site.slot_doubles = 0;
  int at = 0;  // the call's answers fit one message: the first call checked
  for (int r = 0; r < R; ++r) {
    const int first = site.plan.first(r), jobs = site.plan.jobs(r);
    site.results.displs[r] = at;
    site.results.counts[r] = lay_out_answer(site.counts.data() + first, jobs, site.rows, site.block_at.data() + first);
    at += site.results.counts[r];
    if (r > 0) site.slot_doubles = std::max(site.slot_doubles, slot_doubles(site.n_job_params, jobs, site.results.counts[r]));
  }
  choose_site_collectives(s, site, at - site.results.counts[0], site.results.largest_worker_part());
  s.host.reserve(site.slot_doubles, s.comm);
}

/// A call site planned anew for `req`: its sizes, who runs which jobs, and the root's copy of the rows the
/// workers will hold (the root keeps no copy of its own rows: its jobs read the caller's).
void plan_site(root_site& site, const call_request& req, int row_real, int row_int, int root_jobs, int ranks) {
  const int J = req.n_jobs;
  site.planned = false;
  site.next_root_jobs = -1;
  site.kinds = req.kinds;
  site.n_shared = req.n_shared;
  site.n_job_params = req.n_job_params;
  site.row_real = row_real;
  site.row_int = row_int;
  site.data_id = req.data_id;
  site.rows = rows_per_output(req.kinds, req.n_shared, req.n_job_params);
  site.plan = {J, ranks, root_jobs};
  site.param_layout.assign(site.plan, req.n_job_params);
  const int w0 = site.plan.root_jobs;
  // Appended row by row: one pass over fresh memory, not a zero fill and then a copy.
  site.x_r.clear();
  site.x_i.clear();
  site.x_r.reserve(static_cast<std::size_t>(J - w0) * row_real);
  site.x_i.reserve(static_cast<std::size_t>(J - w0) * row_int);
  for (int j = w0; j < J; ++j) {
    site.x_r.insert(site.x_r.end(), (*req.x_r)[j].begin(), (*req.x_r)[j].end());
    site.x_i.insert(site.x_i.end(), (*req.x_i)[j].begin(), (*req.x_i)[j].end());
  }
}

/// Step 2 of a first call: each worker receives its rows of x_r and x_i.
void ship_rows(cluster_state& s, const root_site& site) {
  static std::vector<std::vector<double>> no_real_rows;  // the root receives none
  static std::vector<std::vector<int>> no_int_rows;
  rank_layout data;
  if (site.row_real > 0) {
    data.assign_workers(site.plan, site.row_real);
    exchange_rows(s.ends(), site.x_r.data(), data, no_real_rows);
    s.root.last_traffic.sent += sizeof(double) * static_cast<std::uint64_t>(site.x_r.size());
  }
  if (site.row_int > 0) {
    data.assign_workers(site.plan, site.row_int);
    exchange_rows(s.ends(), site.x_i.data(), data, no_int_rows);
    s.root.last_traffic.sent += sizeof(int) * static_cast<std::uint64_t>(site.x_i.size());
  }
}

/// Step 5 of a first call, first half: every rank's status and output counts (first_reports), read into
/// site.counts and each rank's status. Returns where each rank's blocks go in the answer buffer.
rank_layout collect_counts(cluster_state& s, root_site& site, const call_request& req, rank_status root_status,
                           std::vector<rank_status>& statuses, long long& total) {
  const int R = s.size;
  const rank_layout reports = first_reports(site.plan);
  std::vector<int> gathered(static_cast<std::size_t>(reports.displs[R - 1] + reports.counts[R - 1]));
  gathered[0] = static_cast<int>(root_status.code);
  gathered[1] = root_status.job;
  std::copy(s.call.own_counts.begin(), s.call.own_counts.end(), gathered.begin() + 2);
  gather_answers(s, req, {site.collective, reports.largest_worker_part()}, MPI_INT, gathered.data(),
                 reports.counts.data(), reports.displs.data());
  s.root.last_traffic.received += sizeof(int) * static_cast<std::uint64_t>(gathered.size() - reports.counts[0]);

  site.counts.resize(static_cast<std::size_t>(req.n_jobs));
  statuses.assign(static_cast<std::size_t>(R), {});
  rank_layout blocks;
  blocks.counts.assign(R, 0);
  blocks.displs.assign(R, 0);
  // Each rank's region of the result buffer: its status slots, then its blocks.
  total = 0;
  for (int r = 0; r < R; ++r) {
    const int* g = gathered.data() + reports.displs[r];
    statuses[r] = {static_cast<wire::status>(g[0]), g[1]};
    const int b = site.plan.first(r), e = site.plan.first(r + 1);
    long long outputs = 0;
    for (int j = b; j < e; ++j) {
      site.counts[j] = g[2 + j - b];
      outputs += site.counts[j];
    }
    const long long region_blocks = outputs * site.rows;
    blocks.displs[r] = static_cast<int>(std::min(total + wire::status_doubles, int_max));
    blocks.counts[r] = static_cast<int>(std::min(region_blocks, int_max));
    total += wire::status_doubles + region_blocks;
  }
  return blocks;
}

/// First call of a call site (or of new data or sizes, or changed output counts): ship each worker its rows,
/// run, learn the output counts, gather the blocks, and keep the plan for steady-state calls.
call_result first_call(cluster_state& s, root_site& site, const call_request& req, int row_real, int row_int,
                       int root_jobs) {
  const int R = s.size;
  plan_site(site, req, row_real, row_int, root_jobs, R);
  s.root.mid_call = true;
  // Before the output counts are known: one output per job.
  const long long most_rows = static_cast<long long>(site.rows) * site.plan.most_worker_jobs();
  choose_site_collectives(s, site, static_cast<long long>(site.rows) * (req.n_jobs - root_jobs),
                          static_cast<int>(std::min<long long>(int_max, most_rows)));
  wire::request header = header_of(command::first_call, req, row_real, row_int);
  header.root_jobs = root_jobs;
  name_collectives(header, site.collective, site.chunk_out, site.chunk_back);
  send_request(s, header, req.shared);
  start_timeout(s);
  ship_rows(s, site);
  drop_rows_copy(site);
  scatter_own(s, site, req);

  job_error root_error;
  const rank_status root_status = run_own_chunk(s, req, site.plan.root_jobs, 0, root_error);
  std::vector<rank_status> statuses;
  long long total = 0;
  const rank_layout blocks = collect_counts(s, site, req, root_status, statuses, total);
  const bool all_ok = std::all_of(statuses.begin(), statuses.end(),
                                  [](const rank_status& st) { return st.code == wire::status::ok; });
  const bool too_large = total > int_max;
  // Go or no-go for the blocks: only worth sending when every job succeeded and they fit one call.
  // The largest worker's blocks pad the others'; -1: padded parts would not fit one MPI count, so flat.
  int blocks_chunk = blocks.largest_worker_part();
  if (static_cast<long long>(blocks_chunk) * R > int_max) blocks_chunk = -1;
  exchange_go(s.ends(), all_ok && !too_large ? 1 : 0, blocks_chunk);
  s.root.mid_call = false;  // every rank has joined every collective so far; with go = 0 they all stop here
  if (root_status.code != wire::status::ok) throw_job_error(root_error, root_status.job, 0);
  for (int r = 1; r < R; ++r)
    if (statuses[r].code != wire::status::ok) throw_remote_error(s, r, statuses[r].job);
  if (too_large)
    throw std::length_error("map_rect: call id " + std::to_string(req.call_id) + " returns " +
                            std::to_string(total) + " result values, more than 2^31-1 in one call");

  // Blocks land where steady-state calls will put them: after each rank's status slots.
  s.root.mid_call = true;
  s.call.answers.resize(static_cast<std::size_t>(total));
  double* buffer = s.call.answers.data();
  if (req.session == nullptr) std::copy_n(s.call.own_out.data(), blocks.counts[0], buffer + blocks.displs[0]);
  MPI_Request unused;
  const collective blocks_how = blocks_chunk < 0 ? collective{} : collective{site.collective, blocks_chunk};
  collect_answers(s.ends(), blocks_how, MPI_DOUBLE, nullptr, 0, buffer, blocks.counts.data(),
                  blocks.displs.data(), std::chrono::steady_clock::time_point::max(), unused);
  note_gather(s);
  s.root.last_traffic.received += sizeof(double) * static_cast<std::uint64_t>(total - blocks.counts[0] - wire::status_doubles * R);

  lay_out_results(s, site);
  s.call.segments.resize(R);
  for (int r = 0; r < R; ++r) s.call.segments[r] = {buffer + blocks.displs[r], site.plan.first(r), site.plan.first(r + 1)};
  site.planned = true;
  s.root.mid_call = false;
  return {s.call.segments.data(), R, site.counts.data(), site.rows, site.n_outputs, jobs_made(req, site)};
}

/// A new root share for a call site whose sizes, data and output counts stay: each worker receives the output
/// counts and rows of the jobs it gains (from the caller's rows) and keeps the rest of its copy, so moving the
/// share costs a few rows, not a first call, and the share tuner can follow the timings.
void move_share(cluster_state& s, root_site& site, const call_request& req, int root_jobs) {
  const chunk_plan before = site.plan, now{req.n_jobs, s.size, root_jobs};
  const int row_real = site.row_real, row_int = site.row_int;
  s.root.mid_call = true;
  wire::request header = header_of(command::move_share, req, row_real, row_int);
  header.root_jobs = root_jobs;
  send_request(s, header);  // the call that follows sends the shared parameters

  // Per worker, in job order, what it gains; the copy of the workers' rows (kept only for rows the caller
  // may change) follows them: a kept row as the worker holds it, a gained one as it is sent now.
  const bool copy = site.data_id == 0;
  gained_rows& g = s.call.gained;
  g = {};
  std::vector<double> x_r;
  std::vector<int> x_i;
  if (copy) {
    x_r.reserve(static_cast<std::size_t>(now.n_jobs - root_jobs) * row_real);
    x_i.reserve(static_cast<std::size_t>(now.n_jobs - root_jobs) * row_int);
  }
  for (int r = 1; r < s.size; ++r) {
    g.begin_worker(r, s.size);
    for_each_job_moved(before, now, r, [&](int j, bool gained, int kept) {
      const std::vector<double>& caller_real = (*req.x_r)[j];
      const std::vector<int>& caller_int = (*req.x_i)[j];
      if (gained) g.add(site.counts[j], caller_int, caller_real);
      if (!copy) return;
      if (gained) {
        x_r.insert(x_r.end(), caller_real.begin(), caller_real.end());
        x_i.insert(x_i.end(), caller_int.begin(), caller_int.end());
      } else {
        const auto k = static_cast<std::size_t>(kept + before.first(r) - before.root_jobs);
        x_r.insert(x_r.end(), site.x_r.begin() + k * row_real, site.x_r.begin() + (k + 1) * row_real);
        x_i.insert(x_i.end(), site.x_i.begin() + k * row_int, site.x_i.begin() + (k + 1) * row_int);
      }
    });
    g.end_worker(r);
  }
  exchange_gained(s.ends(), g);
  s.root.last_traffic.sent += sizeof(int) * (g.counts.size() + g.ints.size()) + sizeof(double) * g.reals.size();

  site.plan = now;
  site.param_layout.assign(now, req.n_job_params);
  site.x_r.swap(x_r);
  site.x_i.swap(x_i);
  site.next_root_jobs = -1;
  lay_out_results(s, site);
  s.root.mid_call = false;
}

/// How a steady-state call ended.
enum class steady_outcome {
  done,            ///< the results are in
  data_changed,    ///< the workers' rows differ from the caller's: plan the call again with the new data
  counts_changed,  ///< a job returned a different number of outputs than planned: plan the call again
};

double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// The local job before which worker r's jobs of this call end: the root (or, under MAPRECT_BALANCE=hosts, any
/// rank) ran the rest of its chunk. Final once the root has stopped claiming (only the root moves the back of a
/// chunk in shared memory), or once the workers' blocks are in (under MAPRECT_BALANCE=hosts).
int worker_end(const cluster_state& s, const root_site& site, int r) {
  if (claims_this_call(s, site)) return s.call.worker_ends.empty() ? site.plan.jobs(r) : s.call.worker_ends[r];
  return s.settings.take_over && s.host.claims.shared_with(r) ? s.host.claims.worker_end(r) : site.plan.jobs(r);
}

/// Runs one batch of worker r's jobs that nobody has started yet, from the back of its chunk, and writes
/// their blocks where the worker's would land in `buffer`. Returns the number of jobs claimed (0: none were
/// left); on a failure records it in `failure`.
int take_over_batch(cluster_state& s, const root_site& site, const call_request& req, double* buffer, int r,
                    taken_failure& failure) {
  const job_range got = s.host.claims.claim_back(r);
  if (got.empty()) return 0;
  run_batch_on_root(s, site, req, answer_blocks(buffer, site, r), r, got, failure);
  return got.size();
}

/// Once its own jobs are done, the root runs the jobs of its host's workers that nobody has started yet,
/// from the back of each chunk, a batch from each worker in turn. Stops at the first failure. Returns the
/// number of jobs it ran.
int take_over_jobs(cluster_state& s, const root_site& site, const call_request& req, double* buffer,
                   taken_failure& failure) {
  int taken = 0;
  for (bool any = true; any;) {
    any = false;
    for (int r = 1; r < s.size; ++r) {
      if (!s.host.claims.shared_with(r)) continue;
      const int n = take_over_batch(s, site, req, buffer, r, failure);
      if (failure.code != wire::status::ok) return taken;
      any = any || n > 0;
      taken += n;
    }
  }
  return taken;
}

/// How a steady call of `site` travels: by claims between any two ranks when it goes by them, else through
/// host memory when every worker shares the root's host and claims its jobs, else through the slots when
/// they fit, else by messages.
wire::call_route route_of(const cluster_state& s, const root_site& site) {
  if (claims_this_call(s, site)) return wire::call_route::claims;
  if (!via_slots(s, site)) return wire::call_route::messages;
  return s.settings.take_over && s.host.claims.shared_with_all() ? wire::call_route::memory : wire::call_route::slots;
}

/// Makes the output nodes of the workers' jobs whose blocks are in, in job order, up to the first worker
/// still running. Returns true once every worker's are made. At a worker whose jobs failed or changed an
/// output count it stops for good (s.call.making_stopped): its answer says why, and the call fails or is planned
/// anew. Called only when no claim of the root's is half done, so a finished worker's chunk is complete:
/// its jobs, then those the root took over from its back, whose blocks are in `buffer`.
bool make_ready_nodes(cluster_state& s, const root_site& site, const call_request& req, const double* buffer) {
  while (s.call.making < s.size && !s.call.making_stopped) {
    const int r = s.call.making, first = site.plan.first(r), jobs = site.plan.jobs(r);
    const job_progress p = s.host.claims.progress(r);
    int& made = s.call.nodes_made[r];
    if (p.done > made) {
      const double* blocks = slot_blocks(s, site, req, r) + site.block_at[first + made];
      req.session->drain(blocks, first + made, first + p.done, site.counts.data());
      s.call.node_jobs += p.done - made;
      made = p.done;
    }
    if (!p.finished) return false;
    const int end = s.host.claims.worker_end(r);
    if (made < end) {
      s.call.making_stopped = true;
      return false;
    }
    if (end < jobs) {
      const double* taken = answer_blocks(buffer, site, r) + site.block_at[first + end];
      req.session->drain(taken, first + end, first + jobs, site.counts.data());
      s.call.node_jobs += jobs - end;
      made = jobs;
    }
    ++s.call.making;
  }
  return s.call.making >= s.size;
}

/// What the root does between its own jobs in a call through host memory: make the nodes of the workers'
/// jobs that are done.
class node_poller final : public job_poller {
 public:
  node_poller(cluster_state& s, const root_site& site, const call_request& req, const double* buffer)
      : s_(s), site_(site), req_(req), buffer_(buffer) {}

  void poll() override {
    if (!s_.call.time_nodes) {
      make_ready_nodes(s_, site_, req_, buffer_);
      return;
    }
    // Timed only when there is something to make: the clock costs about what a tiny job does.
    if (s_.call.making >= s_.size || s_.call.making_stopped) return;
    const job_progress next = s_.host.claims.progress(s_.call.making);
    if (next.done <= s_.call.nodes_made[s_.call.making] && !next.finished) return;
    const auto start = std::chrono::steady_clock::now();
    const int before = s_.call.node_jobs;
    make_ready_nodes(s_, site_, req_, buffer_);
    s_.call.node_seconds += seconds_since(start);
    s_.call.node_jobs_timed += s_.call.node_jobs - before;
  }

 private:
  cluster_state& s_;
  const root_site& site_;
  const call_request& req_;
  const double* buffer_;
};

/// After its own jobs: the root makes the workers' nodes as their blocks come in and, when it has caught
/// up, runs a batch of their unclaimed jobs, the waited-for worker's first. With nothing to do it waits on
/// the workers' progress, except under the sleep policy (ranks share cores) or past the call's deadline,
/// where the gather waits instead. Returns the number of jobs it ran.
int make_nodes_and_take_over(cluster_state& s, const root_site& site, const call_request& req, double* buffer,
                             taken_failure& failure) {
  int taken = 0;
  for (unsigned spins = 1; !make_ready_nodes(s, site, req, buffer) && !s.call.making_stopped; ++spins) {
    int n = 0;
    for (int r = s.call.making; r < s.size && n == 0; ++r) n = take_over_batch(s, site, req, buffer, r, failure);
    taken += n;
    if (failure.code != wire::status::ok) break;
    if (n > 0) continue;
    if (s.settings.policy == wait_policy::sleep) break;
    if (s.settings.timeout > 0 && spins % 1024 == 0 && std::chrono::steady_clock::now() >= s.call.deadline) break;
    cpu_relax();
  }
  return taken;
}

/// Where this call's blocks are, in job order, into s.call.segments: the root's own jobs' in s.call.own_out; each
/// worker's in its slot or, by message, in `buffer`; the jobs the root took over from a worker in `buffer`,
/// right behind where the worker's would be.
void locate_blocks(cluster_state& s, const root_site& site, const call_request& req, const double* buffer,
                   bool slots) {
  s.call.segments.clear();
  // By claims workers may have run the back of the root's chunk: its blocks came by message.
  const int root_jobs = site.plan.root_jobs;
  const int root_end = claims_this_call(s, site) ? s.call.worker_ends[0] : root_jobs;
  s.call.segments.push_back({s.call.own_out.data() + wire::status_doubles, 0, root_end});
  if (root_end < root_jobs)
    s.call.segments.push_back({answer_blocks(buffer, site, 0) + site.block_at[root_end], root_end, root_jobs});
  for (int r = 1; r < s.size; ++r) {
    const int first = site.plan.first(r), end = first + worker_end(s, site, r), last = site.plan.first(r + 1);
    const double* region = answer_blocks(buffer, site, r);
    if (!slots) {
      s.call.segments.push_back({region, first, last});
      continue;
    }
    s.call.segments.push_back({slot_blocks(s, site, req, r), first, end});
    if (end < last) s.call.segments.push_back({region + site.block_at[end], end, last});
  }
}

/// Steps 1 and 3 of a steady call: the workers' claims reset, the request sent, the job parameters posted
/// by the route the call takes. Starts the call's clock.
wire::call_route post_steady_call(cluster_state& s, const root_site& site, const call_request& req) {
  s.root.mid_call = true;
  if (s.settings.take_over)
    for (int r = 1; r < s.size; ++r)
      if (s.host.claims.shared_with(r)) s.host.claims.reset(r, site.plan.jobs(r));
  const wire::call_route route = route_of(s, site);
  if (wire::in_slots(route)) place_own(s, site, req);
  wire::request header = header_of(command::call, req, site.row_real, site.row_int);
  header.arg = static_cast<int>(route);
  name_collectives(header, site.collective, site.chunk_out, site.chunk_back);
  s.call.claimed = route == wire::call_route::claims;
  send_request(s, header, req.shared);
  start_timeout(s, route != wire::call_route::memory);
  if (!wire::in_slots(route)) scatter_own(s, site, req);
  return route;
}

/// What the root did in a steady call while the workers ran: its data check, its own jobs, the jobs it took
/// over, and when each ended.
struct root_part {
  bool data_unchanged = true;
  rank_status status;        ///< of the root's own jobs
  job_error error;           ///< their failure, if any
  taken_failure taken_failed;
  int taken = 0;             ///< workers' jobs the root ran
  int nodes_during_own = 0;  ///< workers' jobs whose output nodes were made between the root's own
  std::chrono::steady_clock::time_point checked, own_done, taken_done;
  int checked_rows = 0;      ///< workers' rows compared with the root's copy
  bool own_untimed = false;  ///< the root's own jobs ran in place without a team: own_done times them
  int own_end = 0;           ///< MAPRECT_BALANCE=hosts: where the root's own jobs ended (workers ran the rest)
};

/// Which workers hold which rows of the root's jobs of call `req`'s job_data (sent with earlier claims); none
/// for rows the caller may change, which go with every claim.
rows_sent* rows_sent_of(cluster_state& s, const call_request& req) {
  if (req.data_id == 0) return nullptr;
  rows_sent& sent = s.root.sent_rows[req.call_id];
  if (sent.data_id != req.data_id) {
    sent.data_id = req.data_id;
    sent.held.assign(static_cast<std::size_t>(s.size), std::vector<char>(static_cast<std::size_t>(req.n_jobs), 0));
  }
  return &sent;
}

/// The root's part of step 4 under MAPRECT_BALANCE=hosts: its own jobs, claimable by the workers, then its
/// claims on theirs, answering their asks until each has heard "none". With stale workers' data it runs
/// nothing (the answers are dropped) but still takes part in the claims, as every worker expects.
void steal_part(cluster_state& s, const root_site& site, const call_request& req, double* buffer, root_part& part) {
  job_owner own(s.comm, s.size, {req.job_params, req.n_job_params, site.counts.data(), req.x_r->data(),
                                 req.x_i->data(), rows_sent_of(s, req)});
  // A functor's messages reach the caller's stream only from the root: with one, its jobs stay its own.
  own.reset(part.data_unchanged ? site.plan.root_jobs : 0, req.msgs == nullptr);
  early_ask early(s);
  if (part.data_unchanged) part.status = run_own_claimable(s, site, req, own, early, part.error);
  part.own_done = std::chrono::steady_clock::now();
  part.own_end = own.jobs().end();
  std::vector<int> late;  // every worker waits for the root's asks, so the root asks even when it wants none
  part.taken = steal_as_root(s, site, req, buffer, part.data_unchanged && part.status.code == wire::status::ok,
                             part.taken_failed, late, own, &early);
  if (part.taken < 0) abort_late(s, req, late);
}

/// The root's part of step 4 of a steady call. Through host memory with output nodes made in place
/// (`during`), the workers' output nodes are made as their blocks come, between the root's jobs and after.
root_part run_root_part(cluster_state& s, root_site& site, const call_request& req, double* buffer, bool during) {
  using clock = std::chrono::steady_clock;
  root_part part;
  // The workers run from their copies of the data; meanwhile the root checks that those still equal the
  // caller's rows (unless they are a job_data's). If not, their answers are gathered (every rank joins every
  // collective) and dropped.
  part.data_unchanged = workers_data_current(s, site, req, part.checked_rows);
  part.checked = clock::now();
  part.own_untimed = s.team == nullptr && req.session != nullptr;
  s.call.nodes_made.assign(static_cast<std::size_t>(s.size), 0);
  s.call.making = 1;
  s.call.making_stopped = false;
  s.call.node_jobs = 0;
  s.call.time_nodes = during && s.settings.tune_shares && site.tuner.wants_node_timing();
  s.call.node_seconds = 0;
  s.call.node_jobs_timed = 0;
  if (claims_this_call(s, site)) {
    steal_part(s, site, req, buffer, part);
    part.taken_done = clock::now();
    return part;
  }
  node_poller poller(s, site, req, buffer);
  if (part.data_unchanged) {
    part.status = run_own_chunk(s, req, site.plan.root_jobs, wire::status_doubles, part.error,
                                during ? &poller : nullptr);
    if (part.status.code == wire::status::ok &&
        !std::equal(s.call.own_counts.begin(), s.call.own_counts.end(), site.counts.begin()))
      part.status.code = wire::status::counts_changed;
  }
  part.own_done = clock::now();
  part.nodes_during_own = s.call.node_jobs;
  if (part.data_unchanged && part.status.code == wire::status::ok && s.settings.take_over)
    part.taken = during ? make_nodes_and_take_over(s, site, req, buffer, part.taken_failed)
                        : take_over_jobs(s, site, req, buffer, part.taken_failed);
  part.taken_done = clock::now();
  return part;
}

/// Step 5 of a steady call on the root, by its route: each worker's answer ends where the root's claims on
/// its chunk begin.
void collect_steady_answers(cluster_state& s, const root_site& site, const call_request& req, double* buffer,
                            wire::call_route route, stolen_failure& stolen) {
  if (claims_this_call(s, site)) {  // the statuses by gather, then each worker's blocks by message
    // Every worker has heard "none" from the root, so each is answering now, however long the call took.
    s.call.deadline = claims_deadline(s, std::chrono::steady_clock::now());
    s.call.status_counts.assign(static_cast<std::size_t>(s.size), wire::status_doubles);
    // Flat: the workers' side of this gather is src/steal_worker.cpp's.
    gather_answers(s, req, collective{}, MPI_DOUBLE, buffer, s.call.status_counts.data(), site.results.displs.data());
    const long long blocks = receive_worker_blocks(s, site, buffer, stolen);
    const long long statuses = static_cast<long long>(wire::status_doubles) * (s.size - 1);
    s.root.last_traffic.received += sizeof(double) * static_cast<std::uint64_t>(blocks + statuses);
    return;
  }
  s.call.answer_counts.assign(site.results.counts.begin(), site.results.counts.end());
  long long answered = 0;
  for (int r = 1; r < s.size; ++r) {
    s.call.answer_counts[r] = answer_doubles(site.results.counts[r], site.block_at.data() + site.plan.first(r),
                                             site.plan.jobs(r), worker_end(s, site, r));
    answered += s.call.answer_counts[r];
  }
  if (route == wire::call_route::memory) collect_reports(s, req, buffer, site.results.displs.data());
  else if (route == wire::call_route::slots) gather_through_slots(s, site, req, buffer);
  else
    gather_answers(s, req, {site.collective, site.chunk_back}, MPI_DOUBLE, buffer, s.call.answer_counts.data(),
                   site.results.displs.data());
  s.root.last_traffic.received += sizeof(double) * static_cast<std::uint64_t>(answered);
}

/// By claims any rank may have run any other rank's jobs: the failing job of lowest index
/// decides, wherever it ran (as in process, where the first failing job throws). A failure decides before a
/// changed output count; with none, a changed count plans the call anew (whose first call then runs every
/// job again). Throws a failure; returns done or counts_changed.
steady_outcome first_failure_by_job(cluster_state& s, const root_site& site, const root_part& part,
                                    const double* buffer, const stolen_failure& stolen) {
  int failing_rank = -1, failing_job = -1;
  const job_error* on_root = nullptr;  // the failure's error when the root ran the failing job
  bool counts_changed = stolen.code == wire::status::counts_changed;
  auto consider = [&](int rank, int job, const job_error* error = nullptr) {
    if (failing_rank < 0 || job < failing_job) {
      failing_rank = rank;
      failing_job = job;
      on_root = error;
    }
  };
  if (part.status.code == wire::status::failed) consider(0, part.status.job, &part.error);
  counts_changed = counts_changed || part.status.code == wire::status::counts_changed;
  for (int r = 1; r < s.size; ++r) {
    const double* st = buffer + site.results.displs[r];
    const auto code = static_cast<wire::status>(static_cast<int>(st[0]));
    if (code == wire::status::failed) consider(r, static_cast<int>(st[1]));
    counts_changed = counts_changed || code == wire::status::counts_changed;
  }
  if (stolen.code == wire::status::failed) consider(stolen.thief, stolen.job);
  const taken_failure& taken = part.taken_failed;
  if (taken.code == wire::status::failed) consider(0, taken.job, &taken.error);
  counts_changed = counts_changed || taken.code == wire::status::counts_changed;
  if (on_root != nullptr) throw_job_error(*on_root, failing_job, 0);
  if (failing_rank > 0) throw_remote_error(s, failing_rank, failing_job);
  return counts_changed ? steady_outcome::counts_changed : steady_outcome::done;
}

/// The first failure in job order decides: the root's jobs come first, then each worker's chunk, whose jobs
/// the worker ran before those the root took over. Throws a failure; returns done or counts_changed.
steady_outcome first_failure(cluster_state& s, const root_site& site, const root_part& part, const double* buffer,
                             const stolen_failure& stolen) {
  // By claims workers may have run the root's jobs too: the job order alone decides.
  if (claims_this_call(s, site)) return first_failure_by_job(s, site, part, buffer, stolen);
  if (part.status.code == wire::status::failed) throw_job_error(part.error, part.status.job, 0);
  if (part.status.code == wire::status::counts_changed) return steady_outcome::counts_changed;
  const taken_failure& taken = part.taken_failed;
  for (int r = 1; r < s.size; ++r) {
    const double* st = buffer + site.results.displs[r];
    const auto code = static_cast<wire::status>(static_cast<int>(st[0]));
    if (code == wire::status::failed) throw_remote_error(s, r, static_cast<int>(st[1]));
    if (code == wire::status::counts_changed) return steady_outcome::counts_changed;
    if (taken.rank == r && taken.code == wire::status::failed) throw_job_error(taken.error, taken.job, 0);
    if (taken.rank == r && taken.code == wire::status::counts_changed) return steady_outcome::counts_changed;
  }
  return steady_outcome::done;
}

/// By claims, the root's own jobs that workers ran, [end, root_jobs), have their blocks in
/// the root's region of `buffer`: the front door's nodes of them follow those of the root's own, in job order.
void make_claimed_root_nodes(cluster_state& s, const root_site& site, const call_request& req, const double* buffer) {
  const int end = s.call.worker_ends[0], n = site.plan.root_jobs;
  if (req.session == nullptr || end >= n) return;
  req.session->drain(answer_blocks(buffer, site, 0) + site.block_at[end], end, n, site.counts.data());
}

/// The call's timings and profile (`wait_cpu`: the root's CPU seconds collecting the answers, if timed), and
/// the share tuner's next proposal from them.
void record_timing(cluster_state& s, root_site& site, const root_part& part, const double* buffer,
                   std::chrono::steady_clock::time_point sent, std::chrono::steady_clock::time_point arrived,
                   double wait_cpu) {
  const int R = s.size;
  call_timing& t = s.root.timing;
  t.check = seconds_between(sent, part.checked);
  t.own = seconds_between(part.checked, part.own_done);
  t.nodes_during_own = part.nodes_during_own;
  t.node_job = s.call.node_jobs_timed > 0 ? s.call.node_seconds / s.call.node_jobs_timed : 0.0;
  t.arrival = seconds_between(sent, arrived);
  t.waited = seconds_between(part.taken_done, arrived);
  t.worker_busy.resize(static_cast<std::size_t>(R));
  t.worker_jobs.resize(static_cast<std::size_t>(R));
  int busiest = 0;
  for (int r = 1; r < R; ++r) {
    t.worker_busy[r] = buffer[site.results.displs[r] + 2];
    t.worker_jobs[r] = worker_end(s, site, r);
    if (busiest == 0 || t.worker_busy[r] > t.worker_busy[busiest]) busiest = r;
  }
  team_busy threads = s.chunks.busy();
  if (part.own_untimed) {  // the root's own jobs, timed by the call itself
    threads.slowest_seconds += t.own;
    threads.fastest_seconds += t.own;
  }
  const double* busiest_status = busiest > 0 ? buffer + site.results.displs[busiest] : nullptr;
  s.root.last_profile = {site.plan.root_jobs,
                         busiest > 0 ? t.worker_jobs[busiest] : 0,
                         t.own,
                         busiest_status ? busiest_status[2] : 0.0,
                         t.check,
                         part.taken,
                         s.settings.threads,
                         threads.slowest_seconds,
                         threads.fastest_seconds,
                         part.checked_rows,
                         wait_cpu,
                         busiest_status ? busiest_status[3] : 0.0,
                         busiest_status ? busiest_status[4] : 0.0};
  if (s.settings.tune_shares) {
    site.tuner.record(site.plan, t);
    // The root takes a slow worker's jobs (on its host, or by claims on any): the share stays at most the
    // even split, where the claims start from the static split. Under auto across hosts the share is tuned
    // for the way the site chose, and not while a trial alternates the ways.
    const bool claims = s.settings.steal || (s.settings.choose_claims && site.claims.chosen());
    const bool root_takes = (s.settings.take_over && s.host.claims.shared_with_all()) || claims;
    if (!s.settings.choose_claims || !site.claims.trying())
      site.next_root_jobs = site.tuner.proposal(site.plan, root_takes);
  }
}

/// CPU seconds this thread has used.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// A steady-state call: request and parameters out, the root's part, the answers in; then the result's
/// segments, with every output node already made when they were made during the call.
steady_outcome steady_call(cluster_state& s, root_site& site, const call_request& req, call_result& result) {
  const wire::call_route route = post_steady_call(s, site, req);
  const auto sent = std::chrono::steady_clock::now();
  const int R = s.size;
  s.call.answers.resize(static_cast<std::size_t>(site.results.displs[R - 1] + site.results.counts[R - 1]));
  double* buffer = s.call.answers.data();
  const bool during = route == wire::call_route::memory && req.session != nullptr;
  const root_part part = run_root_part(s, site, req, buffer, during);
  const double wait_start = s.root.time_waits ? thread_cpu_seconds() : 0.0;
  stolen_failure stolen;
  collect_steady_answers(s, site, req, buffer, route, stolen);
  if (claims_this_call(s, site)) {
    s.call.worker_ends[0] = part.own_end;
    s.call.worker_taken[0] = part.taken;
  }
  const double wait_cpu = s.root.time_waits ? thread_cpu_seconds() - wait_start : 0.0;
  const auto arrived = std::chrono::steady_clock::now();
  s.root.mid_call = false;
  if (!part.data_unchanged) return steady_outcome::data_changed;
  if (first_failure(s, site, part, buffer, stolen) == steady_outcome::counts_changed) return steady_outcome::counts_changed;
  record_timing(s, site, part, buffer, sent, arrived, wait_cpu);
  if (claims_this_call(s, site)) make_claimed_root_nodes(s, site, req, buffer);
  locate_blocks(s, site, req, buffer, wire::in_slots(route));
  int made = jobs_made(req, site);
  if (during) {
    // Every worker has answered, so each one's jobs are all in: the nodes not made yet are made now.
    if (!make_ready_nodes(s, site, req, buffer))
      throw std::logic_error("map_rect: call id " + std::to_string(req.call_id) +
                             ": a worker answered without publishing all its jobs");
    made = site.plan.n_jobs;
  }
  result = {s.call.segments.data(), static_cast<int>(s.call.segments.size()), site.counts.data(), site.rows,
            site.n_outputs, made};
  return steady_outcome::done;
}

call_result plan_or_call(cluster_state& s, const call_request& req) {
  s.root.last_traffic = {};
  root_site& site = s.root.site(req.call_id);
  const long long n_real = static_cast<long long>((*req.x_r)[0].size()) * req.n_jobs;
  const long long n_int = static_cast<long long>((*req.x_i)[0].size()) * req.n_jobs;
  if (!fits_one_message(n_real)) throw_too_large_for_message(n_real, "x_r of call id " + std::to_string(req.call_id));
  if (!fits_one_message(n_int)) throw_too_large_for_message(n_int, "x_i of call id " + std::to_string(req.call_id));
  const int row_real = static_cast<int>((*req.x_r)[0].size());
  const int row_int = static_cast<int>((*req.x_i)[0].size());
  // A new plan: on the first call, for new sizes or data, or for changed output counts.
  auto plan_anew = [&](int root_jobs, bool fresh_data) {
    s.root.last_profile = {};
    const call_result result = first_call(s, site, req, row_real, row_int, root_jobs);
    site.tuner.restart(site.move_seconds, fresh_data);
    site.claims.restart();
    return result;
  };
  const int asked = site.next_root_jobs >= 0 ? std::min(site.next_root_jobs, req.n_jobs) : -1;
  if (!same_shape(site, req, row_real, row_int))
    return plan_anew(asked >= 0 ? asked : chunk_plan::even(req.n_jobs, s.size).root_jobs, true);
  if (other_data(site, req)) return plan_anew(asked >= 0 ? asked : site.plan.root_jobs, true);
  std::chrono::steady_clock::time_point move_start;  // read only when the share moves: steady calls skip the clock
  if (asked >= 0) {
    move_start = std::chrono::steady_clock::now();
    move_share(s, site, req, asked);
  }
  // Under auto across hosts a steady call's time tells its site which way its calls are faster.
  const bool choosing = s.settings.choose_claims && asked < 0;
  const auto call_start = choosing ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  call_result result;
  const steady_outcome outcome = steady_call(s, site, req, result);
  if (outcome == steady_outcome::done) {
    // Its time tells the share tuner what moving the share costs.
    if (asked >= 0) {
      site.move_seconds = seconds_between(move_start, std::chrono::steady_clock::now());
      site.tuner.restart(site.move_seconds, false);
      site.claims.restart();
    } else if (choosing && site.claims.record(seconds_since(call_start), busy_spread(s.root.timing, s.size))) {
      site.tuner.restart(site.move_seconds, false);  // a trial's calls went both ways: tune the chosen one anew
    }
    return result;
  }
  // New data, or a job's output count changed: the same call again, planned anew with the same share.
  return plan_anew(site.plan.root_jobs, outcome == steady_outcome::data_changed);
}

/// The root cannot take back messages it has sent: if it fails between a call's collectives (memory
/// runs out, say), the workers would wait for the rest forever. The job ends instead, with the reason.
[[noreturn]] void abort_mid_call(cluster_state& s, const call_request& req, const char* what) {
  std::fprintf(stderr, "maprect: the root failed during call id %d, request %llu (%s); aborting the job\n",
               req.call_id, static_cast<unsigned long long>(s.sequence), what);
  std::fflush(stderr);
  unguard_exit(s);  // this exit is deliberate and explained
  MPI_Abort(s.comm, 1);
  std::abort();  // MPI_Abort does not return
}

call_result root_call(const call_request& req) {
  cluster_state& s = *live_root;
  s.chunks.reset_busy();
  // A steady call writes the whole profile when it ends; a first call, or one that fails, leaves it zero.
  try {
    return plan_or_call(s, req);
  } catch (const std::exception& e) {
    if (s.root.mid_call) abort_mid_call(s, req, e.what());
    s.root.last_profile = {};
    throw;
  } catch (...) {
    if (s.root.mid_call) abort_mid_call(s, req, "unknown exception");
    s.root.last_profile = {};
    throw;
  }
}

std::atomic<cluster_state*> exit_guarded{nullptr};  // the cluster whose rank must not exit quietly

void abort_on_guarded_exit() {
  cluster_state* s = exit_guarded.exchange(nullptr);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (s == nullptr || finalized) return;
  if (s->rank == 0) {
    std::fprintf(stderr,
                 "maprect: rank 0 (the root) exited while its workers serve (cluster neither stopped nor "
                 "destroyed); aborting the job\n");
  } else {
    char host[MPI_MAX_PROCESSOR_NAME] = "unknown";
    int length = 0;
    MPI_Get_processor_name(host, &length);
    std::fprintf(stderr, "maprect: rank %d (host %s) exited while serving request %llu; aborting the job\n", s->rank,
                 host, static_cast<unsigned long long>(s->sequence));
  }
  std::fflush(stderr);
  MPI_Abort(s->comm, 1);
}

}  // namespace

void plan_root_share(int call_id, int root_jobs) {
  if (live_root != nullptr) live_root->root.site(call_id).next_root_jobs = std::max(0, root_jobs);
}

void time_root_waits(bool on) {
  if (live_root != nullptr) live_root->root.time_waits = on;
}

cluster_state* live_cluster_root() { return live_root; }

void guard_exit(cluster_state& s) {
  static const bool registered = [] {
    std::atexit(&abort_on_guarded_exit);
    std::at_quick_exit(&abort_on_guarded_exit);
    return true;
  }();
  (void)registered;
  exit_guarded.store(&s);
}

void unguard_exit(cluster_state& s) {
  cluster_state* expected = &s;
  exit_guarded.compare_exchange_strong(expected, nullptr);
}

/// This rank's team, when it runs on more than one thread. Idle team threads block at once where ranks share
/// cores (the sleep policy). On the root the team also serves the in-process calls made on its thread (a
/// one-rank cluster's, or any after stop()).
static void start_team(cluster_state& s) {
  if (s.settings.threads <= 1) return;
  const auto spin = s.settings.policy == wait_policy::sleep ? std::chrono::nanoseconds(0)
                                                             : std::chrono::nanoseconds(thread_team::default_spin);
  s.team = std::make_unique<thread_team>(s.settings.threads, spin);
  if (s.rank == 0) {
    s.previous_team = current_team();
    detail::installed_team = s.team.get();
  }
}

void start_cluster(cluster_state& s, MPI_Comm comm) {
  MPI_Comm_dup(comm, &s.comm);
  MPI_Comm_rank(s.comm, &s.rank);
  MPI_Comm_size(s.comm, &s.size);
  try {
    s.settings = choose_cluster_settings(s.comm, s.threads_asked);
  } catch (...) {
    MPI_Comm_free(&s.comm);
    throw;
  }
  start_team(s);
  s.ranks = gather_rank_facts(s.comm, s.settings.threads);
  if (const std::string warning = bound_threads_warning(s.ranks); !warning.empty())
    std::fprintf(stderr, "%s\n", warning.c_str());
  // Ranks that share cores (the sleep policy) time their jobs with the scheduler's noise: even split.
  s.settings.tune_shares = s.settings.tune_shares && s.settings.policy != wait_policy::sleep;
  if (s.size > 1) s.host.open(s.comm, s.settings.take_over, s.settings.host_transport, s.settings.test_host_ranks);
  if (s.size > 1) s.collectives.open(s.comm, s.settings.test_host_ranks);
  s.settings.take_over = s.host.claims.in_use();
  // One host: the take-over reaches every worker, and no call needs the claims' messages.
  s.settings.choose_claims = s.settings.choose_claims && s.size > 1 && s.collectives.hosts() > 1;
  if (s.rank == 0 && s.size > 1) {
    if (s.settings.timeout > 0) s.root.done.assign(static_cast<std::size_t>(s.size), MPI_REQUEST_NULL);
    s.root.serving = true;
    s.root.previous_backend = remote_backend;
    remote_backend = &root_call;
    live_root = &s;
    guard_exit(s);
  }
}

void stop_cluster(cluster_state& s) {
  if (!s.root.serving) return;
  unguard_exit(s);
  s.root.serving = false;
  remote_backend = s.root.previous_backend;
  live_root = nullptr;
  wire::request release = bare_request(command::release, 0);
  send_request(s, release);
}

void finish_cluster(cluster_state& s) {
  if (s.team != nullptr && current_team() == s.team.get()) detail::installed_team = s.previous_team;
  int finalized = 0;
  MPI_Finalized(&finalized);  // an application that owns MPI may have finalised it already
  if (s.comm == MPI_COMM_NULL || finalized) return;
  s.host.close();
  s.collectives.close();
  MPI_Comm_free(&s.comm);
}

}  // namespace maprect::detail
