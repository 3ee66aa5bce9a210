#pragma once
// map_rect's state on a rank: the root's call sites and their plans, a worker's copies of them, and the
// buffers of the call under way. Every map_rect command reaches its rank and this state through
// map_rect_context, and nothing else of the cluster.
#include <chrono>
#include <cstdint>
#include <maprect/detail/call.hpp>
#include <maprect/detail/thread_chunk.hpp>
#include <maprect/detail/wire.hpp>
#include <unordered_map>
#include <vector>

#include "src/cluster/rank_context.hpp"
#include "src/map_rect/deferred_keep.hpp"
#include "src/protocol/chunk_plan.hpp"
#include "src/protocol/collectives.hpp"
#include "src/worker/call_site_cache.hpp"

namespace maprect::detail {

/// The root's plan of one call site: the sizes it was planned for, who runs which jobs, the data the workers
/// hold (the job_data's identity, or a copy of rows the caller may change, to notice changes), output counts
/// per job, the message layouts of a steady-state call, and the tuning of the root's share.
struct root_site {
  bool planned = false;
  param_kinds kinds = param_kinds::dd;
  int n_shared = 0, n_job_params = 0, row_real = 0, row_int = 0;
  chunk_plan plan;          ///< J, the ranks, the root's share
  std::uint64_t data_id = 0;  ///< the job_data the workers hold (job_data::id), 0: rows kept in x_r, x_i
  /// Every rank holds every row, so any rank may run any job: claims between all ranks (host_claims.cpp).
  bool rows_everywhere = false;
  int rows_first = 0;       ///< the first job whose rows the workers hold: 0 with rows_everywhere, else root_jobs
  std::vector<double> x_r;  ///< without a data_id: the workers' rows (jobs rows_first to J - 1) x row_real, as shipped
  std::vector<int> x_i;     ///< without a data_id: the workers' rows x row_int, as shipped
  std::vector<int> counts;  ///< outputs per job
  int rows = 1;             ///< rows per output block
  int n_outputs = 0;        ///< sum of counts
  rank_layout param_layout;          ///< job parameters per rank (doubles)
  rank_layout results;      ///< status + blocks per rank (doubles)
  std::vector<int> block_at;  ///< per job: where its blocks start in its rank's blocks (doubles)
  long long slot_doubles = 0;  ///< the most doubles a worker's parameters and answer take in its host slot
  collective_kind collective = collective_kind::flat;  ///< how its scatter and gathers run (chosen per layout)
  int chunk_out = 0;        ///< the largest worker's job parameters (doubles)
  int chunk_back = 0;       ///< the largest worker's status and blocks (doubles)
  int next_root_jobs = -1;  ///< a root share to plan at the next call (plan_root_share), or -1
  bool rows_held = false;   ///< the workers hold the rows of `plan` (shipped by a first call or a deferred call)
  /// Outputs per job of the last deferred call by the static split that succeeded, under `deferred_plan` (each
  /// worker keeps its chunk's): the sizes a deferred call by claims expects. Empty: its next goes static.
  std::vector<int> deferred_counts;
  chunk_plan deferred_plan;
  double deferred_forward_s = 0;  ///< wall seconds of the site's last deferred forward pass
  double last_call_s = 0;         ///< wall seconds of the site's last eager call, first or steady
};

/// Claims by message: the rows of the root's own jobs of one job_data that each worker holds, having
/// been sent them with a claim (a job_data's rows cannot change, so they are sent to each worker once).
struct rows_sent {
  std::uint64_t data_id = 0;             ///< the job_data (0: none yet)
  std::vector<std::vector<char>> held;  ///< [worker][job]: whether it holds the job's rows
  long long rows = 0;                    ///< rows sent so far, for all workers and job_data
};

/// A worker's copies of the rows of the root's jobs it ran for the root (claims by message), by job.
struct root_rows_held {
  std::vector<std::vector<double>> x_r;  ///< x_r rows by job (empty where none was sent)
  std::vector<std::vector<int>> x_i;     ///< x_i rows by job
};

/// The root's side of map_rect: its call sites.
struct root_state {
  std::unordered_map<int, root_site> sites;
  std::uint64_t deferred_calls = 0;  ///< deferred calls sent: the number of the newest (deferred_call::remote_id)
  std::uint64_t serial = 0;          ///< this cluster's number among the process's, for its deferred calls
  bool time_waits = false;  ///< measure the CPU time of collecting each steady call's answers (time_root_waits)
  std::unordered_map<int, rows_sent> sent_rows;  ///< claims by message: per call site, its root rows sent

  /// The map_rect call site `call_id`, made empty on its first call. Programs call one site again and again,
  /// so the last one is kept at hand (sites are never erased, and the map's nodes never move).
  root_site& site(int call_id) {
    if (last_site_ == nullptr || last_call_id_ != call_id) {
      last_site_ = &sites[call_id];
      last_call_id_ = call_id;
    }
    return *last_site_;
  }

 private:
  root_site* last_site_ = nullptr;
  int last_call_id_ = 0;
};

/// A worker's side of map_rect: its copies of the call sites.
struct worker_state {
  std::unordered_map<int, worker_site> sites;
  std::unordered_map<int, root_rows_held> root_rows;  ///< claims by message: per call site (claims_worker.cpp)
  kept_deferred_calls kept;  ///< the deferred calls whose reverse pass may still come
};

/// Buffers and progress of the call under way, kept between calls so that a steady call allocates nothing.
struct call_scratch {
  // root only
  block_buffer own_out;          ///< the root's own status + blocks
  std::vector<int> own_counts;   ///< output counts of the root's jobs
  block_buffer taken_out;        ///< blocks of the workers' jobs the root took over, one batch at a time
  std::vector<int> taken_counts; ///< their output counts
  std::vector<double> answers;     ///< per rank, its status and (by message) blocks for this call, at results.displs
  std::vector<result_segment> segments;  ///< where this call's blocks are, in job order
  std::vector<int> answer_counts;  ///< per rank, the doubles its answer to this call holds
  std::vector<int> status_counts;  ///< per rank, the status doubles (the gather of a call through the slots)
  std::vector<int> nodes_made;     ///< per worker, its leading jobs whose output nodes this call has made
  int making = 0;                  ///< the worker whose output nodes are made next (those before it are all made)
  bool making_stopped = false;     ///< a worker's jobs failed or changed output counts: no more output nodes
  std::vector<int> worker_ends;    ///< claims by message: per worker, where its own jobs ended (others ran the rest)
  std::vector<int> worker_taken;   ///< claims by message: per worker, the jobs of other workers it ran
  std::vector<int> worker_taken_in_host;  ///< claims by message: of those, the jobs it claimed in host memory
  bool claimed = false;            ///< the last steady call went by claims between any two ranks
  wire::call_route route = wire::call_route::messages;  ///< the last steady call's route
  std::vector<int> runners;        ///< a deferred call by claims: per job, the rank that ran it and keeps its tape
};

/// What map_rect's commands reach on a rank: the rank (rank_context), and map_rect's own state.
class map_rect_context : public rank_context {
 public:
  root_state root;
  worker_state worker;
  call_scratch call;
};

/// The call's jobs [first, first + n) as a chunk the root runs, reading the caller's parameters and rows.
inline chunk_input root_jobs_input(const call_request& req, int first, int n) {
  return {req.shared,
          req.n_shared,
          req.job_params + static_cast<std::ptrdiff_t>(first) * req.n_job_params,
          req.n_job_params,
          req.x_r->data() + first,
          req.x_i->data() + first,
          n,
          req.msgs};
}

}  // namespace maprect::detail
