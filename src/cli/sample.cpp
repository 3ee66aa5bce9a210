// maprect sample: NUTS chains, each on its own group of ranks (a cluster on a sub-communicator), Stan CSV per
// chain, checkpoints, and a posterior summary on rank 0 at the end.
#include <maprect/maprect.hpp>
#include <maprect/sample.hpp>

#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <stdexcept>

#include "commands.hpp"
#include "interrupt.hpp"
#include "output_lock.hpp"
#include "sample_model.hpp"
#include "sample_options.hpp"
#include "spmd.hpp"
#include "src/cluster/clock.hpp"
#include "src/sampling/chains.hpp"
#include "src/sampling/checkpoint.hpp"
#include "src/sampling/stan_csv.hpp"
#include "src/sampling/summary.hpp"

namespace maprect::cli {

namespace {

using clock_type = std::chrono::steady_clock;

using detail::seconds_since;

/// Everything that must match for a checkpoint to be resumed.
std::string fingerprint(const sample_command_options& o, const sample_model& m, int chain) {
  std::ostringstream f;
  f << "model=" << m.name << " data=" << m.data_identity << " parameters=" << m.size << " chains=" << o.chains
    << " warmup=" << o.warmup << " samples=" << o.samples << " max_depth=" << o.max_depth << " delta=" << target_delta(o)
    << " seed=" << parse_seed(o.seed) << " chain=" << chain << " sig_figs=" << o.sig_figs << ' '
    << sampler_fingerprint(o) << " init=" << init_identity(parse_init(o.init));
  return f.str();
}

/// What a chain hands to rank 0 for the summary.
struct chain_record {
  Eigen::MatrixXd draws;  ///< kept draws x (1 + columns): lp__ then the model's columns (warm-up left out)
  int divergences = 0;
  long gradients = 0;          ///< gradients in the iteration loop
  double gradient_seconds = 0;  ///< seconds in those gradients
  double seconds = 0;           ///< seconds of the iteration loop (set-up, initialisation and resume left out)
};

/// The log density with a clock around it: the time in gradients, against the chain's whole time.
struct timed_density {
  log_density_function f;
  long calls = 0;
  double seconds = 0;
  double operator()(const Eigen::VectorXd& q, Eigen::VectorXd& g) {
    const auto start = clock_type::now();
    const double lp = f(q, g);
    seconds += seconds_since(start);
    ++calls;
    return lp;
  }
};

/// Prints a chain's progress, at most once per `interval` seconds, and always at its last iteration.
class progress_line {
 public:
  progress_line(int chain, int total, double interval) : chain_(chain), total_(total), interval_(interval) {}
  void update(int done, bool warmup, const timed_density& density) {
    const double now = seconds_since(start_);
    if (done != total_ && done != 1 && now - last_ < interval_) return;
    const long calls = density.calls - calls_;
    const double ms = calls > 0 ? 1e3 * (density.seconds - seconds_) / calls : 0.0;
    std::printf("chain %d: iteration %*d / %d (%s)  %.4f ms/gradient  %.1f s\n", chain_,
                static_cast<int>(std::to_string(total_).size()), done, total_, warmup ? "warm-up" : "sampling", ms,
                now);
    std::fflush(stdout);
    last_ = now;
    calls_ = density.calls;
    seconds_ = density.seconds;
  }

 private:
  int chain_, total_;
  double interval_;
  clock_type::time_point start_ = clock_type::now();
  double last_ = 0;
  long calls_ = 0;
  double seconds_ = 0;
};

/// One chain's files: CSV and checkpoint paths, the open CSV, and resuming from a checkpoint.
struct chain_files {
  std::string csv, checkpoint;
  std::ofstream out;
  long rows = 0;  ///< draw rows in the CSV

  chain_files(const std::string& dir, const std::string& model, int chain)
      : csv(dir + "/" + model + "-" + std::to_string(chain) + ".csv"),
        checkpoint(dir + "/" + model + "-" + std::to_string(chain) + ".checkpoint") {}
  void open(bool append) {
    out.open(csv, append ? std::ios::binary | std::ios::app : std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(csv + ": cannot write (" + std::strerror(errno) + ")");
  }
  void check() {
    if (!out) throw std::runtime_error(csv + ": write failed (" + std::strerror(errno) + ")");
  }
};

/// Resumes: reads the checkpoint, cuts the CSV back to its length then, and reads the draws kept so far.
chain_checkpoint resume_chain(const sample_command_options& o, chain_files& files, const std::string& expected,
                              chain_record& record, int columns) {
  if (!std::filesystem::exists(files.checkpoint))
    throw std::runtime_error(files.checkpoint + ": no checkpoint to resume from (run without --resume)");
  chain_checkpoint c = read_checkpoint(files.checkpoint, expected);
  if (!std::filesystem::exists(files.csv))
    throw std::runtime_error(files.csv + ": missing, but its checkpoint " + files.checkpoint + " is there");
  std::error_code error;
  const auto size = std::filesystem::file_size(files.csv, error);
  if (error || size < c.output_bytes)
    throw std::runtime_error(files.csv + ": shorter than the checkpoint says (" + std::to_string(c.output_bytes) +
                             " bytes); the output does not belong to this checkpoint");
  std::filesystem::resize_file(files.csv, c.output_bytes);
  const stan_csv kept = read_stan_csv(files.csv);
  files.rows = static_cast<long>(kept.draws.rows());
  if (c.draw_rows >= 0) check_stan_csv_draw_rows(files.csv, c.draw_rows, "from its checkpoint " + files.checkpoint);
  if (kept.draws.cols() != 7 + columns)
    throw std::runtime_error(files.csv + ": " + std::to_string(kept.draws.cols()) + " columns, expected " +
                             std::to_string(7 + columns));
  const Eigen::Index warmup_rows = o.save_warmup ? kept_draws(o.warmup, o.thin) : 0;
  if (kept.draws.rows() - warmup_rows > record.draws.rows())
    throw std::runtime_error(files.csv + ": " + std::to_string(kept.draws.rows()) + " draw rows, more than the " +
                             std::to_string(warmup_rows + record.draws.rows()) + " this run writes");
  for (Eigen::Index row = warmup_rows; row < kept.draws.rows(); ++row) {
    const Eigen::Index s = row - warmup_rows;
    record.draws(s, 0) = kept.draws(row, 0);
    record.draws.row(s).tail(columns) = kept.draws.row(row).tail(columns);
    record.divergences += kept.draws(row, 5) != 0;
  }
  return c;
}

/// A fresh start: the CSV header, then random inits and the first step size.
void start_chain(const sample_command_options& o, const sample_model& model, const sample_options& options,
                 chain_files& files, nuts_chain& chain) {
  files.open(false);
  stan_csv_config config;
  config.model = model.name;
  config.data_file = o.data;
  config.output_file = files.csv;
  config.options = options;
  config.num_chains = o.chains;
  config.sig_figs = o.sig_figs;
  config.metric_file = o.metric_file;
  write_stan_csv_header(files.out, config, model.columns);
  const init_option init = parse_init(o.init);
  if (init.file.empty()) chain.initialize();
  else chain.initialize(initial_point(model, init, options.seed, options.chain));
}

/// Writes what an iteration adds to the CSV (the adaptation block after warm-up, then each draw) and keeps
/// the draw for the summary.
void record_iteration(const sample_command_options& o, const sample_model& model, const nuts_chain& chain,
                      const chain_draw& d, chain_files& files, chain_record& record) {
  auto adaptation_block = [&] {
    write_stan_csv_adaptation(files.out, chain.step_size(), chain.options().metric, chain.inv_metric(),
                              chain.dense_inv_metric(), o.sig_figs);
  };
  if (d.warmup) {  // as CmdStan: every thin-th warm-up draw when saved, then the block
    if (o.save_warmup && d.iteration % o.thin == 0) {
      write_stan_csv_draw(files.out, d, model.write_array(d.q), o.sig_figs);
      ++files.rows;
    }
    if (d.iteration == o.warmup - 1) adaptation_block();
    return;
  }
  if (d.iteration == 0) adaptation_block();  // no warm-up: the block still comes before the draws
  if ((d.iteration - o.warmup) % o.thin != 0) return;
  const Eigen::VectorXd out = model.write_array(d.q);
  write_stan_csv_draw(files.out, d, out, o.sig_figs);
  ++files.rows;
  const Eigen::Index s = (d.iteration - o.warmup) / o.thin;
  record.draws(s, 0) = d.log_density;
  record.draws.row(s).tail(out.size()) = out.transpose();
  record.divergences += d.diagnostics.divergent;
}

/// Runs one chain on its group's root: writes its CSV and checkpoints, fills `record`.
void run_one_chain(const sample_command_options& o, const chain_group& g, const std::function<void()>& stop_check,
                   chain_record& record) {
  const std::shared_ptr<sample_model> model = make_sample_model(o);
  const sample_options options = chain_options(o, model->size, g.chain);
  const int columns = static_cast<int>(model->columns.size());
  record.draws = Eigen::MatrixXd::Zero(kept_draws(o.samples, o.thin), 1 + columns);
  auto density = std::make_shared<timed_density>(timed_density{model->log_density});
  nuts_chain chain([density](const Eigen::VectorXd& q, Eigen::VectorXd& gr) { return (*density)(q, gr); },
                   model->size, options);
  std::filesystem::create_directories(o.output_dir);
  chain_files files(o.output_dir, model->name, g.chain);
  const std::string expected = fingerprint(o, *model, g.chain);
  double seconds[2] = {0, 0};  // warm-up, sampling
  if (o.resume) {
    const chain_checkpoint c = resume_chain(o, files, expected, record, columns);
    chain.restore(c.state);
    std::printf("chain %d: resuming from iteration %d of %d (checkpoint %s, %ld draws kept)\n", g.chain,
                c.state.iteration, o.warmup + o.samples, files.checkpoint.c_str(), files.rows);
    std::fflush(stdout);
    seconds[0] = c.warmup_seconds;
    seconds[1] = c.sampling_seconds;
    files.open(true);
  } else {
    start_chain(o, *model, options, files, chain);
  }
  progress_line progress(g.chain, o.warmup + o.samples, o.progress_seconds);
  const long calls_before = density->calls;
  const double gradient_seconds_before = density->seconds;
  const auto loop_start = clock_type::now();
  auto last = loop_start;
  auto save = [&] {
    files.out.flush();
    files.check();
    write_checkpoint(files.checkpoint, chain_checkpoint{expected, static_cast<std::uint64_t>(files.out.tellp()),
                                                        seconds[0], seconds[1], chain.state(), files.rows});
  };
  while (!chain.done()) {
    stop_point(stop_check, save);
    const chain_draw d = chain.step();
    record_iteration(o, *model, chain, d, files, record);
    seconds[d.warmup ? 0 : 1] += seconds_since(last);
    last = clock_type::now();
    progress.update(chain.iteration(), d.warmup, *density);
    if (o.checkpoint_every > 0 && (chain.iteration() % o.checkpoint_every == 0 || chain.done())) save();
  }
  record.seconds = seconds_since(loop_start);
  record.gradients = density->calls - calls_before;
  record.gradient_seconds = density->seconds - gradient_seconds_before;
  write_stan_csv_timing(files.out, seconds[0], seconds[1]);
  files.out.close();
  files.check();
  check_stan_csv_draw_rows(files.csv, files.rows, "the draws this chain wrote");
}

constexpr int record_tag = 7302;

/// Chain roots other than world rank 0 send their records there.
void send_record(const chain_record& r) {
  const double header[6] = {static_cast<double>(r.draws.rows()), static_cast<double>(r.draws.cols()),
                            static_cast<double>(r.divergences), static_cast<double>(r.gradients),
                            r.gradient_seconds, r.seconds};
  MPI_Send(header, 6, MPI_DOUBLE, 0, record_tag, MPI_COMM_WORLD);
  MPI_Send(r.draws.data(), static_cast<int>(r.draws.size()), MPI_DOUBLE, 0, record_tag, MPI_COMM_WORLD);
}

chain_record receive_record(int from) {
  double header[6];
  MPI_Recv(header, 6, MPI_DOUBLE, from, record_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  chain_record r;
  r.draws.resize(static_cast<Eigen::Index>(header[0]), static_cast<Eigen::Index>(header[1]));
  r.divergences = static_cast<int>(header[2]);
  r.gradients = static_cast<long>(header[3]);
  r.gradient_seconds = header[4];
  r.seconds = header[5];
  MPI_Recv(r.draws.data(), static_cast<int>(r.draws.size()), MPI_DOUBLE, from, record_tag, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  return r;
}

/// First world rank of each chain's group.
std::vector<int> chain_roots(int size, int chains) {
  std::vector<int> roots(static_cast<std::size_t>(chains), -1);
  for (int r = size - 1; r >= 0; --r) roots[chain_of_rank(r, size, chains)] = r;
  return roots;
}

/// Rank 0: the summary table, per-chain timings and the plot.
void report(const sample_command_options& o, const sample_model& model, const std::vector<chain_record>& records) {
  // The table reads the finished files, so that it has the sampler's columns too and shows what was written.
  std::vector<Eigen::MatrixXd> draws;
  std::vector<std::string> names;
  std::vector<int> divergences;
  for (int c = 1; c <= o.chains; ++c) {
    const stan_csv csv = read_stan_csv(chain_files(o.output_dir, model.name, c).csv);
    draws.push_back(csv.draws.bottomRows(csv.draws.rows() - csv.warmup_rows));
    names = csv.columns;
  }
  for (const chain_record& r : records) divergences.push_back(r.divergences);
  std::printf("\n");
  for (std::size_t c = 0; c < records.size(); ++c) {
    const chain_record& r = records[c];
    const double outside = r.seconds - r.gradient_seconds;
    const long n = std::max(1L, r.gradients);
    std::printf("chain %zu: %ld gradients in %.2f s, %.4f ms/gradient; sampler and output %.2f us per gradient "
                "(%.2f%% of the time)\n",
                c + 1, r.gradients, r.seconds, 1e3 * r.gradient_seconds / n, 1e6 * outside / n,
                r.seconds > 0 ? 100.0 * outside / r.seconds : 0.0);
  }
  std::fflush(stdout);
  print_summary(std::cout, summarize(draws, names), divergences, static_cast<int>(draws[0].rows()));
  for (const auto& [name, value] : model.truth) std::cout << "true " << name << " = " << value << '\n';
  std::cout << "draws: " << o.output_dir << "/" << model.name << "-<chain>.csv (Stan CSV)" << std::endl;
}

/// Rank 0: plots the draws with scripts/plot-draws.py, when asked.
void plot(const sample_command_options& o, const sample_model& model) {
  // Debian's matplotlib belongs to /usr/bin/python3, which a virtualenv's python3 on PATH does not see.
  const std::string python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  std::string command = python + " '" MAPRECT_SOURCE_DIR "/scripts/plot-draws.py'";
  for (int c = 1; c <= o.chains; ++c) command += " '" + o.output_dir + "/" + model.name + "-" + std::to_string(c) + ".csv'";
  command += " -o '" + o.output_dir + "/" + model.name + "-draws.png'";
  if (std::system(command.c_str()) != 0) throw std::runtime_error("plot failed: " + command);
  std::printf("plot: %s/%s-draws.png\n", o.output_dir.c_str(), model.name.c_str());
}

/// Rank 0, after SIGINT or SIGTERM stopped the chains: one line per chain with its last checkpoint and the
/// command that resumes the run. Returns the exit status, 128 + the signal's number as a shell reports it.
int report_interruption(const sample_command_options& o, const sample_model* model,
                        const std::vector<chain_outcome>& outcomes, const std::string& invocation) {
  int code = 128 + SIGTERM;
  for (const chain_outcome& c : outcomes)
    if (c.message.find("SIGINT") != std::string::npos) code = 128 + SIGINT;
  if (world_rank() != 0 || !model) return code;
  const std::string resume = "mpirun -np " + std::to_string(world_size()) + " " + invocation + (o.resume ? "" : " --resume");
  for (const chain_outcome& c : outcomes) {
    chain_files files(o.output_dir, model->name, c.chain);
    std::string where;
    try {
      const chain_checkpoint k = read_checkpoint(files.checkpoint, fingerprint(o, *model, c.chain));
      where = "last checkpoint at iteration " + std::to_string(k.state.iteration) + " of " +
              std::to_string(o.warmup + o.samples) + " (" + files.checkpoint + ")";
    } catch (const std::exception& e) {
      where = "no checkpoint to resume from (" + std::string(e.what()) + ")";
    }
    const std::string how = c.failed ? c.message : c.stopped ? "stopped with the interrupted chains" : "finished";
    std::printf("chain %d: %s; %s; resume with: %s\n", c.chain, how.c_str(), where.c_str(), resume.c_str());
  }
  std::fflush(stdout);
  return code;
}

/// The same checks on every rank before any communication.
void check_arguments(const sample_command_options& o) {
  parse_seed(o.seed);
  parse_init(o.init);
  check_model_arguments(o.model, o.data, o.jobs, o.points);
  if (o.chains > world_size())
    throw std::invalid_argument("--chains " + std::to_string(o.chains) + " needs at least " +
                                std::to_string(o.chains) + " MPI ranks (one per chain), got " +
                                std::to_string(world_size()));
  check_sampler_arguments(o);
  sample_command_options no_file = o;  // the metric file is read once the model's size is known
  no_file.metric_file.clear();
  check_sample_options(chain_options(no_file, 1, 1));
}

/// Rank 0, before any cluster exists, so that a bad file ends every rank alike: the model and its data, the
/// metric and init files, and the run's first lines.
std::shared_ptr<sample_model> prepare_on_root(const sample_command_options& o) {
  const std::shared_ptr<sample_model> model = make_sample_model(o);
  if (!o.metric_file.empty()) read_metric_file(o.metric_file, parse_metric(o.metric), model->size);
  const init_option init = parse_init(o.init);
  if (!init.file.empty())  // a bad init file ends the run here, before any chain starts
    for (const std::string& name : check_init_file(*model->model, init.file))
      std::printf("maprect sample: note: %s: '%s' is not a variable of %s (ignored)\n", init.file.c_str(),
                  name.c_str(), o.model.c_str());
  const std::string warning = window_warning(o);
  if (!warning.empty()) std::printf("%s\n", warning.c_str());
  std::printf("maprect sample: %s, %d parameters, %d chain%s on %d rank%s\n", model->description.c_str(),
              model->size, o.chains, o.chains == 1 ? "" : "s", world_size(), world_size() == 1 ? "" : "s");
  std::fflush(stdout);
  return model;
}

}  // namespace

int run_sample(const sample_command_options& o, const std::string& invocation) {
  check_arguments(o);
  catch_interruptions();
  std::shared_ptr<sample_model> model;
  std::string failure;
  if (world_rank() == 0) {
    try {
      model = prepare_on_root(o);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  if (!agree(failure.empty())) {
    print_error(failure);
    return 1;
  }
  output_lock lock;  // held until the run ends: one writer per output directory
  const std::string locked = lock_output_dir(o.output_dir, o.chains, lock);
  if (!locked.empty()) {
    print_error(locked);
    return 1;
  }
  chain_record mine;
  const std::vector<chain_outcome> outcomes =
      run_chains(MPI_COMM_WORLD, o.chains, [&](const chain_group& g, const std::function<void()>& stop_check) {
        run_one_chain(o, g, stop_check, mine);
      });
  std::string failures;
  for (const chain_outcome& c : outcomes)
    if (c.failed && is_interruption(c.message)) return agree(report_interruption(o, model.get(), outcomes, invocation));
  for (const chain_outcome& c : outcomes)
    if (c.failed) failures += (failures.empty() ? "" : "; ") + std::string("chain ") + std::to_string(c.chain) +
                              " failed: " + c.message;
  if (!failures.empty()) {
    print_error(failures);
    return 1;
  }
  const std::vector<int> roots = chain_roots(world_size(), o.chains);
  const int rank = world_rank();
  if (rank != 0) {
    for (int c = 1; c < o.chains; ++c)
      if (roots[c] == rank) send_record(mine);
    return agree(0);
  }
  std::vector<chain_record> records = {mine};
  for (int c = 1; c < o.chains; ++c) records.push_back(receive_record(roots[c]));
  int code = 0;
  try {
    report(o, *model, records);
    if (o.plot) plot(o, *model);
  } catch (const std::exception& e) {
    print_error(e.what());
    code = 1;
  }
  return agree(code);
}

}  // namespace maprect::cli
