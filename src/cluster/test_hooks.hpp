#pragma once
// Hooks that tests and benchmarks use to pin what the runtime would otherwise choose from timings, or to
// measure it. Not installed: a program outside this tree has no use for them.
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

}  // namespace maprect::detail
