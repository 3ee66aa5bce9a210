// Claims between any two ranks, by message: what both sides share, and the root's side.
#include "src/balance/steal.hpp"

#include <sched.h>

#include <algorithm>
#include <maprect/detail/job_runner.hpp>
#include <maprect/detail/thread_parking.hpp>
#include <thread>

namespace maprect::detail {

job_range unstarted_jobs::take_front() {
  if (front_ >= back_) return {};
  const int take = std::max(1, (back_ - front_) / 16);
  front_ += take;
  return {front_ - take, front_};
}

job_range unstarted_jobs::grant_back(int held) {
  if (front_ >= back_) return {};
  const int left = back_ - front_;
  const int take = held == 0 ? std::max(1, left / 2) : (left - held) / 2;
  if (take <= 0) return later_grant();
  back_ -= take;
  return {back_, back_ + take};
}

void pause_in_claims(wait_policy policy, unsigned& spins) {
  ++spins;
  if (policy != wait_policy::sleep) {
    spin_pause();
    return;
  }
  // Ranks share cores: leave the CPU to those that compute, yielding first, then sleeping.
  if (spins < 64) sched_yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(20));
}

void run_batch_on_root(cluster_state& s, const root_site& site, const call_request& req, double* region, int r,
                       job_range got, taken_failure& failure) {
  const int j0 = site.plan.first(r) + got.begin, n = got.size();
  s.call.taken_out.assign(0, 0.0);
  s.call.taken_counts.assign(static_cast<std::size_t>(n), 0);
  const chunk_input in = root_jobs_input(req, j0, n);
  int cursor = 0;
  try {
    s.chunks.run(s.team.get(), req.functor->run[static_cast<int>(req.kinds)], in, s.call.taken_out,
                 s.call.taken_counts.data(), cursor);
  } catch (...) {
    failure = {wire::status::failed, r, j0 + cursor, current_job_error()};
    return;
  }
  if (!std::equal(s.call.taken_counts.begin(), s.call.taken_counts.end(), site.counts.begin() + j0)) {
    failure.code = wire::status::counts_changed;
    failure.rank = r;
    return;
  }
  std::copy_n(s.call.taken_out.data(), s.call.taken_out.size(), region + site.block_at[j0]);
}

void post_ask(MPI_Comm comm, int owner, const ask_message& ask, int* range, int count, MPI_Request& reply,
              int ask_tag, int grant_tag) {
  MPI_Send(&ask, 3, MPI_DOUBLE, owner, ask_tag, comm);
  MPI_Irecv(range, count, MPI_INT, owner, grant_tag, comm, &reply);
}

void send_grant(MPI_Comm comm, int thief, int owner, job_range g) {
  const grant_message m{owner, g.begin, g.end};
  MPI_Send(&m, 3, MPI_INT, thief, steal_tag::grant, comm);
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
  MPI_Isend(rows.reals.data(), static_cast<int>(rows.reals.size()), MPI_DOUBLE, thief, steal_tag::grant_reals,
            comm_, &rows.requests[0]);
  MPI_Isend(rows.ints.data(), static_cast<int>(rows.ints.size()), MPI_INT, thief, steal_tag::grant_ints, comm_,
            &rows.requests[1]);
}

void rows_to_thieves::finish() {
  for (granted_rows& rows : sent_) MPI_Waitall(2, rows.requests, MPI_STATUSES_IGNORE);
  sent_.clear();
}

std::chrono::steady_clock::time_point claims_deadline(const cluster_state& s,
                                                      std::chrono::steady_clock::time_point since) {
  if (s.settings.timeout <= 0) return std::chrono::steady_clock::time_point::max();
  const auto timeout = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s.settings.timeout));
  return std::max(s.call.deadline, since + timeout);
}

namespace {

/// Doubles of the blocks of worker r's local jobs [begin, end).
int blocks_between(const root_site& site, int r, int begin, int end) {
  const int first = site.plan.first(r), jobs = site.plan.jobs(r);
  const int region = site.results.counts[r] - wire::status_doubles;
  const int to = end >= jobs ? region : site.block_at[first + end];
  const int from = begin >= jobs ? region : site.block_at[first + begin];
  return to - from;
}

void receive_doubles(cluster_state& s, double* into, int count, int from) {
  if (count > 0) MPI_Recv(into, count, MPI_DOUBLE, from, steal_tag::blocks, s.comm, MPI_STATUS_IGNORE);
}

/// Keeps `head` in `failure` when it fails before what is there (a failure before a changed output count).
void note_batch_failure(const batch_head& head, int thief, stolen_failure& failure) {
  const auto code = static_cast<wire::status>(head.code);
  if (code == wire::status::failed &&
      (failure.code != wire::status::failed || head.job < failure.job))
    failure = {code, thief, head.job};
  else if (code == wire::status::counts_changed && failure.code == wire::status::ok)
    failure = {code, thief, -1};
}

}  // namespace

long long receive_worker_blocks(cluster_state& s, const root_site& site, double* buffer, stolen_failure& failure) {
  long long received = 0;
  s.call.worker_ends.assign(static_cast<std::size_t>(s.size), 0);
  s.call.worker_taken.assign(static_cast<std::size_t>(s.size), 0);
  for (int r = 1; r < s.size; ++r) {
    int summary[2] = {0, 0};  // where r's own jobs end, batches it ran for others
    MPI_Recv(summary, 2, MPI_INT, r, steal_tag::summary, s.comm, MPI_STATUS_IGNORE);
    s.call.worker_ends[r] = summary[0];
    const int own = blocks_between(site, r, 0, summary[0]);
    receive_doubles(s, buffer + site.results.displs[r] + wire::status_doubles, own, r);
    received += own;
    for (int b = 0; b < summary[1]; ++b) {
      batch_head head;
      MPI_Recv(&head, 5, MPI_INT, r, steal_tag::batch_head, s.comm, MPI_STATUS_IGNORE);
      note_batch_failure(head, r, failure);
      s.call.worker_taken[r] += head.end - head.begin;
      if (static_cast<wire::status>(head.code) != wire::status::ok) continue;
      const int q = head.owner;
      const int n = blocks_between(site, q, head.begin, head.end);
      const int at = head.begin >= site.plan.jobs(q) ? 0 : site.block_at[site.plan.first(q) + head.begin];
      receive_doubles(s, buffer + site.results.displs[q] + wire::status_doubles + at, n, r);
      received += n;
    }
  }
  return received;
}

balance_report last_call_balance() {
  const cluster_state* s = live_cluster_root();
  if (s == nullptr || !s->call.claimed) return {};
  return {s->call.worker_ends, s->call.worker_taken};
}

}  // namespace maprect::detail
