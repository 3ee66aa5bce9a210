// Sends the messages of a steady-state call with plain blocking collectives and nothing else.
#include "src/bench/raw_mpi_floor.hpp"

#include <algorithm>
#include <maprect/detail/wire.hpp>
#include <vector>

#include "src/protocol/chunk_plan.hpp"

namespace maprect::bench {

double raw_mpi_floor(MPI_Comm comm, int n_shared, int n_job_params, int n_jobs, int outputs_per_job, int rows_per_output,
                     int repeats) {
  namespace wire = detail::wire;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  detail::rank_layout param_layout, results;
  const detail::chunk_plan plan = detail::chunk_plan::even(n_jobs, size);
  param_layout.assign(plan, n_job_params);
  results.assign(plan, static_cast<long long>(outputs_per_job) * rows_per_output);
  for (int r = 0; r < size; ++r) {
    results.counts[r] += wire::status_doubles;
    results.displs[r] += wire::status_doubles * r;
  }
  std::vector<double> request(wire::request_doubles, 1.0);
  std::vector<double> shared_rest(static_cast<std::size_t>(std::max(0, n_shared - wire::inline_shared)), 1.0);
  std::vector<double> params(rank == 0 ? static_cast<std::size_t>(n_job_params) * n_jobs : param_layout.counts[rank], 1.0);
  std::vector<double> blocks(rank == 0 ? static_cast<std::size_t>(results.displs[size - 1] + results.counts[size - 1])
                                       : results.counts[rank],
                             1.0);
  std::vector<double> times;
  for (int i = 0; i < repeats + 3; ++i) {  // three untimed warm-up rounds
    MPI_Barrier(comm);
    const double start = MPI_Wtime();
    MPI_Bcast(request.data(), wire::request_doubles, MPI_DOUBLE, 0, comm);
    if (!shared_rest.empty())
      MPI_Bcast(shared_rest.data(), static_cast<int>(shared_rest.size()), MPI_DOUBLE, 0, comm);
    if (static_cast<long long>(n_job_params) * n_jobs > 0)
      MPI_Scatterv(params.data(), param_layout.counts.data(), param_layout.displs.data(), MPI_DOUBLE,
                   rank == 0 ? MPI_IN_PLACE : params.data(), param_layout.counts[rank], MPI_DOUBLE, 0, comm);
    if (rank == 0)
      MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DOUBLE, blocks.data(), results.counts.data(), results.displs.data(),
                  MPI_DOUBLE, 0, comm);
    else
      MPI_Gatherv(blocks.data(), results.counts[rank], MPI_DOUBLE, nullptr, nullptr, nullptr, MPI_DOUBLE, 0, comm);
    if (i >= 3) times.push_back(MPI_Wtime() - start);
  }
  if (rank != 0 || times.empty()) return 0;
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

}  // namespace maprect::bench
