#pragma once
/// \file What every fuzz target shares: the input as text or as a file on disk, and the check that an error is
/// the one-line error the reader promises (docs/reliability.md#bad-input). A broken promise aborts, which
/// libFuzzer (and the replay driver) reports as a finding with the input that caused it.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>

namespace maprect::fuzz {

/// The fuzzer's bytes as a string.
inline std::string input_text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

/// Where input_file() writes: $TMPDIR, else /dev/shm (memory: a disk under load makes the fuzzer 10 times
/// slower), else /tmp.
inline std::string input_folder() {
  const char* dir = std::getenv("TMPDIR");
  if (dir && *dir) return dir;
  return ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
}

/// A file of this process that holds `text` (rewritten on every call, removed at exit): readers that take a
/// path read it.
inline const std::string& input_file(const std::string& text, const char* suffix = ".in") {
  static const std::string path = input_folder() + "/maprect-fuzz-" + std::to_string(::getpid()) + suffix;
  static const bool removed_at_exit = std::atexit([] { std::remove(path.c_str()); }) == 0;
  (void)removed_at_exit;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

/// Aborts, printing why and the message: a finding.
[[noreturn]] inline void finding(const char* why, const std::string& message) {
  std::fprintf(stderr, "fuzz finding: %s: [%s]\n", why, message.c_str());
  std::abort();
}

/// The error must be one line that starts with `source` (the file's name, as the reader was given it).
inline void require_one_line(const std::exception& e, const std::string& source) {
  const std::string message = e.what();
  if (message.find('\n') != std::string::npos) finding("an error of several lines", message);
  if (message.compare(0, source.size(), source) != 0) finding("an error that does not name the file", message);
}

}  // namespace maprect::fuzz
