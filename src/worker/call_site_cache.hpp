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
  std::vector<std::vector<double>> x_r;    ///< this rank's rows
  std::vector<std::vector<int>> x_i;       ///< this rank's rows
  std::vector<int> counts;                 ///< planned outputs per local job
  std::vector<int> block_at;               ///< per local job: where its blocks start (doubles)
  int planned_doubles = 0;                 ///< status + blocks this rank sends per steady call
  std::vector<double> job_params;                 ///< job parameters of this rank (P x n_jobs)
  block_buffer out;                        ///< status + blocks
  std::vector<int> run_counts;             ///< outputs per local job, this call
};

}  // namespace maprect::detail
