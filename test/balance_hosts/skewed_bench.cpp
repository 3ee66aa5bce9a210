// maprect-skewed-bench [J N REPEAT]: the standard model (docs/benchmark-model.md) with skewed group sizes, job
// j having N * (1 + 9 * [j >= 0.9 J]) points, so that a static split leaves the last rank most of the work.
// On the root: the median time of a gradient in process and over the cluster (as MAPRECT_BALANCE says), their
// ratio, and whether the cluster's values and gradient equal the in-process ones bit for bit (exit 1 if not).
#include <maprect/maprect.hpp>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "support/benchmark_model.hpp"
#include "src/steal.hpp"

using namespace maprect;

namespace {

/// The standard model's job (scalar kernel) on rows of equal length, as map_rect needs: x_i[0] is the job's
/// number of points n, x_r[0, n) its data and x_i[1, n] its outcomes; the rest of the row is padding.
struct skewed_logistic_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i, std::ostream*) const {
    return_type_t<T1, T2> lp = 0;
    const auto intercept = phi(0) + theta(0);
    const auto slope = phi(1) + theta(1);
    for (int i = 0; i < x_i[0]; ++i) {
      const auto eta = intercept + slope * x_r[i];
      lp += x_i[1 + i] ? log_inv_logit(eta) : log1m_inv_logit(eta);
    }
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
    out(0) = lp;
    return out;
  }
};

}  // namespace

MAPRECT_REGISTER(71, skewed_logistic_job);

namespace {

/// The standard model's data at J jobs, job j with N * (1 + 9 * [j >= 0.9 J]) points (rows padded to 10 N).
test::benchmark_data skewed_data(int J, int N) {
  test::benchmark_data d(J, 1);
  for (int j = 0; j < J; ++j) {
    const int points = 10 * j >= 9 * J ? 10 * N : N;
    d.x_r[j].assign(static_cast<std::size_t>(10 * N), 0.0);
    d.x_i[j].assign(static_cast<std::size_t>(10 * N + 1), 0);
    d.x_i[j][0] = points;
    for (int i = 0; i < points; ++i) {
      d.x_r[j][i] = std::sin(0.37 * i + j);
      d.x_i[j][1 + i] = (7 * i + 3 * j) % 2;
    }
  }
  return d;
}

/// The log density's value and gradient (shared first, then each job's) of one map_rect call.
std::vector<double> gradient(const test::benchmark_data& d) {
  Eigen::Matrix<var, Eigen::Dynamic, 1> phi = d.phi.cast<var>();
  std::vector<Eigen::Matrix<var, Eigen::Dynamic, 1>> theta;
  for (const auto& t : d.theta) theta.push_back(t.cast<var>());
  var lp = map_rect<71, skewed_logistic_job>(phi, theta, d.x_r, d.x_i).sum();
  grad(lp);
  std::vector<double> out{lp.val(), phi(0).adj(), phi(1).adj()};
  for (const auto& t : theta) out.insert(out.end(), {t(0).adj(), t(1).adj()});
  recover_memory();
  return out;
}

/// Median seconds of one gradient over `repeat` (after a warm-up of two), and the last result.
double median_seconds(const test::benchmark_data& d, int repeat, std::vector<double>& result) {
  result = gradient(d);
  result = gradient(d);
  std::vector<double> seconds;
  for (int k = 0; k < repeat; ++k) {
    const auto start = std::chrono::steady_clock::now();
    result = gradient(d);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(seconds.begin(), seconds.begin() + repeat / 2, seconds.end());
  return seconds[repeat / 2];
}

}  // namespace

int main(int argc, char** argv) {
  cluster c(argc, argv);
  if (!c.is_root()) {
    c.serve();
    return 0;
  }
  const int J = argc > 1 ? std::atoi(argv[1]) : 128, N = argc > 2 ? std::atoi(argv[2]) : 1000;
  const int repeat = argc > 3 ? std::atoi(argv[3]) : 21;
  if (J < 1 || N < 1 || repeat < 1) {
    std::fprintf(stderr, "usage: maprect-skewed-bench [J N REPEAT], all positive\n");
    c.stop();
    return 2;
  }
  const test::benchmark_data d = skewed_data(J, N);
  std::vector<double> serial, distributed;
  const detail::remote_call saved = detail::remote_backend;
  detail::remote_backend = nullptr;  // in process
  const double t1 = median_seconds(d, repeat, serial);
  detail::remote_backend = saved;
  const double tR = median_seconds(d, repeat, distributed);
  const bool same = serial.size() == distributed.size() &&
                    std::memcmp(serial.data(), distributed.data(), sizeof(double) * serial.size()) == 0;
  const char* balance = std::getenv("MAPRECT_BALANCE");
  const cluster::profile p = c.last_call_profile();
  int worker_taken = 0;
  for (int t : detail::last_call_balance().taken) worker_taken += t;
  std::printf("skewed J=%d N=%d ranks=%d MAPRECT_BALANCE=%s: in process %.3f ms, cluster %.3f ms, speedup %.2fx, "
              "root jobs %d, taken by root %d, by workers %d, bits %s\n",
              J, N, c.size(), balance ? balance : "auto", 1e3 * t1, 1e3 * tR, t1 / tR, p.root_jobs, p.taken_jobs,
              worker_taken, same ? "equal" : "DIFFER");
  c.stop();
  return same ? 0 : 1;
}
