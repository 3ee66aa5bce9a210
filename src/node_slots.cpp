// Slots of doubles in a shared-memory window that the root allocates for the workers of its node.
#include "src/node_slots.hpp"

#include <algorithm>

namespace maprect::detail {

void node_slots::open(MPI_Comm comm) {
  int rank = 0, size = 1, node_size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_);
  MPI_Comm_size(node_, &node_size);
  // Every node's communicator is smaller than comm unless there is one node: all ranks agree.
  on_one_node_ = size > 1 && node_size == size;
  if (!on_one_node_) MPI_Comm_free(&node_);
  else MPI_Comm_set_errhandler(node_, MPI_ERRORS_RETURN);
}

void node_slots::free_window() {
  if (window_ == MPI_WIN_NULL) return;
  MPI_Win_unlock_all(window_);
  MPI_Win_free(&window_);
  base_ = nullptr;
  capacity_ = 0;
}

void node_slots::close() {
  free_window();
  if (node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
  on_one_node_ = false;
}

void node_slots::reserve(long long doubles, MPI_Comm comm) {
  if (!on_one_node_) return;
  long long asked = doubles;
  MPI_Allreduce(MPI_IN_PLACE, &asked, 1, MPI_LONG_LONG, MPI_MAX, comm);
  if (asked <= capacity_ || asked > max_doubles) return;
  // Room to spare, in whole cache lines, so that a few larger call sites do not each rebuild the window.
  const long long wanted = std::min<long long>(max_doubles, (std::max(asked, 2 * capacity_) + 7) / 8 * 8);
  free_window();
  int rank = 0, size = 1;
  MPI_Comm_rank(node_, &rank);
  MPI_Comm_size(node_, &size);
  const MPI_Aint bytes = rank == 0 ? static_cast<MPI_Aint>(sizeof(double)) * wanted * (size - 1) : 0;
  void* mine = nullptr;
  int made = MPI_Win_allocate_shared(bytes, sizeof(double), MPI_INFO_NULL, node_, &mine, &window_) == MPI_SUCCESS;
  MPI_Allreduce(MPI_IN_PLACE, &made, 1, MPI_INT, MPI_MIN, node_);
  if (!made) {
    // Out of shared memory (a small /dev/shm, say): messages carry the data, as across nodes.
    if (window_ != MPI_WIN_NULL) MPI_Win_free(&window_);
    on_one_node_ = false;
    return;
  }
  MPI_Aint root_bytes = 0;
  int unit = 0;
  MPI_Win_shared_query(window_, 0, &root_bytes, &unit, &base_);
  // One passive epoch for the window's lifetime: MPI_Win_sync needs one.
  MPI_Win_lock_all(MPI_MODE_NOCHECK, window_);
  capacity_ = wanted;
}

void node_slots::sync() const { MPI_Win_sync(window_); }

}  // namespace maprect::detail
