#pragma once
// Hooks that tests and benchmarks use to pin what the runtime would otherwise choose from timings, or to
// measure it. Not installed: a program outside this tree has no use for them.
#include <maprect/detail/reverse_mode.hpp>
#include <string>

namespace maprect::detail {

/// The next call of `call_id` on this thread's live cluster is planned anew with the root running
/// min(root_jobs, J) jobs (a first call), and so are its calls after it. No effect without a live cluster.
void plan_root_share(int call_id, int root_jobs);

/// The clusters this process starts from now on take every round trip between the root and a worker as
/// `seconds` instead of the shortest of those measured at start-up (rank_fact::round_trip); a negative value
/// measures them again. Every rank of the job must pin the same value before its cluster starts. The round trip
/// decides whether claims by message pay and the fewest jobs worth a grant, and one measured on loaded cores can
/// be milliseconds.
void pin_round_trips(double seconds);

/// Whether claims by message pay (claims_pay) is judged on this thread's live cluster as if its farthest worker
/// were `seconds` of a round trip away; a negative value puts back the round trips measured at start-up. No
/// effect without a live cluster.
void judge_claims_at_round_trip(double seconds);

/// Whether this thread's live cluster measures, in each steady call, the CPU time its root thread spends
/// collecting the workers' answers (cluster::profile::wait_cpu_seconds). Off by default: the thread's CPU
/// clock costs about a system call. No effect without a live cluster.
void time_root_waits(bool on);

/// The root runs `root_slices` slices of reduce_sum call site `call_id`'s next cluster call (the workers split
/// the rest), and every call after it until another is asked for. The results are the same bits whatever it is.
void plan_reduce_root_share(int call_id, int root_slices);

/// Removes the reduce_sum runner of `key` from this process, as if its program did not instantiate it.
void forget_reduce_runner(const std::string& key);

/// Tests only: later calls run as if MAPRECT_REVERSE were `value`; null forgets the cached setting, so the next
/// call reads the environment again. Throws like the setting for an invalid value.
inline void set_reverse_mode_for_tests(const char* value) {
  const int mode = value == nullptr ? -1 : static_cast<int>(parse_reverse_mode(value));
  reverse_setting_cache.store(mode, std::memory_order_relaxed);
}

/// Tests and benchmarks only: runs its scope as if MAPRECT_REVERSE were `value` (set_reverse_mode_for_tests), then
/// puts back the setting as it was.
class reverse_mode_scope {
 public:
  explicit reverse_mode_scope(const char* value) : saved_(reverse_setting_cache.load(std::memory_order_relaxed)) {
    set_reverse_mode_for_tests(value);
  }
  ~reverse_mode_scope() { reverse_setting_cache.store(saved_, std::memory_order_relaxed); }
  reverse_mode_scope(const reverse_mode_scope&) = delete;
  reverse_mode_scope& operator=(const reverse_mode_scope&) = delete;

 private:
  int saved_;
};

/// Tests only: every call site forgets its last call, so that its next call runs as a site never called.
inline void forget_reverse_choices_for_tests() { reverse_choice_epoch.fetch_add(1, std::memory_order_relaxed); }

}  // namespace maprect::detail
