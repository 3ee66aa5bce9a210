#pragma once
// Included by a test file whose calls must go by claims by message wherever the ranks span hosts: its program's
// main judges claims to pay for calls of any length (judge_claims_at_round_trip(0)) before any test runs.
// Across real hosts a call shorter than claims_round_trips round trips runs by the static split under auto,
// which test_auto_claims covers; these files test the claims themselves.
#include "support/mpi_test.hpp"

namespace maprect::test {

/// Set before main by including this header; read by the MPI test main.
inline const bool claims_pay_pinned_here = (claims_pay_pinned = true);

}  // namespace maprect::test
