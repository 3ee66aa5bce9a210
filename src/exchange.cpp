// The protocol's steps: each one function that the root and the workers call alike.
#include "src/exchange.hpp"

#include <algorithm>
#include <boost/archive/binary_iarchive.hpp>
#include <boost/archive/binary_oarchive.hpp>
#include <boost/serialization/string.hpp>
#include <cstring>
#include <sstream>
#include <string>

#include "src/mpi_handles.hpp"

namespace maprect::detail {

/// A job error's wire form: its type code and its message.
template <class Archive>
void serialize(Archive& archive, job_error& e, unsigned /*version*/) {
  archive & e.type;
  archive & e.message;
}

namespace {

/// Tag of the message that carries a job error to the root.
constexpr int error_tag = 0;

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

}  // namespace

template <class T>
void exchange_rows(const endpoint& e, const T* all, const rank_layout& layout, std::vector<std::vector<T>>& mine) {
  const MPI_Datatype type = datatype_of<T>();
  if (e.is_root()) {
    scatterv(all, layout.counts.data(), layout.displs.data(), type, MPI_IN_PLACE, 0, e.comm, e.policy);
    return;
  }
  if (mine.empty()) {
    scatterv(nullptr, nullptr, nullptr, type, nullptr, 0, e.comm, e.policy);
    return;
  }
  // One flat buffer on the root; on the worker a datatype of the rows' addresses spreads it over them.
  std::vector<MPI_Aint> at(mine.size());
  for (std::size_t j = 0; j < mine.size(); ++j) MPI_Get_address(mine[j].data(), &at[j]);
  const mpi_datatype spread = mpi_datatype::rows_at(at, static_cast<int>(mine[0].size()), type);
  scatterv_typed(nullptr, nullptr, nullptr, type, MPI_BOTTOM, 1, spread.get(), e.comm, e.policy);
}

template void exchange_rows<double>(const endpoint&, const double*, const rank_layout&,
                                    std::vector<std::vector<double>>&);
template void exchange_rows<int>(const endpoint&, const int*, const rank_layout&, std::vector<std::vector<int>>&);

void gained_rows::expect(int n, int row_real, int row_int) {
  const auto jobs = static_cast<std::size_t>(n);
  counts.resize(jobs);
  ints.resize(jobs * static_cast<std::size_t>(row_int));
  reals.resize(jobs * static_cast<std::size_t>(row_real));
}

void gained_rows::begin_worker(int r, int ranks) {
  for (rank_layout* l : {&count_layout, &int_layout, &real_layout}) {
    if (static_cast<int>(l->counts.size()) != ranks) {
      l->counts.assign(static_cast<std::size_t>(ranks), 0);
      l->displs.assign(static_cast<std::size_t>(ranks), 0);
    }
  }
  count_layout.displs[r] = static_cast<int>(counts.size());
  int_layout.displs[r] = static_cast<int>(ints.size());
  real_layout.displs[r] = static_cast<int>(reals.size());
}

void gained_rows::end_worker(int r) {
  count_layout.counts[r] = static_cast<int>(counts.size()) - count_layout.displs[r];
  int_layout.counts[r] = static_cast<int>(ints.size()) - int_layout.displs[r];
  real_layout.counts[r] = static_cast<int>(reals.size()) - real_layout.displs[r];
}

void gained_rows::add(int count, const std::vector<int>& x_i, const std::vector<double>& x_r) {
  counts.push_back(count);
  ints.insert(ints.end(), x_i.begin(), x_i.end());
  reals.insert(reals.end(), x_r.begin(), x_r.end());
}

void exchange_gained(const endpoint& e, gained_rows& g) {
  auto scatter = [&e](void* data, const rank_layout& l, MPI_Datatype type, int mine) {
    if (e.is_root())
      scatterv(data, l.counts.data(), l.displs.data(), type, MPI_IN_PLACE, 0, e.comm, e.policy);
    else
      scatterv(nullptr, nullptr, nullptr, type, data, mine, e.comm, e.policy);
  };
  scatter(g.counts.data(), g.count_layout, MPI_INT, static_cast<int>(g.counts.size()));
  scatter(g.ints.data(), g.int_layout, MPI_INT, static_cast<int>(g.ints.size()));
  scatter(g.reals.data(), g.real_layout, MPI_DOUBLE, static_cast<int>(g.reals.size()));
}

void exchange_payload(const endpoint& e, std::string& payload, int bytes) {
  if (!e.is_root()) payload.resize(static_cast<std::size_t>(bytes));
  bcast(payload.data(), bytes, MPI_CHAR, e.comm, e.policy);
}

void post_parameters(const endpoint& e, const double* all, const rank_layout& layout, double* mine, int count) {
  if (e.is_root())
    scatterv(all, layout.counts.data(), layout.displs.data(), MPI_DOUBLE, MPI_IN_PLACE, 0, e.comm, e.policy);
  else
    scatterv(nullptr, nullptr, nullptr, MPI_DOUBLE, mine, count, e.comm, e.policy);
}

bool collect_answers(const endpoint& e, MPI_Datatype type, const void* mine, int count, void* all, const int* counts,
                     const int* displs, std::chrono::steady_clock::time_point deadline, MPI_Request& pending) {
  if (!e.is_root()) {
    gatherv(mine, count, type, nullptr, nullptr, nullptr, e.comm, e.policy);
    return true;
  }
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    gatherv(MPI_IN_PLACE, 0, type, all, counts, displs, e.comm, e.policy);
    return true;
  }
  MPI_Igatherv(MPI_IN_PLACE, 0, type, all, counts, displs, type, 0, e.comm, &pending);
  return wait_until(pending, e.policy, deadline);
}

int exchange_go(const endpoint& e, int go) {
  bcast(&go, 1, MPI_INT, e.comm, e.policy);
  return go;
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
