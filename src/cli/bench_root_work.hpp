#pragma once
// The root's serial work in one steady map_rect call over a cluster (docs/performance-root.md): the CPU time of
// the root's thread in the call, less the CPU time it spent collecting the workers' answers (waiting included)
// and the time it spent running jobs. What remains is the request, the packing, the data check if any, the
// output nodes and the bookkeeping. A thread's CPU clock does not run while the thread is not scheduled, so
// other processes on the machine cannot add to it. Shared by `maprect bench` and `maprect-root-work`.
#include <maprect/cluster.hpp>
#include <time.h>

#include "src/cluster/test_hooks.hpp"

namespace maprect::cli {

/// CPU microseconds the calling thread has used (CLOCK_THREAD_CPUTIME_ID).
inline double thread_cpu_us() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return 1e6 * static_cast<double>(t.tv_sec) + 1e-3 * static_cast<double>(t.tv_nsec);
}

/// Thread CPU microseconds one read of the thread's CPU clock takes (a system call), the mean of `reads` reads.
inline double clock_read_us(int reads = 2000) {
  const double start = thread_cpu_us();
  for (int i = 0; i < reads; ++i) thread_cpu_us();
  return (thread_cpu_us() - start) / reads;
}

/// One steady call on the root: the CPU time of its thread in the call, and what of it was not serial work.
struct root_work_sample {
  double call_us = 0;    ///< CPU microseconds of the root's thread in the call
  double wait_us = 0;    ///< of which collecting the answers (waiting included)
  double jobs_us = 0;    ///< of which running jobs: its own and those it took over (0 when it ran none)
  double serial_us = 0;  ///< the rest: call_us - wait_us - jobs_us
  int jobs_run = 0;      ///< jobs the root ran: its own and those it took over
  int checked_rows = 0;  ///< workers' rows the call compared with the root's copy (0 with a job_data)
};

/// Whether `p` is the profile of a steady call timed under detail::time_root_waits(true): only such a call
/// measures its wait (and a clock read costs more than nothing).
inline bool waits_timed(const cluster::profile& p) { return p.wait_cpu_seconds > 0; }

/// The sample of a steady call whose root thread used `call_us` of CPU, from the call's profile `p` (taken
/// under detail::time_root_waits(true)). The root's time on jobs is the profile's busiest team thread's (the
/// calling thread is one of the team and waits for the busiest), which is wall-clock time: when the root runs
/// jobs, a descheduled thread makes it larger than the CPU time it stands for, and the serial work smaller.
inline root_work_sample root_work_of(double call_us, const cluster::profile& p) {
  root_work_sample s;
  s.call_us = call_us;
  s.wait_us = 1e6 * p.wait_cpu_seconds;
  s.jobs_run = p.root_jobs + p.taken_jobs;
  s.jobs_us = s.jobs_run > 0 ? 1e6 * p.slowest_thread_seconds : 0.0;
  s.serial_us = call_us - s.wait_us - s.jobs_us;
  s.checked_rows = p.checked_rows;
  return s;
}

}  // namespace maprect::cli
