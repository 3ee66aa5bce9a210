// A thread for an owner's long batches (batch_aside.hpp).
#include "src/balance/batch_aside.hpp"

#include <chrono>

#include "src/cluster/clock.hpp"

namespace maprect::detail {

batch_aside::~batch_aside() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void batch_aside::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stop_ || batch_ != nullptr; });
    if (stop_) return;
    lock.unlock();
    (*batch_)();
    lock.lock();
    batch_ = nullptr;
    done_.notify_one();
  }
}

void batch_aside::run(const std::function<void()>& batch, const std::function<void()>& meanwhile, double period) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  batch_ = &batch;
  wake_.notify_one();
  const auto wait = steady_seconds(period);
  // The batch's end wakes this thread at once; the period only paces the answers while it runs.
  while (!done_.wait_for(lock, wait, [this] { return batch_ == nullptr; })) {
    lock.unlock();
    meanwhile();
    lock.lock();
  }
}

}  // namespace maprect::detail
