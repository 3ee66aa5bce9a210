// maprect sample's options: CmdStan's sampler arguments where CmdStan has them, checked before any sampling.
#include "sample_options.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "metric_file.hpp"
#include "sample_model.hpp"
#include "src/sampling/checkpoint.hpp"

namespace maprect::cli {

namespace {

[[noreturn]] void refuse(const std::string& option, const std::string& value, const std::string& why) {
  throw std::invalid_argument(option + " " + value + ": " + why);
}

/// The FNV-1a hash of a file's bytes, as hex.
std::string file_hash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  char text[32];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(detail::fnv1a(bytes.str())));
  return text;
}

/// CmdStan's sampler arguments (thin, save_warmup, metric, metric_file, stepsize, stepsize_jitter and adapt's
/// engaged, init_buffer, term_buffer, window), checked by check_sampler_arguments with messages of their own.
void add_cmdstan_sampler_options(CLI::App& app, sample_command_options& o) {
  app.add_option("--thin", o.thin, "keep every N-th draw (CmdStan's thin)")->capture_default_str();
  app.add_flag("--save-warmup", o.save_warmup, "write the warm-up draws to the CSV too (CmdStan's save_warmup=1)");
  app.add_option("--metric", o.metric, "unit, diag or dense Euclidean metric (CmdStan's unit_e, diag_e, dense_e)")
      ->capture_default_str();
  app.add_option("--metric-file", o.metric_file,
                 "JSON {\"inv_metric\": ...} of the initial inverse metric, as CmdStan writes and reads it");
  app.add_option("--stepsize", o.stepsize, "initial step size (CmdStan's stepsize)")->capture_default_str();
  app.add_option("--stepsize-jitter", o.stepsize_jitter, "uniform jitter of the step size, in [0, 1]")
      ->capture_default_str();
  app.add_option("--adapt-engaged", o.adapt_engaged, "1: adapt during warm-up; 0: no adaptation")
      ->capture_default_str();
  app.add_option("--init-buffer", o.init_buffer, "step-size-only warm-up iterations first (CmdStan's init_buffer)")
      ->capture_default_str();
  app.add_option("--term-buffer", o.term_buffer, "step-size-only warm-up iterations last (CmdStan's term_buffer)")
      ->capture_default_str();
  app.add_option("--window", o.window, "first metric adaptation window (CmdStan's window)")->capture_default_str();
}

}  // namespace

void add_sample_options(CLI::App& app, sample_command_options& o) {
  const int max_int = std::numeric_limits<int>::max();
  app.add_option("--model", o.model, "model to sample")->check(CLI::IsMember(registered_model_names()))->capture_default_str();
  CLI::Option* data = app.add_option("--data", o.data, "CmdStan JSON data (logreg: also CSV group,y,x); default: embedded data");
  app.add_option("--init", o.init, "R: inits uniform on (-R, R), unconstrained (0: all zero); or a JSON file of values")
      ->capture_default_str();
  app.add_option("--jobs", o.jobs, "groups (logreg, default 8) or subjects (pk2cmt, default 16) of the embedded data")
      ->check(CLI::Range(1, max_int))
      ->excludes(data);
  app.add_option("--points", o.points,
                 "points per group of the embedded data (logreg: 200, pointwise_regression: 50)")
      ->check(CLI::Range(1, max_int))
      ->excludes(data);
  app.add_option("--chains", o.chains, "chains; the ranks are split into this many groups")->check(CLI::Range(1, max_int))->capture_default_str();
  app.add_option("--warmup", o.warmup, "warm-up iterations per chain")->check(CLI::Range(0, max_int))->capture_default_str();
  app.add_option("--samples", o.samples, "draws per chain")->check(CLI::Range(1, max_int))->capture_default_str();
  app.add_option("--seed", o.seed, "random seed, 0 to 2^64-1")->capture_default_str();
  app.add_option("--max-depth", o.max_depth, "largest NUTS tree depth")->check(CLI::Range(1, 30))->capture_default_str();
  app.add_option("--delta", o.delta,
                 "target acceptance statistic of the step-size adaptation [default: 0.8; 0.9 for eight_schools]")
      ->check(CLI::Range(0.01, 0.999));
  app.add_option("--output-dir", o.output_dir, "directory of the Stan CSV files (created if missing)")->capture_default_str();
  app.add_option("--checkpoint-every", o.checkpoint_every, "iterations between checkpoints (0: none)")
      ->check(CLI::Range(0, max_int))
      ->capture_default_str();
  app.add_flag("--resume", o.resume, "continue from the checkpoints in --output-dir and append to the CSV files");
  app.add_option("--sig-figs", o.sig_figs, "significant digits of the CSV numbers")->check(CLI::Range(1, 17))->capture_default_str();
  app.add_option("--progress-seconds", o.progress_seconds, "least seconds between two progress lines of a chain")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  app.add_flag("--plot", o.plot, "also plot traces and marginal densities (scripts/plot-draws.py, matplotlib)");
  add_cmdstan_sampler_options(app, o);
}

std::uint64_t parse_seed(const std::string& text) {
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  errno = 0;
  const unsigned long long value = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE)
    throw std::invalid_argument("--seed must be an integer from 0 to 18446744073709551615, got '" + text + "'");
  return value;
}

metric_kind parse_metric(const std::string& text) {
  if (text == "unit") return metric_kind::unit;
  if (text == "dense") return metric_kind::dense;
  if (text == "diag") return metric_kind::diag;
  refuse("--metric", text, "must be unit, diag or dense");
}

void check_sampler_arguments(const sample_command_options& o) {
  if (o.thin < 1) refuse("--thin", std::to_string(o.thin), "must be at least 1");
  if (o.thin > o.samples)
    refuse("--thin", std::to_string(o.thin), "is larger than --samples " + std::to_string(o.samples));
  const int kept = kept_draws(o.samples, o.thin);
  if (kept < 4)
    refuse("--samples", std::to_string(o.samples),
           "keeps " + std::to_string(kept) + " draws per chain" +
               (o.thin > 1 ? " at --thin " + std::to_string(o.thin) : "") +
               ", but the summary splits each chain in two halves and needs at least 4");
  const metric_kind metric = parse_metric(o.metric);
  if (!o.metric_file.empty() && metric == metric_kind::unit)
    refuse("--metric-file", o.metric_file, "the unit metric takes no metric file (use --metric diag or dense)");
  if (!(o.stepsize > 0) || !std::isfinite(o.stepsize))
    refuse("--stepsize", shown_exactly(o.stepsize), "must be positive and finite");
  if (!(o.stepsize_jitter >= 0 && o.stepsize_jitter <= 1))
    refuse("--stepsize-jitter", shown_exactly(o.stepsize_jitter), "must be in [0, 1]");
  if (o.adapt_engaged != 0 && o.adapt_engaged != 1)
    refuse("--adapt-engaged", std::to_string(o.adapt_engaged), "must be 0 or 1");
  if (o.init_buffer < 0) refuse("--init-buffer", std::to_string(o.init_buffer), "must be >= 0");
  if (o.term_buffer < 0) refuse("--term-buffer", std::to_string(o.term_buffer), "must be >= 0");
  if (o.window < 1) refuse("--window", std::to_string(o.window), "must be >= 1");
}

sample_options chain_options(const sample_command_options& o, int dim, int chain) {
  sample_options s;
  s.warmup = o.warmup;
  s.samples = o.samples;
  s.max_depth = o.max_depth;
  s.delta = target_delta(o);
  s.seed = parse_seed(o.seed);
  s.chain = chain;
  s.init_radius = parse_init(o.init).radius;
  s.thin = o.thin;
  s.save_warmup = o.save_warmup;
  s.metric = parse_metric(o.metric);
  if (!o.metric_file.empty()) s.initial_inv_metric = read_metric_file(o.metric_file, s.metric, dim);
  s.initial_step_size = o.stepsize;
  s.stepsize_jitter = o.stepsize_jitter;
  s.adapt_engaged = o.adapt_engaged == 1;
  s.init_buffer = o.init_buffer;
  s.term_buffer = o.term_buffer;
  s.window = o.window;
  return s;
}

std::string sampler_fingerprint(const sample_command_options& o) {
  std::ostringstream f;
  f << "thin=" << o.thin << " save_warmup=" << o.save_warmup << " metric=" << o.metric
    << " metric_file=" << (o.metric_file.empty() ? "none" : file_hash(o.metric_file))
    << " stepsize=" << shown_exactly(o.stepsize) << " stepsize_jitter=" << shown_exactly(o.stepsize_jitter)
    << " adapt_engaged=" << o.adapt_engaged << " init_buffer=" << o.init_buffer << " term_buffer=" << o.term_buffer
    << " window=" << o.window;
  return f.str();
}

std::string window_warning(const sample_command_options& o) {
  if (o.adapt_engaged == 0 || o.warmup == 0 || parse_metric(o.metric) == metric_kind::unit) return {};
  if (o.warmup < 20) return "warning: no " + o.metric + " metric estimation is performed for --warmup < 20";
  if (metric_windows::fits(o.warmup, o.init_buffer, o.term_buffer, o.window)) return {};
  metric_windows w;
  w.configure(o.warmup, o.init_buffer, o.term_buffer, o.window);
  return "warning: --warmup " + std::to_string(o.warmup) + " cannot fit --init-buffer " +
         std::to_string(o.init_buffer) + ", --window " + std::to_string(o.window) + " and --term-buffer " +
         std::to_string(o.term_buffer) + ", so as Stan the windows take 15%/75%/10% of the warm-up: init buffer " +
         std::to_string(w.init_buffer) + ", window " + std::to_string(w.base_window) + ", term buffer " +
         std::to_string(w.term_buffer);
}

}  // namespace maprect::cli
