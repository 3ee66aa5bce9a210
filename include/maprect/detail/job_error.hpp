#pragma once
/// \file A job's exception as plain data (a type code and a message), and back: the same on every rank
/// and in process, so a failure reads the same however the call ran.
#include <exception>
#include <string>

namespace maprect::detail {

/// Standard exception types that cross ranks as themselves; anything else becomes runtime_error.
enum class error_type : int {
  runtime_error = 0,
  domain_error,
  invalid_argument,
  out_of_range,
  range_error,
  overflow_error,
  underflow_error,
  length_error,
  logic_error,
};

/// A job's failure as data.
struct job_error {
  error_type type = error_type::runtime_error;
  std::string message;  ///< what() of the original exception
};

/// Classifies the exception in flight (call inside a catch block).
job_error current_job_error();

/// Throws `what` as the standard exception type `type`.
[[noreturn]] void throw_as(error_type type, const std::string& what);

/// Throws `e` as its standard type, with a message naming the job and the rank (rank < 0: in process).
[[noreturn]] void throw_job_error(const job_error& e, int job, int rank);

}  // namespace maprect::detail
