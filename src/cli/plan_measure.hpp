#pragma once
// What `maprect plan` measures on the machine it runs on: the figures of a registered model's call site (in
// process, on the root) and the links between rank 0 and the other ranks (ping-pong, collective).
#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

#include "plan_commands.hpp"
#include "src/plan/cost_model.hpp"

namespace maprect::cli {

/// The call site to measure: a registered model at a size.
struct plan_site {
  std::string model = "logreg";   ///< logreg (standard model) | pk2cmt
  std::string kernel = "scalar";  ///< logreg kernel: scalar | vector
  int jobs = 0;                   ///< J; 0: the model's default
  int points = 0;                 ///< logreg points per job; 0: the default
  int skew = 1;                   ///< logreg: jobs j >= 0.9 J have skew times the points (rows padded)
  int repeat = 20;                ///< timed rounds (medians over them)
};

/// A call site's figures, measured in process (seconds).
struct site_figures {
  int jobs = 0, outputs_per_job = 1, shared_params = 0, job_params = 0;
  double job_s = 0, job_spread_s = 0;           ///< per job: the chunk runner alone
  std::vector<double> job_times_s;              ///< each job alone (the fastest of 5 runs), in job order
  double root_output_s = 0, root_call_s = 0;    ///< the in-process gradient minus its jobs, at J and at 1 job
  double root_check_s_per_job = 0;              ///< comparing one job's rows with a copy (the data check)
  double in_process_s = 0;                      ///< one in-process gradient at J (median)
  std::string description;                      ///< what was measured, for the report
};

/// Measures `site` on this process; throws std::invalid_argument for an unknown model or kernel.
site_figures measure_site(const plan_site& site);

/// The links measured from rank 0: to ranks on its host, and to ranks on other hosts.
struct link_report {
  int ranks = 1;               ///< ranks in the communicator
  int on_root_host = 1;        ///< ranks sharing rank 0's processor name, rank 0 included
  int hosts = 1;               ///< distinct processor names
  plan::link_figures local{};  ///< median over the ranks of rank 0's host (valid when on_root_host > 1)
  plan::link_figures remote{}; ///< median over the other ranks (valid when hosts > 1)
};

/// Ping-pong between rank 0 and each other rank at 8 B, 64 KiB and 1 MiB, and a burst of small messages for
/// the root's per-message cost. Collective over `comm`; the figures are valid on rank 0.
link_report measure_links(MPI_Comm comm, int repeat);

/// Measures the links, then on rank 0 the call site by `measure`, and prints (and writes) the predictions.
/// Collective over MPI_COMM_WORLD; returns the exit code, the same on every rank.
int run_plan_with(const plan_options& o, const std::string& invocation, const std::function<site_figures()>& measure);

/// The figures of the first map_rect call site of registered model `model`'s log density on its data (see
/// load_model), at an unconstrained point where the density is finite; throws naming the model when its
/// gradient makes no map_rect call.
site_figures measure_model_site(const std::string& model, const std::string& data, int jobs, int points, int repeat);

}  // namespace maprect::cli
