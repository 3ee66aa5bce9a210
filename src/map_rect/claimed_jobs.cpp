// map_rect's jobs under the claims engine (claimed_jobs.hpp): the root's side, and the worker's.
#include "src/map_rect/claimed_jobs.hpp"

#include <algorithm>
#include <chrono>
#include <maprect/detail/job_runner.hpp>
#include <maprect/detail/registry.hpp>
#include <string>

#include "src/balance/claims_broker.hpp"
#include "src/worker/worker_steps.hpp"

namespace maprect::detail {

wire::status run_planned_batch(map_rect_context& s, chunk_runner runner, const chunk_input& in, int first,
                               const int* planned, block_buffer& out, int* counts, int& failed_job, job_error& error) {
  std::fill_n(counts, in.n_jobs, 0);
  int cursor = 0;
  try {
    s.chunks.run(s.team.get(), runner, in, out, counts, cursor);
  } catch (...) {
    error = current_job_error();
    failed_job = first + cursor;
    return wire::status::failed;
  }
  return std::equal(counts, counts + in.n_jobs, planned) ? wire::status::ok : wire::status::counts_changed;
}

void run_batch_on_root(map_rect_context& s, const root_site& site, const call_request& req, double* region, int r,
                       job_range got, lowest_failure& failure) {
  const int j0 = site.plan.first(r) + got.begin, n = got.size();
  s.call.taken_out.assign(0, 0.0);
  s.call.taken_counts.resize(static_cast<std::size_t>(n));
  int job = -1;
  job_error error;
  const wire::status code =
      run_planned_batch(s, req.functor->run[static_cast<int>(req.kinds)], root_jobs_input(req, j0, n), j0,
                        site.counts.data() + j0, s.call.taken_out, s.call.taken_counts.data(), job, error);
  if (code == wire::status::ok)
    std::copy_n(s.call.taken_out.data(), s.call.taken_out.size(), region + site.block_at[j0]);
  failure.keep(code, 0, job, std::move(error));
}

void rows_to_thieves::send(int thief, int first, job_range g) {
  const int P = rows_.n_job_params, begin = first + g.begin, end = first + g.end;
  granted_rows& rows = sent_.emplace_back();
  rows.reals.assign(rows_.job_params + static_cast<std::ptrdiff_t>(begin) * P,
                    rows_.job_params + static_cast<std::ptrdiff_t>(end) * P);
  rows.ints.assign(rows_.counts + begin, rows_.counts + end);
  for (int j = begin; j < end; ++j) {
    // A job_data's rows the thief was sent before are still the same: only whether they follow is sent.
    const bool send = rows_.sent == nullptr || !rows_.sent->held[thief][j];
    if (rows_.sent != nullptr) {
      rows_.sent->held[thief][j] = 1;
      rows_.sent->rows += send ? 1 : 0;
    }
    rows.ints.push_back(send ? 1 : 0);
    if (send) rows.reals.insert(rows.reals.end(), rows_.x_r[j].begin(), rows_.x_r[j].end());
  }
  for (int j = begin; j < end; ++j)
    if (rows.ints[static_cast<std::size_t>(g.size() + j - begin)] != 0)
      rows.ints.insert(rows.ints.end(), rows_.x_i[j].begin(), rows_.x_i[j].end());
  payloads_.post(thief, claims_tag::grant_reals, rows.reals.data(), static_cast<int>(rows.reals.size()));
  payloads_.post(thief, claims_tag::grant_ints, rows.ints.data(), static_cast<int>(rows.ints.size()));
}

void rows_to_thieves::finish() {
  payloads_.complete();
  sent_.clear();
}

map_rect_claimed_jobs::map_rect_claimed_jobs(map_rect_context& s, const root_site& site, const call_request& req,
                                             double* buffer, owned_rows rows)
    : s_(s), site_(site), req_(req), buffer_(buffer), rows_(s.comm, rows) {
  s.call.worker_ends.assign(static_cast<std::size_t>(s.size), -1);  // -1: its result is not in
  s.call.worker_taken.assign(static_cast<std::size_t>(s.size), 0);
}

wire::status map_rect_claimed_jobs::run_on_root(int owner, job_range g, int& failed_job) {
  double* region = buffer_ + site_.results.displs[owner] + wire::status_doubles;
  lowest_failure here;
  run_batch_on_root(s_, site_, req_, region, owner, g, here);
  failed_job = here.job;
  const wire::status code = here.code;
  failure_.keep(std::move(here));
  return code;
}

namespace {

/// Doubles of the blocks of rank r's local jobs [begin, end).
int blocks_between(const root_site& site, int r, int begin, int end) {
  const int first = site.plan.first(r), jobs = site.plan.jobs(r);
  const int region = site.results.counts[r] - wire::status_doubles;
  const int to = end >= jobs ? region : site.block_at[first + end];
  const int from = begin >= jobs ? region : site.block_at[first + begin];
  return to - from;
}

}  // namespace

double* map_rect_claimed_jobs::place_result(int from, const result_head& head, int& n) {
  const int owner = head.owner, begin = head.begin, end = head.end, code = head.code;
  double* region = buffer_ + site_.results.displs[owner];
  n = 0;
  if (owner == from) {  // its own jobs [0, end): the status goes where a gather puts it
    head.write_status(region);
    s_.call.worker_ends[from] = end;
    n = blocks_between(site_, from, 0, end);
  } else {
    if (code != result_head::not_run) s_.call.worker_taken[from] += end - begin;
    if (code == static_cast<int>(wire::status::ok)) n = blocks_between(site_, owner, begin, end);
  }
  const int at = owner == from || begin >= site_.plan.jobs(owner) ? 0 : site_.block_at[site_.plan.first(owner) + begin];
  return region + wire::status_doubles + at;
}

int receive_granted_rows(map_rect_context& s, const worker_site& site, const wire::request& v, const grant_message& got,
                         std::vector<double>& reals, std::vector<int>& ints) {
  // At most every job's rows: those of a job_data sent before do not come again (the messages are shorter).
  const int n = got.range().size();
  reals.resize(static_cast<std::size_t>(n) * (v.n_job + v.row_real));
  ints.resize(static_cast<std::size_t>(n) * (2 + v.row_int));
  receive_grant_payload(s.comm, claims_tag::grant_reals, reals.data(), static_cast<int>(reals.size()));
  receive_grant_payload(s.comm, claims_tag::grant_ints, ints.data(), static_cast<int>(ints.size()));
  // Kept at once, by global job, even for a batch this rank will not run: the root counts them as held here
  // from now on, and the next claims of a job_data's find them.
  const int first = site.plan.first(got.owner) + got.begin;
  root_rows_held& held = s.worker.root_rows[v.call_id];
  if (static_cast<int>(held.x_r.size()) < first + n) {
    held.x_r.resize(static_cast<std::size_t>(first + n));
    held.x_i.resize(static_cast<std::size_t>(first + n));
  }
  const double* real_row = reals.data() + static_cast<std::ptrdiff_t>(n) * v.n_job;
  const int* int_row = ints.data() + 2 * n;
  for (int k = 0; k < n; ++k) {
    if (ints[static_cast<std::size_t>(n + k)] == 0) continue;  // sent before, held here
    held.x_r[first + k].assign(real_row, real_row + v.row_real);
    held.x_i[first + k].assign(int_row, int_row + v.row_int);
    real_row += v.row_real;
    int_row += v.row_int;
  }
  return first;
}

chunk_input granted_batch_input(map_rect_context& s, const wire::request& v, const double* shared,
                                const std::vector<double>& reals, int first, int n) {
  const root_rows_held& held = s.worker.root_rows[v.call_id];  // as receive_granted_rows left them
  return {shared, v.n_shared, reals.data(), v.n_job, held.x_r.data() + first, held.x_i.data() + first, n, nullptr};
}

worker_job_batches::worker_job_batches(map_rect_context& s, const worker_site& site, const wire::request& v,
                                       const double* shared, const double* job_params)
    : s_(s), site_(site), v_(v), shared_(shared), job_params_(job_params), f_(find_functor(v.call_id)) {}

int worker_job_batches::unrunnable_job() {
  if (f_ != nullptr) return -1;
  s_.last_error = unregistered_call(v_.call_id, s_.rank);
  return site_.job_begin;
}

wire::status worker_job_batches::run_own(job_range g, int& failed_job) {
  const chunk_input in{shared_,  v_.n_shared, job_params_ + static_cast<std::ptrdiff_t>(g.begin) * v_.n_job,
                       v_.n_job, site_.own_x_r() + g.begin, site_.own_x_i() + g.begin, g.size(), nullptr};
  return run_keeping_error(in, site_.job_begin + g.begin, own_planned() + g.begin, own_out(), failed_job);
}

void worker_job_batches::receive_batch(const grant_message& got) {
  batch_first_ = receive_granted_rows(s_, site_, v_, got, grant_reals_, grant_ints_);
}

wire::status worker_job_batches::run_batch(const grant_message& got, block_buffer& blocks, int& failed_job) {
  const chunk_input in = granted_batch_input(s_, v_, shared_, grant_reals_, batch_first_, got.range().size());
  return run_keeping_error(in, batch_first_, grant_ints_.data(), blocks, failed_job);
}

wire::status worker_job_batches::run_host_batch(int owner, job_range got, block_buffer& blocks, int& failed_job) {
  // Every rank of the host holds every row (host_claims_for): x_r[j] is job j's.
  const int first = site_.plan.first(owner) + got.begin, row = first - site_.rows_first;
  const double* params = s_.host.peer_params(owner) + static_cast<std::ptrdiff_t>(got.begin) * v_.n_job;
  const chunk_input in{shared_, v_.n_shared, params, v_.n_job, site_.x_r.data() + row, site_.x_i.data() + row,
                       got.size(), nullptr};
  blocks.resize(0);
  return run_keeping_error(in, first, host_planned(owner, got), blocks, failed_job);
}

wire::status worker_job_batches::run_keeping_error(const chunk_input& in, int first, const int* planned,
                                                  block_buffer& out, int& failed_job) {
  job_error error;
  const wire::status code = run(in, first, planned, out, failed_job, error);
  if (code == wire::status::failed) s_.last_error = std::move(error);
  return code;
}

void worker_job_batches::share_with_host(const int* counts) {
  s_.host.publish_range(job_params_, static_cast<std::size_t>(v_.n_job) * site_.n_jobs, site_.n_jobs, s_.size,
                        v_.sequence, true, counts);
  host_ = &s_.host.claims;
}

namespace {

/// A worker's map_rect jobs of one steady call under claims by message, each batch's blocks by the functor's
/// chunk runner: its own into site.out, behind the status.
class map_rect_worker_jobs final : public worker_job_batches {
 public:
  map_rect_worker_jobs(map_rect_context& s, worker_site& site, const wire::request& v, const double* shared,
                       const double* job_params)
      : worker_job_batches(s, site, v, shared, job_params), writable_site_(site) {
    writable_site_.out.assign(static_cast<std::size_t>(wire::status_doubles), 0.0);
  }
  const double* own_blocks(int end, int& n) override {
    const int doubles = answer_doubles(site_.planned_doubles, site_.block_at.data(), site_.n_jobs, end);
    writable_site_.out.resize(static_cast<std::size_t>(doubles));
    n = doubles - wire::status_doubles;
    return writable_site_.out.data() + wire::status_doubles;
  }

 private:
  wire::status run(const chunk_input& in, int first, const int* planned, block_buffer& out, int& failed_job,
                   job_error& error) override {
    writable_site_.claimed_counts.resize(static_cast<std::size_t>(in.n_jobs));
    return run_planned_batch(s_, f_->run[v_.kinds], in, first, planned, out, writable_site_.claimed_counts.data(),
                             failed_job, error);
  }
  block_buffer& own_out() override { return writable_site_.out; }
  const int* own_planned() const override { return site_.counts.data(); }
  const int* host_planned(int owner, job_range got) override {
    return site_.all_counts.data() + site_.plan.first(owner) + got.begin;
  }

  worker_site& writable_site_;  ///< site_, whose out and claimed_counts it writes
};

}  // namespace

namespace {

/// The doubles the largest range of jobs planned as `plan` takes at `per_job` doubles a job.
long long largest_range_doubles(const chunk_plan& plan, long long per_job) {
  return per_job * std::max(plan.root_jobs, plan.most_worker_jobs());
}

}  // namespace

bool host_claims_for(const map_rect_context& s, bool rows_everywhere, const chunk_plan& plan, int n_job_params) {
  return rows_everywhere && s.host.shares_ranges(largest_range_doubles(plan, n_job_params));
}

long long deferred_range_doubles(const chunk_plan& plan, int n_job_params) {
  return largest_range_doubles(plan, n_job_params + 1LL);
}

bool deferred_host_claims_for(const map_rect_context& s, bool rows_everywhere, const chunk_plan& plan,
                              int n_job_params) {
  return rows_everywhere && s.host.shares_ranges(deferred_range_doubles(plan, n_job_params), true);
}

void share_root_range(map_rect_context& s, const chunk_plan& plan, const call_request& req, claims_broker& broker,
                      bool claimable, bool rows_everywhere) {
  if (!host_claims_for(s, rows_everywhere, plan, req.n_job_params)) return;
  const int n = claimable ? plan.root_jobs : 0;
  std::atomic<std::uint64_t>* word =
      s.host.publish_range(req.job_params, static_cast<std::size_t>(n) * req.n_job_params, n, s.size, s.sequence, true);
  if (n > 0) broker.attach_host_range(word);
}

void serve_call_stealing(map_rect_context& s, worker_site& site, const wire::request& v, const double* shared,
                         const double* job_params) {
  map_rect_worker_jobs work(s, site, v, shared, job_params);
  // Any rank holds any job's rows: the ranks of a host claim each other's jobs in host memory.
  if (host_claims_for(s, site.rows_everywhere, site.plan, v.n_job)) work.share_with_host();
  serve_claims(claims_of(s), work, s.settings.test_held_rank == s.rank);
}

}  // namespace maprect::detail
