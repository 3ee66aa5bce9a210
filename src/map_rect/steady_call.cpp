// The steady call command, as the steps every rank runs in one order (steady_call_command): the request, the
// job parameters, the jobs, the answers, each by the route the root picks for the call. The root's part of the
// jobs' step is its data check, its own jobs and the claims; after the steps it finds the first failure by
// job, records the timings, and locates the blocks.
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
/// all ranks of the host), else by claims by message when its last call lasted long enough for them to pay,
/// else through the slots when they fit, else by messages.
wire::call_route route_of(map_rect_context& s, const root_site& site) {
  if (claims_in_memory(s, site)) return wire::call_route::memory;
  if (claims_by_message_pay(claims_of(s), site.last_call_s)) return wire::call_route::claims;
  return via_slots(s, site) ? wire::call_route::slots : wire::call_route::messages;
}

/// Where this call's blocks are, in job order, into s.call.segments: the root's own jobs' in s.call.own_out
/// (by claims, those of its jobs that workers ran in `buffer`); each worker's in its slot or in `buffer`.
void locate_blocks(map_rect_context& s, const root_site& site, const call_request& req, const double* buffer,
                   bool slots) {
  s.call.segments.clear();
  // By claims workers may have run the back of the root's chunk: its blocks came by message.
  const int root_jobs = site.plan.root_jobs;
  const int root_end = claims_this_call(s) ? s.call.worker_ends[0] : root_jobs;
  s.call.segments.push_back({s.call.own_out.data() + wire::status_doubles, 0, root_end});
  if (root_end < root_jobs)
    s.call.segments.push_back({answer_blocks(buffer, site, 0) + site.block_at[root_end], root_end, root_jobs});
  for (int r = 1; r < s.size; ++r)
    s.call.segments.push_back({slots ? slot_blocks(s, site, req, r) : answer_blocks(buffer, site, r),
                               site.plan.first(r), site.plan.first(r + 1)});
}

/// Step 1 of a steady call on the root: the workers' claims reset, the job parameters placed in the host
/// slots ahead of the request when the route takes them, the request sent. Starts the call's clock.
wire::call_route send_steady_request(map_rect_context& s, const root_site& site, const call_request& req) {
  s.mid_call = true;
  const wire::call_route route = route_of(s, site);
  if (claims_everywhere(site, route))
    // A functor's messages reach the caller's stream only from the root: with one, its jobs stay its own.
    s.host.claims.reset_all(s.size, [&](int r) { return site.plan.jobs(r); }, req.msgs != nullptr);
  if (wire::in_slots(route)) place_own(s, site, req);
  wire::request header = header_of(command::call, req, site.row_real, site.row_int);
  header.arg = static_cast<int>(route);
  name_collectives(header, site.collective, site.chunk_out, site.chunk_back);
  s.call.claimed = route == wire::call_route::claims;
  s.call.route = route;
  s.call.runners.clear();
  s.call.worker_taken_in_host.clear();
  send_request(s, header, req.shared);
  // Claims by message: the root hears from every worker during the claims, and names the late ones there.
  start_timeout(s, route != wire::call_route::memory && route != wire::call_route::claims);
  return route;
}

/// Which workers hold which rows of the root's jobs of call `req`'s job_data (sent with earlier claims); none
/// for rows the caller may change, which go with every claim.
rows_sent* rows_sent_of(map_rect_context& s, const call_request& req) {
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
void steal_part(map_rect_context& s, const root_site& site, const call_request& req, double* buffer, root_part& part) {
  map_rect_claimed_jobs work(s, site, req, buffer,
                             {req.job_params, req.n_job_params, site.counts.data(), req.x_r->data(),
                              req.x_i->data(), rows_sent_of(s, req)});
  claims_broker broker(claims_of(s), work);
  // A functor's messages reach the caller's stream only from the root: with one, its jobs stay its own.
  broker.reset(part.data_unchanged ? site.plan.root_jobs : 0, req.msgs == nullptr);
  share_root_range(s, site.plan, req, broker, part.data_unchanged && req.msgs == nullptr, site.rows_everywhere);
  if (part.data_unchanged) part.status = run_own_claimable(s, site, req, broker, part.error);
  part.own_done = std::chrono::steady_clock::now();
  part.own_end = broker.jobs().end();
  std::vector<int> late;
  part.taken = broker.run(part.data_unchanged && part.status.code == wire::status::ok, late);
  if (part.taken < 0) abort_late(s, name_of(req), late);
  part.taken_failed = work.failure();
  part.stolen = broker.stolen();
  part.claimed = broker.traffic();
  s.call.worker_taken_in_host = broker.taken_in_host();
}

/// The root's part of step 4 of a steady call by `route`. Through host memory with output nodes made in place
/// (`during`), the other ranks' output nodes are made as their blocks come, between the root's jobs and after.
/// Fills `part`, fresh: built in place, the call moves none of its strings.
void run_root_part(map_rect_context& s, root_site& site, const call_request& req, double* buffer, root_part& part,
                   wire::call_route route, bool during) {
  using clock = std::chrono::steady_clock;
  // The workers run from their copies of the data; meanwhile the root checks that those still equal the
  // caller's rows (unless they are a job_data's). If not, their answers are gathered (every rank joins every
  // collective) and dropped.
  part.data_unchanged = workers_data_current(s, site, req, part.checked_rows);
  part.checked = clock::now();
  part.own_untimed = s.team == nullptr && req.session != nullptr;
  s.call.nodes_made.assign(static_cast<std::size_t>(s.size), 0);
  s.call.making = 1;
  s.call.making_stopped = false;
  if (claims_this_call(s) || claims_everywhere(site, route)) {
    if (claims_this_call(s)) steal_part(s, site, req, buffer, part);
    else run_root_claims(s, site, req, part, during);
    part.taken_done = clock::now();
    return;
  }
  if (part.data_unchanged) {
    part.status = run_own_chunk(s, req, site.plan.root_jobs, wire::status_doubles, part.error, nullptr);
    if (part.status.code == wire::status::ok &&
        !std::equal(s.call.own_counts.begin(), s.call.own_counts.end(), site.counts.begin()))
      part.status.code = wire::status::counts_changed;
  }
  part.own_done = clock::now();
  part.taken_done = clock::now();
}

/// Step 5 of a steady call on the root, by its route: each worker's answer ends where the root's claims on
/// its chunk begin. (By claims between any two ranks the answers came during the claims.)
void collect_steady_answers(map_rect_context& s, const root_site& site, const call_request& req, double* buffer,
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
  s.last_traffic.received += sizeof(double) * static_cast<std::uint64_t>(answered);
}

/// The failing job of lowest index decides, wherever it ran (as in process, where the first failing job throws),
/// and a failure before a changed output count (with none, a changed count plans the call anew, whose first call
/// then runs every job again). By claims any rank may have run any other rank's jobs; without, each ran its own
/// chunk, in rank order. Throws a failure; returns done or counts_changed.
steady_outcome first_failure(map_rect_context& s, const root_site& site, const root_part& part, const double* buffer,
                             const lowest_failure& stolen) {
  lowest_failure first;  // the root's errors stay in `part`
  first.keep(part.status.code, 0, part.status.job);
  for (int r = 1; r < s.size; ++r) {
    const double* st = buffer + site.results.displs[r];
    first.keep(static_cast<wire::status>(static_cast<int>(st[0])), r, static_cast<int>(st[1]));
  }
  first.keep(stolen.code, stolen.rank, stolen.job);
  first.keep(part.taken_failed.code, 0, part.taken_failed.job);
  if (!first.failed()) return first.code == wire::status::ok ? steady_outcome::done : steady_outcome::counts_changed;
  if (first.rank > 0) throw_remote_error(s, first.rank, first.job);
  const bool own = part.status.code == wire::status::failed && part.status.job == first.job;
  throw_job_error(own ? part.error : part.taken_failed.error, first.job, 0);
}

/// By claims, the root's own jobs that workers ran, [end, root_jobs), have their blocks in
/// the root's region of `buffer`: the front door's nodes of them follow those of the root's own, in job order.
void make_claimed_root_nodes(map_rect_context& s, const root_site& site, const call_request& req,
                             const double* buffer) {
  const int end = s.call.worker_ends[0], n = site.plan.root_jobs;
  if (req.session == nullptr || end >= n) return;
  req.session->drain(answer_blocks(buffer, site, 0) + site.block_at[end], end, n, site.counts.data());
}

/// The call's profile (`wait_cpu`: the root's CPU seconds collecting the answers, if timed): the root's own
/// jobs and time, and the busiest worker's.
void record_profile(map_rect_context& s, const root_site& site, const root_part& part, const double* buffer,
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
  s.last_profile = {site.plan.root_jobs,
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

/// One steady call on one rank, as the steps every rank runs in one order (run()): the request, the job
/// parameters, the jobs, the answers. The route the root picks for the call (wire::call_route) decides what
/// each step moves: under claims the answers travel during the jobs' step, and in host memory nothing does.
class steady_call_command {
 public:
  /// The root's side of a steady call of `req` at its planned `site`.
  steady_call_command(map_rect_context& s, root_site& site, const call_request& req)
      : s_(s), root_(&site), req_(&req) {}
  /// A worker's side of request `v`, whose shared parameters are `shared`.
  steady_call_command(map_rect_context& s, const wire::request& v, const double* shared)
      : s_(s), worker_(&s.worker.sites[v.call_id]), header_(v), shared_(shared),
        route_(static_cast<wire::call_route>(v.arg)) {}

  /// Every step, in order.
  void run() {
    request();
    parameters();
    jobs();
    answers();
  }

  /// The root's outcome once run() has returned: the first failure thrown, else where every job's blocks are
  /// (into `result`), or why the call must be planned anew.
  steady_outcome result(call_result& result);

 private:
  bool on_root() const { return root_ != nullptr; }
  void request();
  void parameters();
  void jobs();
  void answers();
  /// A worker's answer by the static split: its status, and its blocks by message or in its slot.
  void send_answer();

  map_rect_context& s_;
  root_site* root_ = nullptr;
  const call_request* req_ = nullptr;
  worker_site* worker_ = nullptr;
  wire::request header_;
  const double* shared_ = nullptr;
  wire::call_route route_ = wire::call_route::messages;
  root_part part_;                                ///< the root: what it did while the workers ran
  std::chrono::steady_clock::time_point sent_;    ///< the root: when the request and parameters were out
  double wait_cpu_ = 0;                           ///< the root: CPU seconds collecting the answers, if timed
  int failed_job_ = -1;                           ///< a worker: its first failing job, or -1
  int end_ = 0;                                   ///< a worker: where its jobs ended
  double busy_ = 0;                               ///< a worker: seconds its jobs took
  team_busy threads_;                             ///< a worker: its team's busiest and idlest thread
};

void steady_call_command::request() {
  if (on_root()) route_ = send_steady_request(s_, *root_, *req_);
  else if (wire::in_slots(route_)) s_.host.slots.sync();  // the parameters wait in this rank's slot
}

void steady_call_command::parameters() {
  if (wire::in_slots(route_)) return;
  if (on_root()) scatter_own(s_, *root_, *req_);
  else receive_job_parameters(s_, *worker_, header_);
}

void steady_call_command::jobs() {
  if (on_root()) {
    sent_ = std::chrono::steady_clock::now();
    const root_site& site = *root_;
    const int last = s_.size - 1;
    s_.call.answers.resize(static_cast<std::size_t>(site.results.displs[last] + site.results.counts[last]));
    const bool during = route_ == wire::call_route::memory && req_->session != nullptr;
    run_root_part(s_, *root_, *req_, s_.call.answers.data(), part_, route_, during);
    return;
  }
  worker_site& site = *worker_;
  if (route_ == wire::call_route::claims)
    return serve_call_stealing(s_, site, header_, shared_, site.job_params.data());
  if (route_ == wire::call_route::memory) return serve_call_claiming(s_, site, header_, shared_);
  const auto start = std::chrono::steady_clock::now();
  s_.chunks.reset_busy();
  double* params = wire::in_slots(route_) ? s_.host.slots.slot(s_.rank) : site.job_params.data();
  failed_job_ = run_jobs(s_, site, header_, shared_, params, wire::status_doubles, false, end_);
  busy_ = seconds_since(start);
  threads_ = s_.chunks.busy();
}

void steady_call_command::answers() {
  if (!on_root()) {
    // Under claims the answers went during the jobs' step.
    if (route_ != wire::call_route::claims && route_ != wire::call_route::memory) send_answer();
    return;
  }
  const root_site& site = *root_;
  const double wait_start = s_.root.time_waits ? thread_cpu_seconds() : 0.0;
  if (claims_this_call(s_)) {
    part_.claimed.add_to(s_.last_traffic);
    // Every worker answered the root directly during the claims: a flat gather in all but name.
    s_.last_traffic.collective = plan::gather_name(plan::gather_kind::flat);
    s_.last_traffic.gather_peers = s_.size - 1;
    s_.call.worker_ends[0] = part_.own_end;
    s_.call.worker_taken[0] = part_.taken;
  } else
    collect_steady_answers(s_, site, *req_, s_.call.answers.data(), route_);
  if (claims_everywhere(site, route_)) {
    count_claimed_traffic(s_, site, part_);
    report_claimed_balance(s_, part_);
  }
  wait_cpu_ = s_.root.time_waits ? thread_cpu_seconds() - wait_start : 0.0;
  s_.mid_call = false;
}

void steady_call_command::send_answer() {
  worker_site& site = *worker_;
  const bool slots = wire::in_slots(route_);
  wire::status code = wire::status::ok;
  if (failed_job_ >= 0)
    code = wire::status::failed;
  else if (!std::equal(site.run_counts.begin(), site.run_counts.begin() + end_, site.counts.begin()))
    code = wire::status::counts_changed;
  MPI_Request done = announce_done(s_);
  // Always the planned size of the jobs up to `end`, so the root's gather matches whatever happened here.
  const int doubles = answer_doubles(site.planned_doubles, site.block_at.data(), site.n_jobs, end_);
  site.out.resize(static_cast<std::size_t>(doubles));
  double* status = site.out.data();
  status[0] = static_cast<int>(code);
  status[1] = failed_job_;
  status[2] = busy_;
  status[3] = threads_.slowest_seconds;
  status[4] = threads_.fastest_seconds;
  if (slots) {  // the blocks go behind the parameters in this rank's slot
    std::copy_n(site.out.data() + wire::status_doubles, doubles - wire::status_doubles,
                s_.host.slots.slot(s_.rank) + slot_blocks_at(header_.n_job, site.n_jobs));
    s_.host.slots.sync();
  }
  MPI_Request unused;
  collect_answers(s_.ends(), named_collective(header_, slots ? wire::status_doubles : header_.chunk_back), MPI_DOUBLE,
                  site.out.data(), slots ? wire::status_doubles : doubles, nullptr, nullptr, nullptr,
                  std::chrono::steady_clock::time_point::max(), unused);
  finish_done(s_, done);
}

steady_outcome steady_call_command::result(call_result& result) {
  root_site& site = *root_;
  const call_request& req = *req_;
  double* buffer = s_.call.answers.data();
  if (!part_.data_unchanged) return steady_outcome::data_changed;
  if (first_failure(s_, site, part_, buffer, part_.stolen) == steady_outcome::counts_changed)
    return steady_outcome::counts_changed;
  record_profile(s_, site, part_, buffer, sent_, wait_cpu_);
  if (claims_this_call(s_)) make_claimed_root_nodes(s_, site, req, buffer);
  const bool everywhere = claims_everywhere(site, route_);
  if (everywhere) locate_claimed_blocks(s_, site, part_.own_end);
  else locate_blocks(s_, site, req, buffer, wire::in_slots(route_));
  int made = everywhere && req.session != nullptr ? part_.own_end : jobs_made(req, site);
  if (route_ == wire::call_route::memory && req.session != nullptr) {
    // Every worker has answered, so each one's jobs are all in: the nodes not made yet are made now.
    if (!make_nodes_in_order(s_, site, req))
      throw std::logic_error("map_rect: call id " + std::to_string(req.call_id) +
                             ": a worker answered without publishing all its jobs");
    made = site.plan.n_jobs;
  }
  result = {s_.call.segments.data(), static_cast<int>(s_.call.segments.size()), site.counts.data(), site.rows,
            site.n_outputs, made};
  return steady_outcome::done;
}

}  // namespace

steady_outcome steady_call(map_rect_context& s, root_site& site, const call_request& req, call_result& result) {
  steady_call_command command(s, site, req);
  command.run();
  return command.result(result);
}

void serve_call(map_rect_context& s, const wire::request& v, const double* shared) {
  steady_call_command(s, v, shared).run();
}

int worker_end(const map_rect_context& s, const root_site& site, int r) {
  if (claims_this_call(s)) return s.call.worker_ends.empty() ? site.plan.jobs(r) : s.call.worker_ends[r];
  return claims_in_memory(s, site) ? s.host.claims.worker_end(r) : site.plan.jobs(r);
}

}  // namespace maprect::detail
