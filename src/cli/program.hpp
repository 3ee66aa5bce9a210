#pragma once
// The commands every program built on maprect has (sample, fit, summary, plan) for the models registered in it, and the
// argument handling they share with the maprect program's own main.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "commands.hpp"
#include "plan_commands.hpp"

namespace maprect::cli {

/// The subcommands of a model program and their options.
struct program_commands {
  fit_options fit;                        ///< fit's options
  sample_command_options sample;          ///< sample's options
  summary_command_options summary;        ///< summary's options
  plan_options plan;                      ///< plan's options (a registered model's)
  CLI::App* fit_command = nullptr;        ///< the fit subcommand
  CLI::App* sample_command = nullptr;     ///< the sample subcommand
  CLI::App* summary_command = nullptr;    ///< the summary subcommand
  CLI::App* plan_command = nullptr;       ///< the plan subcommand of a registered model; null in maprect
};

/// Adds `sample`, `fit` and `summary` to the program, and with `model_plan` `plan` for a registered model
/// (the maprect program has a plan of its own, for its built-in call sites).
void add_program_commands(CLI::App& app, program_commands& commands, bool model_plan = true);
/// Runs whichever of sample, fit, summary and plan was parsed; returns false when none was.
bool run_program_command(const program_commands& commands, const std::string& invocation, int& code);
/// Parses the arguments (on every rank) and runs `run`: a parse error is exit code 2 with one error line, a
/// std::invalid_argument from `run` too, any other exception 1; --help prints on rank 0 and returns 0.
int parse_and_run(CLI::App& app, int argc, char** argv, const std::function<int()>& run);
/// main() of a model program: sample, fit, summary and plan for the registered models (MAPRECT_REGISTER_MODEL).
int run_model_program(int argc, char** argv);

}  // namespace maprect::cli
