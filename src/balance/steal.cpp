// Claims between any two ranks, by message: what both sides share, and the root's side.
#include "src/balance/steal.hpp"

#include <sched.h>

#include <algorithm>
#include <maprect/detail/job_runner.hpp>
#include <maprect/detail/thread_parking.hpp>
#include <thread>

namespace maprect::detail {

job_range unstarted_jobs::take_front(int threads, int least) {
  if (front_ >= back_) return {};
  const int left = back_ - front_;
  const int take = std::max(claim_batch(left, threads), std::min(left, least));
  front_ += take;
  return {front_ - take, front_};
}

job_range unstarted_jobs::grant_back(int held, int least) {
  if (front_ >= back_) return {};
  const int left = back_ - front_;
  const int take = held == 0 ? std::max(1, left / 2) : (left - held) / 2;
  if (take <= 0) return later_grant();
  if (take < least) return {};
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
  MPI_Send(&ask, ask_doubles, MPI_DOUBLE, owner, ask_tag, comm);
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

balance_report last_call_balance() {
  const cluster_state* s = live_cluster_root();
  if (s == nullptr || !s->call.claimed) return {};
  return {s->call.worker_ends, s->call.worker_taken};
}

}  // namespace maprect::detail
