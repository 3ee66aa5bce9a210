// MAPRECT_THREADS: 1 by default, a count, or auto (the CPUs of the affinity mask shared among the ranks
// on them); anything else is std::invalid_argument naming the variable, the value and the rank.
#include <catch2/catch.hpp>

#include <maprect/detail/thread_count.hpp>

#include "support/matchers.hpp"

using maprect::detail::parse_thread_count;
using maprect::test::message_contains;

TEST_CASE("MAPRECT_THREADS unset or empty is one thread") {
  CHECK(parse_thread_count(nullptr, 0, 16, 1) == 1);
  CHECK(parse_thread_count("", 3, 16, 1) == 1);
}

TEST_CASE("MAPRECT_THREADS=N is N threads") {
  CHECK(parse_thread_count("1", 0, 2, 1) == 1);
  CHECK(parse_thread_count("4", 0, 2, 1) == 4);  // more threads than CPUs is the user's choice
  CHECK(parse_thread_count("007", 0, 2, 1) == 7);
  CHECK(parse_thread_count("1024", 0, 2, 1) == 1024);
}

TEST_CASE("MAPRECT_THREADS=auto divides the mask's CPUs among the ranks that share them") {
  CHECK(parse_thread_count("auto", 0, 16, 1) == 16);
  CHECK(parse_thread_count("auto", 0, 16, 4) == 4);
  CHECK(parse_thread_count("auto", 1, 16, 3) == 5);
  CHECK(parse_thread_count("auto", 0, 2, 4) == 1);  // oversubscribed: never fewer than one
  CHECK(parse_thread_count("auto", 0, 2, 0) == 2);
}

TEST_CASE("a bad MAPRECT_THREADS names the variable, the value and the rank") {
  for (const char* bad : {"0", "-2", "+3", "2.5", "4x", " 4", "AUTO", "two", "1025", "99999999999999999999"}) {
    INFO("value " << bad);
    CHECK_THROWS_MATCHES(parse_thread_count(bad, 3, 8, 1), std::invalid_argument,
                         message_contains({"MAPRECT_THREADS", std::string("'") + bad + "'", "(rank 3)"}));
  }
}

TEST_CASE("the affinity mask has at least one CPU") {
  CHECK(maprect::detail::cpus_in_affinity_mask() >= 1);
}
