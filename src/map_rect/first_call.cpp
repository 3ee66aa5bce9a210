// The first_call command, as the steps every rank runs in one order: the request (the root plans the site),
// the rows shipped once, the job parameters, the jobs, the reports of status and output counts with the go
// that follows them, the blocks, and the output counts shared. A rank differs from another only inside a step,
// in the buffers it passes and in the root's bookkeeping. The forward pass of a deferred call (deferred_call)
// runs the same steps: its rows only when the workers lack them, its jobs on kept tapes, one value per output
// for a block, and no layout after.
#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "src/map_rect/claimed_jobs.hpp"
#include "src/map_rect/deferred_keep.hpp"
#include "src/map_rect/root_steps.hpp"
#include "src/worker/worker_steps.hpp"

namespace maprect::detail {

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
/// The same where the ranks span hosts, so that the workers of a host claim each other's jobs in host memory:
/// every row then crosses the network once per worker, in the site's first call.
constexpr long long rows_across_hosts_bytes = 8LL << 20;

/// Whether every rank will hold every row of call `req`: under MAPRECT_BALANCE=auto when every rank shares
/// the root's host memory (claims between all ranks, host_claims.cpp), or the workers of a host claim each
/// other's jobs (claims by message, host_memory::peer_claims), and the rows are not too many.
bool wants_rows_everywhere(const map_rect_context& s, const call_request& req, int row_real, int row_int) {
  const long long bytes =
      static_cast<long long>(req.n_jobs) * (sizeof(double) * static_cast<long long>(row_real) + sizeof(int) * row_int);
  if (s.settings.balance != balance_mode::automatic || !s.settings.memory_claims) return false;
  if (s.host.claims.shared_with_all() && s.host.slots.usable()) return bytes <= rows_everywhere_bytes;
  return s.host.peer_claims() && bytes <= rows_across_hosts_bytes;
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
  site.rows_held = false;
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


/// The rows the root receives of a share_rows or exchange_rows: none.
template <class T>
std::vector<std::vector<T>>& no_rows() {
  static std::vector<std::vector<T>> none;
  return none;
}

/// The argument of a first_call or deferred_call request: whether every worker gets every row, and whether the
/// rows follow the request at all.
/// With claims_flag (a deferred call only), the jobs' step runs by claims by message and is the last.
enum first_call_flags : int { rows_everywhere_flag = 1, rows_follow_flag = 2, claims_flag = 4 };

/// One first call on one rank. The root plans its site and builds the request; a worker reads it. From then
/// on both hold the same header and run the same steps (run()).
class first_call_command {
 public:
  /// The root's side of a first call of `req`, with rows of `row_real` and `row_int` values and `root_jobs`
  /// jobs of its own. With `keep`, the forward pass of a deferred call, its rows shipped only when
  /// `rows_follow`; the root's own jobs are kept in `keep`; with `claims` its jobs go by claims by message.
  first_call_command(map_rect_context& s, root_site& site, const call_request& req, int row_real, int row_int,
                     int root_jobs, deferred_call* keep = nullptr, bool rows_follow = true, bool claims = false)
      : s_(s), root_(&site), req_(&req), keep_(keep) {
    const bool everywhere = wants_rows_everywhere(s, req, row_real, row_int);
    if (rows_follow) plan_site(site, req, row_real, row_int, root_jobs, s.size, everywhere);
    plan_ = site.plan;
    header_ = header_of(keep ? command::deferred_call : command::first_call, req, row_real, row_int);
    header_.root_jobs = plan_.root_jobs;
    header_.arg = (site.rows_everywhere ? rows_everywhere_flag : 0) | (rows_follow ? rows_follow_flag : 0) |
                  (claims ? claims_flag : 0);
    rows_ = keep ? 1 : site.rows;
  }

  /// A worker's side of request `v`, whose shared parameters are `shared`.
  first_call_command(map_rect_context& s, const wire::request& v, const double* shared)
      : s_(s), worker_(&s.worker.sites[v.call_id]), header_(v), shared_(shared), plan_{v.n_jobs, s.size, v.root_jobs} {
    if (v.cmd == command::deferred_call) keep_ = &s.worker.kept.take_next(v.chunk_back);
  }

  /// Every step, in order; stops after the reports when the root says no-go, and after the jobs by claims.
  void run() {
    request();
    if (header_.arg & rows_follow_flag) rows();
    parameters();
    if (header_.arg & claims_flag) return claimed_jobs();
    jobs();
    if (!reports()) return;
    blocks();
    counts();
  }

  /// The root's result once run() has returned: the first failure thrown, or where every job's blocks are.
  call_result result();
  /// The root's result of a deferred call by claims once run() has returned: the first failure thrown; false
  /// when an output count changed, else true with every output's value in `result`.
  bool claimed_result(call_result& result) const {
    if (claims_ok_) result = claims_result_;
    return claims_ok_;
  }

 private:
  bool on_root() const { return root_ != nullptr; }
  void request();
  void rows();
  /// The jobs' step of a deferred call: forward passes on kept tapes, each output's value for its block.
  void kept_jobs();
  /// The jobs' step of a deferred call by claims by message (deferred_claims.cpp): each output's value comes
  /// during it.
  void claimed_jobs() {
    if (on_root()) claims_ok_ = root_deferred_claims(s_, *root_, *req_, *keep_, claims_result_);
    else serve_deferred_claims(s_, *worker_, header_, shared_, *keep_);
  }
  void parameters();
  void jobs();
  bool reports();
  void blocks();
  void counts();
  /// The root: reads the reports into site.counts and the statuses, and lays out the blocks' buffer.
  void read_reports(const std::vector<int>& gathered, const rank_layout& reports);
  /// A gather of the answers to the root: within the call's deadline there, a worker's part elsewhere.
  void gather(const collective& how, MPI_Datatype type, void* buffer, int count, const int* counts, const int* displs);
  /// The root's traffic of this call, `sent` and `received` bytes more.
  void count(std::uint64_t sent, std::uint64_t received) {
    if (!on_root()) return;
    s_.last_traffic.sent += sent;
    s_.last_traffic.received += received;
  }

  map_rect_context& s_;
  root_site* root_ = nullptr;
  const call_request* req_ = nullptr;
  deferred_call* keep_ = nullptr;  ///< a deferred call: this rank's kept jobs
  worker_site* worker_ = nullptr;
  wire::request header_;
  const double* shared_ = nullptr;
  chunk_plan plan_;
  int rows_ = 1;                   ///< the root: rows per output block
  rank_status own_status_;         ///< of this rank's jobs
  job_error own_error_;            ///< the root: its jobs' failure
  std::vector<rank_status> statuses_;  ///< the root: every rank's
  rank_layout blocks_;             ///< the root: each rank's status and blocks in s.call.answers
  long long total_ = 0;            ///< the root: the doubles of every rank's status and blocks
  int blocks_chunk_ = 0;           ///< the blocks' gather: its padded part, -1 flat
  bool go_ = false;
  bool claims_ok_ = false;         ///< the root, by claims: every output count was as planned
  call_result claims_result_{};    ///< the root, by claims: its result
  MPI_Request done_ = MPI_REQUEST_NULL;
};

void first_call_command::request() {
  if (!on_root()) {
    if (!(header_.arg & rows_follow_flag)) return;  // the rows and plan of an earlier call hold
    worker_site& w = *worker_;
    w.plan = plan_;
    w.job_begin = plan_.first(s_.rank);
    w.n_jobs = plan_.jobs(s_.rank);
    w.rows_everywhere = (header_.arg & rows_everywhere_flag) != 0;
    w.rows_first = w.rows_everywhere ? 0 : w.job_begin;
    const auto rows = static_cast<std::size_t>(w.rows_everywhere ? header_.n_jobs : w.n_jobs);
    w.x_r.assign(rows, std::vector<double>(static_cast<std::size_t>(header_.row_real)));
    w.x_i.assign(rows, std::vector<int>(static_cast<std::size_t>(header_.row_int)));
    return;
  }
  root_site& site = *root_;
  s_.mid_call = true;
  if (keep_ != nullptr) {  // flat, so that the site's collectives stay its eager calls'
    name_collectives(header_, collective_kind::flat, 0, kept_calls_back(s_, *keep_));
  } else {
    // Before the output counts are known: one output per job.
    const long long most_rows = static_cast<long long>(site.rows) * plan_.most_worker_jobs();
    choose_site_collectives(s_, site, static_cast<long long>(site.rows) * (plan_.n_jobs - plan_.root_jobs),
                            static_cast<int>(std::min<long long>(int_max, most_rows)));
    name_collectives(header_, site.collective, site.chunk_out, site.chunk_back);
  }
  send_request(s_, header_, req_->shared);
  start_timeout(s_, !(header_.arg & claims_flag));  // by claims the root hears from every worker during them
}

void first_call_command::rows() {
  const endpoint e = s_.ends();
  const bool root = on_root();
  const double* all_real = root ? root_->x_r.data() : nullptr;
  const int* all_int = root ? root_->x_i.data() : nullptr;
  auto& real_rows = root ? no_rows<double>() : worker_->x_r;
  auto& int_rows = root ? no_rows<int>() : worker_->x_i;
  const std::uint64_t bytes = root ? sizeof(double) * root_->x_r.size() + sizeof(int) * root_->x_i.size() : 0;
  if (header_.arg & rows_everywhere_flag) {  // every row to every worker
    share_rows(e, all_real, header_.n_jobs, header_.row_real, real_rows);
    share_rows(e, all_int, header_.n_jobs, header_.row_int, int_rows);
    count(bytes * static_cast<std::uint64_t>(s_.size - 1), 0);
  } else {
    rank_layout layout;  // the root's: each worker's rows
    if (header_.row_real > 0) {
      if (root) layout.assign_workers(plan_, header_.row_real);
      exchange_rows(e, all_real, layout, real_rows);
    }
    if (header_.row_int > 0) {
      if (root) layout.assign_workers(plan_, header_.row_int);
      exchange_rows(e, all_int, layout, int_rows);
    }
    count(bytes, 0);
  }
  if (root) drop_rows_copy(*root_);
  // A deferred call's ranks that claim each other's jobs in host memory read there each one's job parameters
  // and planned output counts (deferred_claims.cpp).
  if (keep_ != nullptr && (header_.arg & rows_everywhere_flag))
    s_.host.reserve_peer(deferred_range_doubles(plan_, header_.n_job), s_.comm);
  if (root) root_->rows_held = true;
}

void first_call_command::parameters() {
  if (!on_root()) return receive_job_parameters(s_, *worker_, header_);
  count(post_worker_parameters(s_, named_collective(header_, header_.chunk_out), *req_, root_->param_layout), 0);
}

void first_call_command::kept_jobs() {
  const bool root = on_root();
  const functor_entry* f = root ? req_->functor : find_functor(header_.call_id);
  const int n = root ? plan_.root_jobs : worker_->n_jobs, first = root ? 0 : worker_->job_begin;
  const chunk_input in = root ? root_jobs_input(*req_, 0, n)
                              : chunk_input{shared_, header_.n_shared, worker_->job_params.data(), header_.n_job,
                                            worker_->own_x_r(), worker_->own_x_i(), n, nullptr};
  job_error error;
  const int failed = f == nullptr ? 0 : f->run_kept[header_.kinds](in, *keep_, s_.team.get(), error);
  if (f == nullptr) error = unregistered_call(header_.call_id, s_.rank);
  std::vector<int>& counts = root ? s_.call.own_counts : worker_->run_counts;
  block_buffer& out = root ? s_.call.own_out : worker_->out;
  counts.assign(static_cast<std::size_t>(n), 0);
  out.resize(0);
  for (int j = 0; j < (failed < 0 ? n : 0); ++j) {
    const deferred_job& job = keep_->jobs[static_cast<std::size_t>(j)];
    counts[static_cast<std::size_t>(j)] = job.count;
    double* values = out.extend(static_cast<std::size_t>(job.count));
    for (int k = 0; k < job.count; ++k) values[k] = job.outputs[k]->val_;
  }
  own_status_ = {failed < 0 ? wire::status::ok : wire::status::failed, failed < 0 ? -1 : first + failed};
  if (failed >= 0) (root ? own_error_ : s_.last_error) = error;
  for (std::size_t j = 0; j < keep_->jobs.size(); ++j) keep_->job_index.push_back(first + static_cast<int>(j));
  if (!root && failed < 0) worker_->deferred_counts = counts;  // the sizes its next call by claims expects
}

void first_call_command::jobs() {
  if (keep_ != nullptr) {
    kept_jobs();
    if (!on_root()) done_ = announce_done(s_);
    return;
  }
  if (on_root()) {
    own_status_ = run_own_chunk(s_, *req_, plan_.root_jobs, 0, own_error_);
    return;
  }
  int end = 0;
  const int failed_job = run_jobs(s_, *worker_, header_, shared_, worker_->job_params.data(), 0, false, end);
  own_status_ = {failed_job < 0 ? wire::status::ok : wire::status::failed, failed_job};
  done_ = announce_done(s_);
}

void first_call_command::gather(const collective& how, MPI_Datatype type, void* buffer, int count, const int* counts,
                                const int* displs) {
  if (on_root()) {
    gather_answers(s_, *req_, how, type, buffer, counts, displs);
    return;
  }
  MPI_Request unused;
  collect_answers(s_.ends(), how, type, buffer, count, nullptr, nullptr, nullptr,
                  std::chrono::steady_clock::time_point::max(), unused);
}

bool first_call_command::reports() {
  // Each rank's status, failing job and output counts; on the root every rank's, its own first.
  const rank_layout reports = first_reports(plan_);
  const bool root = on_root();
  std::vector<int> report(static_cast<std::size_t>(root ? reports.displs[s_.size - 1] + reports.counts[s_.size - 1]
                                                        : reports.counts[s_.rank]));
  report[0] = static_cast<int>(own_status_.code);
  report[1] = own_status_.job;
  const std::vector<int>& counts = root ? s_.call.own_counts : worker_->run_counts;
  std::copy(counts.begin(), counts.end(), report.begin() + 2);
  gather(named_collective(header_, reports.largest_worker_part()), MPI_INT, report.data(),
         static_cast<int>(report.size()), reports.counts.data(), reports.displs.data());
  if (root) read_reports(report, reports);
  else finish_done(s_, done_);
  // Go or no-go for the blocks: only worth sending when every job succeeded and they fit one call.
  go_ = exchange_go(s_.ends(), go_ ? 1 : 0, blocks_chunk_) != 0;
  if (root) s_.mid_call = false;  // every rank has joined every collective so far; with no-go all stop here
  return go_;
}

void first_call_command::read_reports(const std::vector<int>& gathered, const rank_layout& reports) {
  const int R = s_.size;
  count(0, sizeof(int) * static_cast<std::uint64_t>(gathered.size() - reports.counts[0]));
  std::vector<int>& site_counts = keep_ != nullptr ? keep_->counts : root_->counts;
  site_counts.resize(static_cast<std::size_t>(plan_.n_jobs));
  statuses_.assign(static_cast<std::size_t>(R), {});
  blocks_.counts.assign(R, 0);
  blocks_.displs.assign(R, 0);
  // Each rank's region of the result buffer: its status slots, then its blocks.
  total_ = 0;
  for (int r = 0; r < R; ++r) {
    const int* g = gathered.data() + reports.displs[r];
    statuses_[r] = {static_cast<wire::status>(g[0]), g[1]};
    long long outputs = 0;
    for (int j = plan_.first(r); j < plan_.first(r + 1); ++j) outputs += site_counts[j] = g[2 + j - plan_.first(r)];
    blocks_.displs[r] = static_cast<int>(std::min(total_ + wire::status_doubles, int_max));
    blocks_.counts[r] = static_cast<int>(std::min(outputs * rows_, int_max));
    total_ += wire::status_doubles + outputs * rows_;
  }
  const bool all_ok = std::all_of(statuses_.begin(), statuses_.end(),
                                  [](const rank_status& st) { return st.code == wire::status::ok; });
  go_ = all_ok && total_ <= int_max;
  // The largest worker's blocks pad the others'; -1: padded parts would not fit one MPI count, so flat.
  blocks_chunk_ = blocks_.largest_worker_part();
  if (static_cast<long long>(blocks_chunk_) * R > int_max) blocks_chunk_ = -1;
}

void first_call_command::blocks() {
  // A negative chunk: the root gathers these blocks flat (padded, they would not fit one MPI count).
  const collective how = blocks_chunk_ < 0 ? collective{} : named_collective(header_, blocks_chunk_);
  MPI_Request unused;
  const auto never = std::chrono::steady_clock::time_point::max();
  if (!on_root()) {
    collect_answers(s_.ends(), how, MPI_DOUBLE, worker_->out.data(), static_cast<int>(worker_->out.size()), nullptr,
                    nullptr, nullptr, never, unused);
    return;
  }
  // Blocks land where steady-state calls will put them: after each rank's status slots.
  s_.mid_call = true;
  s_.call.answers.resize(static_cast<std::size_t>(total_));
  double* buffer = s_.call.answers.data();
  if (req_->session == nullptr) std::copy_n(s_.call.own_out.data(), blocks_.counts[0], buffer + blocks_.displs[0]);
  collect_answers(s_.ends(), how, MPI_DOUBLE, nullptr, 0, buffer, blocks_.counts.data(), blocks_.displs.data(), never,
                  unused);
  note_gather(s_);
  count(0, sizeof(double) * static_cast<std::uint64_t>(total_ - blocks_.counts[0] - wire::status_doubles * s_.size));
}

void first_call_command::counts() {
  if (keep_ != nullptr) return;  // a deferred call keeps the site's layout
  const bool root = on_root();
  if (!root) worker_->counts = worker_->run_counts;
  if (header_.arg & rows_everywhere_flag) {  // every rank holds every row: every job's output count to every worker
    share_counts(s_.ends(), root ? root_->counts : worker_->all_counts, header_.n_jobs);
    count(sizeof(int) * static_cast<std::uint64_t>(header_.n_jobs) * (s_.size - 1), 0);
  }
  if (root) lay_out_results(s_, *root_);
  else lay_out_site(s_, *worker_, header_);
}

call_result first_call_command::result() {
  if (own_status_.code != wire::status::ok) throw_job_error(own_error_, own_status_.job, 0);
  for (int r = 1; r < s_.size; ++r)
    if (statuses_[r].code != wire::status::ok) throw_remote_error(s_, r, statuses_[r].job);
  if (!go_)
    throw std::length_error("map_rect: call id " + std::to_string(req_->call_id) + " returns " +
                            std::to_string(total_) + " result values, more than 2^31-1 in one call");
  root_site& site = *root_;
  s_.call.segments.resize(static_cast<std::size_t>(s_.size));
  for (int r = 0; r < s_.size; ++r)
    s_.call.segments[r] = {s_.call.answers.data() + blocks_.displs[r], plan_.first(r), plan_.first(r + 1)};
  s_.mid_call = false;
  if (keep_ != nullptr) {
    const int outputs = static_cast<int>(total_ - wire::status_doubles * s_.size);
    keep_->n_jobs = plan_.n_jobs;
    keep_->root_jobs = plan_.root_jobs;
    keep_->ran_jobs.resize(static_cast<std::size_t>(plan_.n_jobs));
    std::iota(keep_->ran_jobs.begin(), keep_->ran_jobs.end(), 0);
    keep_->ran_first.resize(static_cast<std::size_t>(s_.size) + 1);
    for (int r = 0; r <= s_.size; ++r) keep_->ran_first[r] = plan_.first(r);
    site.deferred_counts = keep_->counts;  // the sizes the site's next deferred call by claims expects
    site.deferred_plan = plan_;
    s_.call.claimed = false;
    return {s_.call.segments.data(), s_.size, keep_->counts.data(), 1, outputs, 0};
  }
  site.planned = true;
  return {s_.call.segments.data(), s_.size, site.counts.data(), site.rows, site.n_outputs, jobs_made(*req_, site)};
}

}  // namespace

call_result first_call(map_rect_context& s, root_site& site, const call_request& req, int row_real, int row_int,
                       int root_jobs) {
  first_call_command command(s, site, req, row_real, row_int, root_jobs);
  command.run();
  return command.result();
}

call_result deferred_forward(map_rect_context& s, root_site& site, const call_request& req, int row_real, int row_int,
                             int root_jobs, bool rows_follow, deferred_call& keep) {
  site.deferred_counts.clear();  // until this call succeeds, the workers' and the root's may differ
  first_call_command command(s, site, req, row_real, row_int, root_jobs, &keep, rows_follow);
  command.run();
  return command.result();
}

bool deferred_forward_claimed(map_rect_context& s, root_site& site, const call_request& req, deferred_call& keep,
                              call_result& result) {
  first_call_command command(s, site, req, site.row_real, site.row_int, site.plan.root_jobs, &keep, false, true);
  command.run();
  return command.claimed_result(result);
}

void serve_first_call(map_rect_context& s, const wire::request& v, const double* shared) {
  first_call_command(s, v, shared).run();
}

}  // namespace maprect::detail
