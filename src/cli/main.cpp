// maprect: sample, fit and summarise the built-in models, benchmarks and the cost model's plan over MPI ranks. SPMD:
// every rank runs this main; arguments are parsed everywhere before any communication, so bad arguments end
// every rank at once with the same code.
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "program.hpp"
#include "spmd.hpp"

int main(int argc, char** argv) {
  using namespace maprect::cli;
  mpi_session mpi(argc, argv);
  const std::string invocation = command_line(argc, argv);

  CLI::App app{"maprect: gradients of statistical models by map_rect over MPI ranks"};
  app.require_subcommand(1);
  program_commands commands;
  add_program_commands(app, commands, false);  // plan: the built-in call sites, below
  bench_options bench;
  CLI::App* bench_command =
      app.add_subcommand("bench", "benchmark matrix of the standard model: analytic, single tape, in process, cluster");
  add_bench_options(*bench_command, bench);
  plan_options plan;
  CLI::App* plan_command =
      app.add_subcommand("plan", "predicted time per gradient at 1 ... 1024 ranks, from figures measured here");
  add_plan_options(*plan_command, plan);

  return parse_and_run(app, argc, argv, [&] {
    int code = 0;
    if (run_program_command(commands, invocation, code)) return code;
    if (plan_command->parsed()) return run_plan(plan, invocation);
    return run_bench(bench, invocation);
  });
}
