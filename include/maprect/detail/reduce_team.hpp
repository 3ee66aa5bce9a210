#pragma once
/// \file A range of reduce_sum slices run into per-slice blocks, serially or on a thread_team: each slice
/// runs start to end on the thread that claimed it and writes its block at its own place (reduce_layout's
/// block_at), so the blocks, the failing slice and the messages are those of the serial run for any team.

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
#include "reduce_layout.hpp"

namespace maprect::detail {

/// What one team thread produced in a run: its slices' messages and its lowest failing slice.
struct slice_thread_share {
  std::ostringstream text;      ///< what its slices wrote to msgs (only when the run has a stream)
  std::size_t text_mark = 0;    ///< the end of the last finished slice's messages
  int failed = INT_MAX;         ///< its lowest failing slice, INT_MAX if none
  job_error error;              ///< that slice's exception

  /// Ready for a new run.
  void reset() {
    if (text_mark != 0 || text.tellp() != 0) text.str(std::string());
    text_mark = 0;
    failed = INT_MAX;
  }
};

/// Where a slice's messages are: in the text of the thread that ran it, [begin, end).
struct slice_text {
  int thread = 0;
  std::size_t begin = 0, end = 0;
};

/// A thread's buffers for its team runs of slices, reused call after call.
struct slice_team_buffers {
  std::vector<std::unique_ptr<slice_thread_share>> shares;  ///< one each, so threads never share a line
  std::vector<slice_text> texts;                            ///< per slice of the run

  /// Ready for a run of n slices on `threads` threads.
  void prepare(int n, int threads) {
    texts.resize(static_cast<std::size_t>(n));
    while (static_cast<int>(shares.size()) < threads) shares.push_back(std::make_unique<slice_thread_share>());
    for (auto& s : shares) s->reset();
  }
};

/// Writes each slice's block at its place among the blocks of a range of slices (block_at relative to the
/// range's first slice), and with a stream records where the slice's messages end.
class slice_range_sink {
 public:
  slice_range_sink(const reduce_layout& layout, double* blocks, int first, slice_thread_share* share = nullptr,
                   slice_text* texts = nullptr, int thread = 0)
      : layout_(layout), blocks_(blocks), base_(layout.block_at(first)), first_(first), share_(share),
        texts_(texts), thread_(thread) {}

  /// Slice s's value, with the adjoints of the shared vars' leaves and of the slice's own leaves.
  void slice(int s, double value, vari* const* shared, vari* const* own) {
    double* b = blocks_ + (layout_.block_at(s) - base_);
    *b++ = value;
    if (shared != nullptr)
      for (std::size_t k = 0; k < layout_.n_shared(); ++k) *b++ = shared[k]->adj_;
    if (own != nullptr)
      for (std::size_t k = 0, n = layout_.slice_vars(s); k < n; ++k) *b++ = own[k]->adj_;
    if (texts_ == nullptr) return;
    const auto end = static_cast<std::size_t>(share_->text.tellp());
    texts_[s - first_] = {thread_, share_->text_mark, end};
    share_->text_mark = end;
  }

 private:
  const reduce_layout& layout_;
  double* blocks_;
  std::size_t base_;
  int first_;
  slice_thread_share* share_;
  slice_text* texts_;
  int thread_;
};

/// One run of slices [first, last) on a team. RunRange is called as run(b, e, msgs, sink, cursor) and runs
/// slices [b, e) in order into sink (the slice runner of the call, bound to its arguments).
template <class RunRange>
class slice_team_run {
 public:
  slice_team_run(const reduce_layout& layout, int first, int last, double* blocks, std::ostream* msgs,
                 slice_team_buffers& buffers, const RunRange& run_range)
      : layout_(layout), first_(first), last_(last), blocks_(blocks), msgs_(msgs), buffers_(buffers),
        run_range_(run_range) {}

  /// Runs every slice of the range on the team. Returns the lowest failing slice, or INT_MAX.
  int run(thread_team& team) {
    const int n = last_ - first_;
    buffers_.prepare(n, team.size());
    lowest_failure_.store(INT_MAX, std::memory_order_relaxed);
    // Batches small enough that the threads end together, large enough that claims stay rare.
    team.run(n, std::max(1, n / (8 * team.size())), &run_batch, this);
    return lowest_failure_.load(std::memory_order_relaxed);
  }

  /// Writes the messages of slices [first, until) to the caller's stream in slice order, and with a
  /// failing slice `until` the part it wrote before it threw.
  void write_messages(int until, bool failed) const {
    if (msgs_ == nullptr) return;
    std::vector<std::string> texts;
    for (const auto& s : buffers_.shares) texts.push_back(s->text.str());
    for (int s = first_; s < until; ++s) {
      const slice_text& r = buffers_.texts[static_cast<std::size_t>(s - first_)];
      msgs_->write(texts[static_cast<std::size_t>(r.thread)].data() + r.begin,
                   static_cast<std::streamsize>(r.end - r.begin));
    }
    if (!failed) return;
    for (std::size_t t = 0; t < buffers_.shares.size(); ++t) {
      const slice_thread_share& share = *buffers_.shares[t];
      if (share.failed != until) continue;
      const std::string& text = texts[t];
      msgs_->write(text.data() + share.text_mark, static_cast<std::streamsize>(text.size() - share.text_mark));
    }
  }

  /// The exception of failing slice `failed`.
  const job_error& error_of(int failed) const {
    for (const auto& s : buffers_.shares)
      if (s->failed == failed) return s->error;
    return buffers_.shares[0]->error;  // not reached: run() returned `failed` from some thread's record
  }

 private:
  static void run_batch(void* self, int thread, int begin, int end) noexcept {
    auto& me = *static_cast<slice_team_run*>(self);
    const int b = me.first_ + begin, e = me.first_ + end;
    // Slices after a failure need not run: the lowest failing slice is the run's error.
    if (b > me.lowest_failure_.load(std::memory_order_relaxed)) return;
    slice_thread_share& share = *me.buffers_.shares[static_cast<std::size_t>(thread)];
    const bool with_text = me.msgs_ != nullptr;
    slice_range_sink sink(me.layout_, me.blocks_, me.first_, &share, with_text ? me.buffers_.texts.data() : nullptr,
                          thread);
    int cursor = b;
    try {
      me.run_range_(b, e, with_text ? &share.text : nullptr, sink, cursor);
    } catch (...) {
      me.record_failure(share, cursor);
    }
  }

  /// Keeps the exception in flight as slice `s`'s failure if it is the thread's lowest.
  void record_failure(slice_thread_share& share, int s) noexcept {
    if (s < share.failed) {
      share.failed = s;
      try {
        share.error = current_job_error();
      } catch (...) {
        share.error = job_error{error_type::runtime_error, std::string()};
      }
    }
    int lowest = lowest_failure_.load(std::memory_order_relaxed);
    while (s < lowest && !lowest_failure_.compare_exchange_weak(lowest, s, std::memory_order_relaxed)) {
    }
  }

  const reduce_layout& layout_;
  int first_, last_;
  double* blocks_;
  std::ostream* msgs_;
  slice_team_buffers& buffers_;
  const RunRange& run_range_;
  std::atomic<int> lowest_failure_{INT_MAX};
};

/// Runs slices [first, last) of a call into `blocks` (slice s's block at layout.block_at(s) -
/// layout.block_at(first)): on `team` when it has threads besides the caller and there is more than one
/// slice, else on this thread. The functor's messages reach `msgs` in slice order, as serially. Returns the
/// lowest failing slice, with its exception in `error`, or INT_MAX when none failed.
template <class RunRange>
int run_slice_range(thread_team* team, const reduce_layout& layout, int first, int last, double* blocks,
                    std::ostream* msgs, const RunRange& run_range, job_error& error) {
  if (team != nullptr && team->size() > 1 && last - first > 1) {
    slice_team_run<RunRange> run(layout, first, last, blocks, msgs, per_depth<slice_team_buffers>(functor_depth),
                                 run_range);
    const int failed = run.run(*team);
    run.write_messages(failed == INT_MAX ? last : failed, failed != INT_MAX);
    if (failed != INT_MAX) error = run.error_of(failed);
    return failed;
  }
  slice_range_sink sink(layout, blocks, first);
  int cursor = first;
  try {
    run_range(first, last, msgs, sink, cursor);
  } catch (...) {
    error = current_job_error();
    return cursor;
  }
  return INT_MAX;
}

}  // namespace maprect::detail
