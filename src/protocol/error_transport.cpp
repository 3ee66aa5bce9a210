// Rebuilds a job's exception on the root with its type, message, job and rank.
#include <maprect/detail/job_error.hpp>

#include <stdexcept>

namespace maprect::detail {

job_error current_job_error() {
  try {
    throw;
  } catch (const std::domain_error& e) {  // derived types before their bases
    return {error_type::domain_error, e.what()};
  } catch (const std::invalid_argument& e) {
    return {error_type::invalid_argument, e.what()};
  } catch (const std::out_of_range& e) {
    return {error_type::out_of_range, e.what()};
  } catch (const std::length_error& e) {
    return {error_type::length_error, e.what()};
  } catch (const std::logic_error& e) {
    return {error_type::logic_error, e.what()};
  } catch (const std::range_error& e) {
    return {error_type::range_error, e.what()};
  } catch (const std::overflow_error& e) {
    return {error_type::overflow_error, e.what()};
  } catch (const std::underflow_error& e) {
    return {error_type::underflow_error, e.what()};
  } catch (const std::exception& e) {
    return {error_type::runtime_error, e.what()};
  } catch (...) {
    return {error_type::runtime_error, "unknown exception"};
  }
}

void throw_as(error_type type, const std::string& what) {
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

void throw_job_error(const job_error& e, int job, int rank) {
  const std::string where = rank < 0 ? "" : " on rank " + std::to_string(rank);
  throw_as(e.type, "map_rect: job " + std::to_string(job) + where + " failed: " + e.message);
}

}  // namespace maprect::detail
