#pragma once
/// \file A chunk of a cluster call's jobs (chunk_input) run on a rank's thread_team: the same chunk runner
/// that runs it serially runs each batch on the thread that claimed it, into that thread's buffer; the
/// calling thread then appends the batches' blocks to the chunk's output in job order. The blocks, the
/// output counts and the failing job are those of the serial run, for any team size.

#include <chrono>
#include <climits>
#include <cstddef>
#include <exception>
#include <memory>
#include <vector>

#include "../thread_team.hpp"
#include "job_runner.hpp"

namespace maprect::detail {

/// One team thread's part of a chunk: its batches' blocks, and its lowest failing job with its exception.
struct chunk_thread_share {
  block_buffer blocks;
  int failed_job = INT_MAX;
  std::exception_ptr error;
};

/// Where one batch's blocks are: in which thread's buffer, from where, how many doubles.
struct chunk_batch {
  int thread = 0;
  std::size_t offset = 0;
  std::size_t size = 0;
};

/// A rank's buffers for running chunks on its team, reused call after call.
class team_chunks {
 public:
  /// Runs `run` over the chunk `in` as run(in, out, counts, cursor) does: appends every job's blocks to
  /// `out` in job order, writes the output counts, and throws the lowest failing job's exception with
  /// `cursor` at that job. On the team when it has threads besides the caller and the chunk has more than
  /// one job, no message stream (a stream shared by threads would be a data race) and is not run from
  /// inside a job; else on the calling thread alone. Adds the team's busy times to busy().
  void run(thread_team* team, chunk_runner runner, const chunk_input& in, block_buffer& out, int* counts,
           int& cursor) {
    if (team == nullptr || team->size() == 1 || in.n_jobs <= 1 || in.msgs != nullptr || functor_depth > 0) {
      const auto start = std::chrono::steady_clock::now();
      struct add_busy {  // also when the chunk throws
        team_chunks& self;
        std::chrono::steady_clock::time_point start;
        ~add_busy() { self.add_alone(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()); }
      } timing{*this, start};
      return runner(in, out, counts, cursor);
    }
    run_on(*team, runner, in, out, counts, cursor);
  }

  /// The busy times of the team's slowest and fastest thread, summed over the chunks run since reset_busy().
  const team_busy& busy() const { return busy_; }
  /// Starts a call's busy times.
  void reset_busy() { busy_ = {}; }
  /// Adds `seconds` of jobs run on the calling thread alone, elsewhere.
  void add_alone(double seconds) {
    busy_.slowest_seconds += seconds;
    busy_.fastest_seconds += seconds;
  }

 private:
  struct context {
    team_chunks* self;
    chunk_runner runner;
    const chunk_input* in;
    int* counts;
    int batch;
  };

  void run_on(thread_team& team, chunk_runner runner, const chunk_input& in, block_buffer& out, int* counts,
              int& cursor) {
    const int n = in.n_jobs, T = team.size();
    // Batches small enough that the threads end together, large enough that claims stay rare.
    const int batch = std::max(1, n / (8 * T));
    batches_.assign(static_cast<std::size_t>((n + batch - 1) / batch), chunk_batch{});
    while (static_cast<int>(shares_.size()) < T) shares_.push_back(std::make_unique<chunk_thread_share>());
    for (auto& s : shares_) {
      s->blocks.resize(0);
      s->failed_job = INT_MAX;
      s->error = nullptr;
    }
    lowest_failure_.store(INT_MAX, std::memory_order_relaxed);
    context c{this, runner, &in, counts, batch};
    team.run(n, batch, &run_batch, &c);
    const team_busy b = team.last_call_busy();
    busy_.slowest_seconds += b.slowest_seconds;
    busy_.fastest_seconds += b.fastest_seconds;
    const int failed = lowest_failure_.load(std::memory_order_relaxed);
    if (failed != INT_MAX) {
      cursor = failed;
      for (auto& s : shares_)
        if (s->failed_job == failed) std::rethrow_exception(s->error);
    }
    std::size_t total = 0;
    for (const chunk_batch& b : batches_) total += b.size;
    out.reserve(out.size() + total);
    for (const chunk_batch& b : batches_)
      out.append(shares_[static_cast<std::size_t>(b.thread)]->blocks.data() + b.offset, b.size);
    cursor = n;
  }

  static void run_batch(void* raw, int thread, int begin, int end) noexcept {
    const context& c = *static_cast<const context*>(raw);
    team_chunks& me = *c.self;
    // Jobs after a failure need not run: the lowest failing job is the chunk's error.
    if (begin > me.lowest_failure_.load(std::memory_order_relaxed)) return;
    chunk_thread_share& share = *me.shares_[static_cast<std::size_t>(thread)];
    const chunk_input& in = *c.in;
    const chunk_input part{in.shared,   in.n_shared, in.job_params + static_cast<std::ptrdiff_t>(begin) * in.n_job_params,
                           in.n_job_params,    in.x_r + begin, in.x_i + begin, end - begin, nullptr};
    chunk_batch& record = me.batches_[static_cast<std::size_t>(begin / c.batch)];
    record.thread = thread;
    record.offset = share.blocks.size();
    int cursor = 0;
    try {
      c.runner(part, share.blocks, c.counts + begin, cursor);
    } catch (...) {
      me.record_failure(share, begin + cursor);
    }
    record.size = share.blocks.size() - record.offset;
  }

  /// Keeps the exception in flight as job `job`'s failure if it is the thread's lowest.
  void record_failure(chunk_thread_share& share, int job) noexcept {
    if (job < share.failed_job) {
      share.failed_job = job;
      share.error = std::current_exception();
    }
    int lowest = lowest_failure_.load(std::memory_order_relaxed);
    while (job < lowest && !lowest_failure_.compare_exchange_weak(lowest, job, std::memory_order_relaxed)) {
    }
  }

  std::vector<chunk_batch> batches_;
  std::vector<std::unique_ptr<chunk_thread_share>> shares_;  ///< one each, so threads never share a line
  std::atomic<int> lowest_failure_{INT_MAX};
  team_busy busy_;
};

}  // namespace maprect::detail
