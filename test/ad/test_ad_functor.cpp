// gradient() and jacobian() against closed forms, and proof that they leave the caller's tape (size,
// bytes, adjoints) as it was.
#include <catch2/catch.hpp>

#include "ad/ad_test_support.hpp"

using namespace maprect;
using test::clean_tape;

namespace {

/// f(x) = x0^2 x1 + exp(x2) + log_sum_exp(x)
struct scalar_function {
  var operator()(const vector_v& x) const { return x(0) * x(0) * x(1) + exp(x(2)) + log_sum_exp(x); }
};

/// f(x) = (x0 x1, sin(x2) + x0^2, x1 / x2)
struct vector_function {
  vector_v operator()(const vector_v& x) const {
    vector_v y(3);
    y << x(0) * x(1), sin(x(2)) + square(x(0)), x(1) / x(2);
    return y;
  }
};

/// A caller's tape with some vars and adjoints on it, to check that gradient()/jacobian() leave it alone.
struct caller_state {
  var a = 1.5, b = -2.0;
  var c = a * b + exp(a);
  bool swept = sweep(c);  // members below record the state after this sweep
  std::size_t size = tape_size();
  std::size_t bytes = tape_bytes();
  double a_adj = a.adj(), b_adj = b.adj(), c_adj = c.adj();
  static bool sweep(const var& y) {
    grad(y);
    return true;
  }
  void check_unchanged() const {
    CHECK(tape_size() == size);
    CHECK(tape_bytes() == bytes);
    CHECK(a.adj() == a_adj);
    CHECK(b.adj() == b_adj);
    CHECK(c.adj() == c_adj);
    CHECK(tape::current().nests.empty());
  }
};

}  // namespace

TEST_CASE("gradient against the closed form, leaving the caller's tape unchanged") {
  clean_tape tape;
  caller_state caller;
  CHECK(caller.a_adj == Approx(-2.0 + std::exp(1.5)).epsilon(1e-15));  // the state is a real one
  for (const Eigen::Vector3d& point : {Eigen::Vector3d(0.5, -1.0, 2.0), Eigen::Vector3d(-3, 0.25, -30),
                                       Eigen::Vector3d(700, 1, 0)}) {
    INFO("x = " << point.transpose());
    const Eigen::VectorXd x = point;
    double fx = 0;
    Eigen::VectorXd g;
    gradient(scalar_function{}, x, fx, g);
    const double lse = log_sum_exp(x);
    const Eigen::VectorXd softmax = (x.array() - lse).exp();
    CHECK(fx == Approx(x(0) * x(0) * x(1) + std::exp(x(2)) + lse).epsilon(1e-15));
    REQUIRE(g.size() == 3);
    CHECK(g(0) == Approx(2 * x(0) * x(1) + softmax(0)).epsilon(1e-14));
    CHECK(g(1) == Approx(x(0) * x(0) + softmax(1)).epsilon(1e-14));
    CHECK(g(2) == Approx(std::exp(x(2)) + softmax(2)).epsilon(1e-14));
    caller.check_unchanged();
  }
}

TEST_CASE("gradient of a lambda, of a constant function and of an empty argument") {
  clean_tape tape;
  caller_state caller;
  double fx = 0;
  Eigen::VectorXd g;
  gradient([](const vector_v& x) { return x.sum() * 2.0; }, Eigen::VectorXd::Constant(4, 1.5), fx, g);
  CHECK(fx == 12.0);
  CHECK(g == Eigen::VectorXd::Constant(4, 2.0));
  gradient([](const vector_v&) { return var(3.0); }, Eigen::VectorXd::Constant(2, 1.0), fx, g);
  CHECK(fx == 3.0);
  CHECK(g == Eigen::VectorXd::Zero(2));
  gradient([](const vector_v&) { return var(-1.0); }, Eigen::VectorXd(0), fx, g);
  CHECK(fx == -1.0);
  CHECK(g.size() == 0);
  caller.check_unchanged();
}

TEST_CASE("jacobian against the closed form, leaving the caller's tape unchanged") {
  clean_tape tape;
  caller_state caller;
  const Eigen::VectorXd x = Eigen::Vector3d(0.5, -1.25, 2.0);
  Eigen::VectorXd fx;
  Eigen::MatrixXd J;
  jacobian(vector_function{}, x, fx, J);
  REQUIRE(fx.size() == 3);
  REQUIRE(J.rows() == 3);
  REQUIRE(J.cols() == 3);
  CHECK(fx(0) == x(0) * x(1));
  CHECK(fx(1) == Approx(std::sin(x(2)) + x(0) * x(0)).epsilon(1e-15));
  CHECK(fx(2) == x(1) / x(2));
  Eigen::Matrix3d expected;
  expected << x(1), x(0), 0,                 //
      2 * x(0), 0, std::cos(x(2)),           //
      0, 1 / x(2), -x(1) / (x(2) * x(2));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      INFO("J(" << i << ", " << j << ")");
      CHECK(J(i, j) == Approx(expected(i, j)).epsilon(1e-15));
    }
  caller.check_unchanged();
}

TEST_CASE("jacobian rows do not leak into each other when outputs share nodes") {
  clean_tape tape;
  // Both outputs go through the same intermediate s; without zeroing between sweeps row 2 would
  // inherit s's adjoint from row 1.
  auto f = [](const vector_v& x) {
    var s = x(0) * x(1);
    vector_v y(2);
    y << s * 3.0, s + x(0);
    return y;
  };
  Eigen::VectorXd fx;
  Eigen::MatrixXd J;
  jacobian(f, Eigen::Vector2d(2.0, 5.0), fx, J);
  CHECK(fx == Eigen::Vector2d(30.0, 12.0));
  CHECK(J(0, 0) == 15.0);
  CHECK(J(0, 1) == 6.0);
  CHECK(J(1, 0) == 6.0);
  CHECK(J(1, 1) == 2.0);
}

TEST_CASE("jacobian of the identity, of a function with no outputs, and agreement with gradient") {
  clean_tape tape;
  caller_state caller;
  Eigen::VectorXd fx;
  Eigen::MatrixXd J;
  const Eigen::VectorXd x = Eigen::Vector4d(1, -2, 3, -4);
  jacobian([](const vector_v& v) { return v; }, x, fx, J);
  CHECK(fx == x);
  CHECK(J == Eigen::MatrixXd::Identity(4, 4));
  jacobian([](const vector_v&) { return vector_v(0); }, x, fx, J);
  CHECK(fx.size() == 0);
  CHECK(J.rows() == 0);
  CHECK(J.cols() == 4);
  auto scalar = [](const vector_v& v) { return (v.array() * v.array()).sum() + v(0) * v(3); };
  auto as_vector = [&](const vector_v& v) {
    vector_v y(1);
    y(0) = scalar(v);
    return y;
  };
  double f_scalar = 0;
  Eigen::VectorXd g;
  gradient(scalar, x, f_scalar, g);
  jacobian(as_vector, x, fx, J);
  CHECK(fx(0) == f_scalar);
  CHECK(Eigen::VectorXd(J.row(0).transpose()) == g);
  caller.check_unchanged();
}

TEST_CASE("gradient inside a nested region and inside gradient") {
  clean_tape tape;
  caller_state caller;
  // The outer function's value uses an inner gradient computed on values: d/dx [x^2] at x = 3 is 6.
  double fx = 0;
  Eigen::VectorXd g;
  gradient(
      [](const vector_v& x) {
        double inner_value = 0;
        Eigen::VectorXd inner_gradient;
        gradient([](const vector_v& y) { return y(0) * y(0); }, value_of(x), inner_value, inner_gradient);
        return x(0) * inner_gradient(0);
      },
      Eigen::VectorXd::Constant(1, 3.0), fx, g);
  CHECK(fx == 18.0);
  CHECK(g(0) == 6.0);
  caller.check_unchanged();
}
