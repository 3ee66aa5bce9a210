#pragma once
// What a worker keeps of the root's deferred calls between their forward and reverse passes: each call's kept
// tapes (deferred_call), numbered as the root numbers them. Every rank counts the deferred_call requests, so
// the number needs no message; each request says how many older calls the root still keeps, and the worker
// drops the rest, so that its memory follows the root's tape.
#include <cstdint>
#include <maprect/detail/kept_tapes.hpp>
#include <memory>
#include <vector>

namespace maprect::detail {

/// A worker's kept deferred calls, by number.
class kept_deferred_calls {
 public:
  /// The kept call of the next deferred_call request, cleared, after dropping those more than `kept_back`
  /// calls older than it.
  deferred_call& take_next(int kept_back) {
    ++newest_;
    for (std::size_t i = live_.size(); i-- > 0;)
      if (live_[i]->remote_id + static_cast<std::uint64_t>(kept_back) < newest_) release(i);
    if (spare_.empty()) spare_.push_back(std::make_unique<deferred_call>());
    live_.push_back(std::move(spare_.back()));
    spare_.pop_back();
    deferred_call& call = *live_.back();
    call.remote_id = newest_;
    return call;
  }
  /// The kept call numbered `id`, or null when it was dropped.
  deferred_call* find(std::uint64_t id) {
    for (auto& call : live_)
      if (call->remote_id == id) return call.get();
    return nullptr;
  }
  /// The number of the newest call.
  std::uint64_t newest() const { return newest_; }
  /// Calls kept now.
  std::size_t size() const { return live_.size(); }

 private:
  void release(std::size_t i) {
    live_[i]->clear();
    spare_.push_back(std::move(live_[i]));
    live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
  }

  std::vector<std::unique_ptr<deferred_call>> live_;
  std::vector<std::unique_ptr<deferred_call>> spare_;
  std::uint64_t newest_ = 0;
};

}  // namespace maprect::detail
