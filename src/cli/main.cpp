// maprect: MAP fits and benchmarks of map_rect over MPI ranks. SPMD: every rank runs this main; arguments are
// parsed everywhere before any communication, so bad arguments end every rank at once with the same code.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "commands.hpp"
#include "spmd.hpp"

int main(int argc, char** argv) {
  using namespace maprect::cli;
  mpi_session mpi(argc, argv);
  const std::string invocation = command_line(argc, argv);

  CLI::App app{"maprect: gradients of statistical models by map_rect over MPI ranks"};
  app.require_subcommand(1);
  fit_options fit;
  bench_options bench;
  CLI::App* fit_command =
      app.add_subcommand("fit", "MAP fit with L-BFGS; every gradient is one distributed map_rect call");
  add_fit_options(*fit_command, fit);
  CLI::App* bench_command =
      app.add_subcommand("bench", "benchmark matrix of the standard model: analytic, single tape, in process, cluster");
  add_bench_options(*bench_command, bench);
  sample_command_options sample;
  CLI::App* sample_command = app.add_subcommand(
      "sample", "posterior draws with NUTS; chains on groups of ranks, Stan CSV per chain, a summary at the end");
  add_sample_options(*sample_command, sample);
  summary_command_options summary;
  CLI::App* summary_command = app.add_subcommand(
      "summary", "posterior summary of Stan CSV files (one per chain), as CmdStan's stansummary");
  add_summary_options(*summary_command, summary);
  plan_options plan;
  CLI::App* plan_command =
      app.add_subcommand("plan", "predicted time per gradient at 1 ... 1024 ranks, from figures measured here");
  add_plan_options(*plan_command, plan);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help
      if (world_rank() == 0) app.exit(e);
      return 0;
    }
    print_error(std::string(e.what()) + " (see maprect --help)");
    return 2;
  }
  try {
    if (fit_command->parsed()) return run_fit(fit, invocation);
    if (sample_command->parsed()) return run_sample(sample, invocation);
    if (plan_command->parsed()) return run_plan(plan, invocation);
    if (summary_command->parsed()) return run_summary(summary);
    return run_bench(bench, invocation);
  } catch (const std::invalid_argument& e) {  // arguments CLI11 cannot check alone
    print_error(e.what());
    return 2;
  } catch (const std::exception& e) {
    // Reached only before any collective step (the commands catch their own failures later on), so every
    // rank fails here alike.
    print_error(e.what());
    return 1;
  }
}
