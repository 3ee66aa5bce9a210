// Catch2's implementation, compiled once for every test binary (the mains live beside it).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
