// Reading MAPRECT_* from the environment (the ranks agree on the root's reading: src/protocol/start_up.cpp).
#include "src/cluster/settings.hpp"

#include "src/plan/cost_model.hpp"

#include <cstdlib>
#include <cstring>
#include <maprect/detail/thread_count.hpp>
#include <stdexcept>
#include <string>

namespace maprect::detail {

namespace {

/// MAPRECT_THREADS, or what the program asked in code instead: a count, or threads_auto.
int read_threads(int asked, int rank, std::string& error) {
  if (asked == threads_auto) return threads_auto;
  if (asked != threads_from_environment) {
    if (asked >= 1 && asked <= max_thread_count) return asked;
    error = "maprect::cluster: options.threads must be 0 (MAPRECT_THREADS decides), -1 (auto) or a thread count "
            "from 1 to " + std::to_string(max_thread_count) + ", not " + std::to_string(asked);
    return 1;
  }
  const char* v = std::getenv("MAPRECT_THREADS");
  if (v != nullptr && std::strcmp(v, "auto") == 0) return threads_auto;
  try {
    return parse_thread_count(v, rank, 1, 1);
  } catch (const std::invalid_argument& e) {
    error = e.what();
    const std::string suffix = " (rank " + std::to_string(rank) + ")";  // added once, with the others'
    if (error.size() >= suffix.size() && error.compare(error.size() - suffix.size(), suffix.size(), suffix) == 0)
      error.erase(error.size() - suffix.size());
    return 1;
  }
}

/// Variable `name`, when set, into `value`: a whole number from `least` to 10^6, else `error` says it must be
/// `what`.
void read_rank_number(const char* name, long least, const char* what, int& value, std::string& error) {
  const char* v = std::getenv(name);
  if (v == nullptr || v[0] == '\0') return;
  char* end = nullptr;
  const long k = std::strtol(v, &end, 10);
  if (*end != '\0' || k < least || k > 1000000)
    error = std::string(name) + " must be " + what + ", not '" + v + "'";
  else
    value = static_cast<int>(k);
}

/// MAPRECT_COLLECTIVES, MAPRECT_TEST_HOST_RANKS and MAPRECT_TEST_HOLD_RANK into `e`.
void read_collectives(environment_reading& e) {
  if (const char* v = std::getenv("MAPRECT_COLLECTIVES"); v != nullptr && v[0] != '\0') {
    if (std::strcmp(v, "flat") == 0) e.collectives = static_cast<int>(plan::gather_kind::flat);
    else if (std::strcmp(v, "tree") == 0) e.collectives = static_cast<int>(plan::gather_kind::tree);
    else if (std::strcmp(v, "hierarchical") == 0) e.collectives = static_cast<int>(plan::gather_kind::hierarchical);
    else if (std::strcmp(v, "auto") != 0)
      e.error = std::string("MAPRECT_COLLECTIVES must be auto, flat, tree or hierarchical, not '") + v + "'";
  }
  read_rank_number("MAPRECT_TEST_HOST_RANKS", 1, "a rank count of at least 1", e.test_host_ranks, e.error);
  read_rank_number("MAPRECT_TEST_HOLD_RANK", 0, "a rank", e.test_held_rank, e.error);
}

}  // namespace

environment_reading read_environment(int threads_asked, int rank) {
  environment_reading e;
  if (const char* v = std::getenv("MAPRECT_WAIT"); v != nullptr && v[0] != '\0') {
    if (std::strcmp(v, "spin") == 0) e.policy = static_cast<int>(wait_policy::spin);
    else if (std::strcmp(v, "sleep") == 0) e.policy = static_cast<int>(wait_policy::sleep);
    else if (std::strcmp(v, "auto") != 0) e.error = std::string("MAPRECT_WAIT must be spin, sleep or auto, not '") + v + "'";
  }
  // MAPRECT_TIMEOUT=<seconds>: the root aborts the job, naming the late ranks, when a call's workers
  // have not all answered that long after it started (unset or 0: wait forever).
  if (const char* v = std::getenv("MAPRECT_TIMEOUT"); v != nullptr && v[0] != '\0') {
    char* end = nullptr;
    e.timeout = std::strtod(v, &end);
    if (*end != '\0' || !(e.timeout >= 0) || e.timeout > 1e9) {
      e.error = std::string("MAPRECT_TIMEOUT must be a number of seconds, not '") + v + "'";
      e.timeout = 0;
    }
  }
  if (const char* v = std::getenv("MAPRECT_BALANCE"); v != nullptr && v[0] != '\0') {
    if (std::strcmp(v, "static") == 0 || std::strcmp(v, "even") == 0) e.balance = balance_mode::static_share;
    else if (std::strcmp(v, "hosts") == 0) e.host_transport = false;  // auto, every claim by message
    else if (std::strcmp(v, "auto") != 0)
      e.error = std::string("MAPRECT_BALANCE must be auto, static, even or hosts, not '") + v + "'";
  }
  if (const char* v = std::getenv("MAPRECT_TRANSPORT"); v != nullptr && v[0] != '\0') {
    if (std::strcmp(v, "messages") == 0) e.host_transport = false;
    else if (std::strcmp(v, "auto") != 0)
      e.error = std::string("MAPRECT_TRANSPORT must be auto or messages, not '") + v + "'";
  }
  read_collectives(e);
  std::string threads_error;
  e.threads = read_threads(threads_asked, rank, threads_error);
  if (!threads_error.empty()) e.error = threads_error;
  return e;
}

}  // namespace maprect::detail
