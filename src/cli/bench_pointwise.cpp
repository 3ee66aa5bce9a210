// maprect bench --model pointwise_regression: each size's backends timed round-robin (the machine's speed
// drifts, so each round takes one sample of each, after untimed gradients of its own, and the figures are
// medians over rounds), eager and deferred
// (MAPRECT_REVERSE), then the bytes of one more gradient over the cluster in each mode against what each must
// move per job: K (M + 1) doubles eager, 2K + M deferred.
#include "bench_pointwise.hpp"

#include <maprect/maprect.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>

#include "bench_harness.hpp"
#include "json_output.hpp"
#include "pointwise_regression.hpp"
#include "spmd.hpp"
#include "src/balance/claims_engine.hpp"
#include "src/cluster/test_hooks.hpp"

namespace maprect::cli {

namespace {

using bench_clock = std::chrono::steady_clock;

/// One size: the data, its rows as shipped once, and the point every backend differentiates at.
struct pointwise_size {
  models::pointwise_regression_data data;
  job_data rows;
  Eigen::VectorXd params;
};

/// One backend of a size: how it computes a gradient, and what it measured.
struct pointwise_backend {
  std::string name;  ///< analytic | in_process | cluster, with _deferred or _auto for MAPRECT_REVERSE
  const char* reverse = "eager";  ///< its MAPRECT_REVERSE
  std::function<double(Eigen::VectorXd&)> gradient;
  std::vector<double> us;
  double log_density = 0;
  Eigen::VectorXd g;
};

/// One record of the report.
struct pointwise_record {
  int groups = 0, points = 0, covariates = 0;
  std::string backend;
  std::string reverse;  ///< the mode its calls ran in (auto's choice for the _auto backends)
  timing t{};
  double log_density = 0, max_abs_diff_vs_analytic = 0;
  std::optional<unsigned long long> bytes_sent, bytes_received, bytes_through_memory;
  std::optional<unsigned long long> claims_messages, claims_bytes;  ///< the claims' asks, grants and heads
  std::optional<int> root_jobs;  ///< cluster: jobs the root ran in the counted call, its own and those it took
                                 ///< over (their outputs cross no link)
};

/// The root's traffic of one gradient over the cluster: its call's, and a deferred call's reverse pass after it.
cluster::traffic counted_gradient(const pointwise_size& s, const cluster& c) {
  recover_memory();
  const vector_v q = to_var(s.params);
  const var lp = models::pointwise_regression_log_density(s.data, s.rows, q);
  cluster::traffic t = c.last_call_traffic();
  grad(lp);
  if (detail::reverse_site_of<models::pointwise_regression_call_id>.last_ran_deferred()) {
    const cluster::traffic reverse = c.last_call_traffic();
    t.sent += reverse.sent;
    t.received += reverse.received;
    t.through_memory += reverse.through_memory;
  }
  recover_memory();
  return t;
}

double map_rect_gradient(const pointwise_size& s, Eigen::VectorXd& g) {
  double lp = 0;
  gradient([&](const vector_v& q) { return models::pointwise_regression_log_density(s.data, s.rows, q); }, s.params,
           lp, g);
  return lp;
}

/// A backend named `name` computing its gradient with `f` under MAPRECT_REVERSE = `reverse`.
pointwise_backend backend(const std::string& name, const char* reverse, std::function<double(Eigen::VectorXd&)> f) {
  pointwise_backend b;
  b.name = name;
  b.reverse = reverse;
  b.gradient = std::move(f);
  return b;
}

std::vector<pointwise_backend> make_backends(const pointwise_size& s, const cluster& c) {
  std::vector<pointwise_backend> out;
  const pointwise_size* p = &s;
  out.push_back(backend("analytic", "eager", [p](Eigen::VectorXd& g) {
    return models::pointwise_regression_closed_form(p->data, p->params, g);
  }));
  for (const char* mode : {"eager", "deferred", "auto"}) {
    const std::string suffix = std::string(mode) == "eager" ? "" : "_" + std::string(mode);
    out.push_back(backend("in_process" + suffix, mode, [p, mode](Eigen::VectorXd& g) {
      in_process_scope local;
      const detail::reverse_mode_scope reverse(mode);
      return map_rect_gradient(*p, g);
    }));
    if (c.size() > 1)
      out.push_back(backend("cluster" + suffix, mode, [p, mode](Eigen::VectorXd& g) {
        const detail::reverse_mode_scope reverse(mode);
        return map_rect_gradient(*p, g);
      }));
  }
  return out;
}

/// Warm-up, then `repeat` rounds in a rotating order, backwards in odd rounds (interleaved_index); each sample a
/// batch of at least ~100 us after untimed gradients of its own backend for at least 5 ms. A sampler's
/// gradients follow each other at one site in one mode; without them a sample would pay for the other
/// backends' calls before it (their tapes' memory, the workers' caches, a mode switch at the site), which a run
/// of one mode pays once. One untimed gradient was not enough: after the eager backends' 100 ms gradients at
/// 16x1000, the deferred backend's next samples ran 10-20% slower than the same calls elsewhere in the round.
void time_round_robin(std::vector<pointwise_backend>& bs, int repeat) {
  constexpr std::chrono::milliseconds lead_in_time{5};
  double slowest = 0;
  for (auto& b : bs) {
    for (int i = 0; i < 3; ++i) b.log_density = b.gradient(b.g);
    const auto t0 = bench_clock::now();
    b.gradient(b.g);
    slowest = std::max(slowest, std::chrono::duration<double>(bench_clock::now() - t0).count());
  }
  const int batch = static_cast<int>(std::clamp(std::ceil(100e-6 / std::max(slowest, 1e-9)), 1.0, 1000.0));
  Eigen::VectorXd g;
  for (int r = 0; r < repeat; ++r)
    for (std::size_t i = 0; i < bs.size(); ++i) {
      pointwise_backend& b = bs[interleaved_index(i, r, bs.size())];
      const auto lead_in = bench_clock::now();
      do b.gradient(g);
      while (bench_clock::now() - lead_in < lead_in_time);
      const auto t0 = bench_clock::now();
      for (int k = 0; k < batch; ++k) b.gradient(g);
      b.us.push_back(1e6 * std::chrono::duration<double>(bench_clock::now() - t0).count() / batch);
    }
}

/// Runs one more gradient of backend `b` and records the mode its call ran in and, over the cluster, the
/// root's bytes and jobs.
void count_gradient(pointwise_record& r, const pointwise_backend& b, const pointwise_size& s, const cluster& c) {
  const bool in_process = b.name.rfind("in_process", 0) == 0;
  const detail::reverse_mode_scope reverse(b.reverse);
  std::optional<in_process_scope> local;
  if (in_process) local.emplace();
  const cluster::traffic traffic = counted_gradient(s, c);
  const bool deferred = detail::reverse_site_of<models::pointwise_regression_call_id>.last_ran_deferred();
  r.reverse = deferred ? "deferred" : "eager";
  if (in_process) return;
  r.bytes_sent = traffic.sent;
  r.bytes_received = traffic.received;
  r.bytes_through_memory = traffic.through_memory;
  r.claims_messages = traffic.claims_messages;
  r.claims_bytes = traffic.claims_bytes;
  const cluster::profile profile = c.last_call_profile();
  // By claims other ranks may have run part of the root's share: the call's report says what it ran.
  const detail::balance_report claims = detail::last_call_balance();
  r.root_jobs = claims.ends.empty() ? profile.root_jobs + profile.taken_jobs : claims.ends[0] + claims.taken[0];
}

std::vector<pointwise_record> bench_size(int G, int K, int C, int repeat, const cluster& c) {
  std::printf("size %dx%d ...\n", G, K);
  std::fflush(stdout);
  models::pointwise_regression_data data = models::simulate_pointwise_regression(G, K, C);
  const job_data rows = models::pointwise_regression_job_data(data);
  Eigen::VectorXd params = models::pointwise_regression_bench_point(data);
  const pointwise_size s{std::move(data), rows, std::move(params)};
  std::vector<pointwise_backend> bs = make_backends(s, c);
  time_round_robin(bs, repeat);
  std::vector<pointwise_record> out;
  for (const pointwise_backend& b : bs) {
    pointwise_record r;
    r.groups = G, r.points = K, r.covariates = C;
    r.backend = b.name;
    r.reverse = b.reverse;
    r.t = summarise_samples(b.us);
    r.log_density = b.log_density;
    r.max_abs_diff_vs_analytic = (b.g - bs[0].g).cwiseAbs().maxCoeff();
    if (b.name != "analytic") count_gradient(r, b, s, c);
    out.push_back(r);
  }
  return out;
}

const pointwise_record* find(const std::vector<pointwise_record>& rs, int G, int K, const std::string& backend) {
  for (const auto& r : rs)
    if (r.groups == G && r.points == K && r.backend == backend) return &r;
  return nullptr;
}

std::string us_cell(const pointwise_record* r) {
  if (!r) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", r->t.median_us);
  return text;
}

/// An auto backend's time and the mode it chose: "d" deferred, "e" eager.
std::string auto_cell(const pointwise_record* r) {
  if (!r) return "-";
  return us_cell(r) + (r->reverse == "deferred" ? " d" : " e");
}

/// The bytes the root received per job another rank ran, in one gradient of record `r` ("-" without).
std::string bytes_per_worker_job(const pointwise_record* r, int G) {
  if (!r || !r->bytes_received) return "-";
  // The jobs the root ran (its own, and those it took over) send nothing: the bytes are the other ranks' jobs'.
  const int worker_jobs = G - r->root_jobs.value_or(0);
  return worker_jobs > 0 ? std::to_string(*r->bytes_received / static_cast<unsigned long long>(worker_jobs)) : "-";
}

/// One row per size: times eager and deferred, and per job another rank ran, the bytes the root received in one
/// gradient against what each mode must move: K (M + 1) doubles eager, 2K + M deferred (whose K adjoints the root
/// sends, so they count in the received bytes' stead).
void print_table(const std::vector<pointwise_record>& rs, const std::vector<std::pair<int, int>>& sizes, int C,
                 int ranks) {
  const int M = C + 2;
  std::printf("\nmedian time per gradient in us (%d rank%s), C = %d covariates, M = %d parameters per job; "
              "bytes of one gradient over the cluster\n",
              ranks, ranks == 1 ? "" : "s", C, M);
  std::printf("%-10s %8s %9s %9s %9s %11s %9s %9s %11s | %10s %10s %10s %10s | %9s\n", "GxK", "outputs",
              "analytic", "in_proc", "in_p_def", "in_p_auto", "cluster", "clu_def", "clu_auto", "B/job eag", "K(M+1)8",
              "B/job def", "(K+M)8", "max|dg|");
  for (const auto& [G, K] : sizes) {
    double worst = 0;
    for (const auto& r : rs)
      if (r.groups == G && r.points == K && r.backend != "analytic")
        worst = std::max(worst, r.max_abs_diff_vs_analytic);
    const std::string size = std::to_string(G) + "x" + std::to_string(K);
    std::printf("%-10s %8lld %9s %9s %9s %11s %9s %9s %11s | %10s %10.0f %10s %10.0f | %9.2e\n", size.c_str(),
                static_cast<long long>(G) * K, us_cell(find(rs, G, K, "analytic")).c_str(),
                us_cell(find(rs, G, K, "in_process")).c_str(), us_cell(find(rs, G, K, "in_process_deferred")).c_str(),
                auto_cell(find(rs, G, K, "in_process_auto")).c_str(), us_cell(find(rs, G, K, "cluster")).c_str(),
                us_cell(find(rs, G, K, "cluster_deferred")).c_str(), auto_cell(find(rs, G, K, "cluster_auto")).c_str(),
                bytes_per_worker_job(find(rs, G, K, "cluster"), G).c_str(), 8.0 * K * (M + 1),
                bytes_per_worker_job(find(rs, G, K, "cluster_deferred"), G).c_str(), 8.0 * (K + M), worst);
  }
  std::printf("auto: the time, and the mode the call site chose (d deferred, e eager)\n");
  std::printf("B/job: the bytes the root received per job run on another rank in one gradient; deferred receives "
              "K values and M adjoints per job, and sends the K outputs' adjoints\n");
}

json record_json(const pointwise_record& r) {
  return {{"jobs", r.groups},
          {"points", r.points},
          {"covariates", r.covariates},
          {"outputs", static_cast<long long>(r.groups) * r.points},
          {"parameters_per_job", r.covariates + 2},
          {"backend", r.backend},
          {"reverse", r.reverse},
          {"median_us", r.t.median_us},
          {"min_us", r.t.min_us},
          {"mean_us", r.t.mean_us},
          {"log_density", r.log_density},
          {"max_abs_diff_vs_analytic", r.max_abs_diff_vs_analytic},
          {"bytes_sent", value_or_null(r.bytes_sent)},
          {"bytes_received", value_or_null(r.bytes_received)},
          {"bytes_through_memory", value_or_null(r.bytes_through_memory)},
          {"claims_messages", value_or_null(r.claims_messages)},
          {"claims_bytes", value_or_null(r.claims_bytes)},
          {"root_jobs", value_or_null(r.root_jobs)}};
}

}  // namespace

void bench_pointwise(const std::vector<std::pair<int, int>>& sizes, int covariates, int repeat, const cluster& c,
                     std::ostream* out, const std::string& command_line) {
  std::printf("maprect bench: pointwise_regression, %zu size%s, %d covariates, %d rank%s x %d thread%s, %d repeats\n",
              sizes.size(), sizes.size() == 1 ? "" : "s", covariates, c.size(), c.size() == 1 ? "" : "s",
              c.threads(), c.threads() == 1 ? "" : "s", repeat);
  std::vector<pointwise_record> records;
  for (const auto& [G, K] : sizes) {
    std::vector<pointwise_record> rs = bench_size(G, K, covariates, repeat, c);
    records.insert(records.end(), rs.begin(), rs.end());
  }
  print_table(records, sizes, covariates, c.size());
  if (!out) return;
  json list = json::array();
  for (const auto& r : records) list.push_back(record_json(r));
  const json document = {{"records", std::move(list)},
                         {"ranks", c.size()},
                         {"threads", c.threads()},
                         {"repeat", repeat},
                         {"command_line", command_line},
                         {"hostname", host_name()},
                         {"date", utc_timestamp()},
                         {"unit", "microseconds per gradient"},
                         {"method", "backends timed round-robin, backwards in odd rounds, one sample each per "
                                    "round, each after at least 5 ms of untimed gradients of its own"},
                         {"model", "pointwise_regression (src/models/pointwise_regression.hpp)"}};
  write_json_document(*out, document);
}

}  // namespace maprect::cli
