// The output directory's lock: POSIX record locks (fcntl), which the kernel drops with the process that holds
// them, so a killed run leaves no stale lock; the record in each slot names its holder for the error message.
#include "output_lock.hpp"

#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "spmd.hpp"
#include "src/sampling/chains.hpp"

namespace maprect::cli {

namespace {

constexpr off_t slot_bytes = 256;

/// The whole record of `slot`, trailing blanks and newline removed; empty when unreadable.
std::string read_slot(int fd, int slot) {
  char text[slot_bytes + 1] = {};
  const ssize_t n = pread(fd, text, slot_bytes, slot * slot_bytes);
  std::string record(text, n > 0 ? static_cast<std::size_t>(n) : 0);
  record = record.substr(0, record.find('\n'));
  const auto end = record.find_last_not_of(" \0", std::string::npos, 2);
  return end == std::string::npos ? std::string() : record.substr(0, end + 1);
}

/// A lock request for `slot`: exclusive, its bytes only.
struct flock slot_range(int slot, short type) {
  struct flock range {};
  range.l_type = type;
  range.l_whence = SEEK_SET;
  range.l_start = slot * slot_bytes;
  range.l_len = slot_bytes;
  return range;
}

}  // namespace

output_lock::~output_lock() {
  if (fd_ >= 0) close(fd_);  // drops every lock of this process on the file
}

void output_lock::acquire(const std::string& dir, int slot, const std::string& role) {
  if (fd_ < 0) {
    path_ = dir + "/maprect.lock";
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error(path_ + ": cannot open the output directory's lock (" + std::strerror(errno) + ")");
  }
  struct flock range = slot_range(slot, F_WRLCK);
  if (fcntl(fd_, F_SETLK, &range) != 0) {
    const int error = errno;
    if (error != EACCES && error != EAGAIN)
      throw std::runtime_error(path_ + ": cannot lock the output directory (" + std::strerror(error) + ")");
    struct flock holder = slot_range(slot, F_WRLCK);
    const bool known = fcntl(fd_, F_GETLK, &holder) == 0 && holder.l_type != F_UNLCK;
    std::string record = read_slot(fd_, slot);
    if (record.empty()) record = known ? "pid " + std::to_string(holder.l_pid) + " on this host" : "holder unknown";
    throw std::runtime_error(dir + " is in use by another maprect run (" + record +
                             "); wait until it ends, or give another --output-dir");
  }
  std::string record = role + ", host " + host_name() + " pid " + std::to_string(getpid()) + ", since " + utc_timestamp();
  record.resize(slot_bytes - 1, ' ');
  record += '\n';
  if (pwrite(fd_, record.data(), record.size(), slot * slot_bytes) != static_cast<ssize_t>(record.size()))
    throw std::runtime_error(path_ + ": cannot write the lock's holder (" + std::strerror(errno) + ")");
}

std::string lock_output_dir(const std::string& dir, int chains, output_lock& lock) {
  const int rank = world_rank(), size = world_size();
  std::string failure;
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  const int chain = chain_of_rank(rank, size, chains);
  const bool chain_root = rank == 0 || chain_of_rank(rank - 1, size, chains) != chain;
  if (!error) {
    try {
      if (rank == 0) lock.acquire(dir, 0, "the run (rank 0)");
      if (chain_root) lock.acquire(dir, chain + 1, "chain " + std::to_string(chain + 1) + "'s writer");
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  int mine = failure.empty() ? size : rank, first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == size) return {};
  int length = static_cast<int>(failure.size());
  MPI_Bcast(&length, 1, MPI_INT, first, MPI_COMM_WORLD);
  failure.resize(static_cast<std::size_t>(length));
  MPI_Bcast(failure.data(), length, MPI_CHAR, first, MPI_COMM_WORLD);
  return failure;
}

}  // namespace maprect::cli
