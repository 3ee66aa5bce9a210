// Fuzz target: the checkpoint reader (`maprect sample --resume`), then the restore of a chain from what it
// read. Every input is tried twice: as it is (the checksum rejects almost all), and with the checksum line the
// writer would have added, so that the fuzzer reaches the parser behind it. Malformed input must end as a
// one-line error naming the file (std::runtime_error from the reader; std::invalid_argument or
// std::domain_error from the restore, which names the chain).
#include <cmath>
#include <cstdio>

#include "fuzz_input.hpp"
#include "maprect/sample/chain.hpp"
#include "src/sampling/checkpoint.hpp"

namespace {

/// The fingerprint of the seed corpus' checkpoints.
const std::string expected_fingerprint = "model=normal data=none seed=7 chain=1";

/// A 2-dimensional standard normal chain with 30 warm-up iterations and 10 draws, restored from `c`, then
/// stepped once: the state must be one the sampler can go on from.
void restore_and_step(const maprect::chain_checkpoint& c) {
  maprect::sample_options o;
  o.warmup = 30;
  o.samples = 10;
  o.max_depth = 4;
  auto density = [](const Eigen::VectorXd& q, Eigen::VectorXd& gradient) {
    gradient = -q;
    return -0.5 * q.squaredNorm();
  };
  maprect::nuts_chain chain(density, 2, o);
  try {
    chain.restore(c.state);
  } catch (const std::invalid_argument& e) {
    maprect::fuzz::require_one_line(e, "chain 1: ");
    return;
  } catch (const std::domain_error& e) {
    maprect::fuzz::require_one_line(e, "chain 1: ");
    return;
  }
  if (!chain.done()) chain.step();
}

void read(const std::string& text) {
  const std::string& path = maprect::fuzz::input_file(text, ".checkpoint");
  maprect::chain_checkpoint c;
  try {
    c = maprect::read_checkpoint(path, expected_fingerprint);
  } catch (const std::runtime_error& e) {
    maprect::fuzz::require_one_line(e, path + ": ");
    return;
  }
  restore_and_step(c);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = maprect::fuzz::input_text(data, size);
  read(text);
  char checksum[32];
  std::snprintf(checksum, sizeof checksum, "%016llx", static_cast<unsigned long long>(maprect::detail::fnv1a(text)));
  read(text + "checksum " + checksum + "\n");
  return 0;
}
