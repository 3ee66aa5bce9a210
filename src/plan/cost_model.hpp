#pragma once
/// \file cost_model: predicted time per gradient of one map_rect call site at P ranks x T threads, from
/// figures measured once (per-job time, the root's costs, latency and bandwidth between ranks). Pure
/// arithmetic: no MPI, no clock. The formula and what it assumes are in docs/cost-model.md.
#include <string>
#include <vector>

namespace maprect::plan {

/// One kind of link between two ranks (on one host, or across hosts).
struct link_figures {
  double alpha_s = 0;              ///< one-way latency of a small message, seconds
  double beta_bytes_per_s = 1e10;  ///< bandwidth of a large message, bytes per second
  double overhead_s = 0;           ///< the root's time per message among many (receiving one after another)
};

/// What the model needs about one call site and the machine.
struct cost_inputs {
  double job_s = 0;             ///< mean time of one job (its functor, nested AD, its block), seconds
  double job_spread_s = 0;      ///< standard deviation of the per-job time over the jobs, seconds
  std::vector<double> job_times_s;  ///< each job's time alone, in job order (J of them); empty: job_s and job_spread_s stand for them
  int jobs = 1;                 ///< J
  int outputs_per_job = 1;      ///< K
  int shared_params = 0;        ///< S, var shared parameters (broadcast, and S partials per output)
  int job_params = 0;           ///< job parameters per job (scattered, and as many partials per output)
  double root_output_s = 0;     ///< root's time per output: its node, reverse sweep, bookkeeping
  double root_call_s = 0;       ///< root's time per call whatever J: the request, the call's record
  double root_check_s_per_job = 0;  ///< root's per-call data check per worker job (0 with job_data)
  link_figures local;           ///< between ranks of one host
  link_figures remote;          ///< between ranks of different hosts
  int ranks_per_host = 1;       ///< H: ranks fill hosts H at a time, rank 0 on the first
  int cores_per_host = 0;       ///< cores a host's ranks x threads share; 0: at least one each
  int request_bytes = 64;       ///< fixed header of a call's request broadcast (shared parameters come on top)
  /// Rank r's time for a job over the times above (job_s, job_times_s), with a core per thread, for the ranks
  /// measured (rank 0 first); ranks beyond them run at the median of these. Empty: every rank at 1.
  std::vector<double> rank_job_scale;
  int claim_batch = 1;          ///< jobs a rank out of work claims at once from the back of another rank's range
  /// Calls of `phase_ranks` ranks x 1 thread: the wall time of a phase in which every rank runs
  /// phase_lengths_s[i] of work at once, between a broadcast and a gather, over that work's time alone.
  /// Phases shorter than a scheduler's time slice on more ranks than cores run by turns, not shared.
  int phase_ranks = 0;
  std::vector<double> phase_lengths_s;  ///< ascending
  std::vector<double> phase_sharing;    ///< the measured factor at each length, at least 1
  double phase_round_s = 0;  ///< a phase without work: a broadcast of a few bytes and a gather, as measured
};

/// How the root gathers the blocks (and scatters the job parameters).
enum class gather_kind {
  flat,          ///< every rank to and from the root directly, one after another (MPI_Gatherv, MPI_Scatterv)
  hierarchical,  ///< through one leader per host
  tree,          ///< a binomial tree of fixed-size chunks (MPI_Gather, MPI_Scatter), padded to ceil(J/P) jobs
};
/// "flat", "hierarchical" or "tree".
const char* gather_name(gather_kind k);

/// What limits a prediction: the largest of its terms.
enum class bound_kind {
  compute,   ///< the slowest rank's jobs, evenly shared
  balance,   ///< the slowest rank's jobs, when its share is >= 25% above the mean share
  messages,  ///< request broadcast, parameter scatter and block gather
  root,      ///< the root's serial work: per call, per output, data check
};
/// "compute", "balance", "messages" or "root".
const char* bound_name(bound_kind k);

/// The predicted time of one gradient at P ranks x T threads, term by term (seconds).
struct prediction {
  int ranks = 1, threads = 1;
  int hosts = 1;                  ///< ceil(P / H)
  int jobs_on_slowest = 0;        ///< ceil(J / (P T)) jobs for the slowest thread
  double core_sharing = 1;        ///< threads of rank 0's host per core, when more than its cores (else 1)
  double compute_s = 0;           ///< the slowest thread's jobs, with the imbalance of uneven jobs
  double compute_claims_s = 0;    ///< the claims engine's schedule of the jobs (MAPRECT_BALANCE=auto), whole claims
  double compute_bound_s = 0;     ///< the least compute any schedule reaches: sum / sum of speeds, or the dearest job
  double termination_s = 0;       ///< the claims engine's end of a call: the last empty claim, every rank's "done"
  double root_s = 0;              ///< root's serial work
  double root_check_s = 0;        ///< the data check, part of root_s: the claims schedule starts the root after it
  double broadcast_s = 0;         ///< the request's broadcast (binomial tree)
  double scatter_s = 0;           ///< job parameters out, by the chosen kind
  double gather_s = 0;            ///< blocks back, by the chosen kind
  double scatter_overlap_s = 0;   ///< the scatter's latency hidden behind the broadcast's (sent back to back)
  double flat_s = 0;              ///< scatter + gather if flat
  double hierarchical_s = 0;      ///< scatter + gather if hierarchical
  double tree_s = 0;              ///< scatter + gather if by binomial tree
  gather_kind gather = gather_kind::flat;  ///< the cheapest (flat, then hierarchical, when equal)
  double collective_wait_s = 0;   ///< the call's three collectives' waits beyond their latencies (measured)
  double messages_s = 0;          ///< broadcast + scatter + gather - scatter_overlap + collective_wait
  double total_s = 0;             ///< root + messages + compute
  double total_flat_s = 0;        ///< the same with flat collectives, as the runtime's gathers run today
  /// The claims engine: root - root_check + flat messages + termination + compute_claims.
  double total_claims_s = 0;
  bool claims = false;            ///< auto claims: on one host, and across hosts where claims pay (claims_pay)
  double total_auto_s = 0;        ///< MAPRECT_BALANCE=auto: total_claims where it claims, else total_flat
  double efficiency = 1;          ///< time at 1 x 1 / (P T total)
  bound_kind bound = bound_kind::compute;
};

/// Throws std::invalid_argument naming the first field of `in` that no call site can have (negative times,
/// J < 1, K < 1, bandwidth <= 0, ...).
void validate(const cost_inputs& in);

/// Bytes of job parameters sent per job.
double scatter_bytes_per_job(const cost_inputs& in);
/// Bytes of the (M + 1)-row blocks of one job: K (M + 1) doubles, M = shared + job parameters.
double gather_bytes_per_job(const cost_inputs& in);

/// The time of one collective that moves `bytes_per_job` for every job outside the root between the root
/// and the other P - 1 ranks, by `kind` (docs/cost-model.md).
double collective_seconds(const cost_inputs& in, int ranks, double bytes_per_job, gather_kind kind);

/// A binomial-tree broadcast of `bytes` from the root to `ranks` ranks: between hosts first, then within them.
double broadcast_seconds(const cost_inputs& in, int ranks, double bytes);

/// The latency a scatter saves by following the request's broadcast on the same path at `ranks`: its first
/// message waits behind the request instead of a latency of its own, so it costs alpha - o of the link to the
/// farthest ranks (between hosts where there are several), and nothing when o >= alpha or on one rank.
double scatter_overlap_seconds(const cost_inputs& in, int ranks);

/// The kind of collective with the least X + G for `ranks` ranks moving `out_bytes_per_job` out and
/// `back_bytes_per_job` back for each of in.jobs jobs (flat, then hierarchical, then tree, when equal).
gather_kind cheapest_collective(const cost_inputs& in, int ranks, double out_bytes_per_job, double back_bytes_per_job);

/// The runtime's choice under MAPRECT_COLLECTIVES=auto: flat where all `ranks` share one host (`hosts` = 1),
/// else the cheapest_collective. Throws std::invalid_argument for bad inputs, ranks < 1 or hosts < 1.
gather_kind auto_collective(const cost_inputs& in, int ranks, int hosts, double out_bytes_per_job,
                            double back_bytes_per_job);

/// The link between ranks of one host when none was measured: 0.5 us, 5 GB/s, 0.2 us per message.
constexpr link_figures assumed_local_link{0.5e-6, 5e9, 0.2e-6};
/// The link between hosts when none was measured: InfiniBand-like, 1.5 us, 12 GB/s, a latency per message.
constexpr link_figures assumed_remote_link{1.5e-6, 12e9, 1.5e-6};

/// What each collective of a call at `ranks` waits beyond the model's latencies: half of what the launched
/// ranks' empty phase took over the model's broadcast and gather, at those ranks; else 0.
double collective_wait_seconds(const cost_inputs& in, int ranks);

/// The factor on a rank's compute of `phase_s` (its time alone) at `ranks` x `threads`: measured where `in`
/// has phases of those ranks at one thread (log-linear between the lengths, the nearest beyond them), else
/// `counted`, the threads per core.
double phase_core_sharing(const cost_inputs& in, int ranks, int threads, double phase_s, double counted);

/// Rank `rank`'s factor on every job time: its in.rank_job_scale, the median of them beyond the measured
/// ranks, 1 where none were measured.
double rank_scale(const cost_inputs& in, int rank);

/// The slowest rank's jobs under a static split of `in.job_times_s` at `ranks` x `threads`: the root J / P
/// jobs (rounded down), the workers the rest evenly, as the runtime's even split; within a rank the team's
/// threads claim jobs one by one, so a rank takes the larger of its jobs' sum / T and its dearest job, times
/// its rank_scale.
double static_compute_seconds(const cost_inputs& in, int ranks, int threads);

/// The least compute any schedule reaches when every thread may run any job: the larger of the jobs' sum over
/// the ranks' summed speeds (T / rank_scale each) and the dearest job on the fastest rank.
double claimed_compute_seconds(const cost_inputs& in, int ranks, int threads);

/// The root's per-call data check of the workers' rows at `ranks`: worker jobs x in.root_check_s_per_job.
double root_check_seconds(const cost_inputs& in, int ranks);

/// The claims engine's compute, job by job: every rank starts on its range of the even split (the root after
/// its data check, spread over its threads) and runs it from the front; a thread out of work claims
/// in.claim_batch jobs (fewer where fewer are left) from the back of the rank with the most unstarted jobs,
/// unless that rank's threads would be done with all of them as soon (so a slow rank leaves a fast one's last
/// jobs to it). Whole jobs, so at least claimed_compute_seconds.
double claims_schedule_seconds(const cost_inputs& in, int ranks, int threads);

/// The claims engine's end of a call at `ranks`: across hosts the last rank out of work asks once more and
/// hears "none" (a round trip of the link between hosts; on one host it reads the ranges in memory), then the
/// root takes the other ranks' "done" one after another (their per-message cost o).
double termination_seconds(const cost_inputs& in, int ranks);

/// The predicted time per gradient at `ranks` x `threads`. Throws std::invalid_argument for bad inputs,
/// ranks < 1 or threads < 1.
prediction predict(const cost_inputs& in, int ranks, int threads);

/// Powers of two up to `ranks_max`, with the `extra` rank counts merged in, ascending and unique.
std::vector<int> rank_counts(int ranks_max, const std::vector<int>& extra = {});

/// Predictions for each of `ranks` at `threads`.
std::vector<prediction> predict_table(const cost_inputs& in, const std::vector<int>& ranks, int threads);

}  // namespace maprect::plan
