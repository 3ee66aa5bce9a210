// Threads differentiate independently: each has its own tape, concurrent sweeps give the bits of a
// single-threaded run, and a thread's tape traffic leaves the other tapes alone.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "ad/ad_test_support.hpp"

using namespace maprect;

namespace {

/// Log likelihood of a small logistic regression with nested regions and Eigen operations in it, so
/// that every part of the tape is exercised; returns the value and the gradient.
struct result {
  double value;
  Eigen::VectorXd gradient;
};

result evaluate(int seed) {
  const int n = 300;
  vector_v beta(3);
  beta << 0.1 * seed, -0.3, 0.05;
  var lp = 0;
  for (int i = 0; i < n; ++i) {
    const double x1 = std::sin(0.37 * i + seed), x2 = std::cos(0.11 * i);
    const var eta = beta(0) + beta(1) * x1 + beta(2) * x2;
    lp += (i + seed) % 2 ? log_inv_logit(eta) : log1m_inv_logit(eta);
  }
  {
    nested_tape scratch;  // a region in the middle must not disturb the outer tape
    var junk = exp(var(1.0)) * 3.0;
    grad(junk);
  }
  lp += log_sum_exp(beta) - 0.5 * beta.squaredNorm();
  grad(lp);
  result r{lp.val(), adjoint_of(beta)};
  recover_memory();
  return r;
}

}  // namespace

TEST_CASE("each thread has its own tape") {
  recover_memory();
  const tape* main_tape = &tape::current();
  var on_main = 2.0;
  const std::size_t main_size = tape_size();
  const tape* other_tape = nullptr;
  std::size_t other_size_at_start = 99;
  std::thread t([&] {
    other_tape = &tape::current();
    other_size_at_start = tape_size();
    var a = 1.0;
    var b = a * 3.0;
    grad(b);
    recover_memory();
  });
  t.join();
  CHECK(other_tape != main_tape);
  CHECK(other_size_at_start == 0);  // a new thread starts on an empty tape
  CHECK(tape_size() == main_size);  // the thread's recover_memory did not touch this tape
  CHECK(on_main.val() == 2.0);
  recover_memory();
}

TEST_CASE("concurrent threads give the single-threaded results bit for bit") {
  constexpr int n_threads = 4;
  constexpr int repetitions = 100;
  std::vector<result> expected;
  for (int t = 0; t < n_threads; ++t) expected.push_back(evaluate(t));

  // The main thread keeps a tape of its own alive throughout.
  recover_memory();
  var main_x = 1.5;
  var main_y = main_x * main_x;
  const std::size_t main_size = tape_size();

  std::atomic<int> ready{0};
  std::vector<int> mismatches(n_threads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < n_threads; ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (ready < n_threads) std::this_thread::yield();  // start together so the sweeps overlap
      for (int k = 0; k < repetitions; ++k) {
        const result r = evaluate(t);
        if (r.value != expected[t].value || r.gradient != expected[t].gradient) ++mismatches[t];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < n_threads; ++t) {
    INFO("thread " << t);
    CHECK(mismatches[t] == 0);
  }
  // The workloads differ per seed, so equal results are not an accident of identical inputs.
  CHECK(expected[0].value != expected[1].value);
  CHECK(tape_size() == main_size);
  grad(main_y);
  CHECK(main_x.adj() == 3.0);
  recover_memory();
}

TEST_CASE("gradient() runs concurrently on several threads") {
  constexpr int n_threads = 3;
  std::vector<double> values(n_threads), slopes(n_threads);
  std::vector<std::thread> threads;
  for (int t = 0; t < n_threads; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 200; ++k) {
        Eigen::VectorXd g;
        gradient([](const vector_v& x) { return x(0) * x(0) * x(0); }, Eigen::VectorXd::Constant(1, t + 1.0),
                 values[t], g);
        slopes[t] = g(0);
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < n_threads; ++t) {
    CHECK(values[t] == (t + 1.0) * (t + 1.0) * (t + 1.0));
    CHECK(slopes[t] == 3 * (t + 1.0) * (t + 1.0));
  }
}
