#pragma once
/// \file A failing slice of reduce_sum, named as a failing job of map_rect is: the same standard type, the
/// original message, and where it ran (rank < 0: in process).

#include <stdexcept>
#include <string>

#include "job_error.hpp"
#include "reduce_layout.hpp"

namespace maprect::detail {

/// Throws `e` as its standard type, naming the call id, slice s, its terms [start, end] (end inclusive, as
/// the functor sees them) and the rank that ran it (rank < 0: in process).
[[noreturn]] inline void throw_slice_error(const job_error& e, int call_id, const slice_plan& plan, int s, int rank) {
  const std::string where = rank < 0 ? " in process" : " on rank " + std::to_string(rank);
  throw_as(e.type, "reduce_sum: call id " + std::to_string(call_id) + ", slice " + std::to_string(s) + " (terms [" +
                       std::to_string(plan.begin(s)) + ", " + std::to_string(plan.end(s) - 1) + "])" + where +
                       " failed: " + e.message);
}

}  // namespace maprect::detail
