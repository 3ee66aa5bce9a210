// Claims between any two ranks, by message: what both sides share, and the root's side.
#include "src/balance/claims_engine.hpp"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <maprect/detail/job_runner.hpp>
#include <maprect/detail/thread_parking.hpp>
#include <thread>

namespace maprect::detail {

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

bool probe_after_progress(MPI_Comm comm, int tag, MPI_Status& st) {
  int pending = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &pending, &st);
  if (pending == 0) MPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &pending, &st);
  return pending != 0;
}

void post_ask(MPI_Comm comm, int owner, const ask_message& ask, grant_message& grant, MPI_Request& reply) {
  MPI_Send(&ask, sizeof ask, MPI_BYTE, owner, claims_tag::ask, comm);
  MPI_Irecv(&grant, 4, MPI_INT, owner, claims_tag::grant, comm, &reply);
}

void send_grant(MPI_Comm comm, int thief, int owner, job_range g, int left) {
  const grant_message m{owner, g.begin, g.end, left};
  MPI_Send(&m, 4, MPI_INT, thief, claims_tag::grant, comm);
}

void grant_payloads::post(int thief, int tag, const double* values, int n) {
  MPI_Isend(values, n, MPI_DOUBLE, thief, tag, comm_, &sent_.emplace_back());
}

void grant_payloads::post(int thief, int tag, const int* values, int n) {
  MPI_Isend(values, n, MPI_INT, thief, tag, comm_, &sent_.emplace_back());
}

void grant_payloads::complete() {
  MPI_Waitall(static_cast<int>(sent_.size()), sent_.data(), MPI_STATUSES_IGNORE);
  sent_.clear();
}

void receive_grant_payload(MPI_Comm comm, int tag, double* values, int n) {
  MPI_Recv(values, n, MPI_DOUBLE, 0, tag, comm, MPI_STATUS_IGNORE);
}

void receive_grant_payload(MPI_Comm comm, int tag, int* values, int n) {
  MPI_Recv(values, n, MPI_INT, 0, tag, comm, MPI_STATUS_IGNORE);
}

std::chrono::steady_clock::time_point claims_deadline(const claims_rank& self,
                                                      std::chrono::steady_clock::time_point since) {
  if (self.timeout <= 0) return std::chrono::steady_clock::time_point::max();
  return std::max(self.call_deadline, since + steady_seconds(self.timeout));
}

}  // namespace maprect::detail
