// maprect plan: measures on this machine what the cost model needs (a registered model's per-job time, the
// root's per-output and per-call costs, latency and bandwidth between the launched ranks) and prints the
// predicted time per gradient and efficiency for P = 1 ... ranks-max ranks x T threads, with the bound that
// limits each (docs/cost-model.md).
#include <algorithm>
#include <chrono>
#include <functional>
#include <cstdio>
#include <fstream>
#include <limits>
#include <thread>

#include "json_output.hpp"
#include "plan_commands.hpp"
#include "plan_measure.hpp"
#include "plan_timing.hpp"
#include "sample_model.hpp"
#include "spmd.hpp"
#include <maprect/detail/wire.hpp>

#include "src/plan/cost_model.hpp"
#include "src/plan/deferred_model.hpp"

namespace maprect::cli {

namespace {

/// Shared memory between ranks of a host where none were launched there to measure: a typical figure.
constexpr plan::link_figures assumed_local = plan::assumed_local_link;
/// InfiniBand-like figures between hosts where none were launched or given.
constexpr plan::link_figures assumed_remote = plan::assumed_remote_link;

/// The links the model uses, and where each figure came from.
struct chosen_links {
  plan::link_figures local, remote;
  std::string local_source, remote_source;
  int ranks_per_host = 1;
  int cores_per_host = 0;
};

/// The cores of rank 0's host as its ranks may use them, else as the machine reports them.
int host_cores(const link_report& m) {
  if (m.root_host_cpus > 0) return m.root_host_cpus;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

chosen_links choose_links(const plan_options& o, const link_report& m) {
  chosen_links c;
  c.local = m.on_root_host > 1 ? m.local : assumed_local;
  c.local_source = m.on_root_host > 1 ? "measured" : "assumed (no two ranks on one host)";
  if (o.alpha_us >= 0 || o.beta_gbs > 0) {
    c.remote = m.hosts > 1 ? m.remote : assumed_remote;
    if (o.alpha_us >= 0) c.remote.alpha_s = c.remote.overhead_s = 1e-6 * o.alpha_us;
    if (o.beta_gbs > 0) c.remote.beta_bytes_per_s = 1e9 * o.beta_gbs;
    c.remote_source = "given (--alpha-us / --beta-gbs)";
  } else if (m.hosts > 1) {
    c.remote = m.remote;
    c.remote_source = "measured";
  } else {
    c.remote = assumed_remote;
    c.remote_source = "assumed, InfiniBand-like (no second host launched)";
  }
  if (o.overhead_us >= 0) c.remote.overhead_s = 1e-6 * o.overhead_us;
  const int cores = host_cores(m);
  c.ranks_per_host = o.ranks_per_host > 0 ? o.ranks_per_host : m.hosts > 1 ? m.on_root_host : std::max(cores, m.ranks);
  // What-if hosts (--ranks-per-host) have a core per rank; this one has the cores it has.
  c.cores_per_host = o.cores_per_host > 0 ? o.cores_per_host : o.ranks_per_host > 0 ? 0 : cores;
  return c;
}

/// The core sharing the ranks' speeds were measured under: all of this host's ranks at once on its cores.
double measured_sharing(const link_report& m) {
  return std::max(1.0, static_cast<double>(m.on_root_host) / host_cores(m));
}

plan::cost_inputs make_inputs(const site_figures& f, const chosen_links& l, const link_report& m,
                              const rank_speeds& speeds, const phase_figures& phases, bool job_data) {
  plan::cost_inputs in;
  in.job_s = f.job_s;
  in.job_spread_s = f.job_spread_s;
  // Each job alone runs warmer than among the others: the times keep their shape at the chunk runner's mean.
  double alone = 0;
  for (double t : f.job_times_s) alone += t;
  if (alone > 0 && static_cast<int>(f.job_times_s.size()) == f.jobs)
    for (double t : f.job_times_s) in.job_times_s.push_back(t * f.job_s * f.jobs / alone);
  in.jobs = f.jobs;
  in.outputs_per_job = f.outputs_per_job;
  in.shared_params = f.shared_params;
  in.job_params = f.job_params;
  in.root_output_s = f.root_output_s;
  in.root_call_s = f.root_call_s;
  in.root_check_s_per_job = job_data ? 0.0 : f.root_check_s_per_job;
  in.local = l.local;
  in.remote = l.remote;
  in.ranks_per_host = l.ranks_per_host;
  in.cores_per_host = l.cores_per_host;
  in.request_bytes = 8 * detail::wire::header_slots;  // the request's header
  // Measured side by side, the speeds hold the launched ranks' core sharing, which the model adds per P itself.
  for (double scale : speeds.job_scale) in.rank_job_scale.push_back(scale / measured_sharing(m));
  in.phase_ranks = phases.ranks;
  in.phase_lengths_s = phases.lengths_s;
  in.phase_sharing = phases.sharing;
  in.phase_round_s = phases.round_s;
  return in;
}

plan::deferred_inputs make_deferred_inputs(const site_figures& f) {
  plan::deferred_inputs d;
  d.forward_job_s = f.forward_job_s;
  d.sweep_job_s = f.sweep_job_s;
  d.root_output_s = f.root_deferred_output_s;
  d.root_call_s = f.root_deferred_call_s;
  return d;
}

/// Doubles a job moves per gradient: eager K (M + 1), deferred 2K + M (as detail::deferred_pays counts them).
std::pair<long long, long long> doubles_per_job(const plan::cost_inputs& in) {
  const long long K = in.outputs_per_job, M = static_cast<long long>(in.shared_params) + in.job_params;
  return {K * (M + 1), 2 * K + M};
}

void print_link(const char* what, const plan::link_figures& l, const std::string& source) {
  std::printf("  %-7s alpha %.2f us, beta %.3g GB/s, root per message %.2f us   [%s]\n", what, 1e6 * l.alpha_s,
              1e-9 * l.beta_bytes_per_s, 1e6 * l.overhead_s, source.c_str());
}

/// The ranks' job times over rank 0's alone: each of them up to 16 ranks, else their least, median and most.
void print_speeds(const rank_speeds& speeds, int jobs) {
  if (speeds.job_scale.empty()) {
    std::printf("  ranks   one rank: its job times are the figures above\n");
    return;
  }
  std::vector<double> sorted = speeds.job_scale;
  std::sort(sorted.begin(), sorted.end());
  std::printf("  ranks   job time over rank 0's alone, all %zu ranks at once (%d of %d jobs):", sorted.size(),
              speeds.sample_jobs, jobs);
  if (sorted.size() <= 16)
    for (double x : speeds.job_scale) std::printf(" %.2f", x);
  std::printf(" [least %.2f, median %.2f, most %.2f]", sorted.front(), plan_median(sorted), sorted.back());
  if (speeds.slow_rank >= 0) std::printf(" (rank %d slowed %gx)", speeds.slow_rank, speeds.slow_factor);
  std::printf("\n");
}

/// The measured core sharing of a phase by its length, where ranks ran phases.
void print_phases(const phase_figures& phases) {
  if (phases.ranks == 0) return;
  std::printf("  phases  work on all %d ranks at once between a broadcast and a gather, over alone:", phases.ranks);
  for (std::size_t i = 0; i < phases.lengths_s.size(); ++i)
    std::printf(" %g us %.2f,", 1e6 * phases.lengths_s[i], phases.sharing[i]);
  std::printf(" an empty phase %.1f us\n", 1e6 * phases.round_s);
  std::printf("          more ranks than cores on this host: the %d-rank row uses these phases, the others count"
              " the cores; a core per rank runs faster and predicts better\n", phases.ranks);
}

void print_inputs(const site_figures& f, const chosen_links& l, const link_report& m, const rank_speeds& speeds,
                  const phase_figures& phases) {
  std::printf("maprect plan: %s; measured on %d rank%s, %d host%s\n", f.description.c_str(), m.ranks,
              m.ranks == 1 ? "" : "s", m.hosts, m.hosts == 1 ? "" : "s");
  std::printf("  job     %.3f us per job (sd over jobs %.3f us), K = %d, S = %d shared, %d own parameters\n",
              1e6 * f.job_s, 1e6 * f.job_spread_s, f.outputs_per_job, f.shared_params, f.job_params);
  std::printf("  root    %.3f us per output, %.2f us per call, data check %.4f us per worker job\n",
              1e6 * f.root_output_s, 1e6 * f.root_call_s, 1e6 * f.root_check_s_per_job);
  std::printf("  deferred %.3f us forward, %.3f us sweep per job (%.2f x alone, as in the gradient); root %.4f us"
              " per output, %.2f us per call\n", 1e6 * f.forward_job_s, 1e6 * f.sweep_job_s, f.kept_gradient_scale,
              1e6 * f.root_deferred_output_s, 1e6 * f.root_deferred_call_s);
  std::printf("  in process: %.1f us per gradient eager, %.1f us deferred (measured)\n", 1e6 * f.in_process_s,
              1e6 * f.in_process_deferred_s);
  print_speeds(speeds, f.jobs);
  print_phases(phases);
  print_link("local", l.local, l.local_source);
  print_link("remote", l.remote, l.remote_source);
  std::printf("  %d ranks per host, %s\n", l.ranks_per_host,
              l.cores_per_host > 0 ? (std::to_string(l.cores_per_host) + " cores per host").c_str()
                                   : "a core per thread");
}

void print_table(const std::vector<plan::prediction>& rows, int measured_ranks) {
  std::printf("%6s %3s %5s %6s %12s %8s %11s %11s %11s %13s %9s %9s %10s %10s\n", "ranks", "T", "hosts", "jobs",
              "us/gradient", "effic.", "root us", "messages us", "compute us", "gather", "bound", "flat us",
              "claims us", "least us");
  for (const auto& p : rows)
    std::printf("%5d%s %3d %5d %6d %12.1f %7.1f%% %11.1f %11.1f %11.1f %13s %9s %9.1f %10.1f %10.1f\n", p.ranks,
                p.ranks == measured_ranks ? "*" : " ", p.threads, p.hosts, p.jobs_on_slowest, 1e6 * p.total_s,
                100 * p.efficiency, 1e6 * p.root_s, 1e6 * p.messages_s, 1e6 * p.compute_s,
                p.ranks == 1 ? "-" : plan::gather_name(p.gather), plan::bound_name(p.bound), 1e6 * p.total_flat_s,
                1e6 * p.total_claims_s, 1e6 * p.compute_bound_s);
  std::printf("(* the rank count of this run; jobs: on the slowest thread; gather: the cheapest kind;\n"
              " us/gradient, flat us: the static split (MAPRECT_BALANCE=static) at the ranks' speeds, with the\n"
              " cheapest and with flat collectives; claims us: the claims engine (MAPRECT_BALANCE=auto on one host,\n"
              " and across hosts where a call lasts 32 round trips, else flat us): flat collectives, its schedule\n"
              " of the jobs at the ranks' speeds, its termination; least us: the least\n"
              " compute any schedule reaches, work / the ranks' summed speeds or the dearest job)\n");
}

/// Both reverse modes per rank count, and the mode MAPRECT_REVERSE=auto runs the site in.
void print_reverse(const plan::cost_inputs& in, const std::vector<plan::prediction>& eager,
                   const std::vector<plan::deferred_prediction>& deferred, int measured_ranks) {
  const auto [eager_doubles, deferred_doubles] = doubles_per_job(in);
  std::printf("\nreverse mode: MAPRECT_REVERSE=auto runs this site %s (per job eager moves K(M+1) = %lld doubles, "
              "deferred 2K+M = %lld)\n",
              plan::reverse_name(plan::auto_runs_deferred(in)), eager_doubles, deferred_doubles);
  std::printf("%6s %3s %10s %10s %12s %7s %10s %10s %8s %9s | %9s %11s %11s %11s %9s\n", "ranks", "T", "eager us",
              "claims us", "deferred us", "split", "def static", "def claims", "def/eag", "faster", "root us",
              "fwd msg us", "rev msg us", "forward us", "sweep us");
  for (std::size_t i = 0; i < eager.size(); ++i) {
    const plan::prediction& e = eager[i];
    const plan::deferred_prediction& d = deferred[i];
    const bool c = d.claims;
    std::printf("%5d%s %3d %10.1f %10.1f %12.1f %7s %10.1f %10.1f %8.2f %9s | %9.1f %11.1f %11.1f %11.1f %9.1f\n",
                e.ranks, e.ranks == measured_ranks ? "*" : " ", e.threads, 1e6 * e.total_s, 1e6 * e.total_claims_s,
                1e6 * d.total_auto_s, c ? "claims" : "static", 1e6 * d.total_s, 1e6 * d.total_claims_s,
                d.total_auto_s / e.total_claims_s, plan::reverse_name(d.total_auto_s < e.total_claims_s),
                1e6 * d.root_s, 1e6 * (c ? d.forward_claims_messages_s : d.forward_messages_s),
                1e6 * d.reverse_messages_s, 1e6 * (c ? d.compute_forward_claims_s : d.compute_forward_s),
                1e6 * (c ? d.compute_sweep_claims_s : d.compute_sweep_s));
  }
  std::printf("(eager us, claims us: eager as us/gradient and claims us above; deferred us: MAPRECT_REVERSE=deferred\n"
              " under MAPRECT_BALANCE=auto, by claims where they pay (split), else by the static split; def static,\n"
              " def claims: each way; def/eag: deferred us over claims us; the terms: as auto runs it)\n");
}

json link_json(const plan::link_figures& l, const std::string& source) {
  return {{"alpha_us", 1e6 * l.alpha_s}, {"beta_gbs", 1e-9 * l.beta_bytes_per_s},
          {"overhead_us", 1e6 * l.overhead_s}, {"source", source}};
}

/// The ranks' speeds as measured, and as the model takes them (the measured core sharing taken out).
json speeds_json(const rank_speeds& speeds, const plan::cost_inputs& in, const link_report& m) {
  std::vector<double> lengths_us;
  for (double l : in.phase_lengths_s) lengths_us.push_back(1e6 * l);
  return {{"phase_ranks", in.phase_ranks}, {"phase_lengths_us", lengths_us}, {"phase_sharing", in.phase_sharing},
          {"phase_round_us", 1e6 * in.phase_round_s},
          {"job_scale", speeds.job_scale}, {"model_job_scale", in.rank_job_scale},
          {"sample_jobs", speeds.sample_jobs}, {"round_us", 1e6 * speeds.round_s},
          {"measured_core_sharing", measured_sharing(m)},
          {"slow_rank", speeds.slow_rank}, {"slow_factor", speeds.slow_factor}};
}

json plan_json(const site_figures& f, const chosen_links& l, const link_report& m, const rank_speeds& speeds,
               const plan::cost_inputs& in, const std::vector<plan::prediction>& rows, const std::string& invocation,
               bool job_data) {
  json doc = {{"command", invocation}, {"host", host_name()}, {"timestamp", utc_timestamp()},
              {"model", f.description}, {"measured_ranks", m.ranks}, {"measured_hosts", m.hosts}};
  doc["inputs"] = {{"jobs", f.jobs}, {"outputs_per_job", f.outputs_per_job}, {"shared_params", f.shared_params},
                   {"job_params", f.job_params}, {"job_us", 1e6 * f.job_s}, {"job_spread_us", 1e6 * f.job_spread_s},
                   {"root_output_us", 1e6 * f.root_output_s}, {"root_call_us", 1e6 * f.root_call_s},
                   {"root_check_us_per_job", 1e6 * f.root_check_s_per_job}, {"job_data", job_data},
                   {"in_process_us", 1e6 * f.in_process_s},
                   {"ranks_per_host", l.ranks_per_host}, {"cores_per_host", l.cores_per_host}, {"local", link_json(l.local, l.local_source)},
                   {"remote", link_json(l.remote, l.remote_source)}};
  json out = json::array();
  for (const auto& p : rows)
    out.push_back({{"ranks", p.ranks}, {"threads", p.threads}, {"hosts", p.hosts},
                   {"jobs_on_slowest", p.jobs_on_slowest}, {"us_per_gradient", 1e6 * p.total_s},
                   {"us_per_gradient_flat", 1e6 * p.total_flat_s},
                   {"efficiency", p.efficiency}, {"root_us", 1e6 * p.root_s}, {"root_check_us", 1e6 * p.root_check_s},
                   {"broadcast_us", 1e6 * p.broadcast_s},
                   {"scatter_us", 1e6 * p.scatter_s}, {"gather_us", 1e6 * p.gather_s},
                   {"scatter_overlap_us", 1e6 * p.scatter_overlap_s},
                   {"messages_us", 1e6 * p.messages_s}, {"collective_wait_us", 1e6 * p.collective_wait_s},
                   {"flat_us", 1e6 * p.flat_s}, {"hierarchical_us", 1e6 * p.hierarchical_s},
                   {"tree_us", 1e6 * p.tree_s},
                   {"compute_us", 1e6 * p.compute_s}, {"core_sharing", p.core_sharing},
                   {"compute_claims_us", 1e6 * p.compute_claims_s}, {"compute_bound_us", 1e6 * p.compute_bound_s},
                   {"termination_us", 1e6 * p.termination_s},
                   {"us_per_gradient_claims", 1e6 * p.total_claims_s},
                   {"us_per_gradient_auto", 1e6 * p.total_auto_s}, {"claims", p.claims},
                   {"gather", plan::gather_name(p.gather)},
                   {"bound", plan::bound_name(p.bound)}});
  doc["rank_speeds"] = speeds_json(speeds, in, m);
  doc["predictions"] = out;
  return doc;
}

/// The deferred figures, auto's choice and the deferred prediction per rank count.
json reverse_json(const site_figures& f, const plan::cost_inputs& in,
                  const std::vector<plan::deferred_prediction>& rows) {
  const auto [eager_doubles, deferred_doubles] = doubles_per_job(in);
  json out = json::array();
  for (const auto& p : rows)
    out.push_back({{"ranks", p.ranks}, {"threads", p.threads}, {"hosts", p.hosts},
                   {"us_per_gradient", 1e6 * p.total_s}, {"us_per_gradient_claims", 1e6 * p.total_claims_s},
                   {"us_per_gradient_auto", 1e6 * p.total_auto_s}, {"claims", p.claims},
                   {"root_us", 1e6 * p.root_s}, {"forward_claims_messages_us", 1e6 * p.forward_claims_messages_s},
                   {"termination_us", 1e6 * p.termination_s},
                   {"compute_forward_claims_us", 1e6 * p.compute_forward_claims_s},
                   {"compute_sweep_claims_us", 1e6 * p.compute_sweep_claims_s},
                   {"forward_messages_us", 1e6 * p.forward_messages_s},
                   {"reverse_messages_us", 1e6 * p.reverse_messages_s}, {"messages_us", 1e6 * p.messages_s},
                   {"compute_forward_us", 1e6 * p.compute_forward_s}, {"compute_sweep_us", 1e6 * p.compute_sweep_s},
                   {"core_sharing", p.core_sharing}});
  return {{"auto", plan::reverse_name(plan::auto_runs_deferred(in))},
          {"eager_doubles_per_job", eager_doubles}, {"deferred_doubles_per_job", deferred_doubles},
          {"forward_job_us", 1e6 * f.forward_job_s}, {"sweep_job_us", 1e6 * f.sweep_job_s},
          {"kept_gradient_scale", f.kept_gradient_scale},
          {"root_output_us", 1e6 * f.root_deferred_output_s}, {"root_call_us", 1e6 * f.root_deferred_call_s},
          {"in_process_us", 1e6 * f.in_process_deferred_s}, {"predictions", out}};
}

/// Rank 0's part once the links and speeds are known: measure the call site, predict, report.
void plan_on_root(const plan_options& o, const link_report& links, const rank_speeds& speeds,
                  const phase_figures& phases, const std::string& invocation, std::ofstream& out,
                  const plan_call_site& site) {
  const site_figures f = site.measure();
  const chosen_links l = choose_links(o, links);
  const plan::cost_inputs in = make_inputs(f, l, links, speeds, phases, o.job_data);
  const std::vector<int> ranks = plan::rank_counts(o.ranks_max, {links.ranks});
  const auto rows = plan::predict_table(in, ranks, o.threads);
  const auto deferred_rows = plan::predict_deferred_table(in, make_deferred_inputs(f), ranks, o.threads);
  print_inputs(f, l, links, speeds, phases);
  print_table(rows, links.ranks);
  print_reverse(in, rows, deferred_rows, links.ranks);
  if (out.is_open()) {
    json doc = plan_json(f, l, links, speeds, in, rows, invocation, o.job_data);
    doc["reverse"] = reverse_json(f, in, deferred_rows);
    write_json_document(out, doc);
    out.close();
    if (!out) throw std::runtime_error(o.json + ": write failed");
    std::printf("wrote %s\n", o.json.c_str());
  }
}

/// The options every plan has, whatever it measures.
void add_machine_options(CLI::App& app, plan_options& o) {
  app.add_flag("--job-data", o.job_data, "the call site is fed a job_data: predict no per-call data check");
  app.add_option("--threads", o.threads, "T: threads per rank")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--ranks-max", o.ranks_max, "largest rank count of the table (powers of 2 up to it)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--ranks-per-host", o.ranks_per_host, "H: ranks per host (default: as launched, or the cores)")
      ->check(CLI::PositiveNumber);
  app.add_option("--cores-per-host", o.cores_per_host,
                 "cores a host's threads share (default: this host's, or one per thread with --ranks-per-host)")
      ->check(CLI::PositiveNumber);
  app.add_option("--alpha-us", o.alpha_us, "what-if latency between hosts, microseconds")->check(CLI::NonNegativeNumber);
  app.add_option("--beta-gbs", o.beta_gbs, "what-if bandwidth between hosts, GB/s")->check(CLI::PositiveNumber);
  app.add_option("--overhead-us", o.overhead_us, "what-if root time per message between hosts, microseconds")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--repeat", o.repeat, "timed rounds per figure (medians over them)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--json", o.json, "write the inputs and predictions as JSON to this file");
  app.add_option("--slow-rank", o.slow_rank, "slow this rank's timed jobs (a sleep after each), as maprect-bench-unequal does")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--slow-factor", o.slow_factor, "--slow-rank's jobs take this many times as long")
      ->check(CLI::Range(1.0, 1000.0))
      ->capture_default_str();
}

}  // namespace

void add_plan_options(CLI::App& app, plan_options& o) {
  app.add_option("--model", o.model,
                 "logreg (the standard model) | pk2cmt | sleep (maprect-bench-unequal's jobs) | pointwise_regression")
      ->capture_default_str();
  app.add_option("--job-ms", o.job_ms, "sleep: each job's milliseconds")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--kernel", o.kernel, "logreg kernel: scalar | vector")->capture_default_str();
  app.add_option("--jobs", o.jobs,
                 "J: groups (logreg, default 256; pointwise_regression, 16), subjects (pk2cmt, 16), jobs (sleep, 48)")
      ->check(CLI::PositiveNumber);
  app.add_option("--points", o.points, "points per group: logreg (default 1000), pointwise_regression (K, 100)")
      ->check(CLI::PositiveNumber);
  app.add_option("--covariates", o.covariates, "pointwise_regression: covariates C (M = C + 2 parameters a job)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--skew", o.skew, "logreg: groups j >= 0.9 J have this many times the points (uneven jobs)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  add_machine_options(app, o);
}

void add_model_plan_options(CLI::App& app, plan_options& o) {
  app.add_option("--model", o.model, "the registered model to plan")
      ->check(CLI::IsMember(registered_model_names()))
      ->required();
  CLI::Option* data = app.add_option("--data", o.data, "CmdStan JSON data (as for sample); default: embedded data");
  app.add_option("--jobs", o.jobs, "the embedded data's size, where the model has embedded data")
      ->check(CLI::PositiveNumber)
      ->excludes(data);
  app.add_option("--points", o.points, "the embedded data's points per job, where the model has them")
      ->check(CLI::PositiveNumber)
      ->excludes(data);
  add_machine_options(app, o);
}

int run_plan_with(const plan_options& o, const std::string& invocation,
                  const std::function<plan_call_site()>& make_site) {
  std::ofstream out;
  if (!open_output_on_root(o.json, out)) return 1;
  plan_call_site site;
  int code = 0;
  try {
    site = make_site();
  } catch (const std::exception& e) {
    if (world_rank() == 0) print_error(e.what());
    code = 1;
  }
  if (agree(code) != 0) return 1;
  const link_report links = measure_links(MPI_COMM_WORLD, o.repeat);
  const bool oversubscribed = measured_sharing(links) > 1;
  const rank_speeds speeds =
      measure_rank_speeds(MPI_COMM_WORLD, site, o.repeat, o.slow_rank, o.slow_factor, oversubscribed);
  const phase_figures phases = measure_phase_sharing(MPI_COMM_WORLD, o.repeat, oversubscribed);
  if (world_rank() == 0) {
    try {
      plan_on_root(o, links, speeds, phases, invocation, out, site);
    } catch (const std::exception& e) {
      print_error(e.what());
      code = 1;
    }
  }
  // A non-blocking barrier on every rank (it matches no blocking one): rank 0 joins when done.
  sleeping_barrier(MPI_COMM_WORLD);
  return agree(code);
}

}  // namespace maprect::cli
