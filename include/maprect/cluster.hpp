#pragma once
/// \file The cluster: MPI ranks serving map_rect calls made on the root.

#include <mpi.h>

#include <cstdint>
#include <memory>

namespace boost::mpi {
class communicator;
}

namespace maprect {

namespace detail {
class cluster_state;
}

/// What a program sets in code rather than in MAPRECT_* variables; the root's options apply on every rank.
struct cluster_options {
  /// Threads each rank runs its share of a call on: 0 leaves it to MAPRECT_THREADS (default 1), -1 is auto
  /// (the CPUs of the rank's affinity mask divided among the ranks of its host that share them), N >= 1.
  int threads = 0;
};

/// Ranks of a communicator serving map_rect calls. Rank 0 is the root: it makes the calls; the other
/// ranks call serve() and run their share of every call until the root releases them.
class cluster {
 public:
  /// What a program sets in code rather than in MAPRECT_* variables (cluster_options).
  using options = cluster_options;

  /// Initialises MPI if it is not yet (and then finalises it at the end) and serves on MPI_COMM_WORLD.
  cluster(int& argc, char**& argv, const options& opts = {});
  /// Serves on a duplicate of `comm`, for applications that own MPI (never initialises or finalises it).
  explicit cluster(MPI_Comm comm, const options& opts = {});
  /// Serves on a duplicate of a Boost.MPI communicator, for applications written with Boost.MPI (include
  /// <boost/mpi/communicator.hpp> to call it).
  explicit cluster(const boost::mpi::communicator& comm, const options& opts = {});
  /// Root: releases the workers. Finalises MPI if this cluster initialised it.
  ~cluster();
  cluster(const cluster&) = delete;
  cluster& operator=(const cluster&) = delete;

  /// True on rank 0 of the communicator.
  bool is_root() const;
  /// This process's rank in the communicator.
  int rank() const;
  /// Number of ranks.
  int size() const;
  /// Threads this rank runs its share of each call on (MAPRECT_THREADS or options::threads, as resolved here).
  int threads() const;
  /// Workers: run requests until the root releases them, then return. Root: returns at once.
  void serve();
  /// Root: releases the workers now; later map_rect calls run in process (idempotent).
  void stop();

  /// Bytes of data the root sent and received in its last map_rect (or reduce_sum) call, by MPI message or
  /// through memory shared with the workers of its host (MAPRECT_TRANSPORT).
  struct traffic {
    std::uint64_t sent = 0;            ///< bytes sent by the root
    std::uint64_t received = 0;        ///< bytes received by the root
    std::uint64_t through_memory = 0;  ///< of sent and received, the bytes that went through shared memory
    const char* collective = "";       ///< kind of the call's last gather by message: "flat", "tree" or
                                       ///< "hierarchical" (MAPRECT_COLLECTIVES); "" when none
    int gather_peers = 0;              ///< ranks whose parts that gather's stages collected at the root:
                                       ///< flat, tree: every worker in one MPI_Gather(v); hierarchical: the
                                       ///< other ranks of its host in one, the other hosts' leaders in another
                                       ///< (inside each, MPI may relay parts down a tree)
    std::uint64_t claims_messages = 0;  ///< claims by message: the asks, grants and result heads the root sent
                                        ///< and received (not in sent and received)
    std::uint64_t claims_bytes = 0;     ///< their bytes
  };
  /// Traffic of the root's last map_rect or reduce_sum call over the cluster.
  traffic last_call_traffic() const;

  /// Where the root's last map_rect call spent its time, if it was a steady-state call (zeros otherwise).
  struct profile {
    int root_jobs = 0;          ///< jobs the root ran
    int worker_jobs = 0;        ///< jobs the busiest worker ran (of its chunk, less those taken over)
    double root_seconds = 0;    ///< seconds the root spent on its jobs
    double worker_seconds = 0;  ///< seconds the busiest worker spent on its jobs
    double check_seconds = 0;   ///< seconds the root spent checking the workers' data
    int taken_jobs = 0;         ///< workers' jobs the root ran because it finished its own first
    int threads = 1;            ///< threads each rank runs its jobs on (this rank's team; auto may differ elsewhere)
    double slowest_thread_seconds = 0;  ///< the root's busiest team thread's time on its jobs and those it took over
    double fastest_thread_seconds = 0;  ///< its least busy team thread's time (0: a thread got no job)
    int checked_rows = 0;       ///< workers' rows the root compared with its copy (none for a job_data)
    double wait_cpu_seconds = 0;  ///< CPU seconds the root's thread spent collecting the answers (waiting
                                  ///< included); measured only when a benchmark asks (maprect bench), else 0
    double worker_slowest_thread_seconds = 0;  ///< the busiest worker's slowest team thread's time on its jobs
    double worker_fastest_thread_seconds = 0;  ///< that worker's least busy team thread's time (0: one got no job)
  };
  /// Profile of the root's last map_rect call.
  profile last_call_profile() const;

 private:
  std::unique_ptr<detail::cluster_state> state_;
};

}  // namespace maprect
