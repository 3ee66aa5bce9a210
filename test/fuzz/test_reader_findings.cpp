// The fuzzers' findings in the readers of files, each as the input that showed it (or its minimal form) and
// the one-line error the reader now gives: type and whole message (docs/reliability.md#bad-input).
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "maprect/sample/chain.hpp"
#include "src/sampling/checkpoint.hpp"
#include "src/sampling/stan_csv.hpp"

namespace {

using Catch::Matchers::Message;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The files the test wrote, removed when the program ends.
struct scratch_files {
  std::vector<std::string> paths;
  ~scratch_files() {
    for (const std::string& path : paths) std::remove(path.c_str());
  }
};

/// Writes `text` to a file of the test's own and returns its path.
std::string write_file(const std::string& name, const std::string& text) {
  static scratch_files written;
  const std::string path = "reader-findings-" + name;
  std::ofstream(path, std::ios::binary) << text;
  written.paths.push_back(path);
  return path;
}

/// A valid Stan CSV written by maprect (the seed corpus' file).
std::string stan_csv_seed() { return read_text(MAPRECT_FUZZ_DIR "/corpus/stan_csv/valid.csv"); }

const std::string fingerprint = "model=normal data=none seed=7 chain=1";

/// What write_checkpoint writes for a 2-dimensional standard normal chain after 35 of its 40 iterations
/// (taken from the writer, so that it follows the format's version), without its checksum line.
std::string checkpoint_body() {
  maprect::sample_options o;
  o.warmup = 30;
  o.samples = 10;
  o.max_depth = 4;
  o.seed = 7;
  maprect::nuts_chain chain(
      [](const Eigen::VectorXd& q, Eigen::VectorXd& gradient) {
        gradient = -q;
        return -0.5 * q.squaredNorm();
      },
      2, o);
  chain.initialize();
  for (int i = 0; i < 35; ++i) chain.step();
  maprect::chain_checkpoint c;
  c.fingerprint = fingerprint;
  c.output_bytes = 1035;
  c.state = chain.state();
  const std::string path = write_file("written.checkpoint", "");
  maprect::write_checkpoint(path, c);
  const std::string text = read_text(path);
  return text.substr(0, text.rfind("checksum "));
}

/// That checkpoint with line `key ...` replaced by `line`, and its checksum as write_checkpoint would have
/// written it: only the parser can object.
std::string checkpoint_with(const std::string& key, const std::string& line) {
  std::string body = checkpoint_body();
  const std::regex old("(^|\n)" + key + " [^\n]*");
  REQUIRE(std::regex_search(body, old));
  body = std::regex_replace(body, old, "$1" + line, std::regex_constants::format_first_only);
  char checksum[32];
  std::snprintf(checksum, sizeof checksum, "%016llx", static_cast<unsigned long long>(maprect::detail::fnv1a(body)));
  return body + "checksum " + checksum + "\n";
}

/// Checks that the checkpoint `name`, with line `key ...` replaced by `line`, is refused with
/// "<its path>: damaged checkpoint: <what>".
void check_damaged(const std::string& name, const std::string& key, const std::string& line,
                   const std::string& what) {
  const std::string path = write_file(name, checkpoint_with(key, line));
  CHECK_THROWS_MATCHES(maprect::read_checkpoint(path, fingerprint), std::runtime_error,
                       Message(path + ": damaged checkpoint: " + what));
}

}  // namespace

TEST_CASE("Stan CSV: a malformed number in the adaptation block is an error naming file and line") {
  std::string text = stan_csv_seed();
  REQUIRE(text.find("# Step size = 2.42736\n") != std::string::npos);
  // std::stod threw std::invalid_argument("stod") out of the reader, which ended the program.
  std::string bad = std::regex_replace(text, std::regex("# Step size = 2.42736"), "# Step size = x");
  std::string path = write_file("step.csv", bad);
  CHECK_THROWS_MATCHES(maprect::read_stan_csv(path), std::runtime_error,
                       Message(path + ": line 45: step size: 'x' is not a number"));
  // std::stod read the number's start and dropped the rest.
  bad = std::regex_replace(text, std::regex("# 1.01466, 1.05082"), "# 1.01466, 1.05082x");
  path = write_file("metric.csv", bad);
  CHECK_THROWS_MATCHES(maprect::read_stan_csv(path), std::runtime_error,
                       Message(path + ": line 47: inverse metric: '1.05082x' is not a number"));
  bad = std::regex_replace(text, std::regex("# 1.01466, 1.05082"), "# 1.01466, -1");
  path = write_file("negative.csv", bad);
  CHECK_THROWS_MATCHES(maprect::read_stan_csv(path), std::runtime_error,
                       Message(path + ": line 47: inverse metric: '-1' is not a finite positive number"));
}

TEST_CASE("Stan CSV: a file with CRLF line ends reads as the same file with LF") {
  const std::string text = stan_csv_seed();
  const std::string crlf = std::regex_replace(text, std::regex("\n"), "\r\n");
  const maprect::stan_csv lf = maprect::read_stan_csv(write_file("lf.csv", text));
  const maprect::stan_csv cr = maprect::read_stan_csv(write_file("crlf.csv", crlf));
  CHECK(cr.columns == lf.columns);
  CHECK(cr.step_size == 2.42736);
  CHECK(cr.inv_metric == lf.inv_metric);
  CHECK(cr.draws == lf.draws);
  CHECK(cr.draws.rows() == 10);
}

TEST_CASE("checkpoint: a damaged random number state is an error naming the file") {
  check_damaged("rng.checkpoint", "rng", "rng 1 2 3", "'rng' holds a damaged random number state");
}

TEST_CASE("checkpoint: integers out of range are errors, never undefined or truncated") {
  // static_cast<long>(1e300) was undefined behaviour; 4294967301 became iteration 5.
  check_damaged("huge.checkpoint", "iteration", "iteration 1e300",
                "'iteration' holds 1.0000000000000001e+300, out of range");
  check_damaged("wide.checkpoint", "iteration", "iteration 4294967301", "'iteration' holds 4294967301, out of range");
  check_damaged("windows.checkpoint", "windows", "windows 30 4 3 23 30 23 -2147483649",
                "'windows' holds -2147483649, out of range");
  check_damaged("bytes.checkpoint", "output_bytes", "output_bytes -1", "'output_bytes' holds -1, out of range");
}

TEST_CASE("checkpoint: a vector's false length allocates nothing and is an error") {
  // Eigen::VectorXd(16777216) took 128 MB before the line's first value was read.
  check_damaged("length.checkpoint", "q", "q 16777216 0x1p+0", "'q' has too few values");
}

TEST_CASE("checkpoint: a step size, metric or adaptation state that is not a usable number is an error") {
  check_damaged("step.checkpoint", "step_size", "step_size nan", "'step_size' holds nan, not a finite positive number");
  check_damaged("metric.checkpoint", "inv_metric", "inv_metric 2 0x1p+0 -0x1p+0",
                "'inv_metric' holds -1, not a finite positive number");
  check_damaged("dual.checkpoint", "dual_averaging", "dual_averaging 1 1 1 1 inf 1 1 1",
                "'dual_averaging' holds inf, not a finite number");
}

TEST_CASE("checkpoint: the body these cases edit reads back as written") {
  const std::string path = write_file("good.checkpoint", checkpoint_with("iteration", "iteration 35"));
  const maprect::chain_checkpoint c = maprect::read_checkpoint(path, fingerprint);
  CHECK(c.state.iteration == 35);
  CHECK(c.state.q.size() == 2);
  CHECK(c.state.inv_metric.size() == 2);
  CHECK(c.output_bytes == 1035);
}
