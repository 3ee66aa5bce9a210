// Claims between all ranks of one host, both sides. When every rank holds every row of a call site, each
// rank, the root included, runs its own chunk from the front, and a rank out of jobs claims a batch from the
// back of the rank with the most unclaimed jobs: by atomic operations on the claim words in host memory, with
// the parameters read from, and the blocks written to, the owner's host slot. So a slow rank, the root as
// well as a worker, is relieved by every other. The root makes the output nodes in job order as each chunk
// completes; whoever ran a job, its blocks are the same bits.
#include <algorithm>
#include <chrono>
#include <maprect/detail/thread_parking.hpp>
#include <maprect/detail/job_error.hpp>
#include <maprect/detail/registry.hpp>

#include "src/map_rect/claimed_jobs.hpp"
#include "src/map_rect/root_steps.hpp"
#include "src/worker/worker_steps.hpp"

namespace maprect::detail {

namespace {

/// Where rank r's blocks start in its slot (the root's view, writable: any rank may write them).
double* blocks_in_slot(const map_rect_context& s, const root_site& site, int r) {
  return s.host.slots.slot(r) + slot_blocks_at(site.n_job_params, site.plan.jobs(r));
}

/// Drains the output nodes of jobs [first + from, first + to) of a chunk whose blocks start at `blocks`.
void drain_chunk(const root_site& site, const call_request& req, const double* blocks, int first,
                 int from, int to) {
  if (from >= to) return;
  req.session->drain(blocks + site.block_at[first + from], first + from, first + to, site.counts.data());
}

/// The root's own jobs, front batches from its claim word until it or others have claimed them all. A
/// failure claims the rest, so that no rank runs a job behind it.
void run_own_by_claims(map_rect_context& s, const root_site& site, const call_request& req, root_part& part) {
  job_claims& claims = s.host.claims;
  const int n = site.plan.root_jobs;
  s.call.own_out.assign(static_cast<std::size_t>(wire::status_doubles), 0.0);
  s.call.own_counts.assign(static_cast<std::size_t>(n), 0);
  const bool in_place = req.session != nullptr && !own_jobs_on_team(s, req, n);
  int first = 0, cursor = 0;
  bool kept = req.msgs != nullptr;  // its chunk is its own, unclaimable (reset_claims_everywhere)
  auto next = [&]() -> job_range {
    if (!kept) return claims.claim_batch_front(s.settings.threads);
    kept = false;
    return {0, n};
  };
  try {
    if (req.session != nullptr) req.session->begin(0, s.call.own_counts.data(), cursor, nullptr);
    for (job_range got = next(); !got.empty(); got = next()) {
      first = got.begin;
      const auto start = std::chrono::steady_clock::now();
      run_own_batch(s, req, got, in_place, cursor);
      if (in_place && s.team != nullptr) s.chunks.add_alone(seconds_since(start));
      if (!std::equal(s.call.own_counts.begin() + got.begin, s.call.own_counts.begin() + got.end,
                      site.counts.begin() + got.begin)) {
        claims.stop();  // the blocks no longer fit the plan: the call is planned anew
        claims.claim_rest();
        part.status = {wire::status::counts_changed, -1};
        break;
      }
    }
  } catch (...) {
    part.error = current_job_error();
    part.status = {wire::status::failed, first + cursor};
    claims.note_failure(first + cursor);
    claims.claim_rest();
  }
  part.own_end = claims.worker_end(0);
  if (part.status.code == wire::status::ok && req.session != nullptr && !in_place)
    req.session->drain(s.call.own_out.data() + wire::status_doubles, 0, part.own_end, s.call.own_counts.data());
}

/// The root runs one batch claimed from rank r's back, from the caller's parameters and rows, into r's slot.
/// Keeps the lowest failure in `failed`.
void run_claimed_on_root(map_rect_context& s, const root_site& site, const call_request& req, int r, job_range got,
                         root_part& part) {
  job_claims& claims = s.host.claims;
  lowest_failure here;
  run_batch_on_root(s, site, req, blocks_in_slot(s, site, r), r, got, here);
  if (here.code == wire::status::ok) {
    claims.add_claimed_done(r, got.size());
    part.taken_doubles += static_cast<long long>(s.call.taken_out.size());
    return;
  }
  if (here.code == wire::status::failed) claims.note_failure(here.job);
  else claims.stop();
  part.taken_failed.keep(std::move(here));
}

/// After its own jobs: the root makes the output nodes that are ready (`during`) and claims batches from the
/// rank with the most unclaimed jobs, until none is left; then, while nodes remain, it waits for them unless
/// the policy says sleep (the answers' wait follows). Returns the jobs it ran for others.
int claim_from_others(map_rect_context& s, const root_site& site, const call_request& req, root_part& part,
                      bool during) {
  int taken = 0;
  claim_until_none(
      s.host.claims, 0, s.size, s.settings.threads, [&](int r) { return site.plan.first(r); },
      [&](int r, job_range got, int) {
        if (during) make_nodes_in_order(s, site, req);
        run_claimed_on_root(s, site, req, r, got, part);
        taken += got.size();
        return true;
      });
  if (!during || s.settings.policy == wait_policy::sleep) return taken;
  for (unsigned spins = 1; !make_nodes_in_order(s, site, req) && !s.call.making_stopped; ++spins) {
    if (s.settings.timeout > 0 && spins % 1024 == 0 && std::chrono::steady_clock::now() >= s.deadline) break;
    spin_pause();
  }
  return taken;
}

}  // namespace

bool make_nodes_in_order(map_rect_context& s, const root_site& site, const call_request& req) {
  const job_claims& claims = s.host.claims;
  while (s.call.making < s.size && !s.call.making_stopped) {
    if (claims.stopped() || claims.first_failure() != job_claims::no_failure) {
      s.call.making_stopped = true;  // the call fails or is planned anew: its answers say how
      return false;
    }
    const int r = s.call.making, first = site.plan.first(r), jobs = site.plan.jobs(r);
    int& made = s.call.nodes_made[r];
    const double* blocks = blocks_in_slot(s, site, r);
    if (r > 0) {
      const job_progress p = claims.progress(r);
      drain_chunk(site, req, blocks, first, made, p.done);
      made = std::max(made, p.done);
      if (!p.finished) return false;
    }
    const int end = claims.worker_end(r);
    if (made < end) {
      s.call.making_stopped = true;
      return false;
    }
    if (end < jobs) {
      if (claims.claimed_done(r) < jobs - end) return false;
      drain_chunk(site, req, blocks, first, end, jobs);
      made = jobs;
    }
    ++s.call.making;
  }
  return s.call.making >= s.size;
}

void run_root_claims(map_rect_context& s, const root_site& site, const call_request& req, root_part& part,
                     bool during) {
  // With stale rows on the workers nobody runs anything: the call is planned anew with the caller's.
  if (!part.data_unchanged) s.host.claims.stop();
  else run_own_by_claims(s, site, req, part);
  part.own_done = std::chrono::steady_clock::now();
  s.call.making = 0;
  s.call.nodes_made[0] = part.own_end;
  if (!part.data_unchanged || part.status.code != wire::status::ok) return;
  part.taken = claim_from_others(s, site, req, part, during);
}

void count_claimed_traffic(map_rect_context& s, const root_site& site, const root_part& part) {
  long long answered = 0;  // what the memory route's collection counted: each worker's own jobs
  for (int r = 1; r < s.size; ++r) answered += s.call.answer_counts[r];
  const long long all_blocks = static_cast<long long>(site.n_outputs) * site.rows;
  const long long own_blocks = part.own_end < site.plan.root_jobs ? site.block_at[part.own_end]
                                                                  : site.results.counts[0] - wire::status_doubles;
  const long long others = static_cast<long long>(wire::status_doubles) * (s.size - 1) + all_blocks - own_blocks -
                           part.taken_doubles;
  const auto delta = static_cast<std::int64_t>(sizeof(double)) * (others - answered);
  s.last_traffic.received = static_cast<std::uint64_t>(static_cast<std::int64_t>(s.last_traffic.received) + delta);
  s.last_traffic.through_memory =
      static_cast<std::uint64_t>(static_cast<std::int64_t>(s.last_traffic.through_memory) + delta);
}

void report_claimed_balance(map_rect_context& s, const root_part& part) {
  s.call.claimed = true;
  s.call.worker_ends.assign(static_cast<std::size_t>(s.size), 0);
  s.call.worker_taken.assign(static_cast<std::size_t>(s.size), 0);
  for (int r = 0; r < s.size; ++r) {
    s.call.worker_ends[r] = s.host.claims.worker_end(r);
    s.call.worker_taken[r] = r == 0 ? part.taken : s.host.claims.report(r).taken;
  }
}

void locate_claimed_blocks(map_rect_context& s, const root_site& site, int own_end) {
  s.call.segments.clear();
  const int root_jobs = site.plan.root_jobs;
  s.call.segments.push_back({s.call.own_out.data() + wire::status_doubles, 0, own_end});
  if (own_end < root_jobs)
    s.call.segments.push_back({blocks_in_slot(s, site, 0) + site.block_at[own_end], own_end, root_jobs});
  for (int r = 1; r < s.size; ++r)
    s.call.segments.push_back({blocks_in_slot(s, site, r), site.plan.first(r), site.plan.first(r + 1)});
}

// ---- the worker's side ----

namespace {

/// A worker runs batches claimed from the back of the rank with the most unclaimed jobs, reading their
/// parameters from that rank's slot and writing their blocks there, until no rank has any left or a changed
/// output count stops the call. Keeps its lowest failing job and that job's error. Returns the jobs it ran.
int run_claimed_batches(map_rect_context& s, worker_site& site, const wire::request& v, const double* shared,
                        lowest_failure& failure) {
  job_claims& claims = s.host.claims;
  const functor_entry* f = find_functor(v.call_id);
  if (f == nullptr) return 0;
  int taken = 0;
  auto run = [&](int owner, job_range got, int j0) {
    const int n = got.size();
    const double* params = s.host.slots.slot(owner) + static_cast<std::ptrdiff_t>(got.begin) * v.n_job;
    const chunk_input in{shared, v.n_shared, params, v.n_job, site.x_r.data() + j0, site.x_i.data() + j0, n, nullptr};
    site.claimed_out.resize(0);
    site.claimed_counts.resize(static_cast<std::size_t>(n));
    int job = -1;
    job_error error;
    const wire::status code = run_planned_batch(s, f->run[v.kinds], in, j0, site.all_counts.data() + j0,
                                                site.claimed_out, site.claimed_counts.data(), job, error);
    if (code == wire::status::failed) {
      failure.keep(code, s.rank, job, std::move(error), s.last_error);
      claims.note_failure(job);
      return true;
    }
    if (code == wire::status::counts_changed) {
      failure.keep(code, s.rank, job);
      claims.stop();
      return false;
    }
    double* blocks = s.host.slots.slot(owner) + slot_blocks_at(v.n_job, site.plan.jobs(owner));
    std::copy_n(site.claimed_out.data(), site.claimed_out.size(), blocks + site.all_block_at[j0]);
    claims.add_claimed_done(owner, n);
    taken += n;
    return true;
  };
  claim_until_none(claims, s.rank, s.size, s.settings.threads, [&](int r) { return site.plan.first(r); }, run);
  return taken;
}

}  // namespace

void serve_call_claiming(map_rect_context& s, worker_site& site, const wire::request& v, const double* shared) {
  job_claims& claims = s.host.claims;
  double* const slot = s.host.slots.slot(s.rank);
  const auto start = std::chrono::steady_clock::now();
  s.chunks.reset_busy();
  int end = 0;
  lowest_failure failure;
  const int failed_job = run_jobs(s, site, v, shared, slot, wire::status_doubles, true, end,
                                  slot + slot_blocks_at(v.n_job, site.n_jobs));
  if (failed_job >= 0) {
    failure.keep(wire::status::failed, s.rank, failed_job);
    claims.note_failure(failed_job);
  } else if (!std::equal(site.run_counts.begin(), site.run_counts.begin() + end, site.counts.begin())) {
    failure.keep(wire::status::counts_changed, s.rank, -1);
    claims.stop();
  }
  const bool stopped = failure.code == wire::status::counts_changed;
  const int taken = stopped ? 0 : run_claimed_batches(s, site, v, shared, failure);
  const double busy = seconds_since(start);
  const team_busy threads = s.chunks.busy();
  claims.finish({static_cast<int>(failure.code), failure.job, busy, threads.slowest_seconds, threads.fastest_seconds,
                 taken});
}

}  // namespace maprect::detail
