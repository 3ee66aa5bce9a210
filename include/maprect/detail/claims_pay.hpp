#pragma once
/// \file When claims by message pay under MAPRECT_BALANCE=auto: one rule for eager and deferred calls, the
/// runtime's choice and maprect plan's.

namespace maprect::detail {

/// Round trips to the farthest worker that a call must last for claims by message to pay. They cost about five
/// (the asks and answers, the last empty ask, the results apart from a gather) and remove what one rank's being
/// slower costs, some 15% of a call on shared or unequal cores.
constexpr double claims_round_trips = 32;

/// Whether a call site whose last call lasted `call_s` seconds claims by message, `round_trip_s` the round trip
/// to its farthest worker.
constexpr bool claims_pay(double call_s, double round_trip_s) { return call_s >= claims_round_trips * round_trip_s; }

}  // namespace maprect::detail
