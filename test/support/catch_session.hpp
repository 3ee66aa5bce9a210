#pragma once
/// Runs Catch2 on the command line; returns the number of failed assertions (capped at 255).
int run_catch_session(int argc, char** argv);
