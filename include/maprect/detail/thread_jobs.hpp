#pragma once
/// \file The jobs of an in-process map_rect call run on a thread_team: each job runs the job runner's code
/// on whichever team thread claimed it, its outputs go to blocks recorded by job index, and the calling
/// thread then reads them in job order. Which thread ran a job changes nothing in its bits.

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstddef>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "../thread_team.hpp"
#include "job_error.hpp"
#include "job_runner.hpp"

namespace maprect::detail {

/// Where a job's outputs and messages are: in the share of the team thread that ran it.
struct team_job_record {
  int thread;              ///< the team thread that ran the job
  int count;               ///< its outputs
  std::size_t offset;      ///< its first output's block in that thread's blocks
  std::size_t text_begin;  ///< its messages in that thread's text: [text_begin, text_end)
  std::size_t text_end;
};

/// What one team thread produced in a call: its jobs' blocks and messages, and its lowest failing job.
struct team_thread_share {
  block_buffer blocks;
  std::ostringstream text;      ///< what its jobs wrote to msgs (only when the call has a stream)
  std::size_t text_mark = 0;    ///< the end of the last recorded job's messages
  int failed_job = INT_MAX;     ///< its lowest failing job, INT_MAX if none
  job_error error;              ///< that job's exception

  void reset() {
    blocks.resize(0);
    if (text_mark != 0 || text.tellp() != 0) text.str(std::string());  // a stream reset costs a call's work at 2x1
    text_mark = 0;
    failed_job = INT_MAX;
  }
};

/// The per-job records and per-thread shares of the calling thread's team calls, reused call after call.
struct team_call_buffers {
  std::vector<team_job_record> jobs;
  std::vector<std::unique_ptr<team_thread_share>> shares;  ///< one each, so threads never share a line

  void prepare(int n_jobs, int n_threads) {
    jobs.resize(static_cast<std::size_t>(n_jobs));
    while (static_cast<int>(shares.size()) < n_threads) shares.push_back(std::make_unique<team_thread_share>());
    for (auto& s : shares) s->reset();
  }
};

/// The jobs [begin, begin + n) of a call, renumbered from 0, with msgs redirected to a thread's own text.
template <class Jobs>
class jobs_slice {
 public:
  jobs_slice(const Jobs& in, int begin, int n, std::ostream* msgs) : in_(in), begin_(begin), n_(n), msgs_(msgs) {}
  int n_jobs() const { return n_; }
  int n_shared() const { return in_.n_shared(); }
  int n_job_params() const { return in_.n_job_params(); }
  double shared(int s) const { return in_.shared(s); }
  double job_param(int j, int p) const { return in_.job_param(begin_ + j, p); }
  const Eigen::VectorXd& shared_doubles(Eigen::VectorXd& scratch) const { return in_.shared_doubles(scratch); }
  const Eigen::VectorXd& job_param_doubles(int j, Eigen::VectorXd& scratch) const {
    return in_.job_param_doubles(begin_ + j, scratch);
  }
  const std::vector<double>& x_r(int j) const { return in_.x_r(begin_ + j); }
  const std::vector<int>& x_i(int j) const { return in_.x_i(begin_ + j); }
  std::ostream* msgs() const { return msgs_; }

 private:
  const Jobs& in_;
  int begin_, n_;
  std::ostream* msgs_;
};

/// Writes a team thread's outputs as (1 + partials)-row blocks to its share, and records each job's.
class team_block_sink {
 public:
  team_block_sink(std::vector<team_job_record>& jobs, team_thread_share& share, int thread, int begin, int rows,
                  bool with_text)
      : jobs_(jobs), share_(share), thread_(thread), begin_(begin), rows_(rows), with_text_(with_text) {}
  void values(int j, const Eigen::VectorXd& y) {
    record(j, static_cast<int>(y.size()));
    share_.blocks.append(y.data(), static_cast<std::size_t>(y.size()));
  }
  void begin_job(int j, int K) {
    record(j, K);
    col_ = share_.blocks.extend(static_cast<std::size_t>(K) * rows_);
  }
  void output(int, double value, const runner_vectors::kept_leaf* leaves, int n_leaves) {
    col_[0] = value;
    for (int i = 0; i < n_leaves; ++i) col_[1 + i] = leaves[i].adj_;
    col_ += rows_;
  }

 private:
  void record(int j, int K) {
    const std::size_t text_end = with_text_ ? static_cast<std::size_t>(share_.text.tellp()) : 0;
    jobs_[static_cast<std::size_t>(begin_ + j)] = {thread_, K, share_.blocks.size(), share_.text_mark, text_end};
    share_.text_mark = text_end;
  }

  std::vector<team_job_record>& jobs_;
  team_thread_share& share_;
  int thread_, begin_, rows_;
  bool with_text_;
  double* col_ = nullptr;
};

/// Writes the messages of a team call's jobs [0, n) to `msgs` (if any) in job order.
inline void write_team_messages(const team_call_buffers& buffers, std::ostream* msgs, int n) {
  if (msgs == nullptr) return;
  std::vector<std::string> texts;
  for (const auto& s : buffers.shares) texts.push_back(s->text.str());
  for (int j = 0; j < n; ++j) {
    const team_job_record& r = buffers.jobs[static_cast<std::size_t>(j)];
    msgs->write(texts[static_cast<std::size_t>(r.thread)].data() + r.text_begin,
                static_cast<std::streamsize>(r.text_end - r.text_begin));
  }
}

/// Throws a team call's job `failed`'s exception as an in-process call does, after writing the messages the
/// jobs before it wrote and the part the failing job wrote before it threw.
[[noreturn]] inline void throw_team_failure(const team_call_buffers& buffers, std::ostream* msgs, int failed) {
  write_team_messages(buffers, msgs, failed);
  const team_thread_share* share = nullptr;
  for (const auto& s : buffers.shares)
    if (s->failed_job == failed) share = s.get();
  if (msgs != nullptr) {
    const std::string text = share->text.str();
    msgs->write(text.data() + share->text_mark, static_cast<std::streamsize>(text.size() - share->text_mark));
  }
  throw_job_error(share->error, failed, -1);
}

/// Keeps the exception in flight as job `job`'s failure in (failed_job, error) if it is lower than the one
/// there, and lowers `lowest`, the call's lowest failing job, to it.
inline void record_team_failure(int& failed_job, job_error& error, std::atomic<int>& lowest, int job) noexcept {
  if (job < failed_job) {
    failed_job = job;
    try {
      error = current_job_error();
    } catch (...) {
      error = job_error{error_type::runtime_error, std::string()};
    }
  }
  int seen = lowest.load(std::memory_order_relaxed);
  while (job < seen && !lowest.compare_exchange_weak(seen, job, std::memory_order_relaxed)) {
  }
}

/// One in-process map_rect call on a team: run() fills the buffers, then the caller reads them.
template <class F, param_kinds Kinds, class Jobs>
class team_call {
 public:
  team_call(const Jobs& in, std::ostream* msgs, team_call_buffers& buffers)
      : in_(in), msgs_(msgs), buffers_(buffers), rows_(rows_per_output(Kinds, in.n_shared(), in.n_job_params())) {}

  /// Runs every job on the team. Returns the lowest failing job, or INT_MAX when none failed.
  int run(thread_team& team) {
    const int n = in_.n_jobs();
    buffers_.prepare(n, team.size());
    lowest_failure_.store(INT_MAX, std::memory_order_relaxed);
    // Batches small enough that the threads end together, large enough that claims stay rare.
    team.run(n, std::max(1, n / (8 * team.size())), &run_batch, this);
    return lowest_failure_.load(std::memory_order_relaxed);
  }

  /// Rows per output block: the value and its partials (1 with double results).
  int rows() const { return rows_; }

  /// Outputs of all jobs.
  long long n_outputs() const {
    long long n = 0;
    for (const team_job_record& r : buffers_.jobs) n += r.count;
    return n;
  }

  /// Job j's first block and output count.
  const double* blocks_of(int j, int& count) const {
    const team_job_record& r = buffers_.jobs[static_cast<std::size_t>(j)];
    count = r.count;
    return buffers_.shares[static_cast<std::size_t>(r.thread)]->blocks.data() + r.offset;
  }

  /// Writes the messages of jobs [0, n) to the caller's stream in job order.
  void write_messages(int n) const { write_team_messages(buffers_, msgs_, n); }

  /// Throws job `failed`'s exception as an in-process call does, after writing the messages the jobs
  /// before it wrote and the part the failing job wrote before it threw.
  [[noreturn]] void throw_failure(int failed) const { throw_team_failure(buffers_, msgs_, failed); }

 private:
  static void run_batch(void* self, int thread, int begin, int end) noexcept {
    auto& me = *static_cast<team_call*>(self);
    // Jobs after a failure need not run: the lowest failing job is the call's error.
    if (begin > me.lowest_failure_.load(std::memory_order_relaxed)) return;
    team_thread_share& share = *me.buffers_.shares[static_cast<std::size_t>(thread)];
    const bool with_text = me.msgs_ != nullptr;
    const jobs_slice<Jobs> range(me.in_, begin, end - begin, with_text ? &share.text : nullptr);
    team_block_sink sink(me.buffers_.jobs, share, thread, begin, me.rows_, with_text);
    int cursor = 0;
    try {
      run_jobs<F, Kinds>(range, sink, cursor);
    } catch (...) {
      me.record_failure(share, begin + cursor);
    }
  }

  /// Keeps the exception in flight as job `job`'s failure if it is the thread's lowest.
  void record_failure(team_thread_share& share, int job) noexcept {
    record_team_failure(share.failed_job, share.error, lowest_failure_, job);
  }

  const Jobs& in_;
  std::ostream* msgs_;
  team_call_buffers& buffers_;
  int rows_;
  std::atomic<int> lowest_failure_{INT_MAX};
};

/// The team this thread's in-process map_rect call should use: the installed one, when it has threads
/// besides the caller and the call is not made from inside a job.
inline thread_team* team_for_call() {
  thread_team* team = current_team();
  return team != nullptr && team->size() > 1 && functor_depth == 0 ? team : nullptr;
}

}  // namespace maprect::detail
