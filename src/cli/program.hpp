#pragma once
// The commands every program built on maprect has (sample, fit, summary) for the models registered in it, and the
// argument handling they share with the maprect program's own main.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "commands.hpp"

namespace maprect::cli {

/// The subcommands of a model program and their options.
struct program_commands {
  fit_options fit;                        ///< fit's options
  sample_command_options sample;          ///< sample's options
  summary_command_options summary;        ///< summary's options
  CLI::App* fit_command = nullptr;        ///< the fit subcommand
  CLI::App* sample_command = nullptr;     ///< the sample subcommand
  CLI::App* summary_command = nullptr;    ///< the summary subcommand
};

/// Adds `sample`, `fit` and `summary` to the program.
void add_program_commands(CLI::App& app, program_commands& commands);
/// Runs whichever of sample, fit and summary was parsed; returns false when none was.
bool run_program_command(const program_commands& commands, const std::string& invocation, int& code);
/// Parses the arguments (on every rank) and runs `run`: a parse error is exit code 2 with one error line, a
/// std::invalid_argument from `run` too, any other exception 1; --help prints on rank 0 and returns 0.
int parse_and_run(CLI::App& app, int argc, char** argv, const std::function<int()>& run);
/// main() of a model program: sample, fit and summary for the registered models (MAPRECT_REGISTER_MODEL).
int run_model_program(int argc, char** argv);

}  // namespace maprect::cli
