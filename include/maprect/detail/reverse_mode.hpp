#pragma once
/// \file MAPRECT_REVERSE: whether an in-process map_rect call with var arguments runs its jobs' reverse passes at
/// call time (eager) or keeps their tapes and sweeps them when grad() reaches the call (deferred), and the cost
/// model `auto` chooses by.

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace maprect::detail {

/// How a call's reverse pass runs.
enum class reverse_mode : int {
  automatic = 0,  ///< eager for now: one process and any ranks give the same bits (see deferred_pays)
  eager = 1,      ///< every job's forward and reverse at call time; outputs carry precomputed partials
  deferred = 2    ///< forward only at call time; the jobs' kept tapes are swept when grad() reaches the call
};

/// The mode a MAPRECT_REVERSE value names (unset or empty: automatic); throws std::invalid_argument otherwise.
inline reverse_mode parse_reverse_mode(const char* value) {
  if (value == nullptr || *value == '\0' || std::strcmp(value, "auto") == 0) return reverse_mode::automatic;
  if (std::strcmp(value, "eager") == 0) return reverse_mode::eager;
  if (std::strcmp(value, "deferred") == 0) return reverse_mode::deferred;
  throw std::invalid_argument(std::string("MAPRECT_REVERSE must be auto, eager or deferred, not '") + value + "'");
}

/// The setting as read, or -1 before the first read. Relaxed: every thread parses the same environment.
inline std::atomic<int> reverse_setting_cache{-1};

/// Reads MAPRECT_REVERSE and caches it; an invalid value is not cached, so every call reports it.
__attribute__((noinline)) inline reverse_mode read_reverse_setting() {
  const reverse_mode mode = parse_reverse_mode(std::getenv("MAPRECT_REVERSE"));
  reverse_setting_cache.store(static_cast<int>(mode), std::memory_order_relaxed);
  return mode;
}

/// MAPRECT_REVERSE, read from the environment at the first call that needs it and cached after: one load.
inline reverse_mode reverse_setting() {
  const int cached = reverse_setting_cache.load(std::memory_order_relaxed);
  if (__builtin_expect(cached >= 0, 1)) return static_cast<reverse_mode>(cached);
  return read_reverse_setting();
}

/// Tests only: later calls run as if MAPRECT_REVERSE were `value`; null forgets the cached setting, so the next
/// call reads the environment again. Throws like the setting for an invalid value.
inline void set_reverse_mode_for_tests(const char* value) {
  const int mode = value == nullptr ? -1 : static_cast<int>(parse_reverse_mode(value));
  reverse_setting_cache.store(mode, std::memory_order_relaxed);
}

/// Tests and benchmarks only: runs its scope as if MAPRECT_REVERSE were `value` (set_reverse_mode_for_tests), then
/// puts back the setting as it was.
class reverse_mode_scope {
 public:
  explicit reverse_mode_scope(const char* value) : saved_(reverse_setting_cache.load(std::memory_order_relaxed)) {
    set_reverse_mode_for_tests(value);
  }
  ~reverse_mode_scope() { reverse_setting_cache.store(saved_, std::memory_order_relaxed); }
  reverse_mode_scope(const reverse_mode_scope&) = delete;
  reverse_mode_scope& operator=(const reverse_mode_scope&) = delete;

 private:
  int saved_;
};

/// Whether deferred would pay for a call of `n_outputs` outputs over `n_jobs` jobs with `n_var_params` var
/// parameters per job (M, shared ones included): per job, eager moves K(M+1) doubles (each output's value and
/// partials) and deferred 2K + M (values forward, adjoints back, the parameters' adjoints), plus one more pass
/// over the jobs. It pays when eager costs at least twice as much: K(M+1) >= 2(2K + M), which no K meets below
/// M = 4, and which keeps the standard model (K = 1, M = 4: 5 against 12) eager. `auto` will choose by it once
/// calls over a cluster run deferred; until then it runs eager, so that every way of running gives one answer.
constexpr bool deferred_pays(long long n_outputs, long long n_jobs, long long n_var_params) {
  return n_outputs * (n_var_params + 1) >= 2 * (2 * n_outputs + n_var_params * n_jobs);
}

}  // namespace maprect::detail
