// Main of the single-process tests.
#include "support/catch_session.hpp"

int main(int argc, char** argv) { return run_catch_session(argc, argv); }
