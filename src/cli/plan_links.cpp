// plan's link measurements (see plan_measure.hpp): ping-pong and bursts between rank 0 and each other rank.
#include <algorithm>
#include <string>
#include <vector>

#include "plan_measure.hpp"
#include "plan_timing.hpp"
#include "src/protocol/start_up.hpp"
#include "src/transport/mpi_handles.hpp"

namespace maprect::cli {

namespace {

constexpr int pingpong_tag = 7301;
constexpr int burst_messages = 64;

/// Half the median round trip of `bytes` between rank 0 and `peer` (0 on other ranks).
double half_round_trip(MPI_Comm comm, int me, int peer, int bytes, int repeat) {
  std::vector<char> buffer(static_cast<std::size_t>(std::max(bytes, 1)));
  std::vector<double> ts;
  for (int r = 0; r < repeat + 2; ++r) {  // two untimed round trips first: connections, buffers
    if (me == 0) {
      const double t0 = MPI_Wtime();
      MPI_Send(buffer.data(), bytes, MPI_CHAR, peer, pingpong_tag, comm);
      MPI_Recv(buffer.data(), bytes, MPI_CHAR, peer, pingpong_tag, comm, MPI_STATUS_IGNORE);
      if (r >= 2) ts.push_back(0.5 * (MPI_Wtime() - t0));
    } else {
      MPI_Recv(buffer.data(), bytes, MPI_CHAR, 0, pingpong_tag, comm, MPI_STATUS_IGNORE);
      MPI_Send(buffer.data(), bytes, MPI_CHAR, 0, pingpong_tag, comm);
    }
  }
  return me == 0 ? plan_median(ts) : 0.0;
}

/// The root's time per message of a burst of small ones from `peer`, beyond the two latencies around it.
double burst_overhead(MPI_Comm comm, int me, int peer, double alpha, int repeat) {
  double word = 0;
  std::vector<double> ts;
  for (int r = 0; r < repeat; ++r) {
    if (me == 0) {
      const double t0 = MPI_Wtime();
      MPI_Send(&word, 1, MPI_DOUBLE, peer, pingpong_tag, comm);
      for (int m = 0; m < burst_messages; ++m) MPI_Recv(&word, 1, MPI_DOUBLE, peer, pingpong_tag, comm, MPI_STATUS_IGNORE);
      ts.push_back(MPI_Wtime() - t0);
    } else {
      MPI_Recv(&word, 1, MPI_DOUBLE, 0, pingpong_tag, comm, MPI_STATUS_IGNORE);
      for (int m = 0; m < burst_messages; ++m) MPI_Send(&word, 1, MPI_DOUBLE, 0, pingpong_tag, comm);
    }
  }
  return me == 0 ? std::max(0.0, (plan_median(ts) - 2 * alpha) / (burst_messages - 1)) : 0.0;
}

plan::link_figures measure_pair(MPI_Comm comm, int me, int peer, int repeat) {
  constexpr int medium = 64 << 10, large = 1 << 20;
  plan::link_figures l;
  l.alpha_s = half_round_trip(comm, me, peer, 8, repeat);
  const double t_medium = half_round_trip(comm, me, peer, medium, repeat);
  const double t_large = half_round_trip(comm, me, peer, large, std::max(3, repeat / 4));
  l.beta_bytes_per_s = t_large > t_medium ? (large - medium) / (t_large - t_medium) : large / std::max(t_large, 1e-9);
  l.overhead_s = burst_overhead(comm, me, peer, l.alpha_s, repeat);
  return l;
}

plan::link_figures median_link(const std::vector<plan::link_figures>& ls) {
  std::vector<double> a, b, o;
  for (const auto& l : ls) {
    a.push_back(l.alpha_s);
    b.push_back(l.beta_bytes_per_s);
    o.push_back(l.overhead_s);
  }
  return {plan_median(a), plan_median(b), plan_median(o)};
}

}  // namespace

link_report measure_links(MPI_Comm comm, int repeat) {
  int me = 0, size = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &size);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> names(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, comm);

  link_report report;
  report.ranks = size;
  report.root_host_cpus = detail::host_cpus(detail::mpi_comm::host_of(comm).get());
  std::vector<plan::link_figures> local, remote;
  std::vector<std::string> hosts;
  for (int peer = 1; peer < size; ++peer) {
    if (me != 0 && me != peer) continue;
    const plan::link_figures l = measure_pair(comm, me, peer, repeat);
    if (me != 0) continue;
    const std::string host(&names[static_cast<std::size_t>(peer) * MPI_MAX_PROCESSOR_NAME]);
    (host == name ? local : remote).push_back(l);
  }
  if (me == 0) {
    for (int r = 0; r < size; ++r) hosts.emplace_back(&names[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
    std::sort(hosts.begin(), hosts.end());
    report.hosts = static_cast<int>(std::unique(hosts.begin(), hosts.end()) - hosts.begin());
    report.on_root_host = 1 + static_cast<int>(local.size());
    if (!local.empty()) report.local = median_link(local);
    if (!remote.empty()) report.remote = median_link(remote);
  }
  MPI_Barrier(comm);
  return report;
}

}  // namespace maprect::cli
