#pragma once
// Included by a test file whose calls must go by claims by message wherever the ranks span hosts, and grant
// whatever jobs are left: its program's main pins every rank's round trips at zero (pin_round_trips(0)) before
// its cluster starts. Across real hosts a call shorter than claims_round_trips round trips runs by the static
// split under auto, which test_auto_claims covers; these files test the claims themselves. Measured round
// trips would make those expectations depend on the load: on cores shared with other tests, the shortest of
// the start-up round trips can reach milliseconds, an owner then refuses batches of its 3 ms jobs as not worth
// a round trip, and a job that waits to be relieved waits in vain.
#include "support/mpi_test.hpp"

namespace maprect::test {

/// Set before main by including this header; read by the MPI test main.
inline const bool claims_pay_pinned_here = (claims_pay_pinned = true);

}  // namespace maprect::test
