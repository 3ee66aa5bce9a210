// maprect-skewed-bench [logreg|logreg-first|pk2cmt|uniform] [J] [N] [REPEAT]: workloads whose last tenth of jobs costs more,
// so that a static split leaves the last rank most of the work (and one whose jobs cost the same):
//   logreg  the standard model (docs/benchmark-model.md) with skewed group sizes, job j having
//           N * (1 + 9 * [j >= 0.9 J]) points (default J = 128, N = 1000);
//   pk2cmt  the pk2cmt model at its simulated study of J subjects (default 64), evaluated where subjects
//           j >= 0.9 J absorb N times faster (ka times N, default 1000): a stiff system that the adaptive
//           solver crosses in many more steps;
//   logreg-first  the same with the dear jobs first (job j as logreg's job J - 1 - j): the root's own chunk
//           holds them, so only claims on the root's jobs balance the call;
//   uniform the standard model, every job of N points (what claims cost where a static split is right).
// On the root: the median and the fastest time of a gradient in process and over the cluster (as
// MAPRECT_BALANCE says), their ratios, and whether the cluster's values and gradient equal the in-process
// ones bit for bit (exit 1 if not). The data are a job_data: no per-call check of the padded rows.
#include <maprect/maprect.hpp>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/models/pk2cmt.hpp"
#include "src/balance/claims_engine.hpp"
#include "support/benchmark_model.hpp"
#include "support/gradient_timing.hpp"

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

/// The standard model's data at J jobs, job j with N * (1 + (dear - 1) * [j >= 0.9 J]) points (rows padded to
/// dear * N); with `dear_first` the same counts in reverse order, the dear jobs first.
test::benchmark_data skewed_data(int J, int N, int dear, bool dear_first) {
  test::benchmark_data d(J, 1);
  for (int j = 0; j < J; ++j) {
    const int as_job = dear_first ? J - 1 - j : j;
    const int points = 10 * as_job >= 9 * J ? dear * N : N;
    d.x_r[j].assign(static_cast<std::size_t>(dear * N), 0.0);
    d.x_i[j].assign(static_cast<std::size_t>(dear * N + 1), 0);
    d.x_i[j][0] = points;
    for (int i = 0; i < points; ++i) {
      d.x_r[j][i] = std::sin(0.37 * i + j);
      d.x_i[j][1 + i] = (7 * i + 3 * j) % 2;
    }
  }
  return d;
}

/// A workload: one map_rect call site's parameters and its data, as a job_data (immutable: the root checks no
/// row per call, as a model's data would be passed).
struct workload {
  Eigen::VectorXd phi;
  std::vector<Eigen::VectorXd> theta;
  job_data data;
};

/// The standard model at J jobs of N points, the last tenth of them (or the first) `dear` times as many.
workload skewed_logreg(int J, int N, int dear, bool dear_first) {
  test::benchmark_data d = skewed_data(J, N, dear, dear_first);
  return {d.phi, d.theta, job_data(std::move(d.x_r), std::move(d.x_i))};
}

/// pk2cmt's simulated study of J subjects at its true parameters, subjects j >= 0.9 J with ka times `factor`.
workload stiff_pk2cmt(int J, double factor) {
  models::pk2cmt_data d = models::simulate_pk2cmt(J);
  std::vector<Eigen::VectorXd> theta = d.true_theta;
  for (int j = 0; j < J; ++j)
    if (10 * j >= 9 * J) theta[j](4) += std::log(factor);
  return {d.true_phi, theta, job_data(std::move(d.x_r), std::move(d.x_i))};
}

/// The log density's value and gradient (shared first, then each job's) of one map_rect call.
template <int Id, class F>
std::vector<double> gradient(const workload& w) {
  Eigen::Matrix<var, Eigen::Dynamic, 1> phi = w.phi.cast<var>();
  std::vector<Eigen::Matrix<var, Eigen::Dynamic, 1>> theta;
  for (const auto& t : w.theta) theta.push_back(t.cast<var>());
  return test::value_and_gradient(map_rect<Id, F>(phi, theta, w.data).sum(), phi, theta);
}

/// Gradients before the timed ones: the first call plans, and the next few warm the caches and the claims'
/// timings.
constexpr int warm_up = 20;

/// Times call site Id in process and over cluster `c`, prints the figures; returns whether the bits agree.
template <int Id, class F>
bool compare(cluster& c, const char* name, const workload& w, int repeat) {
  const test::in_process_and_cluster t =
      test::time_in_process_and_cluster([&] { return gradient<Id, F>(w); }, warm_up, repeat);
  const test::timing &t1 = t.in_process, &tR = t.cluster;
  const char* balance = std::getenv("MAPRECT_BALANCE");
  const cluster::profile p = c.last_call_profile();
  const detail::balance_report b = detail::last_call_balance();
  int worker_taken = 0;
  for (std::size_t r = 1; r < b.taken.size(); ++r) worker_taken += b.taken[r];
  const int root_end = b.ends.empty() ? p.root_jobs : b.ends[0];
  // The fastest of the repeats is what the split achieves where the machine is shared; the median says how
  // often that is.
  std::printf("skewed %s J=%zu ranks=%d MAPRECT_BALANCE=%s: median in process %.3f ms, cluster %.3f ms, speedup "
              "%.2fx; fastest %.3f ms, %.3f ms, speedup %.2fx; last call: %s, root jobs %d (%.3f ms, it ran the "
              "first %d), taken by root %d, by workers %d; bits %s\n",
              name, w.theta.size(), c.size(), balance ? balance : "auto", 1e3 * t1.median, 1e3 * tR.median,
              t1.median / tR.median, 1e3 * t1.fastest, 1e3 * tR.fastest, t1.fastest / tR.fastest,
              b.ends.empty() ? "no claims" : "claims", p.root_jobs, 1e3 * p.root_seconds, root_end, p.taken_jobs,
              worker_taken, t.same_bits ? "equal" : "DIFFER");
  return t.same_bits;
}

}  // namespace

int main(int argc, char** argv) {
  cluster c(argc, argv);
  if (!c.is_root()) {
    c.serve();
    return 0;
  }
  const std::string model = argc > 1 ? argv[1] : "logreg";
  const bool pk = model == "pk2cmt";
  const int J = argc > 2 ? std::atoi(argv[2]) : pk ? 64 : 128, N = argc > 3 ? std::atoi(argv[3]) : 1000;
  const int repeat = argc > 4 ? std::atoi(argv[4]) : 21;
  if ((!pk && model != "logreg" && model != "logreg-first" && model != "uniform") || J < 1 || N < 1 || repeat < 1) {
    std::fprintf(stderr,
                 "usage: maprect-skewed-bench [logreg|logreg-first|pk2cmt|uniform] [J] [N] [REPEAT], numbers "
                 "positive\n");
    c.stop();
    return 2;
  }
  const bool same =
      pk ? compare<models::pk2cmt_call_id, models::pk2cmt_job>(c, "pk2cmt", stiff_pk2cmt(J, N), repeat)
         : compare<71, skewed_logistic_job>(
               c, model.c_str(), skewed_logreg(J, N, model == "uniform" ? 1 : 10, model == "logreg-first"), repeat);
  c.stop();
  return same ? 0 : 1;
}
