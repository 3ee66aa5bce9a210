#pragma once
/// \file MAPRECT_REVERSE: whether an in-process map_rect call with var arguments runs its jobs' reverse passes at
/// call time (eager) or keeps their tapes and sweeps them when grad() reaches the call (deferred), and the cost
/// model `auto` chooses by.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace maprect::detail {

/// How a call's reverse pass runs.
enum class reverse_mode : int {
  automatic = 0,  ///< per call site, from the shape of its last call (reverse_site, deferred_pays)
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

/// The most a deferred call may keep on its ranks' tapes under `auto`, estimated as its eager partials: above it
/// the call runs eager, whose job tapes are rewound job by job.
constexpr long long auto_kept_bytes_max = 1LL << 30;

/// The node visits one more round trip costs, for deferred_pays: about 50 us, a round trip between hosts over TCP.
constexpr double auto_round_trip_visits = 1 << 14;

/// Whether deferred would pay for a call of `n_outputs` outputs K over `n_jobs` jobs J with `n_var_params` var
/// parameters per job (M, shared ones included). Eager moves K(M+1) doubles (each output's value and partials)
/// and sweeps each job's graph once per output; deferred moves 2K + M per job (values forward, adjoints back, the
/// parameters' adjoints), sweeps each graph once, and costs one more round trip. It pays when eager moves at least
/// twice as much, K(M+1) >= 2(2K + MJ), or when the sweeps it saves, at least K(K/J - 1) node visits (a job's
/// graph holds at least its K/J outputs), outweigh a round trip; and while the partials it stands for fit in
/// auto_kept_bytes_max. The standard model (K/J = 1, M = 4: 5 against 12 doubles, no sweep saved) stays eager.
constexpr bool deferred_pays(long long n_outputs, long long n_jobs, long long n_var_params) {
  const double k = static_cast<double>(n_outputs), j = static_cast<double>(n_jobs);
  const bool bytes = n_outputs * (n_var_params + 1) >= 2 * (2 * n_outputs + n_var_params * n_jobs);
  const bool sweeps = n_jobs > 0 && k * (k / j - 1) >= auto_round_trip_visits;
  return (bytes || sweeps) && k * static_cast<double>(n_var_params + 1) * 8 <= static_cast<double>(auto_kept_bytes_max);
}

/// Bumped by forget_reverse_choices_for_tests (src/cluster/test_hooks.hpp): every site's record names an older
/// count, so it matches no call.
inline std::atomic<std::uint64_t> reverse_choice_epoch{0};

/// What `auto` knows of one call site: the jobs J and var parameters M of its last call with var arguments,
/// whether that call ran deferred, and whether its outputs made deferred pay. A call of the same J and M runs as
/// the last one chose; a new shape runs eager, since its outputs are not known before it runs. It depends on the
/// sequence of the site's calls only, so that one run of a program chooses alike in process and on any ranks and
/// threads. One word, so that a thread never reads half of another's record.
class reverse_site {
 public:
  /// The mode a call of J jobs with M var parameters per job runs in: MAPRECT_REVERSE's, or under `auto` the
  /// site's choice.
  reverse_mode mode(int n_jobs, long long n_var_params) const {
    const reverse_mode set = reverse_setting();
    if (__builtin_expect(set != reverse_mode::automatic, 0)) return set;
    const std::uint64_t last = word_.load(std::memory_order_relaxed);
    if ((last >> 2) != key(n_jobs, n_var_params)) return reverse_mode::eager;
    return (last & 1) != 0 ? reverse_mode::deferred : reverse_mode::eager;
  }
  /// Records a call of J jobs with M var parameters per job that ran in `ran` and returned `n_outputs` outputs.
  void record(int n_jobs, long long n_var_params, reverse_mode ran, long long n_outputs) {
    const std::uint64_t word = key(n_jobs, n_var_params) << 2 | (ran == reverse_mode::deferred ? 2u : 0u) |
                               (deferred_pays(n_outputs, n_jobs, n_var_params) ? 1u : 0u);
    if (word_.load(std::memory_order_relaxed) != word) word_.store(word, std::memory_order_relaxed);
  }
  /// Whether the site's last recorded call ran deferred, so that its reverse pass runs when grad() reaches it.
  bool last_ran_deferred() const { return (word_.load(std::memory_order_relaxed) & 2) != 0; }

 private:
  /// J, M and the epoch mixed into 62 bits, never zero, so that no shape matches a site never called.
  static std::uint64_t key(int n_jobs, long long n_var_params) {
    std::uint64_t h = static_cast<std::uint64_t>(n_jobs) << 40 ^ static_cast<std::uint64_t>(n_var_params) ^
                      reverse_choice_epoch.load(std::memory_order_relaxed) * 0x9e3779b97f4a7c15ULL;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;  // splitmix64's finaliser
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    return (h ^ (h >> 31)) >> 2 | 1;
  }
  std::atomic<std::uint64_t> word_{0};
};

/// The `auto` record of call site CallId, shared by every argument kind and every thread that calls it.
template <int CallId>
inline reverse_site reverse_site_of;

}  // namespace maprect::detail
