// maprect-bench-unequal [--jobs 48] [--job-ms 1] [--slow-factor 3] [--slow-rank -1] [--skew 1] [--calls 30]
//                       [--warm-up 5] [--kind map_rect|reduce_sum] [--json FILE]: time per gradient when one rank
//                       is s times slower than the others, the jobs those of a map_rect call or the slices of a
//                       reduce_sum; with --skew D the last tenth of the jobs sleep D times longer (the skewed
//                       model's shape, without its CPU).
// Each job sleeps job_ms milliseconds, s times longer on the slow rank (-1: none, 0: the root, k: worker k), so
// that the ranks' speeds differ by a known factor even with more ranks than cores. The root times each call and
// prints one line: the median against the balanced bound, total work / sum of the ranks' speeds, with the speeds
// as told and as the ranks' jobs measured them (scripts/bench-unequal.sh runs it per case and balance mode).
// Calls alternate two sets of shared parameters; the value and gradient of every call must be the bits of the
// first call with its set and of the same jobs run in process after the cluster stops; the program exits 1 if
// any differs (the bench_unequal_bits_np4 test relies on that, and on nothing of the timing).
#include <maprect/maprect.hpp>
#include <mpi.h>
#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "src/balance/claims_engine.hpp"
#include "src/reduce_sum/claimed_slices.hpp"

namespace {

/// What the command line sets; every rank parses the same argv, so the workers' jobs know the slow rank too.
struct settings {
  int jobs = 48;
  double job_ms = 1.0;
  double slow_factor = 3.0;
  int slow_rank = -1;
  double skew = 1.0;  ///< the last tenth of the jobs (j >= 0.9 J) cost this many times job_ms
  int calls = 30;
  int warm_up = 5;
  bool reduce = false;  ///< --kind reduce_sum: each job is a slice of two terms
  std::string json;
};

settings the_settings;

/// This process's rank in MPI_COMM_WORLD, which is the cluster's (the job asks where it runs, as a test hook would).
int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

/// Job j's cost on one rank of normal speed, in milliseconds.
double job_cost_ms(int j) {
  const settings& s = the_settings;
  return 10 * j >= 9 * s.jobs ? s.job_ms * s.skew : s.job_ms;
}

/// What this rank's jobs took: a sleep overruns what it is told (by 20-100 us on a loaded machine, a tenth of a
/// 1 ms job), so the bound counts the work the jobs did, not what they were told.
struct slept_totals {
  std::atomic<long long> told_ns{0};   ///< the jobs' costs on a rank of normal speed
  std::atomic<long long> slept_ns{0};  ///< the time their sleeps took here
};

slept_totals slept;

/// Job j's sleep on this rank.
void sleep_job(int j) {
  const settings& s = the_settings;
  const double cost = job_cost_ms(j);
  const double ms = world_rank() == s.slow_rank ? cost * s.slow_factor : cost;
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
  const auto took = std::chrono::steady_clock::now() - t0;
  slept.told_ns += static_cast<long long>(cost * 1e6);
  slept.slept_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(took).count();
}

/// Every rank's speed as its jobs measured it, in jobs of normal cost per unit of time (told over slept); a
/// rank that ran none counts at its nominal speed. Collective over MPI_COMM_WORLD; the root gets the speeds.
std::vector<double> measured_speeds(int ranks) {
  const long long mine[2] = {slept.told_ns.load(), slept.slept_ns.load()};
  std::vector<long long> all(2 * static_cast<std::size_t>(ranks));
  MPI_Gather(mine, 2, MPI_LONG_LONG, all.data(), 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  const settings& s = the_settings;
  std::vector<double> speeds(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    const double nominal = r == s.slow_rank && s.slow_factor > 0 ? 1 / s.slow_factor : 1.0;
    speeds[r] = all[2 * r + 1] > 0 ? static_cast<double>(all[2 * r]) / all[2 * r + 1] : nominal;
  }
  return speeds;
}

/// One job: sleeps (no CPU, so 4 ranks on 2 cores keep their speeds) and returns
/// phi0 * theta0 * x + sin(phi1 + theta1), a function of every parameter so that the gradient carries bits.
struct sleepy_job {
  template <class T1, class T2>
  Eigen::Matrix<maprect::return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(
      const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi, const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
      const std::vector<double>& x_r, const std::vector<int>& x_i, std::ostream*) const {
    sleep_job(x_i[0]);
    Eigen::Matrix<maprect::return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
    out(0) = phi(0) * theta(0) * x_r[0] + sin(phi(1) + theta(1));
    return out;
  }
};

/// sleepy_job as a reduce_sum slice: terms 2j and 2j + 1 are theta_j, x the jobs' data.
struct sleepy_partial {
  template <class T_slice, class T_phi>
  maprect::detail::reduce_return_t<T_slice, T_phi> operator()(const std::vector<T_slice>& slice, int start, int,
                                                              std::ostream*, const std::vector<T_phi>& phi,
                                                              const std::vector<double>& x) const {
    sleep_job(start / 2);
    return phi[0] * slice[0] * x[static_cast<std::size_t>(start / 2)] + sin(phi[1] + slice[1]);
  }
};

}  // namespace

MAPRECT_REGISTER(1, sleepy_job);
MAPRECT_REGISTER_REDUCE(2, sleepy_partial);

namespace {

/// Parameters and data of the J jobs: phi (2 shared), theta_j (2 each), one x per job.
struct unequal_data {
  Eigen::VectorXd phi{2};
  std::vector<Eigen::VectorXd> theta;
  std::vector<std::vector<double>> x_r;
  std::vector<std::vector<int>> x_i;

  /// The jobs' data, with the shared parameters moved by `shift` (calls alternate two sets).
  unequal_data(int J, double shift) : theta(J), x_r(J), x_i(J) {
    phi << 0.7 + shift, -0.3 + shift;
    for (int j = 0; j < J; ++j) {
      theta[j].resize(2);
      theta[j] << 0.1 * std::sin(j + 1.0), 0.2 * std::cos(j + 1.0);
      x_r[j] = {std::cos(0.37 * j)};
      x_i[j] = {j};
    }
  }

  /// Closed-form sum of the outputs and its gradient in the order (phi0, phi1, theta_0, theta_1, ...).
  double closed_form(std::vector<double>& gradient) const {
    const int J = static_cast<int>(theta.size());
    gradient.assign(2 + 2 * static_cast<std::size_t>(J), 0.0);
    double value = 0;
    for (int j = 0; j < J; ++j) {
      const double x = x_r[j][0], a = phi(1) + theta[j](1);
      value += phi(0) * theta[j](0) * x + std::sin(a);
      gradient[0] += theta[j](0) * x;
      gradient[1] += std::cos(a);
      gradient[2 + 2 * j] = phi(0) * x;
      gradient[3 + 2 * j] = std::cos(a);
    }
    return value;
  }
};

/// A call's result: the value, then the gradient in closed_form's order.
using result = std::vector<double>;

/// One evaluate-grad cycle on a fresh tape (over the cluster while it serves, in process once it stopped).
result gradient_once(const unequal_data& d) {
  const maprect::vector_v phi = maprect::to_var(d.phi);
  std::vector<maprect::vector_v> theta;
  theta.reserve(d.theta.size());
  for (const auto& t : d.theta) theta.push_back(maprect::to_var(t));
  maprect::var lp;
  if (the_settings.reduce) {
    const std::vector<maprect::var> shared{phi(0), phi(1)};
    std::vector<maprect::var> terms;
    std::vector<double> x;
    for (std::size_t j = 0; j < theta.size(); ++j) {
      terms.insert(terms.end(), {theta[j](0), theta[j](1)});
      x.push_back(d.x_r[j][0]);
    }
    lp = maprect::reduce_sum<2, sleepy_partial>(terms, 2, nullptr, shared, x);
  } else {
    lp = maprect::map_rect<1, sleepy_job>(phi, theta, d.x_r, d.x_i).sum();
  }
  maprect::grad(lp);
  result r{lp.val(), phi(0).adj(), phi(1).adj()};
  for (const auto& t : theta) r.insert(r.end(), {t(0).adj(), t(1).adj()});
  maprect::recover_memory();
  return r;
}

/// True when a and b hold the same bits (memcmp: -0 differs from 0, and a NaN equals only itself).
bool same_bits(const result& a, const result& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

/// The first entry where a and b differ in bits, for the message.
std::size_t first_difference(const result& a, const result& b) {
  std::size_t k = 0;
  while (k < a.size() && k < b.size() && std::memcmp(&a[k], &b[k], sizeof(double)) == 0) ++k;
  return k;
}

/// Prints why a call's bits differ from the reference and returns false; true when they agree.
bool check_bits(const result& got, const result& want, const char* what, int call) {
  if (same_bits(got, want)) return true;
  const std::size_t k = first_difference(got, want);
  std::fprintf(stderr, "maprect-bench-unequal: call %d differs from %s at entry %zu (%s): %a against %a\n", call,
               what, k, k == 0 ? "value" : "gradient", k < got.size() ? got[k] : 0.0,
               k < want.size() ? want[k] : 0.0);
  return false;
}

/// Whether the in-process result matches the closed form to rounding (the bits are checked elsewhere).
bool near_closed_form(const unequal_data& d, const result& in_process) {
  std::vector<double> gradient;
  const double value = d.closed_form(gradient);
  result want{value};
  want.insert(want.end(), gradient.begin(), gradient.end());
  if (want.size() != in_process.size()) return false;
  for (std::size_t k = 0; k < want.size(); ++k)
    if (std::abs(want[k] - in_process[k]) > 1e-12 * (1 + std::abs(want[k]))) {
      std::fprintf(stderr, "maprect-bench-unequal: entry %zu is %.17g, the closed form %.17g\n", k, in_process[k],
                   want[k]);
      return false;
    }
  return true;
}

/// Reads --name value pairs into the_settings; exits with a usage line on anything else.
void parse(int argc, char** argv) {
  settings& s = the_settings;
  for (int k = 1; k < argc; ++k) {
    const std::string name = argv[k];
    if (k + 1 >= argc) {
      std::fprintf(stderr, "maprect-bench-unequal: %s needs a value\n", name.c_str());
      std::exit(2);
    }
    const char* v = argv[++k];
    if (name == "--jobs") s.jobs = std::max(1, std::atoi(v));
    else if (name == "--job-ms") s.job_ms = std::max(0.0, std::atof(v));
    else if (name == "--slow-factor") s.slow_factor = std::max(0.0, std::atof(v));
    else if (name == "--slow-rank") s.slow_rank = std::atoi(v);
    else if (name == "--skew") s.skew = std::max(0.0, std::atof(v));
    else if (name == "--calls") s.calls = std::max(1, std::atoi(v));
    else if (name == "--warm-up") s.warm_up = std::max(0, std::atoi(v));
    else if (name == "--json") s.json = v;
    else if (name == "--kind" && (std::strcmp(v, "map_rect") == 0 || std::strcmp(v, "reduce_sum") == 0))
      s.reduce = std::strcmp(v, "reduce_sum") == 0;
    else {
      std::fprintf(stderr,
                   "usage: maprect-bench-unequal [--jobs J] [--job-ms MS] [--slow-factor S] [--slow-rank R] "
                   "[--skew D] [--calls N] [--warm-up N] [--kind map_rect|reduce_sum] [--json FILE]\n");
      std::exit(2);
    }
  }
}

/// The figures of one run, as printed.
struct figures {
  int ranks = 1;
  const char* balance = "auto";
  double median_ms = 0, bound_ms = 0, even_ms = 0;
  double measured_bound_ms = 0;  ///< total work over the sum of the speeds the ranks' jobs measured
  int root_jobs = 0, taken_jobs = 0;
  int claimed = 0;  ///< jobs (slices) that ranks ran of other ranks' ranges in the last call
  int in_host = 0;  ///< of those, the ones claimed in host memory across hosts
};

/// Balanced bound: total work over the sum of the ranks' speeds (the slow rank counts 1/s), as told and as
/// the jobs measured them (`speeds`); and the even split's time, the slowest rank's contiguous ceil(J / ranks)
/// jobs, for reference.
void bounds(figures& f, const std::vector<double>& speeds) {
  const settings& s = the_settings;
  const bool slowed = s.slow_rank >= 0 && s.slow_rank < f.ranks && s.slow_factor > 0;
  const double told_speeds = slowed ? f.ranks - 1 + 1 / s.slow_factor : f.ranks;
  double work = 0;
  for (int j = 0; j < s.jobs; ++j) work += job_cost_ms(j);
  f.bound_ms = work / told_speeds;
  double measured = 0;
  for (const double v : speeds) measured += v;
  f.measured_bound_ms = work / measured;
  const int per_rank = (s.jobs + f.ranks - 1) / f.ranks;
  f.even_ms = 0;
  for (int r = 0; r < f.ranks; ++r) {
    double chunk = 0;
    for (int j = r * per_rank; j < std::min(s.jobs, (r + 1) * per_rank); ++j) chunk += job_cost_ms(j);
    f.even_ms = std::max(f.even_ms, chunk * (slowed && r == s.slow_rank ? s.slow_factor : 1.0));
  }
}

int sum(const std::vector<int>& v) {
  int total = 0;
  for (const int n : v) total += n;
  return total;
}

/// Root: how many jobs (slices) of the last call ran on a rank other than their range's, and how many of those
/// were claimed in host memory across hosts.
void claims_counted(figures& f) {
  if (the_settings.reduce) {
    const maprect::detail::reduce_balance_report r = maprect::detail::last_reduce_balance();
    f.claimed = sum(r.taken);
    f.in_host = sum(r.taken_in_host);
  } else {
    const maprect::detail::balance_report r = maprect::detail::last_call_balance();
    f.claimed = sum(r.taken);
    f.in_host = sum(r.taken_in_host);
  }
}

/// Prints the key=value line and, with --json, writes the same figures to that file.
void report(const figures& f) {
  const settings& s = the_settings;
  const char* kind = s.reduce ? "reduce_sum" : "map_rect";
  std::printf(
      "kind=%s ranks=%d balance=%s slow_rank=%d s=%g skew=%g jobs=%d job_ms=%g calls=%d median_ms=%.3f "
      "bound_ms=%.3f ratio=%.3f measured_bound_ms=%.3f measured_ratio=%.3f even_ms=%.3f root_jobs=%d taken_jobs=%d "
      "claimed=%d in_host=%d bits=same\n",
      kind, f.ranks, f.balance, s.slow_rank, s.slow_factor, s.skew, s.jobs, s.job_ms, s.calls, f.median_ms,
      f.bound_ms, f.median_ms / f.bound_ms, f.measured_bound_ms, f.median_ms / f.measured_bound_ms, f.even_ms,
      f.root_jobs, f.taken_jobs, f.claimed, f.in_host);
  if (s.json.empty()) return;
  FILE* out = std::fopen(s.json.c_str(), "w");
  if (out == nullptr) {
    std::fprintf(stderr, "maprect-bench-unequal: cannot write %s\n", s.json.c_str());
    return;
  }
  std::fprintf(out,
               "{\"kind\": \"%s\", \"ranks\": %d, \"balance\": \"%s\", \"slow_rank\": %d, \"s\": %g, "
               "\"skew\": %g, \"jobs\": %d, \"job_ms\": %g, \"calls\": %d, \"median_ms\": %.4f, \"bound_ms\": %.4f, "
               "\"ratio\": %.4f, \"measured_bound_ms\": %.4f, \"measured_ratio\": %.4f, \"even_ms\": %.4f, "
               "\"root_jobs\": %d, \"taken_jobs\": %d, \"claimed\": %d, \"in_host\": %d}\n",
               kind, f.ranks, f.balance, s.slow_rank, s.slow_factor, s.skew, s.jobs, s.job_ms, s.calls, f.median_ms,
               f.bound_ms, f.median_ms / f.bound_ms, f.measured_bound_ms, f.median_ms / f.measured_bound_ms,
               f.even_ms, f.root_jobs, f.taken_jobs, f.claimed, f.in_host);
  std::fclose(out);
}

}  // namespace

int main(int argc, char** argv) {
  // Linux lets a sleep overrun by the timer slack (50 us by default, 5% of a 1 ms job); 1 ns keeps the
  // jobs' lengths, and so the bound, close to what they are told.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  parse(argc, argv);
  maprect::cluster c(argc, argv);
  if (!c.is_root()) {
    c.serve();
    measured_speeds(c.size());
    return 0;
  }
  const settings& s = the_settings;
  // Calls alternate two parameter sets, so that a job whose blocks a call failed to bring shows as the previous
  // call's bits.
  const unequal_data data[2] = {unequal_data(s.jobs, 0.0), unequal_data(s.jobs, 0.125)};
  std::vector<result> results;
  for (int k = 0; k < s.warm_up; ++k) results.push_back(gradient_once(data[results.size() % 2]));
  std::vector<double> ms;
  for (int k = 0; k < s.calls; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    results.push_back(gradient_once(data[results.size() % 2]));
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  figures f;
  f.ranks = c.size();
  const maprect::cluster::profile p = c.last_call_profile();
  f.root_jobs = p.root_jobs;
  f.taken_jobs = p.taken_jobs;
  claims_counted(f);
  c.stop();
  const std::vector<double> speeds = measured_speeds(f.ranks);
  // The same jobs in process: what every call over the cluster must reproduce bit for bit.
  const result in_process[2] = {gradient_once(data[0]), gradient_once(data[1])};
  bool ok = near_closed_form(data[0], in_process[0]) && near_closed_form(data[1], in_process[1]);
  for (std::size_t k = 0; k < results.size(); ++k)
    ok = check_bits(results[k], results[k % 2], "the first call of its parameters", static_cast<int>(k)) &&
         check_bits(results[k], in_process[k % 2], "the in-process call", static_cast<int>(k)) && ok;
  if (!ok) {
    std::fprintf(stderr, "maprect-bench-unequal: bits differ between calls (see above)\n");
    return 1;
  }
  const char* balance = std::getenv("MAPRECT_BALANCE");
  if (balance != nullptr && balance[0] != '\0') f.balance = balance;
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  f.median_ms = ms[ms.size() / 2];
  bounds(f, speeds);
  report(f);
  return 0;
}
