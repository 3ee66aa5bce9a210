// maprect-bench-wait [repeats [gap_us [jobs [points]]]]: time per gradient of the standard model (64 jobs of 100
// points unless given, var/var) over the cluster's ranks, under whatever MAPRECT_WAIT says.
// scripts/bench-oversubscribe.sh runs it at several rank counts and wait policies to show what idle workers cost
// a root that shares its core. With gap_us, the root computes alone for that long after each gradient (a
// sampler's own work, during which the workers idle) and the time per gradient includes the gap. Prints one line:
// ranks, MAPRECT_WAIT, jobs and points, median and mean microseconds per gradient, and the CPU time the workers
// used per gradient (computing and waiting: what spinning costs the other processes).
#include <maprect/maprect.hpp>
#include <mpi.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "test/support/benchmark_model.hpp"

MAPRECT_REGISTER(1, maprect::test::logistic_job);

namespace {

constexpr int kDefaultJobs = 64;
constexpr int kDefaultPoints = 100;
constexpr int kWarmUp = 20;

/// Keeps the root's core busy for `us` microseconds, as serial work between calls would.
double busy_for(double us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(us);
  double x = 0;
  while (std::chrono::steady_clock::now() < until)
    for (int k = 0; k < 100; ++k) x += 1e-9 * k;
  return x;
}

/// CPU seconds (user + system) this process has used.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

/// One evaluate-grad cycle on a fresh tape.
double gradient_once(const maprect::test::benchmark_data& d) {
  const maprect::vector_v phi = maprect::to_var(d.phi);
  std::vector<maprect::vector_v> theta;
  theta.reserve(d.theta.size());
  for (const auto& t : d.theta) theta.push_back(maprect::to_var(t));
  const maprect::var lp = maprect::map_rect<1, maprect::test::logistic_job>(phi, theta, d.x_r, d.x_i).sum();
  maprect::grad(lp);
  const double value = lp.val() + phi(0).adj();
  maprect::recover_memory();
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  maprect::cluster c(argc, argv);
  // Workers report the CPU time they spent serving to the root, on the world communicator once the
  // cluster (on a duplicate of it) is released.
  if (!c.is_root()) {
    const double t0 = cpu_seconds();
    c.serve();
    double used = cpu_seconds() - t0;
    MPI_Reduce(&used, nullptr, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    return 0;
  }
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 400;
  const double gap_us = argc > 2 ? std::max(0.0, std::atof(argv[2])) : 0.0;
  const int jobs = argc > 3 ? std::max(1, std::atoi(argv[3])) : kDefaultJobs;
  const int points = argc > 4 ? std::max(1, std::atoi(argv[4])) : kDefaultPoints;
  const maprect::test::benchmark_data d(jobs, points);
  double sink = 0;
  for (int k = 0; k < kWarmUp; ++k) sink += gradient_once(d);
  std::vector<double> us(static_cast<std::size_t>(repeats));
  for (double& t : us) {
    const auto t0 = std::chrono::steady_clock::now();
    sink += gradient_once(d);
    if (gap_us > 0) sink += busy_for(gap_us);
    t = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  c.stop();
  double workers_cpu = 0, none = 0;
  if (c.size() > 1) MPI_Reduce(&none, &workers_cpu, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  const double mean = std::accumulate(us.begin(), us.end(), 0.0) / repeats;
  std::nth_element(us.begin(), us.begin() + repeats / 2, us.end());
  const char* wait = std::getenv("MAPRECT_WAIT");
  std::printf(
      "ranks=%d wait=%s jobs=%d points=%d median_us=%.1f mean_us=%.1f workers_cpu_us=%.1f repeats=%d gap_us=%.0f "
      "check=%.6g\n",
      c.size(), wait != nullptr && wait[0] != '\0' ? wait : "auto", jobs, points, us[repeats / 2], mean,
      1e6 * workers_cpu / (repeats + kWarmUp), repeats, gap_us, sink);
  return 0;
}
