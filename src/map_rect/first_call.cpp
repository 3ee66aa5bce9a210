// The first_call command, both sides: on the root the plan, the rows shipped once, the output counts learned and
// the blocks gathered, and the checks that decide whether the workers' rows are still the caller's; on a
// worker its rows received, its jobs run, its status and counts reported, and its blocks sent on the go.
#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>

#include "src/map_rect/root_steps.hpp"
#include "src/worker/worker_steps.hpp"
#include "src/map_rect/data_check.hpp"

namespace maprect::detail {

bool same_shape(const root_site& site, const call_request& req, int row_real, int row_int) {
  return site.planned && site.kinds == req.kinds && site.n_shared == req.n_shared && site.n_job_params == req.n_job_params &&
         site.plan.n_jobs == req.n_jobs && site.row_real == row_real && site.row_int == row_int;
}

namespace {

/// True when rows [begin, end) of the workers' (counted from site.rows_first) equal the copy they hold.
bool rows_current(const root_site& site, const call_request& req, int begin, int end) {
  const std::size_t w = static_cast<std::size_t>(site.rows_first);
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
/// (the rows are independent). The root's own jobs read the caller's rows, so only the workers' can be stale
/// (with every row everywhere, every job's).
bool same_data(cluster_state& s, const root_site& site, const call_request& req) {
  const int rows = site.plan.n_jobs - site.rows_first;
  const long long values = static_cast<long long>(rows) * (site.row_real + site.row_int);
  if (s.team == nullptr || values < team_check_values) {
    const std::size_t w = static_cast<std::size_t>(site.rows_first);
    return rows_equal(req.x_r->data() + w, req.x_r->data() + site.plan.n_jobs, site.x_r.data(), site.row_real) &&
           rows_equal(req.x_i->data() + w, req.x_i->data() + site.plan.n_jobs, site.x_i.data(), site.row_int);
  }
  team_row_check check{site, req};
  s.team->run(rows, std::max(1, rows / (4 * s.team->size())), &team_row_check::run, &check);
  return !check.differs.load(std::memory_order_relaxed);
}

}  // namespace

bool workers_data_current(cluster_state& s, const root_site& site, const call_request& req, int& checked_rows) {
  if (req.data_id != 0) {
    checked_rows = 0;
    return true;
  }
  checked_rows = site.plan.n_jobs - site.rows_first;
  return same_data(s, site, req);
}

namespace {

/// Frees the root's copy of the workers' rows once shipped, when they belong to a job_data: nothing reads it.
void drop_rows_copy(root_site& site) {
  if (site.data_id == 0) return;
  std::vector<double>().swap(site.x_r);
  std::vector<int>().swap(site.x_i);
}

/// Bytes of rows up to which every rank of one host holds every row of a call site, so that any rank can run
/// any job: beyond, each holds its own chunk's (the copies would cost more memory than balancing gains).
constexpr long long rows_everywhere_bytes = 64LL << 20;

/// Whether every rank will hold every row of call `req`: under MAPRECT_BALANCE=auto when every rank shares
/// the root's host memory (claims between all ranks, host_claims.cpp) and the rows are not too many.
bool wants_rows_everywhere(const cluster_state& s, const call_request& req, int row_real, int row_int) {
  const long long bytes =
      static_cast<long long>(req.n_jobs) * (sizeof(double) * static_cast<long long>(row_real) + sizeof(int) * row_int);
  return s.settings.balance == balance_mode::automatic && s.settings.memory_claims && s.host.claims.shared_with_all() &&
         s.host.slots.usable() && bytes <= rows_everywhere_bytes;
}

/// A call site planned anew for `req`: its sizes, who runs which jobs, and the root's copy of the rows the
/// workers will hold (with its own chunk's only when every row goes everywhere: its jobs read the caller's).
void plan_site(root_site& site, const call_request& req, int row_real, int row_int, int root_jobs, int ranks,
               bool everywhere) {
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
  site.rows_everywhere = everywhere;
  site.rows_first = everywhere ? 0 : site.plan.root_jobs;
  const int w0 = site.rows_first;
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

/// Step 2 of a first call: each worker receives its rows of x_r and x_i, or every row.
void ship_rows(cluster_state& s, const root_site& site) {
  static std::vector<std::vector<double>> no_real_rows;  // the root receives none
  static std::vector<std::vector<int>> no_int_rows;
  if (site.rows_everywhere) {
    share_rows(s.ends(), site.x_r.data(), site.plan.n_jobs, site.row_real, no_real_rows);
    share_rows(s.ends(), site.x_i.data(), site.plan.n_jobs, site.row_int, no_int_rows);
    s.root.last_traffic.sent += (sizeof(double) * site.x_r.size() + sizeof(int) * site.x_i.size()) *
                                static_cast<std::uint64_t>(s.size - 1);
    return;
  }
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

/// Step 5 of a first call, last: with every row everywhere, every job's output count to every worker.
void share_site_counts(cluster_state& s, root_site& site) {
  if (!site.rows_everywhere) return;
  share_counts(s.ends(), site.counts, site.plan.n_jobs);
  s.root.last_traffic.sent += sizeof(int) * static_cast<std::uint64_t>(site.plan.n_jobs) * (s.size - 1);
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

}  // namespace

call_result first_call(cluster_state& s, root_site& site, const call_request& req, int row_real, int row_int,
                       int root_jobs) {
  const int R = s.size;
  plan_site(site, req, row_real, row_int, root_jobs, R, wants_rows_everywhere(s, req, row_real, row_int));
  s.root.mid_call = true;
  // Before the output counts are known: one output per job.
  const long long most_rows = static_cast<long long>(site.rows) * site.plan.most_worker_jobs();
  choose_site_collectives(s, site, static_cast<long long>(site.rows) * (req.n_jobs - root_jobs),
                          static_cast<int>(std::min<long long>(int_max, most_rows)));
  wire::request header = header_of(command::first_call, req, row_real, row_int);
  header.root_jobs = root_jobs;
  header.arg = site.rows_everywhere ? 1 : 0;
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
  share_site_counts(s, site);

  lay_out_results(s, site);
  s.call.segments.resize(R);
  for (int r = 0; r < R; ++r) s.call.segments[r] = {buffer + blocks.displs[r], site.plan.first(r), site.plan.first(r + 1)};
  site.planned = true;
  s.root.mid_call = false;
  return {s.call.segments.data(), R, site.counts.data(), site.rows, site.n_outputs, jobs_made(req, site)};
}

// ---- the worker's side ----

void serve_first_call(cluster_state& s, const wire::request& v, const double* shared) {
  worker_site& site = s.worker.sites[v.call_id];
  site.plan = {v.n_jobs, s.size, v.root_jobs};
  site.job_begin = site.plan.first(s.rank);
  site.n_jobs = site.plan.jobs(s.rank);
  site.rows_everywhere = v.arg != 0;
  site.rows_first = site.rows_everywhere ? 0 : site.job_begin;
  const auto rows = static_cast<std::size_t>(site.rows_everywhere ? v.n_jobs : site.n_jobs);
  site.x_r.assign(rows, std::vector<double>(static_cast<std::size_t>(v.row_real)));
  site.x_i.assign(rows, std::vector<int>(static_cast<std::size_t>(v.row_int)));
  if (site.rows_everywhere) {
    share_rows<double>(s.ends(), nullptr, v.n_jobs, v.row_real, site.x_r);
    share_rows<int>(s.ends(), nullptr, v.n_jobs, v.row_int, site.x_i);
  } else {
    if (v.row_real > 0) exchange_rows<double>(s.ends(), nullptr, {}, site.x_r);
    if (v.row_int > 0) exchange_rows<int>(s.ends(), nullptr, {}, site.x_i);
  }
  receive_job_parameters(s, site, v);

  int end = 0;
  const int failed_job = run_jobs(s, site, v, shared, site.job_params.data(), 0, false, end);
  MPI_Request done = announce_done(s);
  const rank_layout reports = first_reports(site.plan);
  std::vector<int> report(static_cast<std::size_t>(reports.counts[s.rank]));
  report[0] = static_cast<int>(failed_job < 0 ? wire::status::ok : wire::status::failed);
  report[1] = failed_job;
  std::copy(site.run_counts.begin(), site.run_counts.end(), report.begin() + 2);
  MPI_Request unused;
  const auto never = std::chrono::steady_clock::time_point::max();
  collect_answers(s.ends(), named_collective(v, reports.largest_worker_part()), MPI_INT, report.data(),
                  static_cast<int>(report.size()), nullptr, nullptr, nullptr, never, unused);
  finish_done(s, done);
  int blocks_chunk = 0;
  if (!exchange_go(s.ends(), 0, blocks_chunk)) return;
  // A negative chunk: the root gathers these blocks flat (padded, they would not fit one MPI count).
  const collective blocks_how = blocks_chunk < 0 ? collective{} : named_collective(v, blocks_chunk);
  collect_answers(s.ends(), blocks_how, MPI_DOUBLE, site.out.data(), static_cast<int>(site.out.size()), nullptr,
                  nullptr, nullptr, never, unused);
  site.counts = site.run_counts;
  if (site.rows_everywhere) share_counts(s.ends(), site.all_counts, v.n_jobs);
  lay_out_site(s, site, v);
}

}  // namespace maprect::detail
