// The commands of a model program: sample, fit, summary and plan over the registered models, with the argument handling
// of every maprect program (SPMD: every rank parses the same arguments before any communication).
#include "program.hpp"

#include <cstdio>
#include <filesystem>

#include "spmd.hpp"

namespace maprect::cli {

void add_program_commands(CLI::App& app, program_commands& c, bool model_plan) {
  c.fit_command = app.add_subcommand("fit", "MAP fit with L-BFGS; every gradient is one distributed map_rect call");
  add_fit_options(*c.fit_command, c.fit);
  c.sample_command = app.add_subcommand(
      "sample", "posterior draws with NUTS; chains on groups of ranks, Stan CSV per chain, a summary at the end");
  add_sample_options(*c.sample_command, c.sample);
  c.summary_command = app.add_subcommand(
      "summary", "posterior summary of Stan CSV files (one per chain), as CmdStan's stansummary");
  add_summary_options(*c.summary_command, c.summary);
  if (!model_plan) return;
  c.plan_command = app.add_subcommand(
      "plan", "predicted time per gradient at 1 ... 1024 ranks of a model's map_rect call site, measured here");
  add_model_plan_options(*c.plan_command, c.plan);
}

bool run_program_command(const program_commands& c, const std::string& invocation, int& code) {
  if (c.fit_command->parsed()) {
    code = run_fit(c.fit, invocation);
    return true;
  }
  if (c.sample_command->parsed()) {
    code = run_sample(c.sample, invocation);
    return true;
  }
  if (c.summary_command->parsed()) {
    code = run_summary(c.summary);
    return true;
  }
  if (c.plan_command != nullptr && c.plan_command->parsed()) {
    code = run_model_plan(c.plan, invocation);
    return true;
  }
  return false;
}

int parse_and_run(CLI::App& app, int argc, char** argv, const std::function<int()>& run) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help
      if (world_rank() == 0) app.exit(e);
      return 0;
    }
    const std::string program = argc > 0 ? std::filesystem::path(argv[0]).filename().string() : "maprect";
    print_error(std::string(e.what()) + " (see " + program + " --help)");
    return 2;
  }
  try {
    return run();
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

int run_model_program(int argc, char** argv) {
  mpi_session mpi(argc, argv);
  const std::string invocation = command_line(argc, argv);
  CLI::App app{"sample, fit, summarise or plan your models with maprect: map_rect over MPI ranks"};
  app.require_subcommand(1);
  program_commands commands;
  add_program_commands(app, commands);
  return parse_and_run(app, argc, argv, [&] {
    int code = 0;
    run_program_command(commands, invocation, code);
    return code;
  });
}

}  // namespace maprect::cli
