#pragma once
// The memory a cluster's ranks share with the other ranks of their host: one host communicator, split once,
// and one MPI shared-memory window on it. The window holds the claim and progress words of the host's ranks
// (job_claims), then, when every rank shares the root's host, a slot of doubles per rank (host_slots).
// Growing the slots allocates the window anew and places both again; that happens only between calls, when
// no claim is under way. Where the ranks of a host claim each other's jobs under claims by message, a second
// window per host holds each rank's job parameters of the call, which its host's thieves read.
#include <mpi.h>

#include "src/balance/job_claims.hpp"
#include "src/transport/mpi_handles.hpp"
#include "src/transport/host_slots.hpp"

namespace maprect::detail {

/// A cluster's host memory on one rank.
class host_memory {
 public:
  job_claims claims;  ///< the workers' claim words (in_use() once open with claim_words)
  host_slots slots;   ///< the ranks' slots (usable() once open with slots, on one host)

  /// Splits `comm` by host (each host again into groups of `test_host_ranks` ranks when it is above 0, as
  /// the collectives' hosts in a test of several hosts on one machine) and allocates the window: claim words
  /// when `claim_words`, and (empty) slots when `with_slots` and every rank shares one host. Collective over
  /// comm; every rank agrees on what is usable.
  void open(MPI_Comm comm, bool claim_words, bool with_slots, int test_host_ranks = 0);
  /// Frees the window and the host communicator. Collective over the communicator given to open().
  void close();
  /// Whether the ranks of some host claim each other's jobs in host memory under claims by message (the words
  /// exist everywhere, some host has two ranks or more, and on one host its memory carries data). Every rank
  /// agrees.
  bool peer_claims() const { return peer_claims_; }
  /// Where peer_claims(): the ranks of this host that claim each other's jobs and slices in host memory, the
  /// root included on its host; else 0.
  int host_claimers() const { return host_workers_ + (with_root_ && peer_claims_ ? 1 : 0); }
  /// Whether the ranks of this host claim each other's jobs or slices in host memory, where the largest range
  /// needs `most` doubles of parameters or values: two of them claim here, and it fits their room; on the
  /// root's one host only for a call that has no route through the slots (`one_host_too`: a deferred call's
  /// forward pass). Every rank of a host decides alike.
  bool shares_ranges(long long most, bool one_host_too = false) const {
    return (one_host_too || !one_host_) && host_claimers() >= 2 && most <= peer_params_capacity_;
  }
  /// Where rank r of this rank's host keeps its job parameters (or slices' values) of the call for its host's
  /// thieves (peer_claims), room for the doubles shares_ranges allows; null where r is on another host.
  double* peer_params(int r) const { return peer_params_.empty() ? nullptr : peer_params_[r]; }
  /// Under claims by message where the ranks of this host claim each other's jobs: puts this rank's `count`
  /// values (its job parameters, or its slices' values) where they read them, then its `jobs` all unclaimed in
  /// its claim word for call `call` (job_claims::reset_own, `ranks` and `with_root` as there), so that a rank
  /// that claims from the word reads the values as written. With `counts`, the jobs' planned output counts
  /// follow the values, one double each. Returns the word.
  std::atomic<std::uint64_t>* publish_range(const double* values, std::size_t count, int jobs, int ranks,
                                            std::uint64_t call, bool with_root, const int* counts = nullptr);
  /// Grows every slot to the most any rank asks for (`doubles`), unless that passes host_slots::max_doubles.
  /// Collective over `comm`: afterwards every rank sees the same capacity. Where the ranks span hosts, also
  /// grows peer_params as reserve_peer does.
  void reserve(long long doubles, MPI_Comm comm, long long params = 0);
  /// Where peer_claims(), on the root's one host too, grows each rank's peer_params to the most doubles any
  /// rank of comm asks for (`params`). Collective over `comm`.
  void reserve_peer(long long params, MPI_Comm comm);

 private:
  /// Allocates the window for slots of `capacity` doubles and places the claims and the slots in it.
  /// Collective over the host; false (and no window) where some rank could not allocate.
  bool allocate(long long capacity);
  /// Bytes of the claim words: every rank of comm has its lines (indexed by rank in comm).
  MPI_Aint claim_bytes() const;
  /// Counts the host's workers, and agrees on peer_claims(); on one host only with `host_transport`.
  /// Collective over comm.
  void open_host_workers(MPI_Comm comm, bool host_transport);

  mpi_comm host_;
  int host_workers_ = 0;            ///< the host's workers (peer_claims)
  bool peer_claims_ = false;
  shared_window params_window_;     ///< peer_params, a part per host rank
  std::vector<double*> peer_params_;  ///< by cluster rank
  long long peer_params_capacity_ = 0;
  shared_window window_;
  int rank_ = 0, size_ = 1;           ///< in comm
  bool claim_words_ = false;            ///< claim words wanted and allocated
  bool with_root_ = false;            ///< this host holds the root
  bool one_host_ = false;             ///< every rank of comm shares this host
  std::vector<int> comm_rank_;        ///< comm rank of each host rank
};

}  // namespace maprect::detail
