#pragma once
// A worker's copy of one call site: its rows of x_r/x_i (shipped once, received straight into these rows)
// and the output counts the root planned for its jobs.
#include <maprect/detail/job_runner.hpp>

#include "src/protocol/chunk_plan.hpp"
#include <vector>

#include <maprect/detail/job_error.hpp>

namespace maprect::detail {

struct worker_site {
  chunk_plan plan;                         ///< who runs which jobs, as the root planned them
  int job_begin = 0;                       ///< first global job of this rank
  int n_jobs = 0;                          ///< jobs of this rank
  bool rows_everywhere = false;            ///< it holds every job's rows: any rank may run any job
  int rows_first = 0;                      ///< the job of x_r[0]: 0 with rows_everywhere, else job_begin
  std::vector<std::vector<double>> x_r;    ///< this rank's rows, or every job's
  std::vector<std::vector<int>> x_i;       ///< this rank's rows, or every job's
  std::vector<int> all_counts;             ///< with rows_everywhere: planned outputs per job of the call
  std::vector<int> all_block_at;           ///< with rows_everywhere: per job, where its blocks start in its rank's
  block_buffer claimed_out;                ///< blocks of a batch claimed from another rank
  std::vector<int> claimed_counts;         ///< their output counts
  std::vector<int> counts;                 ///< planned outputs per local job
  std::vector<int> block_at;               ///< per local job: where its blocks start (doubles)
  int planned_doubles = 0;                 ///< status + blocks this rank sends per steady call
  std::vector<double> job_params;                 ///< job parameters of this rank (P x n_jobs)
  block_buffer out;                        ///< status + blocks
  std::vector<int> run_counts;             ///< outputs per local job, this call
  std::vector<int> deferred_counts;        ///< outputs per local job of its last deferred call by the static split

  /// The x_r rows of this rank's own jobs, the first job's first.
  const std::vector<double>* own_x_r() const { return x_r.data() + (job_begin - rows_first); }
  /// The x_i rows of this rank's own jobs, the first job's first.
  const std::vector<int>* own_x_i() const { return x_i.data() + (job_begin - rows_first); }
};

}  // namespace maprect::detail
