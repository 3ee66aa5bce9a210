// reduce_sum in one process: values and gradients against closed forms and central finite differences,
// every double/var mix, nested argument types, and bit equality with test-side folds over terms and slices.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>

#include "reduce_sum/functors.hpp"
#include "reduce_sum/models.hpp"
#include "support/benchmark_model.hpp"

using namespace maprect;
using namespace maprect::test;

MAPRECT_REGISTER_REDUCE(301, maprect::test::logistic_partial)
MAPRECT_REGISTER_REDUCE(302, maprect::test::logistic_partial)
MAPRECT_REGISTER_REDUCE(303, maprect::test::logistic_partial)
MAPRECT_REGISTER_REDUCE(304, maprect::test::logistic_partial)
MAPRECT_REGISTER_REDUCE(310, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(311, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(312, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(313, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(314, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(315, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(316, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(317, maprect::test::hierarchical_partial)
MAPRECT_REGISTER_REDUCE(320, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(321, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(322, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(323, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(324, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(325, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(326, maprect::test::walking_partial)
MAPRECT_REGISTER_REDUCE(327, maprect::test::walking_partial)

TEST_CASE("reduce_sum: logistic regression sliced over observations, every double/var mix, closed form") {
  const logistic_data d(37, 3);
  for (int G : {1, 4, 36, 37, 1000}) {
    INFO("grainsize " << G);
    check_logistic<301, double, double>(d, G);
    check_logistic<302, double, var>(d, G);
    check_logistic<303, var, double>(d, G);
    check_logistic<304, var, var>(d, G);
  }
}

TEST_CASE("reduce_sum: logistic regression gradient against central finite differences") {
  recover_memory();
  const logistic_data d(23, 2);
  const vector_v beta = to_var(d.beta);
  const var alpha = d.alpha;
  for (int G : {1, 5, 23}) check_finite_differences<304, logistic_partial>(G, d.y, d.X, beta, alpha);
  recover_memory();
}

TEST_CASE("reduce_sum: hierarchical model sliced over groups, every double/var mix, closed form") {
  const hierarchical_data d(15);
  for (int G : {1, 2, 7, 15, 16}) {
    INFO("grainsize " << G);
    check_hierarchical<310, double, double, double>(d, G);
    check_hierarchical<311, double, double, var>(d, G);
    check_hierarchical<312, double, var, double>(d, G);
    check_hierarchical<313, double, var, var>(d, G);
    check_hierarchical<314, var, double, double>(d, G);
    check_hierarchical<315, var, double, var>(d, G);
    check_hierarchical<316, var, var, double>(d, G);
    check_hierarchical<317, var, var, var>(d, G);
  }
}

TEST_CASE("reduce_sum: hierarchical model gradient against central finite differences") {
  recover_memory();
  const hierarchical_data d(9);
  std::vector<vector_v> groups;
  for (const auto& g : d.groups) groups.push_back(to_var(g));
  const var mu = d.mu, log_tau = d.log_tau;
  for (int G : {1, 4, 9}) check_finite_differences<317, hierarchical_partial>(G, groups, d.y, mu, log_tau);
  recover_memory();
}


TEST_CASE("reduce_sum: G = 1 and G >= N give the plain fold, and any G the test-side fold over slices, bit for bit") {
  recover_memory();
  const int N = 13;
  const nested_arguments a(N);
  const std::vector<vari*> ops = operands_of(a.sliced, a.m, a.scalars, a.x, a.k, a.data);
  std::vector<value_and_gradient> by_grainsize;
  for (int G = 1; G <= N + 2; ++G) {
    INFO("grainsize " << G);
    const var lp = reduce_sum<320, walking_partial>(a.sliced, G, nullptr, a.m, a.scalars, a.x, a.k, a.data);
    const value_and_gradient got = gradient_of(lp, ops);
    const value_and_gradient want = fold_over_slices<walking_partial>(G, a.sliced, a.m, a.scalars, a.x, a.k, a.data);
    CHECK(got == want);
    by_grainsize.push_back(got);
  }
  // G = 1 is the test-side loop over terms; G >= N is one call of the functor on a plain tape (above). Both
  // fold the same terms in the same order, so their values agree to the bit too.
  CHECK(bits(by_grainsize[0].value) == bits(by_grainsize[N - 1].value));
  CHECK(by_grainsize[N - 1] == by_grainsize[N]);
  CHECK(by_grainsize[N - 1] == by_grainsize[N + 1]);
  // Gradients of G = 1 and G = N are accumulated in different orders: equal within rounding only.
  for (std::size_t k = 0; k < ops.size(); ++k)
    CHECK(close(by_grainsize[0].gradient[k], by_grainsize[N - 1].gradient[k], 1e-14));
  recover_memory();
}

TEST_CASE("reduce_sum: nested vector and matrix arguments of every kind, against finite differences") {
  recover_memory();
  draws u;
  const int N = 7;
  std::vector<std::vector<var>> nested_sliced(N);
  for (int t = 0; t < N; ++t)
    for (int i = 0; i < t % 3; ++i) nested_sliced[t].push_back(u(-1, 1));
  std::vector<matrix_v> matrices = {to_var(Eigen::MatrixXd::Constant(2, 2, 0.3)),
                                    to_var(Eigen::MatrixXd::Constant(1, 3, -0.2))};
  matrices[0](1, 0) = 0.9;
  const Eigen::VectorXd data_vector = Eigen::VectorXd::LinSpaced(4, 0, 1);
  SECTION("nested vectors of vars sliced, vectors of var matrices and a data vector shared") {
    for (int G : {1, 3, 7}) check_finite_differences<321, walking_partial>(G, nested_sliced, matrices, data_vector);
  }
  SECTION("data sliced, a var and vectors of vectors of var vectors shared") {
    const std::vector<double> sliced_data = {0.1, -0.4, 0.8, 1.1, -0.9};
    const var scale = 0.7;
    std::vector<std::vector<vector_v>> deep(2);
    deep[0].push_back(to_var(Eigen::Vector3d(0.2, -0.1, 0.5)));
    deep[1].push_back(to_var(Eigen::Vector2d(0.4, 0.6)));
    deep[1].push_back(vector_v(0));
    for (int G : {1, 2, 5}) check_finite_differences<322, walking_partial>(G, sliced_data, scale, deep);
  }
  SECTION("var matrices sliced, integer data shared") {
    std::vector<matrix_v> sliced_matrices;
    for (int t = 0; t < N; ++t) sliced_matrices.push_back(to_var(Eigen::MatrixXd::Constant(1 + t % 2, 2, 0.1 * t)));
    const std::vector<int> ints = {2, -1, 4};
    for (int G : {1, 4, 8}) check_finite_differences<323, walking_partial>(G, sliced_matrices, ints, 5);
  }
  recover_memory();
}

TEST_CASE("reduce_sum: no parameters (P = 0) gives a double and leaves the tape alone") {
  recover_memory();
  const std::vector<int> sliced = {1, 2, 3, 4, 5, 6, 7};
  const std::vector<Eigen::VectorXd> data(2, Eigen::VectorXd::Constant(2, 0.5));
  const std::size_t size = tape_size();
  for (int G : {1, 3, 7, 9}) {
    const double lp = reduce_sum<324, walking_partial>(sliced, G, nullptr, data, 2.5);
    CHECK(bits(lp) == bits(fold_over_slices<walking_partial>(G, sliced, data, 2.5).value));
  }
  CHECK(tape_size() == size);
  // Argument types that may hold vars but hold none: a var result, one node without operands.
  const std::vector<var> no_vars;
  const std::size_t nodes = tape::current().stack.size();
  const var lp = reduce_sum<325, walking_partial>(sliced, 3, nullptr, no_vars);
  CHECK(tape::current().stack.size() == nodes + 1);
  CHECK(bits(lp.val()) == bits(fold_over_slices<walking_partial>(3, sliced, no_vars).value));
  recover_memory();
}

TEST_CASE("reduce_sum: one node on the caller's tape per call, whatever N and G") {
  recover_memory();
  const nested_arguments a(40);
  for (int G : {1, 3, 40}) {
    const std::size_t nodes = tape::current().stack.size(), leaves = tape::current().leaves.size();
    const var lp = reduce_sum<320, walking_partial>(a.sliced, G, nullptr, a.m, a.scalars, a.x, a.k, a.data);
    CHECK(tape::current().stack.size() == nodes + 1);
    CHECK(tape::current().leaves.size() == leaves);
    CHECK(tape::current().stack.back() == lp.vi_);
  }
  recover_memory();
}

TEST_CASE("reduce_sum: the functor sees the slices [s G, min(N, (s + 1) G) - 1] in order, and msgs") {
  recover_memory();
  const std::vector<double> sliced(7, 0.5);
  const var v = 1.5;
  std::ostringstream msgs;
  reduce_sum<326, walking_partial>(sliced, 3, &msgs, v);
  CHECK(msgs.str() == "[0,2][3,5][6,6]");
  msgs.str("");
  reduce_sum<326, walking_partial>(sliced, 1, &msgs, v);
  CHECK(msgs.str() == "[0,0][1,1][2,2][3,3][4,4][5,5][6,6]");
  msgs.str("");
  reduce_sum<326, walking_partial>(sliced, 7, &msgs, v);
  CHECK(msgs.str() == "[0,6]");
  recover_memory();
}

namespace maprect::test {
/// A partial sum that is itself a reduce_sum (grainsize 2) over its slice.
struct nested_reduce_partial {
  template <class T_slice, class T>
  reduce_return_t<T_slice, T> operator()(const std::vector<T_slice>& slice, int, int, std::ostream* msgs,
                                         const T& scale) const {
    return reduce_sum<327, walking_partial>(slice, 2, msgs, scale);
  }
};
}  // namespace maprect::test
MAPRECT_REGISTER_REDUCE(328, maprect::test::nested_reduce_partial)

TEST_CASE("reduce_sum: a reduce_sum inside a functor runs in process with the same slicing") {
  recover_memory();
  std::vector<var> sliced;
  for (int t = 0; t < 5; ++t) sliced.push_back(0.1 * t - 0.2);
  const var scale = 0.6;
  std::ostringstream msgs;
  const std::size_t nodes = tape::current().stack.size();
  const var lp = reduce_sum<328, nested_reduce_partial>(sliced, 4, &msgs, scale);
  CHECK(tape::current().stack.size() == nodes + 1);
  // Outer slices [0, 3] and [4, 4], each cut by the inner call into slices of 2 of its own terms.
  CHECK(msgs.str() == "[0,1][2,3][0,0]");
  const std::vector<vari*> ops = operands_of(sliced, scale);
  const value_and_gradient got = gradient_of(lp, ops);
  // Each outer slice is the inner call over its own terms, numbered from 0 there.
  const std::vector<var> first(sliced.begin(), sliced.begin() + 4), second(sliced.begin() + 4, sliced.end());
  const value_and_gradient a = fold_over_slices<walking_partial>(2, first, scale);
  const value_and_gradient b = fold_over_slices<walking_partial>(2, second, scale);
  CHECK(bits(got.value) == bits(a.value + b.value));
  CHECK(bits(got.gradient[0]) == bits(a.gradient[0] + b.gradient[0]));
  for (std::size_t k = 1; k < 5; ++k) CHECK(bits(got.gradient[k]) == bits(a.gradient[k]));
  CHECK(bits(got.gradient[5]) == bits(b.gradient[1]));
  check_finite_differences<328, nested_reduce_partial>(4, sliced, scale);
  recover_memory();
}

namespace maprect::test {
/// The sum of its terms x * scale, each after an inner gradient of (x * scale)^2 on a nested tape: that sweep
/// leaves adjoints on the slice's nodes and leaves, which reduce_sum must clear before its own sweep.
struct inner_gradient_partial {
  template <class T_slice, class T_scale>
  return_type_t<T_slice, T_scale> operator()(const std::vector<T_slice>& slice, int, int, std::ostream*,
                                             const T_scale& scale) const {
    return_type_t<T_slice, T_scale> lp = 0;
    for (const T_slice& x : slice) {
      const auto term = x * scale;
      if constexpr (is_var_v<decltype(term)>) {
        const nested_tape inner;
        grad(term * term);
      }
      lp += term;
    }
    return lp;
  }
};
}  // namespace maprect::test
MAPRECT_REGISTER_REDUCE(329, maprect::test::inner_gradient_partial)

TEST_CASE("reduce_sum: a functor that sweeps an inner gradient leaves no adjoint behind") {
  recover_memory();
  std::vector<var> sliced;
  double sum = 0;
  for (int t = 0; t < 6; ++t) {
    sliced.push_back(0.3 * t - 0.7);
    sum += 0.3 * t - 0.7;
  }
  const var scale = 1.7;
  for (int G : {1, 4, 6}) {
    INFO("grainsize " << G);
    const var lp = reduce_sum<329, inner_gradient_partial>(sliced, G, nullptr, scale);
    const value_and_gradient got = gradient_of(lp, operands_of(sliced, scale));
    CHECK(close(got.value, 1.7 * sum, 1e-14));
    CHECK(close(got.gradient[0], sum, 1e-14));
    for (std::size_t k = 1; k < got.gradient.size(); ++k) CHECK(close(got.gradient[k], 1.7, 1e-14));
  }
  recover_memory();
}

TEST_CASE("reduce_sum: data changed between calls of one call site is never stale") {
  recover_memory();
  logistic_data d(19, 2);
  const vector_v beta = to_var(d.beta);
  const var alpha = d.alpha;
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    d.X(round, 1) += 0.5;
    d.y[round + 4] = 1 - d.y[round + 4];
    const var lp = reduce_sum<304, logistic_partial>(d.y, 4, nullptr, d.X, beta, alpha);
    CHECK(gradient_of(lp, operands_of(d.y, d.X, beta, alpha)) ==
          fold_over_slices<logistic_partial>(4, d.y, d.X, beta, alpha));
    CHECK(close(lp.val(), d.exact().value, 1e-13));
  }
  recover_memory();
}

TEST_CASE("reduce_sum: calls on several threads at once give the bits of a call alone") {
  recover_memory();
  const nested_arguments a(29);
  const std::vector<vari*> ops = operands_of(a.sliced, a.m, a.scalars, a.x, a.k, a.data);
  const value_and_gradient alone =
      gradient_of(reduce_sum<320, walking_partial>(a.sliced, 4, nullptr, a.m, a.scalars, a.x, a.k, a.data), ops);
  recover_memory();
  // Each thread builds the same arguments on its own tape and calls the same call site.
  std::vector<int> equal(3, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i)
    threads.emplace_back([&equal, &alone, i] {
      for (int repeat = 0; repeat < 20; ++repeat) {
        const nested_arguments mine(29);
        const std::vector<vari*> my_ops = operands_of(mine.sliced, mine.m, mine.scalars, mine.x, mine.k, mine.data);
        const var lp = reduce_sum<320, walking_partial>(mine.sliced, 4, nullptr, mine.m, mine.scalars, mine.x, mine.k,
                                                        mine.data);
        equal[i] += gradient_of(lp, my_ops) == alone;
        recover_memory();
      }
    });
  for (std::thread& t : threads) t.join();
  CHECK(equal == std::vector<int>(3, 20));
}

MAPRECT_REGISTER_REDUCE(330, maprect::test::standard_partial)
MAPRECT_REGISTER(331, maprect::test::logistic_job)

TEST_CASE("reduce_sum: the standard model over groups matches its closed form, and map_rect's outputs folded") {
  recover_memory();
  const benchmark_data d(37, 11);
  Eigen::VectorXd want_gradient;
  const double want = d.closed_form(want_gradient);
  const vector_v phi = to_var(d.phi);
  std::vector<vector_v> theta;
  for (const auto& t : d.theta) theta.push_back(to_var(t));
  // map_rect's outputs (one per job) folded in job order: the values of reduce_sum with grainsize 1.
  const vector_v outputs = map_rect<331, logistic_job>(phi, theta, d.x_r, d.x_i);
  double fold = 0.0;
  for (Eigen::Index j = 0; j < outputs.size(); ++j) fold += outputs(j).val();
  const std::vector<vari*> ops = operands_of(theta, phi, d.x_r, d.x_i);
  for (int G : {1, 8, 37}) {
    INFO("grainsize " << G);
    const var lp = reduce_sum<330, standard_partial>(theta, G, nullptr, phi, d.x_r, d.x_i);
    const value_and_gradient got = gradient_of(lp, ops);
    CHECK(close(got.value, want, 1e-13));
    if (G == 1) CHECK(bits(got.value) == bits(fold));
    // Operands: alpha, beta, then (u_j, v_j) per group: the closed form's order.
    for (Eigen::Index k = 0; k < want_gradient.size(); ++k) CHECK(close(got.gradient[k], want_gradient(k), 1e-12));
  }
  recover_memory();
}
