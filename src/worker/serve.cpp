// The worker side: wait for a request, run this rank's chunk of the call, send the blocks back; repeat
// until the root releases the cluster. Every branch joins exactly the collectives the root joins.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <maprect/detail/job_runner.hpp>
#include <maprect/detail/registry.hpp>
#include <string>

#include "src/protocol/chunk_plan.hpp"
#include "src/cluster/cluster_state.hpp"
#include "src/balance/steal.hpp"
#include <maprect/detail/job_error.hpp>

namespace maprect::detail {

namespace {

using wire::command;

/// Step 3 by message: this rank's job parameters.
void receive_job_parameters(cluster_state& s, worker_site& site, const wire::request& v) {
  site.job_params.resize(static_cast<std::size_t>(v.n_job) * site.n_jobs);
  if (static_cast<long long>(v.n_job) * v.n_jobs == 0) return;
  post_parameters(s.ends(), named_collective(v, v.chunk_out), nullptr, {}, site.job_params.data(),
                  static_cast<int>(site.job_params.size()));
}

/// Runs this rank's jobs into site.out after `status_slots` doubles: all of them, or with `claiming` those it
/// claims, front first, until none are left (the root takes over the others). Each chunk or claimed batch
/// runs on the rank's team; its blocks land in job order as serially. Sets `end` to where this rank's
/// jobs end. On failure records the error and returns the failing job's global index, else -1; while
/// claiming, a changed output count ends the claims as well. With `slot_blocks` (only while claiming), each
/// claimed batch's blocks are copied there as it ends and published (job_claims::publish), so that the root
/// makes their nodes while this rank runs on.
int run_jobs(cluster_state& s, worker_site& site, const wire::request& v, const double* shared, const double* job_params,
             int status_slots, bool claiming, int& end, double* slot_blocks = nullptr) {
  site.out.assign(static_cast<std::size_t>(status_slots), 0.0);
  site.run_counts.assign(static_cast<std::size_t>(site.n_jobs), 0);
  end = 0;
  auto next = [&]() -> job_range {
    if (claiming) return s.host.claims.claim_front();
    return end == 0 ? job_range{0, site.n_jobs} : job_range{};
  };
  int begin = 0, cursor = 0;
  try {
    const functor_entry* f = find_functor(v.call_id);
    if (f == nullptr)
      throw std::invalid_argument("call id " + std::to_string(v.call_id) + " is not registered on rank " +
                                  std::to_string(s.rank));
    for (job_range got = next(); !got.empty(); got = next()) {
      begin = got.begin;
      end = got.end;
      const chunk_input in{shared,
                           v.n_shared,
                           job_params + static_cast<std::ptrdiff_t>(got.begin) * v.n_job,
                           v.n_job,
                           site.x_r.data() + got.begin,
                           site.x_i.data() + got.begin,
                           got.size(),
                           nullptr};
      s.chunks.run(s.team.get(), f->run[v.kinds], in, site.out, site.run_counts.data() + got.begin, cursor);
      if (claiming && !std::equal(site.run_counts.begin() + got.begin, site.run_counts.begin() + got.end,
                                  site.counts.begin() + got.begin)) {
        end = s.host.claims.claim_rest();  // counts_changed: the blocks no longer fit the plan
        return -1;
      }
      if (slot_blocks) {
        const std::size_t from = static_cast<std::size_t>(status_slots + site.block_at[got.begin]);
        std::copy(site.out.data() + from, site.out.data() + site.out.size(), slot_blocks + site.block_at[got.begin]);
        s.host.claims.publish(got.end);
      }
    }
  } catch (...) {
    s.worker.last_error = current_job_error();
    if (claiming) end = s.host.claims.claim_rest();
    return site.job_begin + begin + cursor;
  }
  return -1;
}

/// With a timeout, tells the root that this rank's jobs are done (so that it can name the ranks that are
/// not); the request completes after the gather. Without one: nothing is sent.
MPI_Request announce_done(cluster_state& s) {
  MPI_Request done = MPI_REQUEST_NULL;
  if (s.settings.timeout > 0) MPI_Isend(nullptr, 0, MPI_BYTE, 0, done_tag, s.comm, &done);
  return done;
}

/// Completes announce_done()'s message (no-op without a timeout).
void finish_done(cluster_state& s, MPI_Request& done) {
  if (s.settings.timeout > 0) MPI_Wait(&done, MPI_STATUS_IGNORE);
}

/// Arms the exit guard for the serve loop: a worker that exits inside it aborts the job, naming itself.
struct serving_scope {
  cluster_state& s;
  explicit serving_scope(cluster_state& state) : s(state) { guard_exit(s); }
  ~serving_scope() { unguard_exit(s); }
  serving_scope(const serving_scope&) = delete;
  serving_scope& operator=(const serving_scope&) = delete;
};

/// The steady-state layout of this rank's part of a call site, from its output counts (as the root lays out
/// every rank's). Grows the host slots to fit (collective, as on the root).
void lay_out_site(cluster_state& s, worker_site& site, const wire::request& v) {
  const int rows = rows_per_output(static_cast<param_kinds>(v.kinds), v.n_shared, v.n_job);
  site.block_at.resize(static_cast<std::size_t>(site.n_jobs));
  site.planned_doubles = lay_out_answer(site.counts.data(), site.n_jobs, rows, site.block_at.data());
  s.host.reserve(slot_doubles(v.n_job, site.n_jobs, site.planned_doubles), s.comm);
}

/// Steps 2 to 5 of a first call on this rank: receive the rows, run, report status and output counts, and
/// on the root's go send the blocks.
void serve_first_call(cluster_state& s, const wire::request& v, const double* shared) {
  worker_site& site = s.worker.sites[v.call_id];
  site.plan = {v.n_jobs, s.size, v.root_jobs};
  site.job_begin = site.plan.first(s.rank);
  site.n_jobs = site.plan.jobs(s.rank);
  site.x_r.assign(static_cast<std::size_t>(site.n_jobs), std::vector<double>(static_cast<std::size_t>(v.row_real)));
  site.x_i.assign(static_cast<std::size_t>(site.n_jobs), std::vector<int>(static_cast<std::size_t>(v.row_int)));
  if (v.row_real > 0) exchange_rows<double>(s.ends(), nullptr, {}, site.x_r);
  if (v.row_int > 0) exchange_rows<int>(s.ends(), nullptr, {}, site.x_i);
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
  lay_out_site(s, site, v);
}

/// A new root share: receives the output counts and rows of the jobs this rank gains, keeps those of the jobs
/// it keeps (moved, not copied) and drops the others.
void serve_move_share(cluster_state& s, const wire::request& v) {
  worker_site& site = s.worker.sites[v.call_id];
  const chunk_plan before = site.plan, now{v.n_jobs, s.size, v.root_jobs};
  const job_range mine{now.first(s.rank), now.first(s.rank + 1)};
  gained_rows& g = s.call.gained;
  g.expect(jobs_gained({before.first(s.rank), before.first(s.rank + 1)}, mine).size(), v.row_real, v.row_int);
  exchange_gained(s.ends(), g);

  const auto jobs = static_cast<std::size_t>(mine.size());
  std::vector<std::vector<double>> x_r(jobs);
  std::vector<std::vector<int>> x_i(jobs);
  std::vector<int> planned(jobs);
  std::size_t next = 0;  // the next gained job's place in what was received
  for_each_job_moved(before, now, s.rank, [&](int j, bool gained, int kept) {
    const auto local = static_cast<std::size_t>(j - mine.begin);
    if (gained) {
      planned[local] = g.counts[next];
      x_r[local].assign(g.reals.begin() + next * v.row_real, g.reals.begin() + (next + 1) * v.row_real);
      x_i[local].assign(g.ints.begin() + next * v.row_int, g.ints.begin() + (next + 1) * v.row_int);
      ++next;
    } else {
      planned[local] = site.counts[kept];
      x_r[local] = std::move(site.x_r[kept]);
      x_i[local] = std::move(site.x_i[kept]);
    }
  });
  site.plan = now;
  site.job_begin = mine.begin;
  site.n_jobs = mine.size();
  site.x_r = std::move(x_r);
  site.x_i = std::move(x_i);
  site.counts = std::move(planned);
  lay_out_site(s, site, v);
}

/// Steps 3 to 5 of a steady call on this rank.
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
  const auto start = std::chrono::steady_clock::now();
  s.chunks.reset_busy();
  int end = 0;
  // Through host memory, each batch's blocks are in the slot as soon as it ends.
  double* const published =
      route == wire::call_route::memory ? slot + slot_blocks_at(v.n_job, site.n_jobs) : nullptr;
  const int failed_job = run_jobs(s, site, v, shared, slots ? slot : site.job_params.data(), wire::status_doubles,
                                  s.settings.take_over, end, published);
  const double busy = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const team_busy threads = s.chunks.busy();
  wire::status code = wire::status::ok;
  if (failed_job >= 0)
    code = wire::status::failed;
  else if (!std::equal(site.run_counts.begin(), site.run_counts.begin() + end, site.counts.begin()))
    code = wire::status::counts_changed;
  if (published) {
    s.host.claims.finish({static_cast<int>(code), failed_job, busy, threads.slowest_seconds,
                          threads.fastest_seconds});  // the root reads it there: no gather
    return;
  }
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

}  // namespace

void serve(cluster_state& s) {
  if (s.rank == 0) return;
  const serving_scope guard(s);
  while (true) {
    wire::request v;
    const double* shared = exchange_request(s.ends(), v, s.request, nullptr, s.call.shared_rest);
    if (v.sequence != ++s.sequence) {
      std::fprintf(stderr, "maprect: rank %d received request %llu, expected %llu; aborting\n", s.rank,
                   static_cast<unsigned long long>(v.sequence), static_cast<unsigned long long>(s.sequence));
      MPI_Abort(s.comm, 3);
    }
    switch (v.cmd) {
      case command::call: serve_call(s, v, shared); break;
      case command::first_call: serve_first_call(s, v, shared); break;
      case command::move_share: serve_move_share(s, v); break;
      case command::reduce: serve_reduce(s, v, shared); break;
      case command::fetch_error: exchange_error(s.ends(), v.arg, s.worker.last_error); break;
      case command::release: return;
    }
  }
}

}  // namespace maprect::detail
