// One shared-memory window per host for the claim words and the slots.
#include "src/transport/host_memory.hpp"

#include <algorithm>

namespace maprect::detail {

MPI_Aint host_memory::claim_bytes() const { return claim_words_ ? job_claims::bytes_for(size_) : 0; }

void host_memory::open(MPI_Comm comm, bool claim_words, bool with_slots, int test_host_ranks) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size_);
  host_ = mpi_comm::host_of(comm);  // keyed by rank: the root, where present, is host rank 0
  if (test_host_ranks > 0) {
    MPI_Comm split = MPI_COMM_NULL;
    MPI_Comm_split(host_.get(), host_.rank() / test_host_ranks, rank_, &split);
    host_ = mpi_comm::adopt(split);
  }
  MPI_Comm_set_errhandler(host_.get(), MPI_ERRORS_RETURN);
  const mpi_group comm_group(comm), host_group(host_.get());
  with_root_ = comm_group.rank_in(host_group, 0) != MPI_UNDEFINED;
  const int host_size = host_.size();
  one_host_ = size_ > 1 && host_size == size_;
  comm_rank_.assign(static_cast<std::size_t>(host_size), 0);
  for (int h = 0; h < host_size; ++h) comm_rank_[h] = host_group.rank_in(comm_group, h);
  claim_words_ = claim_words && size_ > 1;
  const bool slots_wanted = with_slots && one_host_;
  // Without shared memory (an MPI built without it, say) nobody claims and no slot is used: all agree.
  int made = allocate(0) ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &made, 1, MPI_INT, MPI_MIN, comm);
  if (!made) {
    window_.reset();
    claim_words_ = false;
    claims = {};
    slots = {};
    return;
  }
  if (slots_wanted) slots.place(nullptr, 0, &window_);
  // The host's first rank has made its words before any other reads one.
  MPI_Barrier(host_.get());
  open_host_workers(comm, !one_host_ || slots_wanted);
}

void host_memory::open_host_workers(MPI_Comm comm, bool host_transport) {
  // Two ranks of a host, the root among them, can claim each other's jobs and slices; on the root's one host
  // only where its memory carries data at all (not under MAPRECT_TRANSPORT=messages, which keeps every claim a
  // message).
  int wanted = claim_words_ && host_transport && host_.size() >= 2 ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &wanted, 1, MPI_INT, MPI_MAX, comm);
  peer_claims_ = wanted != 0;
  if (!peer_claims_) return;
  host_workers_ = static_cast<int>(std::count_if(comm_rank_.begin(), comm_rank_.end(), [](int r) { return r != 0; }));
}

void host_memory::reserve_peer(long long params, MPI_Comm comm) {
  if (!peer_claims_) return;
  long long asked = params;
  MPI_Allreduce(MPI_IN_PLACE, &asked, 1, MPI_LONG_LONG, MPI_MAX, comm);
  if (asked <= peer_params_capacity_ || asked > host_slots::max_doubles) return;
  const long long wanted = std::min<long long>(host_slots::max_doubles, std::max(asked, 2 * peer_params_capacity_));
  peer_params_.clear();
  peer_params_capacity_ = 0;
  // Every rank of the host agrees whether it is allocated; without it this host's workers do not claim
  // each other's jobs.
  const MPI_Aint bytes = static_cast<MPI_Aint>(sizeof(double)) * wanted;
  if (!params_window_.allocate(host_.get(), bytes, sizeof(double))) return;
  peer_params_.assign(static_cast<std::size_t>(size_), nullptr);
  for (std::size_t h = 0; h < comm_rank_.size(); ++h)
    peer_params_[comm_rank_[h]] = reinterpret_cast<double*>(params_window_.base_of(static_cast<int>(h)));
  peer_params_capacity_ = wanted;
}

std::atomic<std::uint64_t>* host_memory::publish_range(const double* values, std::size_t count, int jobs,
                                                       int ranks, std::uint64_t call, bool with_root,
                                                       const int* counts) {
  double* at = std::copy_n(values, count, peer_params(rank_));
  if (counts != nullptr) std::copy_n(counts, jobs, at);
  claims.reset_own(jobs, ranks, call, with_root);
  return claims.word_of(rank_);
}

bool host_memory::allocate(long long capacity) {
  const bool first = host_.rank() == 0;  // the root on its host
  const MPI_Aint slot_bytes = static_cast<MPI_Aint>(sizeof(double)) * capacity * size_;
  if (!window_.allocate(host_.get(), first ? claim_bytes() + slot_bytes : 0, 1)) return false;
  char* base = window_.base_of(0);
  if (claim_words_) claims.place(base, rank_, comm_rank_, first);
  if (capacity > 0) slots.place(reinterpret_cast<double*>(base + claim_bytes()), capacity, &window_);
  return true;
}

void host_memory::reserve(long long doubles, MPI_Comm comm, long long params) {
  if (!one_host_) reserve_peer(params, comm);
  if (!slots.usable()) return;
  long long asked = doubles;
  MPI_Allreduce(MPI_IN_PLACE, &asked, 1, MPI_LONG_LONG, MPI_MAX, comm);
  const long long capacity = slots.capacity();
  if (asked <= capacity || asked > host_slots::max_doubles) return;
  // Room to spare, in whole cache lines, so that a few larger call sites do not each rebuild the window.
  const long long wanted = std::min<long long>(host_slots::max_doubles, (std::max(asked, 2 * capacity) + 7) / 8 * 8);
  if (allocate(wanted)) return;  // every rank of the host (here: of comm) agrees
  // Out of shared memory (a small /dev/shm, say): messages carry the data, as across hosts. The claim words
  // are placed again in a window of their own size, which was allocated before.
  slots = {};
  allocate(0);
}

void host_memory::close() {
  window_.reset();
  params_window_.reset();
  peer_params_.clear();
  peer_params_capacity_ = 0;
  host_workers_ = 0;
  peer_claims_ = false;
  host_.reset();
  claims = {};
  slots = {};
}

}  // namespace maprect::detail
