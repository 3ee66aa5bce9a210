#pragma once
// The memory a cluster's ranks share with the other ranks of their host: one host communicator, split once,
// and one MPI shared-memory window on it. The window holds the claim and progress words of the workers on
// the root's host (job_claims), then, when every rank shares the root's host, a slot of doubles per rank
// (host_slots). Growing the slots allocates the window anew and places both again; that happens only
// between calls, when no claim is under way.
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
  /// Grows every slot to the most any rank asks for (`doubles`), unless that passes host_slots::max_doubles.
  /// Collective over `comm`: afterwards every rank sees the same capacity.
  void reserve(long long doubles, MPI_Comm comm);

 private:
  /// Allocates the window for slots of `capacity` doubles and places the claims and the slots in it.
  /// Collective over the host; false (and no window) where some rank could not allocate.
  bool allocate(long long capacity);
  /// Bytes of the claim words: every rank of comm has its lines (indexed by rank in comm).
  MPI_Aint claim_bytes() const;

  mpi_comm host_;
  shared_window window_;
  int rank_ = 0, size_ = 1;           ///< in comm
  bool claim_words_ = false;            ///< claim words wanted and allocated
  bool with_root_ = false;            ///< this host holds the root
  bool one_host_ = false;             ///< every rank of comm shares this host
  std::vector<int> comm_rank_;        ///< root host: comm rank of each host rank
};

}  // namespace maprect::detail
