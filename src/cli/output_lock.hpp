#pragma once
// One writer per output directory: `maprect sample` holds POSIX record locks on <output-dir>/maprect.lock for
// its whole run, slot 0 by rank 0 and slot c by chain c's writer, so that neither a second run nor the ranks of
// an earlier run that outlived their mpirun can write the same files at the same time.
#include <string>

namespace maprect::cli {

/// The locks this process holds on an output directory's lock file; released when it is destroyed (or when the
/// process ends, however it ends).
class output_lock {
 public:
  output_lock() = default;
  ~output_lock();
  output_lock(const output_lock&) = delete;
  output_lock& operator=(const output_lock&) = delete;

  /// Takes slot `slot` of `dir`/maprect.lock for `role` and records this host, pid and role in it; throws
  /// std::runtime_error naming the holder (host, pid, role, since when) when another process holds it.
  void acquire(const std::string& dir, int slot, const std::string& role);

 private:
  int fd_ = -1;
  std::string path_;
};

/// Collective on MPI_COMM_WORLD: rank 0 takes the run's slot of `dir`'s lock file and the root of each of the
/// `chains` groups its chain's slot (a directory that cannot be created is left to the chains to report).
/// Returns the first failure, the same on every rank, or an empty string when every lock is held.
std::string lock_output_dir(const std::string& dir, int chains, output_lock& lock);

}  // namespace maprect::cli
