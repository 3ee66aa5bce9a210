// The in-process benchmark of docs/threads.md: gradients of the standard model through map_rect with no
// team and with teams of 1 and 2 threads, in interleaved rounds; prints the median wall time per gradient,
// the CPU time of all the process's threads per gradient, and the T = 2 busy times per call, in us.
//   bench_threads [rounds] [seconds per measurement]
#include <maprect/maprect.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "support/benchmark_model.hpp"

MAPRECT_REGISTER(1, maprect::test::logistic_job);

namespace {

using clock_type = std::chrono::steady_clock;

/// One gradient of the standard model's log density.
double gradient(const maprect::test::benchmark_data& d) {
  maprect::recover_memory();
  const maprect::vector_v phi = maprect::to_var(d.phi);
  std::vector<maprect::vector_v> theta;
  theta.reserve(d.theta.size());
  for (const auto& t : d.theta) theta.push_back(maprect::to_var(t));
  const maprect::var lp = maprect::map_rect<1, maprect::test::logistic_job>(phi, theta, d.x_r, d.x_i).sum();
  maprect::grad(lp);
  return phi(0).adj();
}

/// CPU seconds this process used so far.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

/// What one measurement found, per gradient: wall seconds, CPU seconds of all threads, and the team's busy times.
struct measurement {
  double wall = 0, cpu = 0;
  maprect::team_busy busy;
};

/// Seconds per gradient over about `seconds`, on `team` (none: the serial in-process call).
measurement time_per_gradient(const maprect::test::benchmark_data& d, maprect::thread_team* team, double seconds) {
  std::unique_ptr<maprect::team_scope> use;
  if (team != nullptr) use = std::make_unique<maprect::team_scope>(*team);
  volatile double sink = gradient(d);  // warm-up
  long n = 0;
  double busy_slow = 0, busy_fast = 0;
  const double cpu_start = cpu_seconds();
  const auto start = clock_type::now();
  const auto until = start + std::chrono::duration<double>(seconds);
  auto now = start;
  do {
    for (int i = 0; i < 16; ++i, ++n) {
      sink = gradient(d);
      if (team != nullptr) {
        busy_slow += team->last_call_busy().slowest_seconds;
        busy_fast += team->last_call_busy().fastest_seconds;
      }
    }
    now = clock_type::now();
  } while (now < until);
  (void)sink;
  measurement m;
  m.wall = std::chrono::duration<double>(now - start).count() / static_cast<double>(n);
  m.cpu = (cpu_seconds() - cpu_start) / static_cast<double>(n);
  m.busy = {busy_slow / n, busy_fast / n};
  return m;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace

int main(int argc, char** argv) {
  const auto wall_start = clock_type::now();
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 0.5;
  struct size {
    int J, N;
  };
  maprect::thread_team team1(1), team2(2);
  std::printf("%-9s %11s %11s %11s %9s %9s %12s %12s %12s %12s\n", "JxN", "serial us", "T=1 us", "T=2 us",
              "T1/serial", "serial/T2", "serial CPU", "T=2 CPU", "T2 slowest", "T2 fastest");
  for (const size s : {size{2, 1}, size{64, 100}, size{256, 1000}}) {
    const maprect::test::benchmark_data d(s.J, s.N);
    std::vector<double> serial, t1, t2, serial_cpu, t2_cpu, slow, fast;
    for (int r = 0; r < rounds; ++r) {  // interleaved: each round measures all three in turn
      const measurement m0 = time_per_gradient(d, nullptr, seconds);
      const measurement m1 = time_per_gradient(d, &team1, seconds);
      const measurement m2 = time_per_gradient(d, &team2, seconds);
      serial.push_back(m0.wall);
      serial_cpu.push_back(m0.cpu);
      t1.push_back(m1.wall);
      t2.push_back(m2.wall);
      t2_cpu.push_back(m2.cpu);
      slow.push_back(m2.busy.slowest_seconds);
      fast.push_back(m2.busy.fastest_seconds);
    }
    const double ms = median(serial), m1 = median(t1), m2 = median(t2);
    std::printf("%4dx%-4d %11.3f %11.3f %11.3f %9.3f %9.3f %12.3f %12.3f %12.3f %12.3f\n", s.J, s.N, 1e6 * ms,
                1e6 * m1, 1e6 * m2, m1 / ms, ms / m2, 1e6 * median(serial_cpu), 1e6 * median(t2_cpu),
                1e6 * median(slow), 1e6 * median(fast));
  }
  std::printf("rounds %d, %.2f s per measurement, medians over rounds; dispatch overhead at 2x1 = T=2 - T=1\n",
              rounds, seconds);
  // With T = 2 measured a third of the time, about 1.33 cores on average if both threads had a core each.
  std::printf("cores this process got on average: %.2f (CPU seconds / wall seconds)\n",
              cpu_seconds() / std::chrono::duration<double>(clock_type::now() - wall_start).count());
  return 0;
}
