// main() of a program built with maprect_add_program: the model program's commands for the models its own
// sources register with MAPRECT_REGISTER_MODEL.
#include "program.hpp"

int main(int argc, char** argv) { return maprect::cli::run_model_program(argc, argv); }
