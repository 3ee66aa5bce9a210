#pragma once
// Claims by message need the owner's answer, and a rank that runs a job calls no MPI until the job ends: an
// owner whose jobs last milliseconds kept its thieves waiting that long. So an owner on one thread runs a
// long batch of its own jobs on a thread of its own, and its MPI thread answers the asks meanwhile. Only the
// MPI thread calls MPI (MPI_THREAD_FUNNELED), and only it moves the ends of the owner's unstarted jobs.
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace maprect::detail {

/// The shortest batch an owner runs aside (batch_aside). The answering thread wakes several times a batch, and
/// each wake takes the CPU from the jobs: with ranks on every core, aside batches of a millisecond cost the
/// jobs more than their thieves' waits gain (4 ranks with 1 ms jobs on 2 cores ran 8% slower).
constexpr double claims_aside_seconds = 2e-3;

/// A thread that runs one batch of jobs at a time while the calling thread does something else; made on its
/// first use, joined when destroyed.
class batch_aside {
 public:
  batch_aside() = default;
  batch_aside(const batch_aside&) = delete;
  batch_aside& operator=(const batch_aside&) = delete;
  ~batch_aside();

  /// Runs `batch` on the thread, and on this one calls `meanwhile()` about every `period` seconds until
  /// `batch` has returned (it must not throw).
  void run(const std::function<void()>& batch, const std::function<void()>& meanwhile, double period);

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;  ///< a batch to run, or the end
  std::condition_variable done_;  ///< the batch has returned
  const std::function<void()>* batch_ = nullptr;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace maprect::detail
