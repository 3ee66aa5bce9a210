#pragma once
/// \file A failing slice of reduce_sum, named as a failing job of map_rect is: the same standard type, the
/// original message, and where it ran (rank < 0: in process).

#include <stdexcept>
#include <string>

#include "job_error.hpp"
#include "reduce_layout.hpp"

namespace maprect::detail {

/// Throws `what` as the standard exception type `type`.
[[noreturn]] inline void throw_as(error_type type, const std::string& what) {
  switch (type) {
    case error_type::domain_error: throw std::domain_error(what);
    case error_type::invalid_argument: throw std::invalid_argument(what);
    case error_type::out_of_range: throw std::out_of_range(what);
    case error_type::range_error: throw std::range_error(what);
    case error_type::overflow_error: throw std::overflow_error(what);
    case error_type::underflow_error: throw std::underflow_error(what);
    case error_type::length_error: throw std::length_error(what);
    case error_type::logic_error: throw std::logic_error(what);
    case error_type::runtime_error: break;
  }
  throw std::runtime_error(what);
}

/// Throws `e` as its standard type, naming the call id, slice s, its terms [start, end] (end inclusive, as
/// the functor sees them) and the rank that ran it (rank < 0: in process).
[[noreturn]] inline void throw_slice_error(const job_error& e, int call_id, const slice_plan& plan, int s, int rank) {
  const std::string where = rank < 0 ? " in process" : " on rank " + std::to_string(rank);
  throw_as(e.type, "reduce_sum: call id " + std::to_string(call_id) + ", slice " + std::to_string(s) + " (terms [" +
                       std::to_string(plan.begin(s)) + ", " + std::to_string(plan.end(s) - 1) + "])" + where +
                       " failed: " + e.message);
}

}  // namespace maprect::detail
