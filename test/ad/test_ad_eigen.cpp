// Eigen matrices of var: reductions, dot and matrix products, coefficient-wise operations, mixing with
// double matrices, and the value_of / adjoint_of / to_var helpers, each with its gradient checked.
#include <catch2/catch.hpp>

#include "ad/ad_test_support.hpp"

using namespace maprect;
using test::clean_tape;

namespace {

Eigen::MatrixXd sample_matrix(int rows, int cols, double shift) {
  Eigen::MatrixXd m(rows, cols);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) m(i, j) = std::sin(1.0 + i + 2.7 * j + shift);
  return m;
}

/// Each entry of `ad` equals `expected` to a few ulps.
void check_close(const Eigen::MatrixXd& ad, const Eigen::MatrixXd& expected, double tolerance = 1e-14) {
  REQUIRE(ad.rows() == expected.rows());
  REQUIRE(ad.cols() == expected.cols());
  for (Eigen::Index i = 0; i < ad.rows(); ++i)
    for (Eigen::Index j = 0; j < ad.cols(); ++j) {
      INFO("entry (" << i << ", " << j << ")");
      CHECK(ad(i, j) == Approx(expected(i, j)).epsilon(tolerance).margin(tolerance));
    }
}

}  // namespace

TEST_CASE("value_of, adjoint_of and to_var") {
  clean_tape tape;
  const Eigen::MatrixXd m = sample_matrix(2, 3, 0);
  matrix_v mv = to_var(m);
  CHECK(tape_size() == 6);
  CHECK(value_of(mv) == m);
  CHECK(adjoint_of(mv) == Eigen::MatrixXd::Zero(2, 3));
  var s = mv.sum();
  grad(s);
  CHECK(adjoint_of(mv) == Eigen::MatrixXd::Ones(2, 3));
  CHECK(value_of(m) == m);  // double matrices pass through
}

TEST_CASE("sum, dot, squaredNorm and norm") {
  clean_tape tape;
  const Eigen::VectorXd x = sample_matrix(5, 1, 0), y = sample_matrix(5, 1, 0.3);
  vector_v xv = to_var(x), yv = to_var(y);
  var s = xv.sum();
  CHECK(s.val() == Approx(x.sum()).epsilon(1e-15));
  grad(s);
  check_close(adjoint_of(xv), Eigen::VectorXd::Ones(5));

  set_zero_all_adjoints();
  var d = xv.dot(yv);
  CHECK(d.val() == Approx(x.dot(y)).epsilon(1e-14));
  grad(d);
  check_close(adjoint_of(xv), y);
  check_close(adjoint_of(yv), x);

  set_zero_all_adjoints();
  var n2 = xv.squaredNorm();
  CHECK(n2.val() == Approx(x.squaredNorm()).epsilon(1e-14));
  grad(n2);
  check_close(adjoint_of(xv), 2 * x);

  set_zero_all_adjoints();
  var n = xv.norm();
  CHECK(n.val() == Approx(x.norm()).epsilon(1e-14));
  grad(n);
  check_close(adjoint_of(xv), x / x.norm());
}

TEST_CASE("matrix_v times vector_v, and both against double operands") {
  clean_tape tape;
  const Eigen::MatrixXd A = sample_matrix(4, 3, 0);
  const Eigen::VectorXd v = sample_matrix(3, 1, 1.1);
  const Eigen::VectorXd w = sample_matrix(4, 1, 2.2);  // weights: lp = w' A v
  const double expected = w.dot(A * v);

  SECTION("var * var") {
    matrix_v Av = to_var(A);
    vector_v vv = to_var(v);
    vector_v product = Av * vv;
    check_close(value_of(product), A * v);
    var lp = product.dot(to_var(w));
    CHECK(lp.val() == Approx(expected).epsilon(1e-14));
    grad(lp);
    check_close(adjoint_of(Av), w * v.transpose());  // d(w' A v)/dA = w v'
    check_close(adjoint_of(vv), A.transpose() * w);
  }
  SECTION("matrix_v * VectorXd") {
    matrix_v Av = to_var(A);
    vector_v product = Av * v;  // coefficient-based for var x double (see ad/eigen.hpp)
    check_close(value_of(product), A * v);
    var lp = (product.array() * w.array()).sum();
    grad(lp);
    check_close(adjoint_of(Av), w * v.transpose());
  }
  SECTION("MatrixXd * vector_v") {
    vector_v vv = to_var(v);
    vector_v product = A * vv;
    check_close(value_of(product), A * v);
    var lp = w.dot(product);
    CHECK(lp.val() == Approx(expected).epsilon(1e-14));
    grad(lp);
    check_close(adjoint_of(vv), A.transpose() * w);
  }
  SECTION("matrix_v * MatrixXd and the transpose") {
    matrix_v Av = to_var(A);
    const Eigen::MatrixXd B = sample_matrix(3, 2, 0.7);
    matrix_v C = Av * B;
    check_close(value_of(C), A * B);
    var lp = C.sum();
    grad(lp);
    // d sum(A B) / dA(i, k) = sum_j B(k, j)
    check_close(adjoint_of(Av), Eigen::MatrixXd::Ones(4, 1) * B.rowwise().sum().transpose());
    set_zero_all_adjoints();
    vector_v t = Av.transpose() * w;
    var lp2 = t.sum();
    grad(lp2);
    check_close(adjoint_of(Av), w * Eigen::RowVectorXd::Ones(3));
  }
  SECTION("a larger product takes Eigen's blocked kernel") {
    const Eigen::MatrixXd big = sample_matrix(40, 30, 0.1);
    const Eigen::MatrixXd rhs = sample_matrix(30, 20, 0.2);
    matrix_v big_v = to_var(big), rhs_v = to_var(rhs);
    matrix_v C = big_v * rhs_v;
    check_close(value_of(C), big * rhs, 1e-13);
    var lp = C.sum();
    grad(lp);
    check_close(adjoint_of(big_v), Eigen::MatrixXd::Ones(40, 1) * rhs.rowwise().sum().transpose(), 1e-13);
    check_close(adjoint_of(rhs_v), big.colwise().sum().transpose() * Eigen::RowVectorXd::Ones(20), 1e-13);
  }
}

TEST_CASE("coefficient-wise operations and their gradients") {
  clean_tape tape;
  const Eigen::VectorXd x = sample_matrix(4, 1, 0).array() + 1.5;  // positive, for log and sqrt
  const Eigen::VectorXd y = sample_matrix(4, 1, 0.9);
  vector_v xv = to_var(x), yv = to_var(y);

  SECTION("product, quotient, sum and difference of two var vectors") {
    var lp = (xv.array() * yv.array() + xv.array() / yv.array() - yv.array()).sum();
    grad(lp);
    check_close(adjoint_of(xv), (y.array() + 1 / y.array()).matrix());
    check_close(adjoint_of(yv), (x.array() - x.array() / y.array().square() - 1).matrix());
  }
  SECTION("cwiseProduct and cwiseQuotient") {
    var lp = xv.cwiseProduct(yv).sum() + xv.cwiseQuotient(yv).sum();
    grad(lp);
    check_close(adjoint_of(xv), (y.array() + 1 / y.array()).matrix());
  }
  SECTION("exp, log, sqrt, square through Eigen's array functions") {
    var lp = (xv.array().exp() + xv.array().log() + xv.array().sqrt() + xv.array().square()).sum();
    CHECK(lp.val() ==
          Approx((x.array().exp() + x.array().log() + x.array().sqrt() + x.array().square()).sum()).epsilon(1e-14));
    grad(lp);
    check_close(adjoint_of(xv),
                (x.array().exp() + 1 / x.array() + 0.5 / x.array().sqrt() + 2 * x.array()).matrix());
  }
  SECTION("unaryExpr with a maprect function") {
    var lp = xv.unaryExpr([](const var& v) { return log_inv_logit(v); }).sum();
    grad(lp);
    Eigen::VectorXd expected(4);
    for (int i = 0; i < 4; ++i) expected(i) = inv_logit(-x(i));
    check_close(adjoint_of(xv), expected);
  }
  SECTION("mixing with double vectors and scalars") {
    vector_v mixed = xv + y;
    vector_v scaled = 2.0 * xv - y * 3.0;
    vector_v divided = xv / 4.0;
    check_close(value_of(mixed), x + y);
    check_close(value_of(scaled), 2 * x - 3 * y);
    check_close(value_of(divided), x / 4);
    var lp = mixed.sum() + scaled.sum() + divided.sum() + xv.dot(y);
    grad(lp);
    check_close(adjoint_of(xv), (Eigen::VectorXd::Constant(4, 1 + 2 + 0.25) + y));
  }
  SECTION("minCoeff and maxCoeff compare values") {
    var lo = xv.minCoeff(), hi = xv.maxCoeff();
    CHECK(lo.val() == x.minCoeff());
    CHECK(hi.val() == x.maxCoeff());
  }
}

TEST_CASE("fixed-size var matrices") {
  clean_tape tape;
  Eigen::Matrix<var, 2, 2> M;
  M << 1.0, 2.0, 3.0, 4.0;
  Eigen::Matrix<var, 2, 1> v;
  v << 0.5, -1.0;
  var lp = (M * v).sum() + M.trace();
  CHECK(lp.val() == (1 * 0.5 - 2 + 3 * 0.5 - 4) + 5);
  grad(lp);
  CHECK(M(0, 0).adj() == 1.5);
  CHECK(M(0, 1).adj() == -1.0);
  CHECK(M(1, 0).adj() == 0.5);
  CHECK(M(1, 1).adj() == 0.0);
  CHECK(v(0).adj() == 4.0);
  CHECK(v(1).adj() == 6.0);
}
