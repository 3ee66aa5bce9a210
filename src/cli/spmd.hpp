#pragma once
// What every subcommand of the maprect program needs to run alike on all ranks: MPI set-up, agreement on
// success or failure, root-only output, and a switch to run map_rect in process while a cluster is live.
#include <maprect/detail/call.hpp>
#include <mpi.h>

#include <fstream>
#include <string>

namespace maprect::cli {

/// Initialises MPI (funneled) for the program's lifetime and finalises it at the end.
class mpi_session {
 public:
  /// MPI_Init_thread on the program's arguments.
  mpi_session(int& argc, char**& argv);
  ~mpi_session();
  mpi_session(const mpi_session&) = delete;
  mpi_session& operator=(const mpi_session&) = delete;
};

/// This process's rank in MPI_COMM_WORLD.
int world_rank();
/// Ranks in MPI_COMM_WORLD.
int world_size();

/// Prints "maprect: error: MESSAGE" as one line on stderr, on rank 0 only (newlines in MESSAGE become "; ").
void print_error(const std::string& message);

/// Collective on MPI_COMM_WORLD: every rank returns rank 0's `value`.
int agree(int value);

/// Collective on MPI_COMM_WORLD: rank 0 opens `path` for writing into `out` (nothing when `path` is empty);
/// every rank returns whether that worked, and rank 0 prints why not.
bool open_output_on_root(const std::string& path, std::ofstream& out);

/// While alive, map_rect calls of this thread run in process even with a live cluster (the backend pointer
/// is restored afterwards), for comparisons and the in-process benchmark.
class in_process_scope {
 public:
  in_process_scope() : saved_(detail::remote_backend) { detail::remote_backend = nullptr; }
  ~in_process_scope() { detail::remote_backend = saved_; }
  in_process_scope(const in_process_scope&) = delete;
  in_process_scope& operator=(const in_process_scope&) = delete;

 private:
  detail::remote_call saved_;
};

/// The command line as one string, arguments separated by spaces (quoted when they hold spaces).
std::string command_line(int argc, char** argv);
/// This host's name.
std::string host_name();
/// Now, as an ISO 8601 UTC timestamp.
std::string utc_timestamp();

}  // namespace maprect::cli
