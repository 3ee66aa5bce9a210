// The steady call command, both sides. On the root: the request and parameters out by the call's route, the
// root's part (its data check, its own jobs, the claims), the answers in, the first failure by job, the
// timings, and where the blocks are. On a worker: its parameters in, its jobs run (by claims, the route's),
// its status and blocks out by the same route.
#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <time.h>

#include "src/map_rect/root_steps.hpp"
#include "src/worker/worker_steps.hpp"

namespace maprect::detail {

namespace {

/// How a steady call of `site` travels: through host memory when every rank holds every row (claims between
/// all ranks of the host), else by claims by message when the call claims, else through the slots when they
/// fit, else by messages.
wire::call_route route_of(const cluster_state& s, const root_site& site) {
  if (claims_in_memory(s, site)) return wire::call_route::memory;
  if (claims_this_call(s, site)) return wire::call_route::claims;
  return via_slots(s, site) ? wire::call_route::slots : wire::call_route::messages;
}

/// Where this call's blocks are, in job order, into s.call.segments: the root's own jobs' in s.call.own_out
/// (by claims, those of its jobs that workers ran in `buffer`); each worker's in its slot or in `buffer`.
void locate_blocks(cluster_state& s, const root_site& site, const call_request& req, const double* buffer,
                   bool slots) {
  s.call.segments.clear();
  // By claims workers may have run the back of the root's chunk: its blocks came by message.
  const int root_jobs = site.plan.root_jobs;
  const int root_end = claims_this_call(s, site) ? s.call.worker_ends[0] : root_jobs;
  s.call.segments.push_back({s.call.own_out.data() + wire::status_doubles, 0, root_end});
  if (root_end < root_jobs)
    s.call.segments.push_back({answer_blocks(buffer, site, 0) + site.block_at[root_end], root_end, root_jobs});
  for (int r = 1; r < s.size; ++r)
    s.call.segments.push_back({slots ? slot_blocks(s, site, req, r) : answer_blocks(buffer, site, r),
                               site.plan.first(r), site.plan.first(r + 1)});
}

/// Steps 1 and 3 of a steady call: the workers' claims reset, the request sent, the job parameters posted
/// by the route the call takes. Starts the call's clock.
wire::call_route post_steady_call(cluster_state& s, const root_site& site, const call_request& req) {
  s.root.mid_call = true;
  const wire::call_route route = route_of(s, site);
  if (claims_everywhere(site, route))
    // A functor's messages reach the caller's stream only from the root: with one, its jobs stay its own.
    s.host.claims.reset_all(s.size, [&](int r) { return site.plan.jobs(r); }, req.msgs != nullptr);
  if (wire::in_slots(route)) place_own(s, site, req);
  wire::request header = header_of(command::call, req, site.row_real, site.row_int);
  header.arg = static_cast<int>(route);
  name_collectives(header, site.collective, site.chunk_out, site.chunk_back);
  s.call.claimed = route == wire::call_route::claims;
  send_request(s, header, req.shared);
  // Claims by message: the root hears from every worker during the claims, and names the late ones there.
  start_timeout(s, route != wire::call_route::memory && route != wire::call_route::claims);
  if (!wire::in_slots(route)) scatter_own(s, site, req);
  return route;
}

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

/// The root's part of step 4 by claims by message: its own jobs, claimable by the workers, then the
/// claims it brokers between them, until each has heard "none". With stale workers' data it runs nothing
/// (the answers are dropped) but still takes part in the claims, as every worker expects.
void steal_part(cluster_state& s, const root_site& site, const call_request& req, double* buffer, root_part& part) {
  map_rect_claimed_jobs work(s, site, req, buffer,
                             {req.job_params, req.n_job_params, site.counts.data(), req.x_r->data(),
                              req.x_i->data(), rows_sent_of(s, req)});
  claims_broker broker(s, work);
  // A functor's messages reach the caller's stream only from the root: with one, its jobs stay its own.
  broker.reset(part.data_unchanged ? site.plan.root_jobs : 0, req.msgs == nullptr);
  if (part.data_unchanged) part.status = run_own_claimable(s, site, req, broker, part.error);
  part.own_done = std::chrono::steady_clock::now();
  part.own_end = broker.jobs().end();
  std::vector<int> late;
  part.taken = broker.run(part.data_unchanged && part.status.code == wire::status::ok, late);
  if (part.taken < 0) abort_late(s, name_of(req), late);
  part.taken_failed = work.failure();
  part.stolen = broker.stolen();
  part.received = broker.received();
}

/// The root's part of step 4 of a steady call by `route`. Through host memory with output nodes made in place
/// (`during`), the other ranks' output nodes are made as their blocks come, between the root's jobs and after.
root_part run_root_part(cluster_state& s, root_site& site, const call_request& req, double* buffer,
                        wire::call_route route, bool during) {
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
  if (claims_this_call(s, site) || claims_everywhere(site, route)) {
    if (claims_this_call(s, site)) steal_part(s, site, req, buffer, part);
    else run_root_claims(s, site, req, part, during);
    part.taken_done = clock::now();
    return part;
  }
  if (part.data_unchanged) {
    part.status = run_own_chunk(s, req, site.plan.root_jobs, wire::status_doubles, part.error, nullptr);
    if (part.status.code == wire::status::ok &&
        !std::equal(s.call.own_counts.begin(), s.call.own_counts.end(), site.counts.begin()))
      part.status.code = wire::status::counts_changed;
  }
  part.own_done = clock::now();
  part.taken_done = clock::now();
  return part;
}

/// Step 5 of a steady call on the root, by its route: each worker's answer ends where the root's claims on
/// its chunk begin. (By claims between any two ranks the answers came during the claims.)
void collect_steady_answers(cluster_state& s, const root_site& site, const call_request& req, double* buffer,
                            wire::call_route route) {
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

/// The first failure in job order decides: the root's jobs come first, then each worker's chunk. Throws a
/// failure; returns done or counts_changed.
steady_outcome first_failure(cluster_state& s, const root_site& site, const root_part& part, const double* buffer,
                             const stolen_failure& stolen, wire::call_route route) {
  // By claims workers may have run the root's jobs too: the job order alone decides.
  if (claims_this_call(s, site) || claims_everywhere(site, route))
    return first_failure_by_job(s, site, part, buffer, stolen);
  if (part.status.code == wire::status::failed) throw_job_error(part.error, part.status.job, 0);
  if (part.status.code == wire::status::counts_changed) return steady_outcome::counts_changed;
  for (int r = 1; r < s.size; ++r) {
    const double* st = buffer + site.results.displs[r];
    const auto code = static_cast<wire::status>(static_cast<int>(st[0]));
    if (code == wire::status::failed) throw_remote_error(s, r, static_cast<int>(st[1]));
    if (code == wire::status::counts_changed) return steady_outcome::counts_changed;
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

/// The call's profile (`wait_cpu`: the root's CPU seconds collecting the answers, if timed): the root's own
/// jobs and time, and the busiest worker's.
void record_profile(cluster_state& s, const root_site& site, const root_part& part, const double* buffer,
                    std::chrono::steady_clock::time_point sent, double wait_cpu) {
  int busiest = 0;
  for (int r = 1; r < s.size; ++r)
    if (busiest == 0 || buffer[site.results.displs[r] + 2] > buffer[site.results.displs[busiest] + 2]) busiest = r;
  const double own = seconds_between(part.checked, part.own_done);
  team_busy threads = s.chunks.busy();
  if (part.own_untimed) {  // the root's own jobs, timed by the call itself
    threads.slowest_seconds += own;
    threads.fastest_seconds += own;
  }
  const double* busiest_status = busiest > 0 ? buffer + site.results.displs[busiest] : nullptr;
  s.root.last_profile = {site.plan.root_jobs,
                         busiest > 0 ? worker_end(s, site, busiest) : 0,
                         own,
                         busiest_status ? busiest_status[2] : 0.0,
                         seconds_between(sent, part.checked),
                         part.taken,
                         s.settings.threads,
                         threads.slowest_seconds,
                         threads.fastest_seconds,
                         part.checked_rows,
                         wait_cpu,
                         busiest_status ? busiest_status[3] : 0.0,
                         busiest_status ? busiest_status[4] : 0.0};
}

/// CPU seconds this thread has used.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

steady_outcome steady_call(cluster_state& s, root_site& site, const call_request& req, call_result& result) {
  const wire::call_route route = post_steady_call(s, site, req);
  const auto sent = std::chrono::steady_clock::now();
  const int R = s.size;
  s.call.answers.resize(static_cast<std::size_t>(site.results.displs[R - 1] + site.results.counts[R - 1]));
  double* buffer = s.call.answers.data();
  const bool during = route == wire::call_route::memory && req.session != nullptr;
  const root_part part = run_root_part(s, site, req, buffer, route, during);
  const double wait_start = s.root.time_waits ? thread_cpu_seconds() : 0.0;
  if (claims_this_call(s, site)) {
    s.root.last_traffic.received += sizeof(double) * static_cast<std::uint64_t>(part.received);
    // Every worker answered the root directly during the claims: a flat gather in all but name.
    s.root.last_traffic.collective = plan::gather_name(plan::gather_kind::flat);
    s.root.last_traffic.gather_peers = s.size - 1;
  } else
    collect_steady_answers(s, site, req, buffer, route);
  if (claims_everywhere(site, route)) {
    count_claimed_traffic(s, site, part);
    report_claimed_balance(s, part);
  }
  if (claims_this_call(s, site)) {
    s.call.worker_ends[0] = part.own_end;
    s.call.worker_taken[0] = part.taken;
  }
  const double wait_cpu = s.root.time_waits ? thread_cpu_seconds() - wait_start : 0.0;
  s.root.mid_call = false;
  if (!part.data_unchanged) return steady_outcome::data_changed;
  if (first_failure(s, site, part, buffer, part.stolen, route) == steady_outcome::counts_changed)
    return steady_outcome::counts_changed;
  record_profile(s, site, part, buffer, sent, wait_cpu);
  if (claims_this_call(s, site)) make_claimed_root_nodes(s, site, req, buffer);
  const bool everywhere = claims_everywhere(site, route);
  if (everywhere) locate_claimed_blocks(s, site, part.own_end);
  else locate_blocks(s, site, req, buffer, wire::in_slots(route));
  int made = everywhere && req.session != nullptr ? part.own_end : jobs_made(req, site);
  if (during) {
    // Every worker has answered, so each one's jobs are all in: the nodes not made yet are made now.
    if (!make_nodes_in_order(s, site, req))
      throw std::logic_error("map_rect: call id " + std::to_string(req.call_id) +
                             ": a worker answered without publishing all its jobs");
    made = site.plan.n_jobs;
  }
  result = {s.call.segments.data(), static_cast<int>(s.call.segments.size()), site.counts.data(), site.rows,
            site.n_outputs, made};
  return steady_outcome::done;
}

int worker_end(const cluster_state& s, const root_site& site, int r) {
  if (claims_this_call(s, site)) return s.call.worker_ends.empty() ? site.plan.jobs(r) : s.call.worker_ends[r];
  return claims_in_memory(s, site) ? s.host.claims.worker_end(r) : site.plan.jobs(r);
}

// ---- the worker's side ----

void serve_call(cluster_state& s, const wire::request& v, const double* shared) {
  worker_site& site = s.worker.sites[v.call_id];
  // With slots the parameters wait in this rank's slot; the blocks go behind them.
  const auto route = static_cast<wire::call_route>(v.arg);
  const bool slots = wire::in_slots(route);
  double* const slot = slots ? s.host.slots.slot(s.rank) : nullptr;
  if (slots) s.host.slots.sync();
  else receive_job_parameters(s, site, v);
  if (route == wire::call_route::claims) {  // the root's choice for this call
    serve_call_stealing(s, site, v, shared, site.job_params.data());
    return;
  }
  if (route == wire::call_route::memory) {  // every rank holds every row
    serve_call_claiming(s, site, v, shared);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  s.chunks.reset_busy();
  int end = 0;
  const int failed_job = run_jobs(s, site, v, shared, slots ? slot : site.job_params.data(), wire::status_doubles,
                                  false, end);
  const double busy = seconds_since(start);
  const team_busy threads = s.chunks.busy();
  wire::status code = wire::status::ok;
  if (failed_job >= 0)
    code = wire::status::failed;
  else if (!std::equal(site.run_counts.begin(), site.run_counts.begin() + end, site.counts.begin()))
    code = wire::status::counts_changed;
  MPI_Request done = announce_done(s);
  // Always the planned size of the jobs up to `end`, so the root's gather matches whatever happened here.
  const int doubles = answer_doubles(site.planned_doubles, site.block_at.data(), site.n_jobs, end);
  site.out.resize(static_cast<std::size_t>(doubles));
  site.out.data()[0] = static_cast<int>(code);
  site.out.data()[1] = failed_job;
  site.out.data()[2] = busy;
  site.out.data()[3] = threads.slowest_seconds;
  site.out.data()[4] = threads.fastest_seconds;
  if (slots) {
    std::copy_n(site.out.data() + wire::status_doubles, doubles - wire::status_doubles,
                slot + slot_blocks_at(v.n_job, site.n_jobs));
    s.host.slots.sync();
  }
  MPI_Request unused;
  collect_answers(s.ends(), named_collective(v, slots ? wire::status_doubles : v.chunk_back), MPI_DOUBLE, site.out.data(),
                  slots ? wire::status_doubles : doubles, nullptr, nullptr, nullptr,
                  std::chrono::steady_clock::time_point::max(), unused);
  finish_done(s, done);
}

}  // namespace maprect::detail
