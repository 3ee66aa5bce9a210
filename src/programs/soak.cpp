// maprect-soak: N evaluate-grad-recover cycles of the standard model (J=64 jobs x 10 points, var/var, scalar
// kernel) over the cluster. Every result (log density and full gradient) must equal the first bit for bit, and
// the resident memory (VmRSS) of every rank must not grow steadily after the warm-up (N/10 cycles): it fails
// if it grew by 1% or more to the end and rose in most of the ten stretches between samples, or grew by 5% or
// more at all. Exits non-zero otherwise. Usage: mpirun -np 3 maprect-soak [N] [--grow-every K] (N defaults to
// 100000). --grow-every K checks the check: every K-th cycle the root keeps 64 bytes more, reachable to the end
// as an untrimmed cache's would be, and the run must fail.
// A leak touches new pages as it goes, so its RSS rises in every stretch; the allocator's steps of 128 kB, near
// 1% of a rank's 16 MB, come once or twice at random cycles and do not repeat.
// Under MAPRECT_REVERSE=deferred every call keeps its jobs' tapes on the ranks that ran them, and every fourth
// cycle recovers memory without grad(), so that its kept tapes are dropped unswept; only its log density is
// compared.
//
// Every rank's RSS is sampled by a probe call site: a map_rect call with one job per rank (contiguous chunks,
// so job r runs on rank r) whose functor reads /proc/self/status on the rank that runs it. The samples are thus
// taken at the same point of the call sequence on every rank, while the workers are serving.
#include <maprect/maprect.hpp>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "models/logreg.hpp"

namespace {

constexpr int kJobs = 64;
constexpr int kPoints = 10;
constexpr int kSoakCallId = 41;
constexpr int kProbeCallId = 42;
constexpr double kMaxGrowth = 0.01;
constexpr double kMaxStep = 0.05;
constexpr int kStretches = 10;
constexpr double kTolerance = 1e-9;

/// A field of /proc/self/status in kB ("VmRSS", "RssAnon", ...; 0 if unreadable).
long status_kb(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(field);
  while (std::getline(status, line))
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':')
      return std::strtol(line.c_str() + n + 1, nullptr, 10);
  return 0;
}

constexpr int kProbeOutputs = 4;

/// Job r of a probe call: outputs (rank in MPI_COMM_WORLD, VmRSS, RssAnon, RssShmem in kB) of the rank that runs
/// it. VmRSS is the criterion; the private (anonymous) and shared-memory parts say where a growth comes from.
struct rss_probe {
  template <class T1, class T2>
  Eigen::Matrix<maprect::return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(
      const Eigen::Matrix<T1, Eigen::Dynamic, 1>&, const Eigen::Matrix<T2, Eigen::Dynamic, 1>&,
      const std::vector<double>&, const std::vector<int>&, std::ostream*) const {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    // Every job waits, so that each rank has claimed its own job before another, done with its own, could
    // claim it (on one host any rank claims any other's unstarted jobs).
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    Eigen::Matrix<maprect::return_type_t<T1, T2>, Eigen::Dynamic, 1> out(kProbeOutputs);
    out(0) = rank;
    out(1) = static_cast<double>(status_kb("VmRSS"));
    out(2) = static_cast<double>(status_kb("RssAnon"));
    out(3) = static_cast<double>(status_kb("RssShmem"));
    return out;
  }
};

}  // namespace

MAPRECT_REGISTER(41, maprect::models::logreg_standard_scalar_job);
MAPRECT_REGISTER(42, rss_probe);

namespace {

/// Memory of one rank in kB.
struct rss_sample {
  long rss = 0, anon = 0, shmem = 0;
};

/// Memory per rank (index = rank), sampled by one probe call; empty if a job ran on an unexpected rank.
std::vector<rss_sample> probe_rss(int ranks) {
  // One value everywhere (unused): the probe exercises nothing but the plain call path.
  const Eigen::VectorXd shared = Eigen::VectorXd::Zero(1);
  const std::vector<Eigen::VectorXd> jobs(static_cast<std::size_t>(ranks), Eigen::VectorXd::Zero(1));
  const std::vector<std::vector<double>> x_r(static_cast<std::size_t>(ranks), std::vector<double>{0.0});
  const std::vector<std::vector<int>> x_i(static_cast<std::size_t>(ranks), std::vector<int>{0});
  const Eigen::VectorXd out = maprect::map_rect<kProbeCallId, rss_probe>(shared, jobs, x_r, x_i);
  std::vector<rss_sample> rss(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    const double* o = out.data() + kProbeOutputs * r;
    if (static_cast<int>(o[0]) != r) return {};
    rss[static_cast<std::size_t>(r)] = {static_cast<long>(o[1]), static_cast<long>(o[2]), static_cast<long>(o[3])};
  }
  return rss;
}

/// Memory per rank, from the first of up to 20 probe calls in which every job ran on its own rank (a rank
/// that starts late may have its job claimed by another); empty if none did.
std::vector<rss_sample> sample_rss(int ranks) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::vector<rss_sample> rss = probe_rss(ranks);
    if (!rss.empty()) return rss;
  }
  return {};
}

/// One evaluate-grad-recover cycle; writes (log density, gradient in the packed order) into result. Without
/// `sweep`, evaluate-recover: the log density alone.
void cycle(const maprect::models::logreg_standard_problem& p, std::vector<double>& result, bool sweep) {
  using maprect::var;
  const maprect::vector_v phi = maprect::to_var(Eigen::VectorXd(p.params.head(2)));
  std::vector<maprect::vector_v> theta;
  theta.reserve(kJobs);
  for (int j = 0; j < kJobs; ++j) theta.push_back(maprect::to_var(Eigen::VectorXd(p.params.segment(2 + 2 * j, 2))));
  const var lp =
      maprect::map_rect<kSoakCallId, maprect::models::logreg_standard_scalar_job>(phi, theta, p.x_r, p.x_i).sum();
  if (!sweep) {
    result.assign(1, lp.val());
    maprect::recover_memory();
    return;
  }
  maprect::grad(lp);
  result.resize(1 + 2 + 2 * kJobs);
  result[0] = lp.val();
  result[1] = phi(0).adj();
  result[2] = phi(1).adj();
  for (int j = 0; j < kJobs; ++j) {
    result[3 + 2 * j] = theta[j](0).adj();
    result[4 + 2 * j] = theta[j](1).adj();
  }
  maprect::recover_memory();
}

/// The largest difference of `first` (log density, gradient) from the closed form: relative for the log
/// density, absolute for the partials. The first result must be right, not only repeatable.
double difference_from_closed_form(const maprect::models::logreg_standard_problem& problem,
                                   const std::vector<double>& first) {
  Eigen::VectorXd expected;
  const double expected_lp = maprect::models::logreg_standard_closed_form(problem, problem.params, expected);
  double max_diff = std::abs(first[0] - expected_lp) / std::max(1.0, std::abs(expected_lp));
  for (Eigen::Index k = 0; k < expected.size(); ++k)
    max_diff = std::max(max_diff, std::abs(first[static_cast<std::size_t>(k) + 1] - expected(k)));
  return max_diff;
}

/// What a soak run found.
struct soak_outcome {
  long n = 0, warmup = 0;
  int ranks = 0;
  std::vector<double> first;                   ///< the first cycle's result
  double max_diff = 0;                         ///< of the first result from the closed form
  long mismatches = 0, first_mismatch = -1;    ///< cycles whose result differs from the first bit for bit
  std::vector<std::vector<rss_sample>> rss;    ///< per rank, after the warm-up, after each stretch
  double seconds = 0;                          ///< of cycles 1 to n - 1
};

/// Memory the root keeps more of every `every`-th cycle (--grow-every; 0: none), reachable to the end.
class kept_growth {
 public:
  explicit kept_growth(long every) : every_(every) {}
  void after_cycle(long i) {
    if (every_ <= 0 || i % every_ != 0) return;
    kept_.emplace_back(new char[64]);
    std::memset(kept_.back().get(), 1, 64);
  }

 private:
  long every_;
  std::deque<std::unique_ptr<char[]>> kept_;
};

/// n cycles, the first checked against the closed form and every later one against the first; RSS sampled
/// after the warm-up and after each of kStretches stretches to the end; `growth` after each cycle. Root only.
soak_outcome soak(long n, int ranks, kept_growth& growth) {
  soak_outcome o;
  o.n = n;
  o.warmup = n / 10;
  o.ranks = ranks;
  const auto problem = maprect::models::make_logreg_standard_problem(kJobs, kPoints);
  cycle(problem, o.first, true);
  o.max_diff = difference_from_closed_form(problem, o.first);
  std::vector<double> result;
  sample_rss(ranks);  // the probe call site's first call ships its data: before the warm-up sample
  const auto t0 = std::chrono::steady_clock::now();
  const bool deferred = maprect::detail::reverse_setting() == maprect::detail::reverse_mode::deferred;
  const long stretch = std::max(1L, (n - o.warmup) / kStretches);
  for (long i = 1; i < n; ++i) {
    if (i >= o.warmup && (i - o.warmup) % stretch == 0 && o.rss.size() < kStretches) o.rss.push_back(sample_rss(ranks));
    cycle(problem, result, !deferred || i % 4 != 3);
    growth.after_cycle(i);
    if (std::memcmp(result.data(), o.first.data(), sizeof(double) * result.size()) != 0) {
      if (o.first_mismatch < 0) o.first_mismatch = i;
      ++o.mismatches;
    }
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  o.rss.push_back(sample_rss(ranks));
  return o;
}

/// How one rank's RSS went over the samples: the growth from the first to the last, as a part of the first, and
/// in how many stretches between samples it rose.
struct rss_course {
  double growth = 1.0;
  int rises = 0;
};

rss_course course_of(const std::vector<std::vector<rss_sample>>& rss, std::size_t rank) {
  rss_course c;
  const long first = rss.front()[rank].rss, last = rss.back()[rank].rss;
  if (first > 0) c.growth = static_cast<double>(last - first) / static_cast<double>(first);
  for (std::size_t k = 1; k < rss.size(); ++k) c.rises += rss[k][rank].rss > rss[k - 1][rank].rss ? 1 : 0;
  return c;
}

/// Prints each rank's RSS growth from the warm-up to the end, and in how many stretches it rose; true if no
/// rank grew steadily (1% or more, rising in most stretches) or by a step of 5% or more.
bool report_rss(const soak_outcome& o) {
  const auto ranks = static_cast<std::size_t>(o.ranks);
  for (const auto& sample : o.rss)
    if (sample.size() != ranks) {
      std::printf("FAILED: an RSS probe job ran on an unexpected rank\n");
      return false;
    }
  bool ok = true;
  const std::size_t stretches = o.rss.size() - 1;
  for (std::size_t r = 0; r < ranks; ++r) {
    const rss_course c = course_of(o.rss, r);
    const bool steady = c.growth >= kMaxGrowth && 2 * static_cast<std::size_t>(c.rises) > stretches;
    const bool rank_ok = o.rss.front()[r].rss > 0 && !steady && c.growth < kMaxStep;
    const rss_sample &w = o.rss.front()[r], &e = o.rss.back()[r];
    std::printf("rank %zu: RSS after warm-up %ld kB, at end %ld kB, growth %+.3f%%, rose in %d of %zu stretches %s "
                "(private %+ld kB, shared memory %+ld kB)\n",
                r, w.rss, e.rss, 100 * c.growth, c.rises, stretches,
                rank_ok ? "ok" : "FAILED (limits: 1% rising in most stretches, 5% at all)", e.anon - w.anon,
                e.shmem - w.shmem);
    ok = ok && rank_ok;
  }
  return ok;
}

/// Prints the outcome; true if the first result matched the closed form, every result the first, and no
/// rank's RSS grew (report_rss).
bool report(const soak_outcome& o) {
  const bool deferred = maprect::detail::reverse_setting() == maprect::detail::reverse_mode::deferred;
  std::printf("maprect-soak: standard model J=%d x N=%d, var/var, %s, %d rank(s), %ld cycles (warm-up %ld), %.1f s, "
              "%.1f us per cycle\n", kJobs, kPoints, deferred ? "deferred, every 4th call unswept" : "eager",
              o.ranks, o.n, o.warmup, o.seconds,
              1e6 * o.seconds / static_cast<double>(o.n - 1));
  std::printf("log density %a, %zu gradient entries, max |diff| from the closed form %.3g (limit %g)\n", o.first[0],
              o.first.size() - 1, o.max_diff, kTolerance);
  bool ok = o.max_diff <= kTolerance;
  ok = report_rss(o) && ok;
  std::printf("results: %ld of %ld differ from the first bit for bit", o.mismatches, o.n - 1);
  if (o.first_mismatch >= 0) std::printf(" (first at cycle %ld)", o.first_mismatch);
  std::printf("\n");
  ok = ok && o.mismatches == 0;
  std::printf("%s\n", ok ? "OK" : "FAILED");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  maprect::cluster c(argc, argv);
  if (!c.is_root()) {
    c.serve();
    return 0;
  }
  long n = 100000, grow_every = 0;
  if (argc > 1) n = std::strtol(argv[1], nullptr, 10);
  const bool grows = argc == 4 && std::strcmp(argv[2], "--grow-every") == 0;
  if (grows) grow_every = std::strtol(argv[3], nullptr, 10);
  if (n < 10 || (argc > 2 && (!grows || grow_every < 1))) {
    std::fprintf(stderr, "maprect-soak: usage: maprect-soak [N >= 10] [--grow-every K >= 1]\n");
    c.stop();
    return 2;
  }
  kept_growth growth(grow_every);
  const soak_outcome outcome = soak(n, c.size(), growth);
  c.stop();
  if (grows) std::printf("--grow-every %ld: the root kept 64 bytes more every %ld cycles, so this run must fail\n",
                         grow_every, grow_every);
  return report(outcome) ? 0 : 1;
}
