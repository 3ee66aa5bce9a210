// Steady-state memory: a million evaluate-grad-recover cycles (and nested regions, and gradient())
// neither grow the arena nor the resident set once warmed up.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "ad/ad_test_support.hpp"

using namespace maprect;

namespace {

/// Resident set size of this process in kB, from /proc/self/status.
long resident_kb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

/// One small model evaluation: about a dozen nodes of several kinds.
double cycle(double x0) {
  var x = x0, y = 0.5;
  var z = log_sum_exp(x * y, exp(x)) + log1p_exp(x - y) / (y + 2.0) + pow(y, x) - square(sin(x));
  grad(z);
  const double result = x.adj();
  recover_memory();
  return result;
}

}  // namespace

TEST_CASE("a million evaluate-grad-recover cycles keep memory flat") {
  recover_memory();
  double checksum = 0;
  for (int i = 0; i < 10000; ++i) checksum += cycle(1e-4 * i);
  const std::size_t capacity = tape::current().memory.capacity();
  const std::size_t stack_capacity = tape::current().stack.capacity();
  const long rss_before = resident_kb();
  REQUIRE(rss_before > 0);
  for (int i = 0; i < 1000000; ++i) checksum += cycle(1e-6 * i);
  const long rss_after = resident_kb();
  INFO("VmRSS " << rss_before << " kB -> " << rss_after << " kB");
  CHECK(tape::current().memory.capacity() == capacity);
  CHECK(tape::current().stack.capacity() == stack_capacity);
  // A leak of even one node per cycle would be tens of MB; 1 MB leaves room for the allocator's noise.
  CHECK(rss_after - rss_before < 1024);
  CHECK(std::isfinite(checksum));
  CHECK(cycle(0.3) == cycle(0.3));
}

TEST_CASE("a million nested regions on a live tape keep memory flat") {
  recover_memory();
  var outer = 0.25;
  var outer_sum = outer * 2.0;
  const std::size_t size = tape_size();
  const std::size_t bytes = tape_bytes();
  auto region_cycle = [&](int i) {
    nested_tape region;
    var x = outer.val() + 1e-6 * i;
    var y = exp(x) * x + inv_logit(x);
    grad(y);
    return x.adj();
  };
  double checksum = 0;
  for (int i = 0; i < 10000; ++i) checksum += region_cycle(i);
  const std::size_t capacity = tape::current().memory.capacity();
  const long rss_before = resident_kb();
  for (int i = 0; i < 1000000; ++i) checksum += region_cycle(i);
  const long rss_after = resident_kb();
  INFO("VmRSS " << rss_before << " kB -> " << rss_after << " kB");
  CHECK(tape::current().memory.capacity() == capacity);
  CHECK(rss_after - rss_before < 1024);
  CHECK(tape_size() == size);
  CHECK(tape_bytes() == bytes);
  CHECK(std::isfinite(checksum));
  grad(outer_sum);
  CHECK(outer.adj() == 2.0);
  recover_memory();
}

TEST_CASE("repeated large tapes reuse their blocks") {
  recover_memory();
  auto big_tape = [] {
    var sum = 0.0;
    for (int i = 0; i < 300000; ++i) sum += var(1e-3 * i) * 2.0;
    grad(sum);
    recover_memory();
  };
  big_tape();
  const std::size_t capacity = tape::current().memory.capacity();
  CHECK(capacity > (std::size_t(1) << 16));  // the tape did outgrow its first block
  for (int k = 0; k < 20; ++k) big_tape();
  CHECK(tape::current().memory.capacity() == capacity);
}

TEST_CASE("a hundred thousand gradient() calls keep memory flat") {
  recover_memory();
  auto f = [](const vector_v& x) { return log_sum_exp(x) + x.squaredNorm(); };
  const Eigen::VectorXd x = Eigen::VectorXd::LinSpaced(20, -1, 1);
  double fx = 0;
  Eigen::VectorXd g;
  for (int i = 0; i < 1000; ++i) gradient(f, x, fx, g);
  const std::size_t capacity = tape::current().memory.capacity();
  const long rss_before = resident_kb();
  for (int i = 0; i < 100000; ++i) gradient(f, x, fx, g);
  const long rss_after = resident_kb();
  INFO("VmRSS " << rss_before << " kB -> " << rss_after << " kB");
  CHECK(tape::current().memory.capacity() == capacity);
  CHECK(rss_after - rss_before < 1024);
  CHECK(tape_size() == 0);
}
