#pragma once
// The floor of a distributed call: the raw MPI messages of one steady-state map_rect call, no work.
#include <mpi.h>

namespace maprect::bench {

/// Seconds per call (median over `repeats`, on the root; 0 elsewhere) of exactly the messages of one
/// steady-state call: the request broadcast (plus the shared parameters beyond the inline ones), the
/// scatter of P x J job parameters and the gather of each rank's status slots and rows x outputs blocks,
/// with jobs split as the cluster splits them. Collective: every rank of `comm` calls it alike.
double raw_mpi_floor(MPI_Comm comm, int n_shared, int n_job_params, int n_jobs, int outputs_per_job, int rows_per_output,
                     int repeats);

}  // namespace maprect::bench
