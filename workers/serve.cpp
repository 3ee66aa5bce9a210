// The worker side: wait for a request, run this rank's chunk of the call, send the blocks back; repeat
// until the root releases the cluster. Every branch joins exactly the collectives the root joins.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <maprect/detail/job_runner.hpp>
#include <maprect/detail/registry.hpp>
#include <string>

#include "src/chunk_plan.hpp"
#include "src/cluster_state.hpp"
#include <maprect/detail/job_error.hpp>

namespace maprect::detail {

namespace {

using wire::command;

/// The call's sizes, read from the request header.
struct request_view {
  int call_id, n_shared, n_own, n_jobs, row_real, row_int, root_jobs, arg;
  param_kinds kinds;
  explicit request_view(const double* h)
      : call_id(static_cast<int>(h[wire::s_call_id])),
        n_shared(static_cast<int>(h[wire::s_n_shared])),
        n_own(static_cast<int>(h[wire::s_n_own])),
        n_jobs(static_cast<int>(h[wire::s_n_jobs])),
        row_real(static_cast<int>(h[wire::s_row_real])),
        row_int(static_cast<int>(h[wire::s_row_int])),
        root_jobs(static_cast<int>(h[wire::s_root_jobs])),
        arg(static_cast<int>(h[wire::s_arg])),
        kinds(static_cast<param_kinds>(static_cast<int>(h[wire::s_kinds]))) {}
};

/// Receives the shared parameters: inline in the request, the rest in a second broadcast.
const double* receive_shared(cluster_state& s, const request_view& v) {
  if (v.n_shared <= wire::inline_shared) return s.request + wire::header_slots;
  s.shared_rest.resize(static_cast<std::size_t>(v.n_shared));
  std::memcpy(s.shared_rest.data(), s.request + wire::header_slots, sizeof(double) * wire::inline_shared);
  bcast(s.shared_rest.data() + wire::inline_shared, v.n_shared - wire::inline_shared, MPI_DOUBLE, s.comm, s.policy);
  return s.shared_rest.data();
}

/// Receives this rank's part of the scatter of a call site's rows straight into `rows` (allocated, of equal
/// length): the root sends one flat buffer, and a datatype of the rows' addresses spreads it over them.
template <class T>
void receive_rows(cluster_state& s, std::vector<std::vector<T>>& rows, MPI_Datatype type) {
  if (rows.empty()) {
    scatterv(nullptr, nullptr, nullptr, type, nullptr, 0, s.comm, s.policy);
    return;
  }
  std::vector<MPI_Aint> at(rows.size());
  for (std::size_t j = 0; j < rows.size(); ++j) MPI_Get_address(rows[j].data(), &at[j]);
  MPI_Datatype spread;
  MPI_Type_create_hindexed_block(static_cast<int>(rows.size()), static_cast<int>(rows[0].size()), at.data(), type,
                                 &spread);
  MPI_Type_commit(&spread);
  scatterv_typed(nullptr, nullptr, nullptr, type, MPI_BOTTOM, 1, spread, s.comm, s.policy);
  MPI_Type_free(&spread);
}

void receive_own(cluster_state& s, worker_site& site, const request_view& v) {
  site.own.resize(static_cast<std::size_t>(v.n_own) * site.n_jobs);
  if (static_cast<long long>(v.n_own) * v.n_jobs == 0) return;
  scatterv(nullptr, nullptr, nullptr, MPI_DOUBLE, site.own.data(), static_cast<int>(site.own.size()), s.comm,
           s.policy);
}

/// Runs this rank's jobs into site.out after `status_slots` doubles: all of them, or with `claiming` those it
/// claims, front first, until none are left (the root takes over the others). Sets `end` to where this rank's
/// jobs end. On failure records the error and returns the failing job's global index, else -1; while
/// claiming, a changed output count ends the claims as well. With `slot_blocks` (only while claiming), each
/// claimed batch's blocks are copied there as it ends and published (job_claims::publish), so that the root
/// makes their nodes while this rank runs on.
int run_jobs(cluster_state& s, worker_site& site, const request_view& v, const double* shared, const double* own,
             int status_slots, bool claiming, int& end, double* slot_blocks = nullptr) {
  site.out.assign(static_cast<std::size_t>(status_slots), 0.0);
  site.run_counts.assign(static_cast<std::size_t>(site.n_jobs), 0);
  end = 0;
  auto next = [&]() -> job_range {
    if (claiming) return s.claims.claim_front();
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
                           own + static_cast<std::ptrdiff_t>(got.begin) * v.n_own,
                           v.n_own,
                           site.x_r.data() + got.begin,
                           site.x_i.data() + got.begin,
                           got.size(),
                           nullptr};
      f->run[static_cast<int>(v.kinds)](in, site.out, site.run_counts.data() + got.begin, cursor);
      if (claiming && !std::equal(site.run_counts.begin() + got.begin, site.run_counts.begin() + got.end,
                                  site.counts.begin() + got.begin)) {
        end = s.claims.claim_rest();  // counts_changed: the blocks no longer fit the plan
        return -1;
      }
      if (slot_blocks) {
        const std::size_t from = static_cast<std::size_t>(status_slots + site.block_at[got.begin]);
        std::copy(site.out.data() + from, site.out.data() + site.out.size(), slot_blocks + site.block_at[got.begin]);
        s.claims.publish(got.end);
      }
    }
  } catch (...) {
    s.last_error = current_job_error();
    if (claiming) end = s.claims.claim_rest();
    return site.job_begin + begin + cursor;
  }
  return -1;
}

/// With a timeout, tells the root that this rank's jobs are done (so that it can name the ranks that are
/// not); the request completes after the gather. Without one: nothing is sent.
MPI_Request announce_done(cluster_state& s) {
  MPI_Request done = MPI_REQUEST_NULL;
  if (s.timeout > 0) MPI_Isend(nullptr, 0, MPI_BYTE, 0, done_tag, s.comm, &done);
  return done;
}

/// Completes announce_done()'s message (no-op without a timeout).
void finish_done(cluster_state& s, MPI_Request& done) {
  if (s.timeout > 0) MPI_Wait(&done, MPI_STATUS_IGNORE);
}

/// Arms the exit guard for the serve loop: a worker that exits inside it aborts the job, naming itself.
struct serving_scope {
  cluster_state& s;
  explicit serving_scope(cluster_state& state) : s(state) { guard_exit(s); }
  ~serving_scope() { unguard_exit(s); }
  serving_scope(const serving_scope&) = delete;
  serving_scope& operator=(const serving_scope&) = delete;
};

/// The steady-state layout of this rank's part of a call site, from its output counts: where each job's
/// blocks start and the doubles of its answer. Grows the node slots to fit (collective, as on the root).
void lay_out_answer(cluster_state& s, worker_site& site, const request_view& v) {
  const int rows = rows_per_output(v.kinds, v.n_shared, v.n_own);
  site.block_at.resize(static_cast<std::size_t>(site.n_jobs));
  block_offsets(site.counts.data(), site.n_jobs, rows, site.block_at.data());
  long long outputs = 0;
  for (int c : site.counts) outputs += c;
  site.planned_doubles = wire::status_doubles + static_cast<int>(outputs * rows);
  s.slots.reserve(slot_doubles(v.n_own, site.n_jobs, site.planned_doubles), s.comm);
}

void serve_first_call(cluster_state& s, const request_view& v) {
  const double* shared = receive_shared(s, v);
  worker_site& site = s.cached_sites[v.call_id];
  const chunk_plan plan{v.n_jobs, s.size, v.root_jobs};
  site.job_begin = plan.first(s.rank);
  site.n_jobs = plan.jobs(s.rank);
  site.x_r.assign(static_cast<std::size_t>(site.n_jobs), std::vector<double>(static_cast<std::size_t>(v.row_real)));
  site.x_i.assign(static_cast<std::size_t>(site.n_jobs), std::vector<int>(static_cast<std::size_t>(v.row_int)));
  if (v.row_real > 0) receive_rows(s, site.x_r, MPI_DOUBLE);
  if (v.row_int > 0) receive_rows(s, site.x_i, MPI_INT);
  receive_own(s, site, v);

  int end = 0;
  const int failed_job = run_jobs(s, site, v, shared, site.own.data(), 0, false, end);
  MPI_Request done = announce_done(s);
  std::vector<int> report(2 + static_cast<std::size_t>(site.n_jobs));
  report[0] = static_cast<int>(failed_job < 0 ? wire::status::ok : wire::status::failed);
  report[1] = failed_job;
  std::copy(site.run_counts.begin(), site.run_counts.end(), report.begin() + 2);
  gatherv(report.data(), static_cast<int>(report.size()), MPI_INT, nullptr, nullptr, nullptr, s.comm, s.policy);
  finish_done(s, done);
  int go = 0;
  bcast(&go, 1, MPI_INT, s.comm, s.policy);
  if (!go) return;
  gatherv(site.out.data(), static_cast<int>(site.out.size()), MPI_DOUBLE, nullptr, nullptr, nullptr, s.comm,
          s.policy);
  site.counts = site.run_counts;
  lay_out_answer(s, site, v);
}

/// A new root share: receives the output counts and rows of the jobs this rank gains, keeps those of the jobs
/// it keeps (moved, not copied) and drops the others.
void serve_move_share(cluster_state& s, const request_view& v) {
  worker_site& site = s.cached_sites[v.call_id];
  const chunk_plan now{v.n_jobs, s.size, v.root_jobs};
  const job_range had{site.job_begin, site.job_begin + site.n_jobs}, mine{now.first(s.rank), now.first(s.rank + 1)};
  const gained_jobs gained = jobs_gained(had, mine);
  const auto n = static_cast<std::size_t>(gained.size());
  std::vector<int> counts(n), ints(n * v.row_int);
  std::vector<double> reals(n * v.row_real);
  scatterv(nullptr, nullptr, nullptr, MPI_INT, counts.data(), static_cast<int>(counts.size()), s.comm, s.policy);
  scatterv(nullptr, nullptr, nullptr, MPI_INT, ints.data(), static_cast<int>(ints.size()), s.comm, s.policy);
  scatterv(nullptr, nullptr, nullptr, MPI_DOUBLE, reals.data(), static_cast<int>(reals.size()), s.comm, s.policy);

  const auto jobs = static_cast<std::size_t>(mine.size());
  std::vector<std::vector<double>> x_r(jobs);
  std::vector<std::vector<int>> x_i(jobs);
  std::vector<int> planned(jobs);
  std::size_t next = 0;  // the next gained job's place in what was received
  for (int j = mine.begin; j < mine.end; ++j) {
    const auto local = static_cast<std::size_t>(j - mine.begin);
    if (gained.has(j)) {
      planned[local] = counts[next];
      x_r[local].assign(reals.begin() + next * v.row_real, reals.begin() + (next + 1) * v.row_real);
      x_i[local].assign(ints.begin() + next * v.row_int, ints.begin() + (next + 1) * v.row_int);
      ++next;
    } else {
      const auto kept = static_cast<std::size_t>(j - had.begin);
      planned[local] = site.counts[kept];
      x_r[local] = std::move(site.x_r[kept]);
      x_i[local] = std::move(site.x_i[kept]);
    }
  }
  site.job_begin = mine.begin;
  site.n_jobs = mine.size();
  site.x_r = std::move(x_r);
  site.x_i = std::move(x_i);
  site.counts = std::move(planned);
  lay_out_answer(s, site, v);
}

void serve_call(cluster_state& s, const request_view& v) {
  const double* shared = receive_shared(s, v);
  worker_site& site = s.cached_sites[v.call_id];
  // With slots the parameters wait in this rank's slot; the blocks go behind them.
  const auto route = static_cast<wire::call_route>(v.arg);
  const bool slots = route != wire::call_route::messages;
  double* const slot = slots ? s.slots.slot(s.rank) : nullptr;
  if (slots) s.slots.sync();
  else receive_own(s, site, v);
  const auto start = std::chrono::steady_clock::now();
  int end = 0;
  // Through node memory, each batch's blocks are in the slot as soon as it ends.
  double* const published =
      route == wire::call_route::memory ? slot + slot_blocks_at(v.n_own, site.n_jobs) : nullptr;
  const int failed_job = run_jobs(s, site, v, shared, slots ? slot : site.own.data(), wire::status_doubles,
                                  s.take_over, end, published);
  const double busy = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  wire::status code = wire::status::ok;
  if (failed_job >= 0)
    code = wire::status::failed;
  else if (!std::equal(site.run_counts.begin(), site.run_counts.begin() + end, site.counts.begin()))
    code = wire::status::counts_changed;
  if (published) {
    s.claims.finish({static_cast<int>(code), failed_job, busy});  // the root reads it there: no gather
    return;
  }
  MPI_Request done = announce_done(s);
  // Always the planned size of the jobs up to `end`, so the root's gather matches whatever happened here.
  const int doubles = answer_doubles(site.planned_doubles, site.block_at.data(), site.n_jobs, end);
  site.out.resize(static_cast<std::size_t>(doubles));
  site.out.data()[0] = static_cast<int>(code);
  site.out.data()[1] = failed_job;
  site.out.data()[2] = busy;
  if (slots) {
    std::copy_n(site.out.data() + wire::status_doubles, doubles - wire::status_doubles,
                slot + slot_blocks_at(v.n_own, site.n_jobs));
    s.slots.sync();
  }
  gatherv(site.out.data(), slots ? wire::status_doubles : doubles, MPI_DOUBLE, nullptr, nullptr, nullptr, s.comm,
          s.policy);
  finish_done(s, done);
}

void send_error(cluster_state& s) {
  std::string buffer(sizeof(int), '\0');
  const int type = static_cast<int>(s.last_error.type);
  std::memcpy(buffer.data(), &type, sizeof(int));
  buffer += s.last_error.message;
  MPI_Send(buffer.data(), static_cast<int>(buffer.size()), MPI_CHAR, 0, 0, s.comm);
}

}  // namespace

void serve(cluster_state& s) {
  if (s.rank == 0) return;
  const serving_scope guard(s);
  while (true) {
    bcast(s.request, wire::request_doubles, MPI_DOUBLE, s.comm, s.policy);
    const auto sequence = static_cast<std::uint64_t>(s.request[wire::s_sequence]);
    if (sequence != ++s.sequence) {
      std::fprintf(stderr, "maprect: rank %d received request %llu, expected %llu; aborting\n", s.rank,
                   static_cast<unsigned long long>(sequence), static_cast<unsigned long long>(s.sequence));
      MPI_Abort(s.comm, 3);
    }
    const request_view v(s.request);
    switch (static_cast<command>(static_cast<int>(s.request[wire::s_command]))) {
      case command::call: serve_call(s, v); break;
      case command::first_call: serve_first_call(s, v); break;
      case command::move_share: serve_move_share(s, v); break;
      case command::fetch_error:
        if (static_cast<int>(s.request[wire::s_arg]) == s.rank) send_error(s);
        break;
      case command::release: return;
    }
  }
}

}  // namespace maprect::detail
