#pragma once
// Owners of MPI handles: each frees its handle when it goes, unless MPI is finalised already (an
// application that owns MPI may finalise it before a cluster is destroyed). Move-only.
#include <mpi.h>

#include <utility>
#include <vector>

namespace maprect::detail {

/// Whether MPI may still be called.
inline bool mpi_live() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized == 0;
}

/// An owned communicator.
class mpi_comm {
 public:
  mpi_comm() = default;
  /// A duplicate of `comm` (collective over it).
  static mpi_comm duplicate(MPI_Comm comm) {
    mpi_comm c;
    MPI_Comm_dup(comm, &c.h_);
    return c;
  }
  /// Owns `comm` (MPI_COMM_NULL: none).
  static mpi_comm adopt(MPI_Comm comm) {
    mpi_comm c;
    c.h_ = comm;
    return c;
  }
  /// The ranks of `comm` that share memory with this one, keyed by rank in `comm` (collective over it).
  static mpi_comm host_of(MPI_Comm comm) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    mpi_comm c;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &c.h_);
    return c;
  }
  ~mpi_comm() { reset(); }
  mpi_comm(mpi_comm&& o) noexcept : h_(std::exchange(o.h_, MPI_COMM_NULL)) {}
  mpi_comm& operator=(mpi_comm&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, MPI_COMM_NULL);
    }
    return *this;
  }
  mpi_comm(const mpi_comm&) = delete;
  mpi_comm& operator=(const mpi_comm&) = delete;
  /// The communicator (MPI_COMM_NULL if none).
  MPI_Comm get() const { return h_; }
  /// This rank in it.
  int rank() const {
    int r = 0;
    MPI_Comm_rank(h_, &r);
    return r;
  }
  /// Its size.
  int size() const {
    int n = 0;
    MPI_Comm_size(h_, &n);
    return n;
  }
  /// Frees it now (collective).
  void reset() {
    if (h_ != MPI_COMM_NULL && mpi_live()) MPI_Comm_free(&h_);
    h_ = MPI_COMM_NULL;
  }

 private:
  MPI_Comm h_ = MPI_COMM_NULL;
};

/// An owned group.
class mpi_group {
 public:
  /// The group of `comm`.
  explicit mpi_group(MPI_Comm comm) { MPI_Comm_group(comm, &h_); }
  ~mpi_group() {
    if (h_ != MPI_GROUP_NULL && mpi_live()) MPI_Group_free(&h_);
  }
  mpi_group(const mpi_group&) = delete;
  mpi_group& operator=(const mpi_group&) = delete;
  /// Rank `r` of this group in `other`, or MPI_UNDEFINED.
  int rank_in(const mpi_group& other, int r) const {
    int out = MPI_UNDEFINED;
    MPI_Group_translate_ranks(h_, 1, &r, other.h_, &out);
    return out;
  }

 private:
  MPI_Group h_ = MPI_GROUP_NULL;
};

/// An owned shared-memory window (MPI_Win_allocate_shared), in one passive epoch from allocation to free.
class shared_window {
 public:
  shared_window() = default;
  /// Allocates `bytes` on this rank of `host` (0 on all but one, typically). Collective over `host`; returns
  /// false on every rank, with no window, when some rank could not allocate.
  bool allocate(MPI_Comm host, MPI_Aint bytes, int unit) {
    reset();
    void* mine = nullptr;
    int made = MPI_Win_allocate_shared(bytes, unit, MPI_INFO_NULL, host, &mine, &h_) == MPI_SUCCESS;
    MPI_Allreduce(MPI_IN_PLACE, &made, 1, MPI_INT, MPI_MIN, host);
    if (!made) {
      if (h_ != MPI_WIN_NULL) MPI_Win_free(&h_);
      h_ = MPI_WIN_NULL;
      return false;
    }
    MPI_Win_lock_all(MPI_MODE_NOCHECK, h_);  // MPI_Win_sync needs an epoch
    return true;
  }
  ~shared_window() { reset(); }
  shared_window(const shared_window&) = delete;
  shared_window& operator=(const shared_window&) = delete;
  /// Where host rank `r`'s part starts, as this rank sees it.
  char* base_of(int r) const {
    MPI_Aint bytes = 0;
    int unit = 0;
    char* base = nullptr;
    MPI_Win_shared_query(h_, r, &bytes, &unit, &base);
    return base;
  }
  /// Orders this rank's memory accesses with its messages.
  void sync() const { MPI_Win_sync(h_); }
  /// Whether a window is held.
  explicit operator bool() const { return h_ != MPI_WIN_NULL; }
  /// Frees the window now (collective over its host communicator).
  void reset() {
    if (h_ != MPI_WIN_NULL && mpi_live()) {
      MPI_Win_unlock_all(h_);
      MPI_Win_free(&h_);
    }
    h_ = MPI_WIN_NULL;
  }

 private:
  MPI_Win h_ = MPI_WIN_NULL;
};

}  // namespace maprect::detail
