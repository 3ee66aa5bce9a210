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
  std::string model = "logreg";   ///< logreg (standard model) | pk2cmt | sleep | pointwise_regression
  std::string kernel = "scalar";  ///< logreg kernel: scalar | vector
  int jobs = 0;                   ///< J; 0: the model's default
  int points = 0;                 ///< logreg points per job; 0: the default
  int skew = 1;                   ///< logreg: jobs j >= 0.9 J have skew times the points (rows padded)
  double job_ms = 1;              ///< sleep: each job's milliseconds
  int repeat = 20;                ///< timed rounds (medians over them)
  int covariates = 8;             ///< pointwise_regression: covariates C
};

/// A call site's figures, measured in process (seconds).
struct site_figures {
  int jobs = 0, outputs_per_job = 1, shared_params = 0, job_params = 0;
  double job_s = 0, job_spread_s = 0;           ///< per job: the chunk runner alone
  std::vector<double> job_times_s;              ///< each job alone (the fastest of 5 runs), in job order
  double root_output_s = 0, root_call_s = 0;    ///< the in-process gradient minus its jobs, at J and at 1 job
  double root_check_s_per_job = 0;              ///< comparing one job's rows with a copy (the data check)
  double in_process_s = 0;                      ///< one in-process gradient at J (median), eager
  double forward_job_s = 0, sweep_job_s = 0;    ///< per job deferred: its forward onto a kept tape, one sweep
  double root_deferred_output_s = 0;            ///< the root's per output and per call, deferred
  double root_deferred_call_s = 0;
  double in_process_deferred_s = 0;             ///< one in-process gradient at J (median), deferred
  double kept_gradient_scale = 1;               ///< forward_job_s and sweep_job_s over their times alone
  std::string description;                      ///< what was measured, for the report
};

/// A call site that every rank can time: its jobs through their chunk runner, and rank 0's figures of it.
struct plan_call_site {
  int jobs = 0;                                    ///< J
  std::function<void(int first, int n)> run_jobs;  ///< runs jobs [first, first + n) in process, on any rank
  std::function<site_figures()> measure;           ///< everything else plan measures of the site, on rank 0
};

/// The call site `site` on this process; throws std::invalid_argument for an unknown model or kernel.
plan_call_site make_site(const plan_site& site);

/// The links measured from rank 0: to ranks on its host, and to ranks on other hosts.
struct link_report {
  int ranks = 1;               ///< ranks in the communicator
  int on_root_host = 1;        ///< ranks sharing rank 0's processor name, rank 0 included
  int root_host_cpus = 0;      ///< CPUs rank 0's host's ranks may run on, their affinity masks' union (0: unknown)
  int hosts = 1;               ///< distinct processor names
  plan::link_figures local{};  ///< median over the ranks of rank 0's host (valid when on_root_host > 1)
  plan::link_figures remote{}; ///< median over the other ranks (valid when hosts > 1)
};

/// Ping-pong between rank 0 and each other rank at 8 B, 64 KiB and 1 MiB, and a burst of small messages for
/// the root's per-message cost. Collective over `comm`; the figures are valid on rank 0.
link_report measure_links(MPI_Comm comm, int repeat);

/// Every rank's time for a job, measured with all ranks running at once, over rank 0's alone.
struct rank_speeds {
  std::vector<double> job_scale;  ///< per rank (rank 0 first): its time at once / rank 0's alone, by round
  int sample_jobs = 0;            ///< jobs in the sample, spread evenly over the call's
  double round_s = 0;             ///< the length a round of the sample aims at (0: none timed)
  int slow_rank = -1;             ///< the rank whose timed jobs were slowed (-1: none)
  double slow_factor = 1;         ///< by this factor
};

/// Rank 0 times a sample of the site's jobs alone, then every rank times the same sample at once (rank
/// `slow_rank`'s jobs each followed by a sleep of slow_factor - 1 times their time), alternating for `repeat`
/// rounds of about 2 ms (30 ms where `oversubscribed`, ranks outnumbering cores); a rank's scale is the median
/// over rounds of its time at once over rank 0's alone in that round. Collective over `comm`; the speeds are
/// valid on rank 0. At one rank without a slowed rank, none are timed.
rank_speeds measure_rank_speeds(MPI_Comm comm, const plan_call_site& site, int repeat, int slow_rank,
                                double slow_factor, bool oversubscribed);

/// The core sharing of a call's compute by its length: the wall time of a phase in which every rank runs the
/// same work at once, between a broadcast from rank 0 and a gather to it, over that work alone on rank 0.
struct phase_figures {
  int ranks = 0;                  ///< the ranks that ran the phases (0: none, the host not oversubscribed)
  std::vector<double> lengths_s;  ///< the work's time alone, ascending
  std::vector<double> sharing;    ///< per length, the median over rounds of (wall - round_s) / alone, at least 1
  double round_s = 0;             ///< a phase without work: the broadcast and the gather alone
};

/// Where rank 0 says its host is `oversubscribed`: phases of 30 us to 30 ms, each length over 3 to `repeat`
/// rounds (about 0.1 s) that alternate with rank 0 alone, waited for as the runtime's ranks then wait
/// (sleeping). Collective over `comm`; the figures are valid on rank 0. Elsewhere, and at one rank, none.
phase_figures measure_phase_sharing(MPI_Comm comm, int repeat, bool oversubscribed);

/// A barrier on `comm` that waits sleeping rather than polling the cores away, so that ranks waiting for
/// others leave them the cores (a non-blocking barrier, tested every millisecond).
void sleeping_barrier(MPI_Comm comm);

/// Makes the call site on every rank by `make_site`, measures the links and every rank's job speed, then on
/// rank 0 the site's figures, and prints (and writes) the predictions. Collective over MPI_COMM_WORLD;
/// returns the exit code, the same on every rank.
int run_plan_with(const plan_options& o, const std::string& invocation,
                  const std::function<plan_call_site()>& make_site);

/// The first map_rect call site of registered model `model`'s log density on its data (see load_model), at an
/// unconstrained point where the density is finite; throws naming the model when its gradient makes no
/// map_rect call.
plan_call_site make_model_site(const std::string& model, const std::string& data, int jobs, int points, int repeat);

}  // namespace maprect::cli
