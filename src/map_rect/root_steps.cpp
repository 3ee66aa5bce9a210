// The root's steps that a map_rect call's commands share: the request out, the job parameters by message or
// host slot, the answers in (with the timeout that names late workers), and a call site's result layout.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "src/map_rect/root_steps.hpp"

namespace maprect::detail {

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

wire::request bare_request(command cmd, int arg) {
  wire::request h;
  h.cmd = cmd;
  h.arg = arg;
  return h;
}

void start_timeout(map_rect_context& s, bool done_messages) {
  s.deadline = deadline_after(s.settings.timeout);
  if (s.settings.timeout > 0 && done_messages) expect_done_messages(s);
}

void gather_answers(map_rect_context& s, const call_request& req, const collective& how, MPI_Datatype type,
                    void* recvbuf, const int* counts, const int* displs) {
  const auto deadline = s.settings.timeout > 0 ? s.deadline : std::chrono::steady_clock::time_point::max();
  gather_within_deadline(s, name_of(req), deadline, how, type, recvbuf, counts, displs);
}

void place_own(map_rect_context& s, const root_site& site, const call_request& req) {
  for (int r = site.rows_everywhere ? 0 : 1; r < s.size; ++r) {
    const auto n = static_cast<std::size_t>(slot_blocks_at(req.n_job_params, site.plan.jobs(r)));
    std::copy_n(req.job_params + static_cast<std::ptrdiff_t>(site.plan.first(r)) * req.n_job_params, n,
                s.host.slots.slot(r));
    if (r == 0) continue;  // the root's own stay with it unless another rank claims them
    s.last_traffic.sent += sizeof(double) * n;
    s.last_traffic.through_memory += sizeof(double) * n;
  }
  s.host.slots.sync();
}

void gather_through_slots(map_rect_context& s, const root_site& site, const call_request& req, double* buffer) {
  s.call.status_counts.assign(static_cast<std::size_t>(s.size), wire::status_doubles);
  gather_answers(s, req, {site.collective, wire::status_doubles}, MPI_DOUBLE, buffer, s.call.status_counts.data(),
                 site.results.displs.data());
  s.host.slots.sync();
  for (int r = 1; r < s.size; ++r) {
    const int blocks = s.call.answer_counts[r] - wire::status_doubles;
    s.last_traffic.through_memory += sizeof(double) * static_cast<std::uint64_t>(blocks);
  }
}

void collect_reports(map_rect_context& s, const call_request& req, double* buffer, const int* displs) {
  for (int r = 1; r < s.size; ++r) {
    if (!await_finished(s.host.claims, r, s.settings.policy, s.deadline))
      abort_late(s, name_of(req), unfinished(s.host.claims, s.size));
    const worker_report report = s.host.claims.report(r);
    double* status = buffer + displs[r];
    status[0] = report.code;
    status[1] = report.job;
    status[2] = report.busy;
    status[3] = report.slowest_thread;
    status[4] = report.fastest_thread;
    s.last_traffic.through_memory += sizeof(double) * static_cast<std::uint64_t>(s.call.answer_counts[r]);
  }
}

std::uint64_t post_worker_parameters(const map_rect_context& s, const collective& how, const call_request& req,
                                     const rank_layout& layout) {
  const long long all = static_cast<long long>(req.n_job_params) * req.n_jobs;
  if (all == 0) return 0;
  post_parameters(s.ends(), how, req.job_params, layout, nullptr, 0);
  return sizeof(double) * static_cast<std::uint64_t>(all - layout.counts[0]);
}

void scatter_own(map_rect_context& s, const root_site& site, const call_request& req) {
  s.last_traffic.sent += post_worker_parameters(s, {site.collective, site.chunk_out}, req, site.param_layout);
}

[[noreturn]] void throw_remote_error(map_rect_context& s, int rank, int job) {
  s.mid_call = true;
  wire::request fetch = bare_request(command::fetch_error, rank);
  send_request(s, fetch);
  job_error e;
  exchange_error(s.ends(), rank, e);
  s.mid_call = false;
  throw_job_error(e, job, rank);
}

void choose_site_collectives(const map_rect_context& s, root_site& site, long long back_doubles, int chunk_back) {
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

void lay_out_results(map_rect_context& s, root_site& site) {
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
    if (r > 0 || site.rows_everywhere)  // the root's slot holds its jobs' only when other ranks may run them
      site.slot_doubles = std::max(site.slot_doubles, slot_doubles(site.n_job_params, jobs, site.results.counts[r]));
  }
  choose_site_collectives(s, site, at - site.results.counts[0], site.results.largest_worker_part());
  const int most_jobs = std::max(site.plan.root_jobs, site.plan.most_worker_jobs());
  s.host.reserve(site.slot_doubles, s.comm, static_cast<long long>(site.n_job_params) * most_jobs);
}

}  // namespace maprect::detail
