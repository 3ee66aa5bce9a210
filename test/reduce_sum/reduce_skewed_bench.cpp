// maprect-reduce-skewed-bench [logreg|uniform] [J] [N] [REPEAT]: the standard model as reduce_sum over its J
// groups (grainsize 1, one slice per group), with slices of uneven cost:
//   logreg   group j has N * (1 + 9 * [j >= 0.9 J]) points (default J = 128, N = 1000), so that a static split
//            leaves the last rank most of the work;
//   uniform  every group N points (what claims cost where a static split is right).
// On the root: the median and the fastest time of a gradient in process and over the cluster (as
// MAPRECT_BALANCE says), their ratios, who ran which slices in the last call, and whether the cluster's value
// and gradient equal the in-process ones bit for bit (exit 1 if not).
#include <maprect/maprect.hpp>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "reduce_sum/functors.hpp"
#include "src/reduce_sum/claimed_slices.hpp"
#include "support/gradient_timing.hpp"

using namespace maprect;

MAPRECT_REGISTER_REDUCE(72, maprect::test::standard_partial)

namespace {

/// The standard model's groups: J groups, group j of N * (1 + (dear - 1) * [j >= 0.9 J]) points.
struct skewed_groups {
  Eigen::VectorXd phi = Eigen::Vector2d(0.3, -0.2);
  std::vector<Eigen::VectorXd> theta;
  std::vector<std::vector<double>> x_r;
  std::vector<std::vector<int>> x_i;

  skewed_groups(int J, int N, int dear) {
    for (int j = 0; j < J; ++j) {
      const int points = 10 * j >= 9 * J ? dear * N : N;
      theta.push_back(Eigen::Vector2d(0.01 * (j % 7) - 0.03, 0.02 * (j % 5) - 0.04));
      x_r.emplace_back();
      x_i.emplace_back();
      for (int i = 0; i < points; ++i) {
        x_r.back().push_back(std::sin(0.37 * i + j));
        x_i.back().push_back((7 * i + 3 * j) % 2);
      }
    }
  }
};

/// The log density's value and gradient (shared first, then each group's) of one reduce_sum call.
std::vector<double> gradient(const skewed_groups& w) {
  Eigen::Matrix<var, Eigen::Dynamic, 1> phi = w.phi.cast<var>();
  std::vector<Eigen::Matrix<var, Eigen::Dynamic, 1>> theta;
  for (const auto& t : w.theta) theta.push_back(t.cast<var>());
  return test::value_and_gradient(reduce_sum<72, test::standard_partial>(theta, 1, nullptr, phi, w.x_r, w.x_i), phi,
                                  theta);
}

/// Times the call in process and over cluster `c` (after two untimed gradients each), prints the figures;
/// returns whether the bits agree.
bool compare(cluster& c, const char* name, const skewed_groups& w, int repeat) {
  const test::in_process_and_cluster t = test::time_in_process_and_cluster([&] { return gradient(w); }, 2, repeat);
  const test::timing &t1 = t.in_process, &tR = t.cluster;
  const char* balance = std::getenv("MAPRECT_BALANCE");
  const cluster::profile p = c.last_call_profile();
  const detail::reduce_balance_report b = detail::last_reduce_balance();
  int worker_taken = 0;
  for (std::size_t r = 1; r < b.taken.size(); ++r) worker_taken += b.taken[r];
  std::printf("skewed reduce_sum %s J=%zu ranks=%d MAPRECT_BALANCE=%s: median in process %.3f ms, cluster %.3f ms, "
              "speedup %.2fx; fastest %.3f ms, %.3f ms, speedup %.2fx; last call: root slices %d (%.3f ms), taken "
              "by root %d, by workers %d; bits %s\n",
              name, w.theta.size(), c.size(), balance ? balance : "auto", 1e3 * t1.median, 1e3 * tR.median,
              t1.median / tR.median, 1e3 * t1.fastest, 1e3 * tR.fastest, t1.fastest / tR.fastest, p.root_jobs,
              1e3 * p.root_seconds, p.taken_jobs, worker_taken, t.same_bits ? "equal" : "DIFFER");
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
  const int J = argc > 2 ? std::atoi(argv[2]) : 128, N = argc > 3 ? std::atoi(argv[3]) : 1000;
  const int repeat = argc > 4 ? std::atoi(argv[4]) : 21;
  if ((model != "logreg" && model != "uniform") || J < 1 || N < 1 || repeat < 1) {
    std::fprintf(stderr, "usage: maprect-reduce-skewed-bench [logreg|uniform] [J] [N] [REPEAT], numbers positive\n");
    c.stop();
    return 2;
  }
  const bool same = compare(c, model.c_str(), skewed_groups(J, N, model == "uniform" ? 1 : 10), repeat);
  c.stop();
  return same ? 0 : 1;
}
