#pragma once
// SIGINT and SIGTERM during `maprect sample`: the handler only sets a flag; each chain checks it between
// iterations, writes a checkpoint and stops, the other chains stop at their next iteration likewise, and every
// rank leaves through the normal shutdown, so that --resume continues with the same draws.
#include <functional>
#include <stdexcept>
#include <string>

namespace maprect::cli {

/// Catches SIGINT and SIGTERM from now on: the first of them sets the flag that interruption() reads; a second
/// signal acts as if none were caught (it ends the process at once).
void catch_interruptions();

/// The signal caught (SIGINT or SIGTERM), 0 when none was.
int interruption();

/// Thrown by a chain that stops because the process caught a signal.
struct chain_interrupted : std::runtime_error {
  /// Names the signal.
  explicit chain_interrupted(int signal);
};

/// Whether a chain's failure message is that of chain_interrupted.
bool is_interruption(const std::string& message);

/// The place between two iterations where a chain may stop: after a signal it calls save() (the checkpoint)
/// and throws chain_interrupted; when stop_check() throws (another chain stopped) it calls save() and lets the
/// exception through.
void stop_point(const std::function<void()>& stop_check, const std::function<void()>& save);

}  // namespace maprect::cli
