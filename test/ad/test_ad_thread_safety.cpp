// The AD functions are safe to call from several threads at once: none writes shared state. glibc's
// lgamma stores the sign of Gamma(x) in the global `signgam`; maprect::lgamma must leave it alone while
// giving the same bits.
#include <catch2/catch.hpp>

#include <math.h>  // signgam, lgamma_r

#include <cstring>
#include <thread>
#include <vector>

#include "ad/ad_test_support.hpp"

using namespace maprect;

namespace {
/// Points where Gamma is negative (-0.5, -2.5, -10.3), positive, tiny and large.
const std::vector<double> lgamma_points = {-10.3, -2.5, -0.5, 1e-8, 0.5, 1, 2, 3.7, 30, 170.5, 1e6};

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
}  // namespace

TEST_CASE("glibc's lgamma writes signgam (the reason maprect::lgamma avoids it)") {
  signgam = 12345;
  (void)::lgamma(-0.5);
  CHECK(signgam == -1);
}

TEST_CASE("maprect::lgamma leaves signgam alone, for double and var") {
  test::clean_tape tape;
  for (double x : lgamma_points) {
    INFO("x = " << x);
    signgam = 12345;
    (void)maprect::lgamma(x);
    CHECK(signgam == 12345);
    const var v = x;
    (void)lgamma(v);
    CHECK(signgam == 12345);
  }
}

TEST_CASE("maprect::lgamma gives the bits of glibc's lgamma, with digamma as its derivative") {
  test::clean_tape tape;
  for (double x : lgamma_points) {
    INFO("x = " << x);
    int sign = 0;
    const double expected = ::lgamma_r(x, &sign);
    CHECK(same_bits(maprect::lgamma(x), expected));
    CHECK(same_bits(maprect::lgamma(x), std::lgamma(x)));
    var v = x;
    const var y = lgamma(v);
    CHECK(same_bits(y.val(), expected));
    grad(y);
    CHECK(same_bits(v.adj(), digamma(x)));
    recover_memory();
  }
}

TEST_CASE("lgamma on many threads at once gives every thread the serial bits") {
  std::vector<double> serial;
  for (double x : lgamma_points) serial.push_back(maprect::lgamma(x));
  constexpr int n_threads = 4;
  std::vector<int> mismatches(n_threads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < n_threads; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 2000; ++round)
        for (std::size_t i = 0; i < lgamma_points.size(); ++i) {
          var v = lgamma_points[i];
          const var y = lgamma(v);
          if (!same_bits(y.val(), serial[i])) ++mismatches[t];
        }
      recover_memory();
    });
  for (auto& t : threads) t.join();
  for (int t = 0; t < n_threads; ++t) CHECK(mismatches[t] == 0);
}
