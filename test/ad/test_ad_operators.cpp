// Arithmetic, compound assignment, integer operands and comparisons of var: values bit-equal to double
// arithmetic, partials against their closed forms and finite differences, one tape node per operation.
#include <catch2/catch.hpp>

#include <sstream>
#include <vector>

#include "ad/ad_test_support.hpp"

using namespace maprect;
using test::ad_partials;
using test::clean_tape;

namespace {

const std::vector<std::pair<double, double>> operand_pairs = {
    {1.5, 2.25}, {-3.0, 0.5}, {1e-12, 7.0}, {700.0, -3.5}, {-1e8, 1e-8}, {0.0, 4.0}, {2.0, -1e150}};

/// Partials of a binary var/var operation against closed forms and finite differences in each argument.
void check_binary(const char* name, const std::function<var(const var&, const var&)>& op_vv,
                  const std::function<double(double, double)>& op_dd,
                  const std::function<std::pair<double, double>(double, double)>& closed_form_partials) {
  for (const auto& operands : operand_pairs) {
    const double a = operands.first, b = operands.second;
    INFO(name << " at a = " << a << ", b = " << b);
    const auto r = ad_partials(op_vv, a, b);
    CHECK(r.value == op_dd(a, b));  // the node's value is plain double arithmetic
    const auto [da, db] = closed_form_partials(a, b);
    CHECK(r.d_a == Approx(da).epsilon(1e-15));
    CHECK(r.d_b == Approx(db).epsilon(1e-15));
    const auto fd_a = test::central_difference([&](double t) { return op_dd(t, b); }, a, test::relative_step(a));
    const auto fd_b = test::central_difference([&](double t) { return op_dd(a, t); }, b, test::relative_step(b));
    CHECK(r.d_a == Approx(fd_a.derivative).epsilon(1e-8).margin(fd_a.rounding_bound));
    CHECK(r.d_b == Approx(fd_b.derivative).epsilon(1e-8).margin(fd_b.rounding_bound));
  }
}

/// var op double and double op var give the same value and partial as var op var.
void check_mixed(const char* name, const std::function<var(const var&, double)>& op_vd,
                 const std::function<var(double, const var&)>& op_dv, const std::function<var(const var&, const var&)>& op_vv) {
  for (const auto& operands : operand_pairs) {
    const double a = operands.first, b = operands.second;
    INFO(name << " at a = " << a << ", b = " << b);
    const auto both = ad_partials(op_vv, a, b);
    const auto left = ad_partials([&](const var& x, const var&) { return op_vd(x, b); }, a, b);
    const auto right = ad_partials([&](const var&, const var& y) { return op_dv(a, y); }, a, b);
    CHECK(left.value == both.value);
    CHECK(right.value == both.value);
    CHECK(left.d_a == both.d_a);
    CHECK(left.d_b == 0.0);
    CHECK(right.d_b == Approx(both.d_b).epsilon(1e-15));
    CHECK(right.d_a == 0.0);
  }
}

}  // namespace

TEST_CASE("binary operators: values, closed-form partials and finite differences") {
  clean_tape tape;
  check_binary(
      "a + b", [](const var& a, const var& b) { return a + b; }, [](double a, double b) { return a + b; },
      [](double, double) { return std::make_pair(1.0, 1.0); });
  check_binary(
      "a - b", [](const var& a, const var& b) { return a - b; }, [](double a, double b) { return a - b; },
      [](double, double) { return std::make_pair(1.0, -1.0); });
  check_binary(
      "a * b", [](const var& a, const var& b) { return a * b; }, [](double a, double b) { return a * b; },
      [](double a, double b) { return std::make_pair(b, a); });
  check_binary(
      "a / b", [](const var& a, const var& b) { return a / b; }, [](double a, double b) { return a / b; },
      [](double a, double b) { return std::make_pair(1 / b, -a / (b * b)); });
}

TEST_CASE("var/double and double/var operators agree with var/var") {
  clean_tape tape;
  check_mixed(
      "+", [](const var& a, double b) { return a + b; }, [](double a, const var& b) { return a + b; },
      [](const var& a, const var& b) { return a + b; });
  check_mixed(
      "-", [](const var& a, double b) { return a - b; }, [](double a, const var& b) { return a - b; },
      [](const var& a, const var& b) { return a - b; });
  check_mixed(
      "*", [](const var& a, double b) { return a * b; }, [](double a, const var& b) { return a * b; },
      [](const var& a, const var& b) { return a * b; });
  check_mixed(
      "/", [](const var& a, double b) { return a / b; }, [](double a, const var& b) { return a / b; },
      [](const var& a, const var& b) { return a / b; });
}

TEST_CASE("double - var and double / var at hand-checked points") {
  clean_tape tape;
  var x = 4.0;
  var y = 10.0 - x;
  grad(y);
  CHECK(y.val() == 6.0);
  CHECK(x.adj() == -1.0);
  set_zero_all_adjoints();
  var z = 2.0 / x;
  grad(z);
  CHECK(z.val() == 0.5);
  CHECK(x.adj() == -0.125);  // -2 / x^2
}

TEST_CASE("unary minus and unary plus") {
  clean_tape tape;
  var x = 2.5;
  const std::size_t before = tape_size();
  var plus = +x;
  CHECK(plus.vi_ == x.vi_);  // no new node
  CHECK(tape_size() == before);
  var y = -x;
  CHECK(tape_size() == before + 1);
  CHECK(y.val() == -2.5);
  var z = -(-x) * 3.0;
  grad(z);
  CHECK(z.val() == 7.5);
  CHECK(x.adj() == 3.0);
}

TEST_CASE("each arithmetic operation adds exactly one node to the tape") {
  clean_tape tape;
  var a = 1.0, b = 2.0;
  const std::size_t before = tape_size();
  var r1 = a + b, r2 = a - 1.0, r3 = 2.0 * b, r4 = a / b, r5 = 3 - a, r6 = -b;
  CHECK(tape_size() == before + 6);
  (void)r1, (void)r2, (void)r3, (void)r4, (void)r5, (void)r6;
}

TEST_CASE("compound assignment: new value, gradient through the old value, copies unaffected") {
  clean_tape tape;
  var x = 3.0, y = 2.0;
  var z = x;
  z += y;  // 5
  z *= x;  // 15
  z -= 1.0;  // 14
  z /= y;  // 7
  z += 0.5;  // 7.5
  z *= 2.0;  // 15
  z -= y;  // 13
  z /= 4.0;  // 3.25
  CHECK(x.val() == 3.0);  // z was a copy of the handle; assigning z made new nodes
  CHECK(z.val() == 3.25);
  grad(z);
  // z = (2 * (((x + y) * x - 1) / y + 0.5) - y) / 4
  const double xv = 3, yv = 2;
  CHECK(x.adj() == Approx(2 * (2 * xv + yv) / yv / 4).epsilon(1e-15));
  CHECK(y.adj() == Approx((2 * (xv * yv - ((xv + yv) * xv - 1)) / (yv * yv) - 1) / 4).epsilon(1e-15));
}

TEST_CASE("integer operands behave as the same double") {
  clean_tape tape;
  var x = 5.0;
  const std::vector<std::pair<var, double>> results = {
      {x + 2, 7.0}, {2 + x, 7.0}, {x - 2, 3.0}, {2 - x, -3.0}, {x * 3, 15.0}, {3 * x, 15.0},
      {x / 4, 1.25}, {10 / x, 2.0}, {x * 2L, 10.0}, {x + 1u, 6.0}, {static_cast<short>(2) * x, 10.0}};
  const std::vector<double> derivatives = {1, 1, 1, -1, 3, 3, 0.25, -0.4, 2, 1, 2};
  for (std::size_t k = 0; k < results.size(); ++k) {
    INFO("case " << k);
    CHECK(results[k].first.val() == results[k].second);
    set_zero_all_adjoints();
    grad(results[k].first);
    CHECK(x.adj() == Approx(derivatives[k]).epsilon(1e-15));
  }
  var w = 1.0;
  w += 2;
  w *= 3;
  w -= 1;
  w /= 4;
  CHECK(w.val() == 2.0);
  var from_int = 7;
  var from_float = 0.5f;
  CHECK(from_int.val() == 7.0);
  CHECK(from_float.val() == 0.5);
}

TEST_CASE("comparisons look at values, for every operand mix, and add no nodes") {
  clean_tape tape;
  const std::vector<std::pair<double, double>> pairs = {{1, 2}, {2, 2}, {2, 1}, {-0.0, 0.0}};
  for (auto [a, b] : pairs) {
    INFO("a = " << a << ", b = " << b);
    var av = a, bv = b;
    const std::size_t before = tape_size();
    CHECK((av == bv) == (a == b));
    CHECK((av != bv) == (a != b));
    CHECK((av < bv) == (a < b));
    CHECK((av > bv) == (a > b));
    CHECK((av <= bv) == (a <= b));
    CHECK((av >= bv) == (a >= b));
    CHECK((av == b) == (a == b));
    CHECK((av < b) == (a < b));
    CHECK((av >= b) == (a >= b));
    CHECK((a != bv) == (a != b));
    CHECK((a > bv) == (a > b));
    CHECK((a <= bv) == (a <= b));
    CHECK(tape_size() == before);
  }
  var x = 3.0;
  CHECK(x == 3);
  CHECK(x < 4);
  CHECK(2 < x);
  CHECK_FALSE(x != 3);
  var nan = std::nan("");
  CHECK_FALSE(nan == nan);
  CHECK(nan != nan);
  CHECK_FALSE(nan < 1.0);
}

TEST_CASE("a var used several times accumulates every path") {
  clean_tape tape;
  var x = 1.5;
  var y = x * x * x + x / x - x;  // x^3 + 1 - x
  grad(y);
  CHECK(y.val() == Approx(1.5 * 1.5 * 1.5 + 1 - 1.5).epsilon(1e-15));
  CHECK(x.adj() == Approx(3 * 1.5 * 1.5 - 1).epsilon(1e-15));
}

TEST_CASE("printing a var prints its value") {
  clean_tape tape;
  std::ostringstream os;
  os << var(2.5) << " " << var();
  CHECK(os.str() == "2.5 uninitialized");
}
