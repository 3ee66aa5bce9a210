// A cluster's start and end on every rank: the settings agreed, the team, host memory and collectives opened,
// the root installed as the map_rect backend; the workers released; and the guard that turns a quiet exit of a
// serving rank into an abort that says why.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "src/cluster/cluster_state.hpp"
#include "src/cluster/test_hooks.hpp"
#include "src/map_rect/root_steps.hpp"
#include "src/protocol/call_timeout.hpp"
#include "src/protocol/start_up.hpp"

namespace maprect::detail {

namespace {

std::atomic<rank_context*> exit_guarded{nullptr};  // the cluster whose rank must not exit quietly
double pinned_round_trip = -1;  // a test's round trip from the root to every worker (pin_round_trips), or -1

/// At a guarded rank's exit: names the rank that left while the cluster serves, and aborts the job.
void abort_on_guarded_exit() {
  rank_context* s = exit_guarded.exchange(nullptr);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (s == nullptr || finalized) return;
  if (s->rank == 0) {
    std::fprintf(stderr,
                 "maprect: rank 0 (the root) exited while its workers serve (cluster neither stopped nor "
                 "destroyed); aborting the job\n");
  } else {
    char host[MPI_MAX_PROCESSOR_NAME] = "unknown";
    int length = 0;
    MPI_Get_processor_name(host, &length);
    std::fprintf(stderr, "maprect: rank %d (host %s) exited while serving request %llu; aborting the job\n", s->rank,
                 host, static_cast<unsigned long long>(s->sequence));
  }
  abort_job(*s, 1);
}

}  // namespace

// live_root is only ever set to a cluster's state (start_cluster), so its cluster is that state itself.
cluster_state* live_cluster_root() { return static_cast<cluster_state*>(live_root); }

void guard_exit(rank_context& s) {
  static const bool registered = [] {
    std::atexit(&abort_on_guarded_exit);
    std::at_quick_exit(&abort_on_guarded_exit);
    return true;
  }();
  (void)registered;
  exit_guarded.store(&s);
}

void unguard_exit(rank_context& s) {
  rank_context* expected = &s;
  exit_guarded.compare_exchange_strong(expected, nullptr);
}

/// This rank's team, when it runs on more than one thread. Idle team threads block at once where ranks share
/// cores (the sleep policy). On the root the team also serves the in-process calls made on its thread (a
/// one-rank cluster's, or any after stop()).
static void start_team(cluster_state& s) {
  if (s.settings.threads <= 1) return;
  const auto spin = s.settings.policy == wait_policy::sleep ? std::chrono::nanoseconds(0)
                                                             : std::chrono::nanoseconds(thread_team::default_spin);
  s.team = std::make_unique<thread_team>(s.settings.threads, spin);
  if (s.rank == 0) {
    s.previous_team = current_team();
    detail::installed_team = s.team.get();
  }
}

void pin_round_trips(double seconds) { pinned_round_trip = seconds; }

void start_cluster(cluster_state& s, MPI_Comm comm) {
  MPI_Comm_dup(comm, &s.comm);
  MPI_Comm_rank(s.comm, &s.rank);
  MPI_Comm_size(s.comm, &s.size);
  try {
    s.settings = choose_cluster_settings(s.comm, s.threads_asked);
  } catch (...) {
    MPI_Comm_free(&s.comm);
    throw;
  }
  start_team(s);
  s.ranks = gather_rank_facts(s.comm, s.settings.threads, s.round_trip);
  if (pinned_round_trip >= 0) {
    s.round_trip = s.rank > 0 ? pinned_round_trip : 0.0;
    for (std::size_t r = 1; r < s.ranks.size(); ++r) s.ranks[r].round_trip = pinned_round_trip;
  }
  if (const std::string warning = bound_threads_warning(s.ranks); !warning.empty())
    std::fprintf(stderr, "%s\n", warning.c_str());
  if (s.size > 1) s.host.open(s.comm, s.settings.memory_claims, s.settings.host_transport, s.settings.test_host_ranks);
  if (s.size > 1) s.collectives.open(s.comm, s.settings.test_host_ranks);
  s.settings.memory_claims = s.host.claims.in_use();
  s.host.claims.hold_for_claims(s.settings.test_held_rank == s.rank);
  if (s.rank == 0 && s.size > 1) {
    if (s.settings.timeout > 0) s.done.assign(static_cast<std::size_t>(s.size), MPI_REQUEST_NULL);
    s.serving = true;
    static std::atomic<std::uint64_t> clusters_made{0};
    s.root.serial = ++clusters_made;
    s.previous_backend = remote_backend;
    s.previous_deferred = remote_deferred_backend;
    s.previous_sweep = remote_deferred_sweep;
    remote_backend = &root_call;
    remote_deferred_backend = &root_deferred_call;
    remote_deferred_sweep = &sweep_on_cluster;
    live_root = &s;
    guard_exit(s);
  }
}

void stop_cluster(cluster_state& s) {
  if (!s.serving) return;
  unguard_exit(s);
  s.serving = false;
  remote_backend = s.previous_backend;
  remote_deferred_backend = s.previous_deferred;
  remote_deferred_sweep = s.previous_sweep;
  live_root = nullptr;
  wire::request release = bare_request(command::release, 0);
  send_request(s, release);
}

void finish_cluster(cluster_state& s) {
  if (s.team != nullptr && current_team() == s.team.get()) detail::installed_team = s.previous_team;
  int finalized = 0;
  MPI_Finalized(&finalized);  // an application that owns MPI may have finalised it already
  if (s.comm == MPI_COMM_NULL || finalized) return;
  s.host.close();
  s.collectives.close();
  MPI_Comm_free(&s.comm);
}

}  // namespace maprect::detail
