// The protocol's steps: each one function that the root and the workers call alike.
#include "src/protocol/exchange.hpp"

#include <algorithm>
#include <boost/archive/binary_iarchive.hpp>
#include <boost/archive/binary_oarchive.hpp>
#include <boost/serialization/string.hpp>
#include <cstring>
#include <sstream>
#include <string>

#include "src/transport/mpi_handles.hpp"
#include "src/protocol/tags.hpp"

namespace maprect::detail {

/// A job error's wire form: its type code and its message.
template <class Archive>
void serialize(Archive& archive, job_error& e, unsigned /*version*/) {
  archive & e.type;
  archive & e.message;
}

namespace {

template <class T>
MPI_Datatype datatype_of();
template <>
MPI_Datatype datatype_of<double>() {
  return MPI_DOUBLE;
}
template <>
MPI_Datatype datatype_of<int>() {
  return MPI_INT;
}

/// memcpy of `bytes` bytes that copies nothing (and reads no pointer, null included) when there are none.
void copy_bytes(void* to, const void* from, std::size_t bytes) {
  if (bytes > 0) std::memcpy(to, from, bytes);
}

/// Bytes of one value of `type`.
std::size_t size_of(MPI_Datatype type) {
  int bytes = 0;
  MPI_Type_size(type, &bytes);
  return static_cast<std::size_t>(bytes);
}

/// Room for `values` values of `type` in the hosts' staging buffer.
char* staging(const endpoint& e, MPI_Datatype type, long long values) {
  const std::size_t bytes = size_of(type) * static_cast<std::size_t>(values);
  std::vector<double>& s = e.hosts->staging;
  if (s.size() * sizeof(double) < bytes) s.resize((bytes + sizeof(double) - 1) / sizeof(double));
  return reinterpret_cast<char*>(s.data());
}

/// The cluster rank whose padded part is at place p (rank order for the tree, host by host for the
/// hierarchical kind).
int rank_at(const endpoint& e, collective_kind kind, int p) {
  return kind == collective_kind::tree ? p : e.hosts->order()[p];
}

/// Root: each host's padded parts in the staging buffer (the leaders' counts and displacements).
void lay_out_hosts(const endpoint& e, int chunk) {
  collective_hosts& h = *e.hosts;
  const std::size_t n = h.host_sizes().size();
  h.leader_counts.resize(n);
  h.leader_displs.resize(n);
  int at = 0;
  for (std::size_t l = 0; l < n; ++l) {
    h.leader_displs[l] = at;
    h.leader_counts[l] = h.host_sizes()[l] * chunk;
    at += h.leader_counts[l];
  }
  h.leader_counts[0] = 0;  // the root's own host goes by its host communicator
}

/// The leaders' scatter (or gather) runs where there is more than one host, the host's where it has more
/// than one rank: every rank of a host, and every leader, knows both.
bool leaders_talk(const endpoint& e) {
  if (e.hosts->leaders() == MPI_COMM_NULL) return false;
  int n = 0;
  MPI_Comm_size(e.hosts->leaders(), &n);
  return n > 1;
}

/// Scatter of padded parts (tree, hierarchical): the root packs rank r's counts[r] values from `all` at
/// displs[r] into its place, padded to how.chunk; every worker receives its part and keeps `count` values.
void scatter_padded(const endpoint& e, const collective& how, MPI_Datatype type, const void* all, const int* counts,
                    const int* displs, void* mine, int count) {
  const std::size_t size = size_of(type), chunk_bytes = size * static_cast<std::size_t>(how.chunk);
  const bool tree = how.kind == collective_kind::tree;
  const collective_hosts& h = *e.hosts;
  if (e.is_root()) {
    char* parts = staging(e, type, static_cast<long long>(how.chunk) * e.size);
    for (int p = 1; p < e.size; ++p) {
      const int r = rank_at(e, how.kind, p);
      copy_bytes(parts + p * chunk_bytes, static_cast<const char*>(all) + size * displs[r], size * counts[r]);
    }
    if (tree) return scatter(parts, how.chunk, type, MPI_IN_PLACE, e.comm, e.policy);
    lay_out_hosts(e, how.chunk);
    if (leaders_talk(e))
      scatterv(parts, h.leader_counts.data(), h.leader_displs.data(), type, MPI_IN_PLACE, 0, h.leaders(), e.policy);
    if (h.host_size() > 1) scatter(parts, how.chunk, type, MPI_IN_PLACE, h.host(), e.policy);
    return;
  }
  const bool leader = !tree && h.leaders() != MPI_COMM_NULL;
  char* part = count == how.chunk && !leader ? static_cast<char*>(mine)
                                             : staging(e, type, static_cast<long long>(how.chunk) * h.host_size());
  if (tree) {
    scatter(nullptr, how.chunk, type, part, e.comm, e.policy);
  } else if (leader) {
    scatterv(nullptr, nullptr, nullptr, type, part, how.chunk * h.host_size(), h.leaders(), e.policy);
    if (h.host_size() > 1) scatter(part, how.chunk, type, MPI_IN_PLACE, h.host(), e.policy);
  } else {
    scatter(nullptr, how.chunk, type, part, h.host(), e.policy);
  }
  if (part != mine) copy_bytes(mine, part, size * static_cast<std::size_t>(count));
}

/// Gather of padded parts (tree, hierarchical): every worker sends its `count` values padded to how.chunk;
/// the root unpacks rank r's counts[r] values into `all` at displs[r].
void gather_padded(const endpoint& e, const collective& how, MPI_Datatype type, const void* mine, int count, void* all,
                   const int* counts, const int* displs) {
  const std::size_t size = size_of(type), chunk_bytes = size * static_cast<std::size_t>(how.chunk);
  const bool tree = how.kind == collective_kind::tree;
  const collective_hosts& h = *e.hosts;
  if (e.is_root()) {
    char* parts = staging(e, type, static_cast<long long>(how.chunk) * e.size);
    e.hosts->gathered = how.kind;
    e.hosts->gathered_from = 0;
    if (tree) {
      gather(MPI_IN_PLACE, how.chunk, type, parts, e.comm, e.policy);
      e.hosts->gathered_from = e.size - 1;
    } else {
      lay_out_hosts(e, how.chunk);
      if (h.host_size() > 1) {
        gather(MPI_IN_PLACE, how.chunk, type, parts, h.host(), e.policy);
        e.hosts->gathered_from += h.host_size() - 1;
      }
      if (leaders_talk(e)) {
        gatherv(MPI_IN_PLACE, 0, type, parts, h.leader_counts.data(), h.leader_displs.data(), h.leaders(), e.policy);
        e.hosts->gathered_from += static_cast<int>(h.host_sizes().size()) - 1;
      }
    }
    for (int p = 1; p < e.size; ++p) {
      const int r = rank_at(e, how.kind, p);
      copy_bytes(static_cast<char*>(all) + size * displs[r], parts + p * chunk_bytes, size * counts[r]);
    }
    return;
  }
  const bool leader = !tree && h.leaders() != MPI_COMM_NULL;
  const void* part = mine;
  if (count != how.chunk || leader) {  // short parts are padded (with what the buffer holds: never read)
    char* padded = staging(e, type, static_cast<long long>(how.chunk) * h.host_size());
    copy_bytes(padded, mine, size * static_cast<std::size_t>(count));
    part = padded;
  }
  if (tree) {
    gather(part, how.chunk, type, nullptr, e.comm, e.policy);
  } else if (leader) {
    char* parts = static_cast<char*>(const_cast<void*>(part));
    if (h.host_size() > 1) gather(MPI_IN_PLACE, how.chunk, type, parts, h.host(), e.policy);
    gatherv(parts, how.chunk * h.host_size(), type, nullptr, nullptr, nullptr, h.leaders(), e.policy);
  } else {
    gather(part, how.chunk, type, nullptr, h.host(), e.policy);
  }
}

}  // namespace

template <class T>
void exchange_rows(const endpoint& e, const T* all, const rank_layout& layout, std::vector<std::vector<T>>& mine) {
  const MPI_Datatype type = datatype_of<T>();
  if (e.is_root()) {
    scatterv(all, layout.counts.data(), layout.displs.data(), type, MPI_IN_PLACE, 0, e.comm, e.policy);
    return;
  }
  // The worker receives flat values of the root's type and copies them into its rows, as share_rows does:
  // a datatype of its own over the rows would make the two sides count elements differently.
  const std::size_t length = mine.empty() ? 0 : mine[0].size();
  std::vector<T> flat(mine.size() * length);
  scatterv(nullptr, nullptr, nullptr, type, flat.data(), static_cast<int>(flat.size()), e.comm, e.policy);
  for (std::size_t j = 0; j < mine.size(); ++j)
    std::copy_n(flat.begin() + static_cast<std::ptrdiff_t>(j * length), length, mine[j].begin());
}

template void exchange_rows<double>(const endpoint&, const double*, const rank_layout&,
                                    std::vector<std::vector<double>>&);
template void exchange_rows<int>(const endpoint&, const int*, const rank_layout&, std::vector<std::vector<int>>&);

template <class T>
void share_rows(const endpoint& e, const T* all, int n, int length, std::vector<std::vector<T>>& every) {
  const MPI_Datatype type = datatype_of<T>();
  if (static_cast<long long>(n) * length == 0) return;
  if (e.is_root()) {
    bcast(const_cast<T*>(all), n * length, type, e.comm, e.policy);
    return;
  }
  // Every rank passes the same count of the same type: Open MPI's segmented broadcasts cut a message by
  // elements of the local type, so a worker's one datatype over its rows against the root's n * length
  // values splits into different segments, and the broadcast hangs (seen at 16 ranks).
  std::vector<T> flat(static_cast<std::size_t>(n) * length);
  bcast(flat.data(), n * length, type, e.comm, e.policy);
  for (std::size_t j = 0; j < every.size(); ++j)
    std::copy_n(flat.begin() + static_cast<std::ptrdiff_t>(j) * length, length, every[j].begin());
}

template void share_rows<double>(const endpoint&, const double*, int, int, std::vector<std::vector<double>>&);
template void share_rows<int>(const endpoint&, const int*, int, int, std::vector<std::vector<int>>&);

void share_counts(const endpoint& e, std::vector<int>& counts, int n) {
  counts.resize(static_cast<std::size_t>(n));
  if (n > 0) bcast(counts.data(), n, MPI_INT, e.comm, e.policy);
}

void exchange_payload(const endpoint& e, std::string& payload, int bytes) {
  if (!e.is_root()) payload.resize(static_cast<std::size_t>(bytes));
  bcast(payload.data(), bytes, MPI_CHAR, e.comm, e.policy);
}

void post_parameters(const endpoint& e, const collective& how, const double* all, const rank_layout& layout,
                     double* mine, int count) {
  if (how.kind != collective_kind::flat) {
    scatter_padded(e, how, MPI_DOUBLE, all, layout.counts.data(), layout.displs.data(), mine, count);
    return;
  }
  if (e.is_root())
    scatterv(all, layout.counts.data(), layout.displs.data(), MPI_DOUBLE, MPI_IN_PLACE, 0, e.comm, e.policy);
  else
    scatterv(nullptr, nullptr, nullptr, MPI_DOUBLE, mine, count, e.comm, e.policy);
}

bool collect_answers(const endpoint& e, const collective& how, MPI_Datatype type, const void* mine, int count,
                     void* all, const int* counts, const int* displs, std::chrono::steady_clock::time_point deadline,
                     MPI_Request& pending) {
  if (how.kind != collective_kind::flat) {  // never with a deadline: the root then picks flat
    gather_padded(e, how, type, mine, count, all, counts, displs);
    return true;
  }
  if (!e.is_root()) {
    gatherv(mine, count, type, nullptr, nullptr, nullptr, e.comm, e.policy);
    return true;
  }
  e.hosts->gathered = collective_kind::flat;
  e.hosts->gathered_from = e.size - 1;
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    gatherv(MPI_IN_PLACE, 0, type, all, counts, displs, e.comm, e.policy);
    return true;
  }
  MPI_Igatherv(MPI_IN_PLACE, 0, type, all, counts, displs, type, 0, e.comm, &pending);
  return wait_until(pending, e.policy, deadline);
}

int exchange_go(const endpoint& e, int go, int& chunk) {
  int both[2] = {go, chunk};
  bcast(both, 2, MPI_INT, e.comm, e.policy);
  chunk = both[1];
  return both[0];
}

void exchange_error(const endpoint& e, int from, job_error& error) {
  if (e.is_root()) {
    MPI_Status status;
    MPI_Probe(from, error_tag, e.comm, &status);
    int bytes = 0;
    MPI_Get_count(&status, MPI_CHAR, &bytes);
    std::string buffer(static_cast<std::size_t>(bytes), '\0');
    MPI_Recv(buffer.data(), bytes, MPI_CHAR, from, error_tag, e.comm, MPI_STATUS_IGNORE);
    std::istringstream in(buffer);
    boost::archive::binary_iarchive archive(in, boost::archive::no_header);
    archive >> error;
    return;
  }
  if (e.rank != from) return;
  std::ostringstream out;
  {
    boost::archive::binary_oarchive archive(out, boost::archive::no_header);
    archive << error;
  }
  const std::string buffer = out.str();
  MPI_Send(buffer.data(), static_cast<int>(buffer.size()), MPI_CHAR, 0, error_tag, e.comm);
}

}  // namespace maprect::detail
