// The signal flag and the chains' stopping point. The handler does nothing but store the signal number, which
// is all a handler may safely do; SA_RESETHAND restores the default action for a second signal.
#include "interrupt.hpp"

#include <csignal>
#include <cstring>

namespace maprect::cli {

namespace {

volatile std::sig_atomic_t caught_signal = 0;

extern "C" void remember_signal(int signal) { caught_signal = signal; }

const char interruption_prefix[] = "interrupted by ";

}  // namespace

void catch_interruptions() {
  struct sigaction action {};
  action.sa_handler = remember_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int interruption() { return caught_signal; }

chain_interrupted::chain_interrupted(int signal)
    : std::runtime_error(std::string(interruption_prefix) + (signal == SIGINT ? "SIGINT" : "SIGTERM")) {}

bool is_interruption(const std::string& message) { return message.rfind(interruption_prefix, 0) == 0; }

void stop_point(const std::function<void()>& stop_check, const std::function<void()>& save) {
  if (const int signal = interruption()) {
    save();
    throw chain_interrupted(signal);
  }
  try {
    stop_check();
  } catch (...) {
    save();
    throw;
  }
}

}  // namespace maprect::cli
