// maprect plan's measurements (see plan_measure.hpp). Times are medians over rounds; in each round the
// contenders of one figure are timed back to back, so that the drift of a shared machine cancels in their
// differences, as in maprect bench's harness (whose median_of this uses).
#include "plan_measure.hpp"

#include <maprect/maprect.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "bench_harness.hpp"
#include "logreg.hpp"
#include "pk2cmt.hpp"
#include "spmd.hpp"
#include "src/data_check.hpp"

namespace maprect::cli {

namespace {

/// A job that costs next to nothing and has the model's shape (one output depending on every parameter, so
/// M partials): a call of it is almost only the root's work, which is what it measures.
struct shape_only_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>&,
                                                                     const std::vector<int>&, std::ostream*) const {
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
    out(0) = phi.sum() + theta.sum();
    return out;
  }
};

}  // namespace

}  // namespace maprect::cli

// Call sites of their own: the model at the planned J, and the shape-only job at J and at one job.
MAPRECT_REGISTER(300, maprect::models::logreg_standard_scalar_job);
MAPRECT_REGISTER(301, maprect::models::logreg_standard_vector_job);
MAPRECT_REGISTER(302, maprect::models::pk2cmt_job);
MAPRECT_REGISTER(303, maprect::cli::shape_only_job);
MAPRECT_REGISTER(304, maprect::cli::shape_only_job);
MAPRECT_REGISTER(305, maprect::models::logreg_functor<maprect::models::logreg_kernel::scalar,
                                                      maprect::models::logreg_layout::ragged>);
MAPRECT_REGISTER(306, maprect::models::logreg_job);

namespace maprect::cli {

namespace {

using plan_clock = std::chrono::steady_clock;

/// One call site's data and the parameter values it is measured at.
struct site_data {
  std::vector<std::vector<double>> x_r;
  std::vector<std::vector<int>> x_i;
  Eigen::VectorXd phi;
  std::vector<Eigen::VectorXd> theta;
  int jobs() const { return static_cast<int>(x_r.size()); }
};

site_data logreg_site(int J, int N) {
  const models::logreg_standard_problem p = models::make_logreg_standard_problem(J, N);
  site_data d{p.x_r, p.x_i, p.params.head(2), {}};
  for (int j = 0; j < J; ++j) d.theta.push_back(p.params.segment(2 + 2 * j, 2));
  return d;
}

/// The standard model with skewed group sizes: group j has N (1 + (dear - 1) [j >= 0.9 J]) points, in the
/// ragged layout (rows padded to the largest group), the standard data and parameter values otherwise.
site_data skewed_logreg_site(int J, int N, int dear) {
  std::vector<std::vector<double>> x(static_cast<std::size_t>(J));
  std::vector<std::vector<int>> y(static_cast<std::size_t>(J));
  for (int j = 0; j < J; ++j) {
    const int points = 10 * j >= 9 * J ? dear * N : N;
    for (int i = 0; i < points; ++i) {
      x[j].push_back(std::sin(0.37 * i + j));
      y[j].push_back((7 * i + 3 * j) % 2);
    }
  }
  models::logreg_data packed = models::pack_logreg_groups(x, y);
  const models::logreg_standard_problem p = models::make_logreg_standard_problem(J, 1);
  site_data d{std::move(packed.x_r), std::move(packed.x_i), p.params.head(2), {}};
  for (int j = 0; j < J; ++j) d.theta.push_back(p.params.segment(2 + 2 * j, 2));
  return d;
}

site_data pk2cmt_site(int J) {
  const models::pk2cmt_data p = models::simulate_pk2cmt(J);
  return {p.x_r, p.x_i, p.true_phi, p.true_theta};
}

/// Seconds per run of `f`, in batches long enough for the clock (at least ~1 ms).
template <class F>
double seconds_per_run(F&& f, int batch) {
  const auto t0 = plan_clock::now();
  for (int b = 0; b < batch; ++b) f();
  return std::chrono::duration<double>(plan_clock::now() - t0).count() / batch;
}

template <class F>
int batch_for(F&& f) {
  f();
  const double once = seconds_per_run(f, 1);
  return static_cast<int>(std::clamp(std::ceil(1e-3 / std::max(once, 1e-9)), 1.0, 1000.0));
}

/// The chunk runner over jobs [first, first + n): what a rank does with its share, nothing else.
template <class F>
struct chunk_timer {
  const site_data& d;
  std::vector<double> job_params;
  detail::block_buffer out;
  std::vector<int> counts;
  explicit chunk_timer(const site_data& data) : d(data), counts(data.x_r.size()) {
    for (const auto& t : d.theta) job_params.insert(job_params.end(), t.data(), t.data() + t.size());
  }
  void run(int first, int n) {
    const int n_job_params = static_cast<int>(d.theta[0].size());
    const detail::chunk_input in{d.phi.data(), static_cast<int>(d.phi.size()), job_params.data() + first * n_job_params, n_job_params,
                                 d.x_r.data() + first, d.x_i.data() + first, n, nullptr};
    out.resize(0);
    int cursor = 0;
    detail::run_chunk<F, detail::param_kinds::vv>(in, out, counts.data(), cursor);
  }
};

/// One in-process gradient through map_rect at call site CallId over the first `n` jobs.
template <int CallId, class F>
void in_process_gradient(const site_data& d, int n) {
  in_process_scope local;
  vector_v phi(d.phi.size());
  for (Eigen::Index s = 0; s < d.phi.size(); ++s) phi(s) = var(d.phi(s));
  std::vector<vector_v> theta(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) {
    theta[j].resize(d.theta[j].size());
    for (Eigen::Index p = 0; p < d.theta[j].size(); ++p) theta[j](p) = var(d.theta[j](p));
  }
  static thread_local std::vector<std::vector<double>> x_r;
  static thread_local std::vector<std::vector<int>> x_i;
  if (static_cast<int>(x_r.size()) != n) {  // one call site, one data set: the same rows every call
    x_r.assign(d.x_r.begin(), d.x_r.begin() + n);
    x_i.assign(d.x_i.begin(), d.x_i.begin() + n);
  }
  var lp = map_rect<CallId, F>(phi, theta, x_r, x_i).sum();
  grad(lp);
  recover_memory();
}

/// Each job alone, the fastest of a few runs (a busy machine only ever adds time, and a spread made of that
/// noise would be charged as imbalance), in job order.
template <class F>
std::vector<double> job_times(chunk_timer<F>& chunks, int J) {
  std::vector<double> per_job(static_cast<std::size_t>(J));
  for (int j = 0; j < J; ++j) {
    std::vector<double> runs;
    for (int r = 0; r < 5; ++r) runs.push_back(seconds_per_run([&] { chunks.run(j, 1); }, 1));
    per_job[j] = *std::min_element(runs.begin(), runs.end());
  }
  return per_job;
}

/// The standard deviation of the per-job times over the jobs.
double spread_of(const std::vector<double>& per_job) {
  const auto J = static_cast<double>(per_job.size());
  if (per_job.size() < 2) return 0;
  double mean = 0, sq = 0;
  for (double t : per_job) mean += t / J;
  for (double t : per_job) sq += (t - mean) * (t - mean);
  return std::sqrt(sq / (J - 1));
}

/// The data check's work for J jobs: every row compared with a flat copy, as the root does per call.
double check_seconds_per_job(const site_data& d, int repeat) {
  std::vector<double> flat_r;
  std::vector<int> flat_i;
  for (const auto& r : d.x_r) flat_r.insert(flat_r.end(), r.begin(), r.end());
  for (const auto& r : d.x_i) flat_i.insert(flat_i.end(), r.begin(), r.end());
  bool equal = true;
  auto check = [&] {
    const double* at_r = flat_r.data();
    const int* at_i = flat_i.data();
    for (int j = 0; j < d.jobs(); ++j) {
      equal &= detail::values_equal(d.x_r[j].data(), at_r, d.x_r[j].size());
      equal &= detail::values_equal(d.x_i[j].data(), at_i, d.x_i[j].size());
      at_r += d.x_r[j].size();
      at_i += d.x_i[j].size();
    }
  };
  const int batch = batch_for(check);
  std::vector<double> ts;
  for (int r = 0; r < repeat; ++r) ts.push_back(seconds_per_run(check, batch));
  if (!equal) throw std::logic_error("plan: the data check's copy differs from the data");
  return median_of(ts) / d.jobs();
}

/// Medians over rounds of a whole call, of its jobs alone, and of their difference (timed back to back).
struct call_and_jobs {
  double call_s, jobs_s, overhead_s;
};

template <class C, class R>
call_and_jobs time_call_and_jobs(C&& call, R&& jobs, int repeat) {
  const int batch = batch_for(call);
  std::vector<double> calls, alone, overhead;
  for (int r = 0; r < repeat; ++r) {
    const double c = seconds_per_run(call, batch), j = seconds_per_run(jobs, batch);
    calls.push_back(c);
    alone.push_back(j);
    overhead.push_back(c - j);
  }
  return {median_of(calls), median_of(alone), median_of(overhead)};
}

/// The figures of functor F at call site Site on `d`. The root's costs come from the shape-only job at J jobs
/// (call site 303) and at one job (304): a call minus its jobs is the root's work, per call + n K per output.
template <int Site, class F>
site_figures measure_figures(const site_data& d, int repeat) {
  const int J = d.jobs();
  site_figures f;
  f.jobs = J;
  f.outputs_per_job = 1;
  f.shared_params = static_cast<int>(d.phi.size());
  f.job_params = static_cast<int>(d.theta[0].size());
  chunk_timer<F> chunks(d);
  const call_and_jobs model = time_call_and_jobs([&] { in_process_gradient<Site, F>(d, J); },
                                                 [&] { chunks.run(0, J); }, repeat);
  f.in_process_s = model.call_s;
  f.job_s = model.jobs_s / J;
  chunk_timer<shape_only_job> cheap(d);
  const double all = std::max(0.0, time_call_and_jobs([&] { in_process_gradient<303, shape_only_job>(d, J); },
                                                      [&] { cheap.run(0, J); }, repeat).overhead_s);
  const double one = std::max(0.0, time_call_and_jobs([&] { in_process_gradient<304, shape_only_job>(d, 1); },
                                                      [&] { cheap.run(0, 1); }, repeat).overhead_s);
  f.root_output_s = J > 1 ? std::max(0.0, (all - one) / ((J - 1.0) * f.outputs_per_job)) : 0.0;
  f.root_call_s = std::max(0.0, all - J * f.outputs_per_job * f.root_output_s);
  f.job_times_s = job_times(chunks, J);
  f.job_spread_s = spread_of(f.job_times_s);
  f.root_check_s_per_job = check_seconds_per_job(d, repeat);
  return f;
}

}  // namespace

site_figures measure_site(const plan_site& s) {
  if (s.repeat < 1) throw std::invalid_argument("--repeat: " + std::to_string(s.repeat) + ", must be >= 1");
  if (s.jobs < 0) throw std::invalid_argument("--jobs: " + std::to_string(s.jobs) + ", must be >= 1");
  if (s.points < 0) throw std::invalid_argument("--points: " + std::to_string(s.points) + ", must be >= 1");
  if (s.model == "pk2cmt") {
    const int J = s.jobs > 0 ? s.jobs : 16;
    site_figures f = measure_figures<302, models::pk2cmt_job>(pk2cmt_site(J), s.repeat);
    f.description = "pk2cmt, " + std::to_string(J) + " simulated subjects";
    return f;
  }
  if (s.model != "logreg") throw std::invalid_argument("--model: '" + s.model + "', expected logreg or pk2cmt");
  const int J = s.jobs > 0 ? s.jobs : 256, N = s.points > 0 ? s.points : 1000;
  if (s.kernel != "scalar" && s.kernel != "vector")
    throw std::invalid_argument("--kernel: '" + s.kernel + "', expected scalar or vector");
  if (s.skew < 1) throw std::invalid_argument("--skew: " + std::to_string(s.skew) + ", must be >= 1");
  const bool scalar = s.kernel == "scalar";
  site_figures f;
  if (s.skew > 1) {
    const site_data d = skewed_logreg_site(J, N, s.skew);
    f = scalar ? measure_figures<305, models::logreg_functor<models::logreg_kernel::scalar, models::logreg_layout::ragged>>(
                     d, s.repeat)
               : measure_figures<306, models::logreg_job>(d, s.repeat);
    f.description = "logreg standard model " + std::to_string(J) + "x" + std::to_string(N) + ", groups j >= 0.9 J with " +
                    std::to_string(s.skew) + " x the points, " + s.kernel + " kernel";
    return f;
  }
  const site_data d = logreg_site(J, N);
  f = scalar ? measure_figures<300, models::logreg_standard_scalar_job>(d, s.repeat)
             : measure_figures<301, models::logreg_standard_vector_job>(d, s.repeat);
  f.description = "logreg standard model " + std::to_string(J) + "x" + std::to_string(N) + ", " + s.kernel + " kernel";
  return f;
}

namespace {

constexpr int pingpong_tag = 7301;
constexpr int burst_messages = 64;

/// Half the median round trip of `bytes` between rank 0 and `peer` (0 on other ranks).
double half_round_trip(MPI_Comm comm, int me, int peer, int bytes, int repeat) {
  std::vector<char> buffer(static_cast<std::size_t>(std::max(bytes, 1)));
  std::vector<double> ts;
  for (int r = 0; r < repeat + 2; ++r) {  // two untimed round trips first: connections, buffers
    if (me == 0) {
      const double t0 = MPI_Wtime();
      MPI_Send(buffer.data(), bytes, MPI_CHAR, peer, pingpong_tag, comm);
      MPI_Recv(buffer.data(), bytes, MPI_CHAR, peer, pingpong_tag, comm, MPI_STATUS_IGNORE);
      if (r >= 2) ts.push_back(0.5 * (MPI_Wtime() - t0));
    } else {
      MPI_Recv(buffer.data(), bytes, MPI_CHAR, 0, pingpong_tag, comm, MPI_STATUS_IGNORE);
      MPI_Send(buffer.data(), bytes, MPI_CHAR, 0, pingpong_tag, comm);
    }
  }
  return me == 0 ? median_of(ts) : 0.0;
}

/// The root's time per message of a burst of small ones from `peer`, beyond the two latencies around it.
double burst_overhead(MPI_Comm comm, int me, int peer, double alpha, int repeat) {
  double word = 0;
  std::vector<double> ts;
  for (int r = 0; r < repeat; ++r) {
    if (me == 0) {
      const double t0 = MPI_Wtime();
      MPI_Send(&word, 1, MPI_DOUBLE, peer, pingpong_tag, comm);
      for (int m = 0; m < burst_messages; ++m) MPI_Recv(&word, 1, MPI_DOUBLE, peer, pingpong_tag, comm, MPI_STATUS_IGNORE);
      ts.push_back(MPI_Wtime() - t0);
    } else {
      MPI_Recv(&word, 1, MPI_DOUBLE, 0, pingpong_tag, comm, MPI_STATUS_IGNORE);
      for (int m = 0; m < burst_messages; ++m) MPI_Send(&word, 1, MPI_DOUBLE, 0, pingpong_tag, comm);
    }
  }
  return me == 0 ? std::max(0.0, (median_of(ts) - 2 * alpha) / (burst_messages - 1)) : 0.0;
}

plan::link_figures measure_pair(MPI_Comm comm, int me, int peer, int repeat) {
  constexpr int medium = 64 << 10, large = 1 << 20;
  plan::link_figures l;
  l.alpha_s = half_round_trip(comm, me, peer, 8, repeat);
  const double t_medium = half_round_trip(comm, me, peer, medium, repeat);
  const double t_large = half_round_trip(comm, me, peer, large, std::max(3, repeat / 4));
  l.beta_bytes_per_s = t_large > t_medium ? (large - medium) / (t_large - t_medium) : large / std::max(t_large, 1e-9);
  l.overhead_s = burst_overhead(comm, me, peer, l.alpha_s, repeat);
  return l;
}

plan::link_figures median_link(const std::vector<plan::link_figures>& ls) {
  std::vector<double> a, b, o;
  for (const auto& l : ls) {
    a.push_back(l.alpha_s);
    b.push_back(l.beta_bytes_per_s);
    o.push_back(l.overhead_s);
  }
  return {median_of(a), median_of(b), median_of(o)};
}

}  // namespace

link_report measure_links(MPI_Comm comm, int repeat) {
  int me = 0, size = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &size);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> names(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, comm);

  link_report report;
  report.ranks = size;
  std::vector<plan::link_figures> local, remote;
  std::vector<std::string> hosts;
  for (int peer = 1; peer < size; ++peer) {
    if (me != 0 && me != peer) continue;
    const plan::link_figures l = measure_pair(comm, me, peer, repeat);
    if (me != 0) continue;
    const std::string host(&names[static_cast<std::size_t>(peer) * MPI_MAX_PROCESSOR_NAME]);
    (host == name ? local : remote).push_back(l);
  }
  if (me == 0) {
    for (int r = 0; r < size; ++r) hosts.emplace_back(&names[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
    std::sort(hosts.begin(), hosts.end());
    report.hosts = static_cast<int>(std::unique(hosts.begin(), hosts.end()) - hosts.begin());
    report.on_root_host = 1 + static_cast<int>(local.size());
    if (!local.empty()) report.local = median_link(local);
    if (!remote.empty()) report.remote = median_link(remote);
  }
  MPI_Barrier(comm);
  return report;
}

}  // namespace maprect::cli
