// Scalar functions of var: values against std or closed forms, derivatives against closed forms and
// five-point finite differences, including extreme arguments; the numerically stable forms stay exact
// where the naive formulas overflow; digamma against reference values.
#include <catch2/catch.hpp>

#include <limits>
#include <string>
#include <vector>

#include "ad/ad_test_support.hpp"

using namespace maprect;
using test::clean_tape;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
const double two_over_sqrt_pi = 2 / std::sqrt(3.14159265358979323846);

/// Logistic function computed independently of maprect, stable on both sides.
double reference_logistic(double x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }

struct unary_case {
  std::string name;
  std::function<var(const var&)> f_var;
  std::function<double(double)> f_double;      ///< maprect's double version (what finite differences see)
  std::function<double(double)> reference;     ///< std or a closed form
  std::function<double(double)> derivative;    ///< closed form
  std::function<double(double)> step;          ///< finite-difference step at x
  std::vector<double> points;
};

// Tolerances: closed-form values and derivatives to a few ulps; five-point finite differences to 1e-8
// relative plus their rounding bound.
void check_unary(const unary_case& c) {
  for (double x : c.points) {
    INFO(c.name << " at x = " << x);
    var y;
    double d_ad;
    {
      nested_tape region;
      var xv = x;
      y = c.f_var(xv);
      CHECK(y.val() == c.f_double(x));  // bit-equal to the double version
      grad(y);
      d_ad = xv.adj();
    }
    CHECK(c.f_double(x) == Approx(c.reference(x)).epsilon(4e-15));
    CHECK(d_ad == Approx(c.derivative(x)).epsilon(4e-15));
    const double h = c.step(x);
    const auto fd = test::central_difference(c.f_double, x, h);
    if (std::isfinite(fd.derivative))
      CHECK(d_ad == Approx(fd.derivative).epsilon(1e-8).margin(fd.rounding_bound));
  }
}

std::vector<unary_case> unary_cases() {
  return {
      {"exp", [](const var& a) { return exp(a); }, [](double x) { return std::exp(x); },
       [](double x) { return std::exp(x); }, [](double x) { return std::exp(x); }, test::absolute_step,
       {-700, -30, -1, -1e-10, 0, 1e-10, 0.5, 1, 30, 700}},
      {"log", [](const var& a) { return log(a); }, [](double x) { return std::log(x); },
       [](double x) { return std::log(x); }, [](double x) { return 1 / x; }, test::relative_step,
       {1e-300, 1e-10, 0.5, 1, 2, 30, 700, 1e300}},
      {"log1p", [](const var& a) { return log1p(a); }, [](double x) { return std::log1p(x); },
       [](double x) { return std::log1p(x); }, [](double x) { return 1 / (1 + x); },
       [](double x) { return 1e-3 * (1 + x); },  // scale-free in the distance to the pole at -1
       {-0.999, -0.5, -1e-10, 0, 1e-12, 1, 30, 700, 1e300}},
      {"expm1", [](const var& a) { return expm1(a); }, [](double x) { return std::expm1(x); },
       [](double x) { return std::expm1(x); }, [](double x) { return std::exp(x); }, test::absolute_step,
       {-700, -30, -1, -1e-12, 0, 1e-12, 1, 30, 700}},
      {"sqrt", [](const var& a) { return sqrt(a); }, [](double x) { return std::sqrt(x); },
       [](double x) { return std::sqrt(x); }, [](double x) { return 0.5 / std::sqrt(x); }, test::relative_step,
       {1e-300, 1e-10, 0.25, 2, 700, 1e300}},
      {"square", [](const var& a) { return square(a); }, [](double x) { return square(x); },
       [](double x) { return x * x; }, [](double x) { return 2 * x; }, test::relative_step,
       {-1e150, -700, -1, -1e-10, 0, 1e-10, 3, 1e150}},
      {"sin", [](const var& a) { return sin(a); }, [](double x) { return std::sin(x); },
       [](double x) { return std::sin(x); }, [](double x) { return std::cos(x); }, test::absolute_step,
       {-700, -30, -1, -1e-10, 0, 1e-10, 1, 30, 700}},
      {"cos", [](const var& a) { return cos(a); }, [](double x) { return std::cos(x); },
       [](double x) { return std::cos(x); }, [](double x) { return -std::sin(x); }, test::absolute_step,
       {-700, -30, -1, -1e-10, 0, 1e-10, 1, 30, 700}},
      {"tan", [](const var& a) { return tan(a); }, [](double x) { return std::tan(x); },
       [](double x) { return std::tan(x); }, [](double x) { return 1 / (std::cos(x) * std::cos(x)); },
       test::absolute_step, {-1.2, -0.3, -1e-10, 0, 1e-10, 0.7, 1.2, 3, 30}},
      {"tanh", [](const var& a) { return tanh(a); }, [](double x) { return std::tanh(x); },
       [](double x) { return std::tanh(x); }, [](double x) { return 1 / (std::cosh(x) * std::cosh(x)); },
       test::absolute_step, {-30, -3, -1, -1e-10, 0, 1e-10, 0.5, 3, 30, 700}},
      {"fabs", [](const var& a) { return fabs(a); }, [](double x) { return std::fabs(x); },
       [](double x) { return std::fabs(x); }, [](double x) { return x > 0 ? 1.0 : -1.0; }, test::relative_step,
       {-1e300, -700, -1, -1e-300, 1e-300, 2, 700, 1e300}},
      {"abs", [](const var& a) { return abs(a); }, [](double x) { return std::abs(x); },
       [](double x) { return std::fabs(x); }, [](double x) { return x > 0 ? 1.0 : -1.0; }, test::relative_step,
       {-700, -1e-10, 1e-10, 700}},
      {"lgamma", [](const var& a) { return lgamma(a); }, [](double x) { return std::lgamma(x); },
       [](double x) { return std::lgamma(x); }, [](double x) { return digamma(x); },
       // Scale-free for x > 0; for x < 0 the poles at the integers set the scale.
       [](double x) { return x > 0 ? 1e-3 * x : 1e-3 * std::fabs(x - std::round(x)); },
       {-10.3, -2.5, -0.5, 1e-8, 0.5, 1, 2, 3.7, 30, 170.5, 1e6}},
      {"erf", [](const var& a) { return erf(a); }, [](double x) { return std::erf(x); },
       [](double x) { return std::erf(x); }, [=](double x) { return two_over_sqrt_pi * std::exp(-x * x); },
       test::absolute_step, {-30, -5, -0.5, -1e-10, 0, 1e-10, 0.5, 2, 5, 30}},
      {"inv_logit", [](const var& a) { return inv_logit(a); }, [](double x) { return inv_logit(x); },
       reference_logistic, [](double x) { return reference_logistic(x) * reference_logistic(-x); },
       test::absolute_step, {-800, -700, -30, -1, -1e-10, 0, 1e-10, 1, 30, 700, 800}},
      {"log_inv_logit", [](const var& a) { return log_inv_logit(a); }, [](double x) { return log_inv_logit(x); },
       [](double x) { return x < 0 ? x - std::log1p(std::exp(x)) : -std::log1p(std::exp(-x)); },
       [](double x) { return reference_logistic(-x); }, test::absolute_step,
       {-800, -700, -30, -1, -1e-10, 0, 1e-10, 1, 30, 700, 800}},
      {"log1m_inv_logit", [](const var& a) { return log1m_inv_logit(a); },
       [](double x) { return log1m_inv_logit(x); },
       [](double x) { return x > 0 ? -x - std::log1p(std::exp(-x)) : -std::log1p(std::exp(x)); },
       [](double x) { return -reference_logistic(x); }, test::absolute_step,
       {-800, -700, -30, -1, -1e-10, 0, 1e-10, 1, 30, 700, 800}},
      {"log1p_exp", [](const var& a) { return log1p_exp(a); }, [](double x) { return log1p_exp(x); },
       [](double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); },
       reference_logistic, test::absolute_step, {-800, -700, -30, -1, -1e-10, 0, 1e-10, 1, 30, 700, 800}},
  };
}

}  // namespace

TEST_CASE("unary functions: values, closed-form derivatives, finite differences") {
  clean_tape tape;
  for (const auto& c : unary_cases()) {
    SECTION(c.name) { check_unary(c); }
  }
}

TEST_CASE("the logistic family against the naive formulas where those are accurate") {
  clean_tape tape;
  // Moderate arguments only: 1 + exp(x) and 1 - inv_logit(x) round away the result's digits beyond.
  for (double x : {-3.0, -0.5, 0.0, 0.25, 4.0}) {
    INFO("x = " << x);
    CHECK(inv_logit(var(x)).val() == Approx(1 / (1 + std::exp(-x))).epsilon(1e-15));
    CHECK(log_inv_logit(var(x)).val() == Approx(std::log(1 / (1 + std::exp(-x)))).epsilon(1e-13));
    CHECK(log1m_inv_logit(var(x)).val() == Approx(std::log(1 - 1 / (1 + std::exp(-x)))).epsilon(1e-13));
    CHECK(log1p_exp(var(x)).val() == Approx(std::log(1 + std::exp(x))).epsilon(1e-13));
  }
}

TEST_CASE("stable forms are exact where naive formulas overflow or round to zero") {
  clean_tape tape;
  CHECK(log1p_exp(800.0) == 800.0);
  CHECK(log_inv_logit(-800.0) == -800.0);
  CHECK(log1m_inv_logit(800.0) == -800.0);
  CHECK(log1p_exp(-800.0) == 0.0);
  CHECK(log_inv_logit(800.0) == 0.0);
  CHECK(log1m_inv_logit(-800.0) == 0.0);
  CHECK(inv_logit(-800.0) == 0.0);
  CHECK(inv_logit(800.0) == 1.0);
  // Tiny results keep full relative precision: exp(-40) is far below the resolution of 1 + exp(-40).
  const double e40 = std::exp(-40.0);
  CHECK(log1p_exp(-40.0) == Approx(e40).epsilon(1e-15));
  CHECK(inv_logit(-40.0) == Approx(e40).epsilon(1e-15));
  CHECK(log_inv_logit(40.0) == Approx(-e40).epsilon(1e-15));
  CHECK(log1m_inv_logit(-40.0) == Approx(-e40).epsilon(1e-15));
  CHECK(inv_logit_derivative(-40.0) == Approx(e40).epsilon(1e-15));
  CHECK(inv_logit_derivative(800.0) == 0.0);

  var big = 800.0, small = -800.0;
  var a = log1p_exp(big), b = log_inv_logit(small), c = log1m_inv_logit(big);
  CHECK(a.val() == 800.0);
  CHECK(b.val() == -800.0);
  CHECK(c.val() == -800.0);
  grad(a);
  CHECK(big.adj() == 1.0);
  set_zero_all_adjoints();
  grad(b);
  CHECK(small.adj() == 1.0);
  set_zero_all_adjoints();
  grad(c);
  CHECK(big.adj() == -1.0);
  for (double x : {-800.0, -30.0, 0.0, 30.0, 800.0}) {
    INFO("x = " << x);
    CHECK(std::isfinite(log1p_exp(var(x)).val()));
    CHECK(std::isfinite(log_inv_logit(var(x)).val()));
    CHECK(std::isfinite(log1m_inv_logit(var(x)).val()));
  }
}

TEST_CASE("closed-form derivatives of the logistic family") {
  clean_tape tape;
  for (double x : {-800.0, -35.0, -2.0, 0.0, 0.75, 35.0, 800.0}) {
    INFO("x = " << x);
    CHECK(test::ad_derivative([](const var& v) { return log_inv_logit(v); }, x) == inv_logit(-x));
    CHECK(test::ad_derivative([](const var& v) { return log1m_inv_logit(v); }, x) == -inv_logit(x));
    CHECK(test::ad_derivative([](const var& v) { return log1p_exp(v); }, x) == inv_logit(x));
    CHECK(test::ad_derivative([](const var& v) { return inv_logit(v); }, x) ==
          Approx(inv_logit(x) * inv_logit(-x)).epsilon(1e-15));
  }
}

TEST_CASE("fabs and abs at zero have derivative zero; NaN propagates") {
  clean_tape tape;
  CHECK(test::ad_derivative([](const var& v) { return fabs(v); }, 0.0) == 0.0);
  CHECK(test::ad_derivative([](const var& v) { return abs(v); }, -0.0) == 0.0);
  CHECK(fabs(var(-0.0)).val() == 0.0);
  CHECK(std::isnan(fabs(var(std::nan(""))).val()));
  CHECK(std::isnan(test::ad_derivative([](const var& v) { return fabs(v); }, std::nan(""))));
}

TEST_CASE("digamma against reference values") {
  // Reference values to 20 digits (mpmath).
  const std::vector<std::pair<double, double>> known = {
      {1.0, -0.57721566490153286061},   {0.5, -1.9635100260214234794},   {2.0, 0.42278433509846713939},
      {0.25, -4.2274535333762654081},   {3.7, 1.1671535393615114409},    {10.0, 2.2517525890667211076},
      {100.0, 4.6001618527380874002},   {1e6, 13.815510057964190771},    {1e-8, -100000000.57721564636},
      {-0.5, 0.036489973978576520559},  {-1.5, 0.70315664064524318723},  {-2.25, 4.1585835646579722748},
      {-10.3, 4.6624034935820870175}};
  for (auto [x, psi] : known) {
    INFO("x = " << x);
    CHECK(digamma(x) == Approx(psi).epsilon(2e-14));
  }
  // About 10 ulps: psi(1) comes from psi(10) minus the harmonic sum, which cancels 2.25 against 2.83.
  CHECK(digamma(1.0) == Approx(-0.5772156649015329).epsilon(4e-15));
  // Recurrence psi(x + 1) = psi(x) + 1 / x over a range that crosses the series cut-off at 10.
  for (double x = 0.1; x < 20; x += 0.7) {
    INFO("x = " << x);
    CHECK(digamma(x + 1) == Approx(digamma(x) + 1 / x).epsilon(1e-14));
  }
  CHECK(std::isnan(digamma(0.0)));
  CHECK(std::isnan(digamma(-3.0)));
  CHECK(std::isnan(digamma(std::nan(""))));
}

TEST_CASE("lgamma's derivative is digamma") {
  clean_tape tape;
  for (double x : {-2.25, 0.5, 1.0, 10.0}) {
    INFO("x = " << x);
    CHECK(test::ad_derivative([](const var& v) { return lgamma(v); }, x) == digamma(x));
  }
}

TEST_CASE("pow for var/var, var/double and double/var") {
  clean_tape tape;
  const std::vector<std::pair<double, double>> points = {{2, 3},    {0.5, -1.5}, {10, 0.1}, {1e-10, 2},
                                                         {3, 0},    {1.5, 700},  {700, 1.5}, {2, -30},
                                                         {0.9, 1e-8}};
  for (const auto& point : points) {
    const double a = point.first, b = point.second;  // lambdas below capture them: not bindings in C++17
    INFO("a = " << a << ", b = " << b);
    const double v = std::pow(a, b);
    const double da = b == 0 ? 0.0 : b * std::pow(a, b - 1);
    const double db = v * std::log(a);
    const auto vv = test::ad_partials([](const var& x, const var& y) { return pow(x, y); }, a, b);
    CHECK(vv.value == v);
    CHECK(vv.d_a == Approx(da).epsilon(4e-15));
    CHECK(vv.d_b == Approx(db).epsilon(4e-15));
    // a^b changes on the scale a / |b| in a, and on the scale 1 / |log a| in b.
    const auto fd_a = test::central_difference([&](double t) { return std::pow(t, b); }, a,
                                               1e-3 * a / std::max(1.0, std::fabs(b)));
    const auto fd_b = test::central_difference([&](double t) { return std::pow(a, t); }, b, 1e-4);
    CHECK(vv.d_a == Approx(fd_a.derivative).epsilon(1e-8).margin(fd_a.rounding_bound));
    CHECK(vv.d_b == Approx(fd_b.derivative).epsilon(1e-8).margin(fd_b.rounding_bound));

    const double vd_d = test::ad_derivative([b = b](const var& x) { return pow(x, b); }, a);
    const double dv_d = test::ad_derivative([a = a](const var& y) { return pow(a, y); }, b);
    CHECK(pow(var(a), b).val() == v);
    CHECK(pow(a, var(b)).val() == v);
    CHECK(vd_d == vv.d_a);
    CHECK(dv_d == vv.d_b);
  }
  // The conventions at 0: d/da a^0 = 0 and d/db 0^b = 0 (the limit for b > 0), not NaN.
  const auto at_zero = test::ad_partials([](const var& x, const var& y) { return pow(x, y); }, 0.0, 2.0);
  CHECK(at_zero.value == 0.0);
  CHECK(at_zero.d_a == 0.0);
  CHECK(at_zero.d_b == 0.0);
  CHECK(test::ad_derivative([](const var& y) { return pow(0.0, y); }, 2.0) == 0.0);
  CHECK(test::ad_derivative([](const var& x) { return pow(x, 0.0); }, 0.0) == 0.0);
  CHECK(test::ad_derivative([](const var& x) { return pow(x, 2); }, 3.0) == 6.0);  // int exponent
}

TEST_CASE("log_sum_exp of two scalars: values, softmax partials, mixes with double") {
  clean_tape tape;
  const std::vector<std::pair<double, double>> points = {
      {0, 0}, {1, 2}, {-3, 5}, {-700, -700}, {800, 800}, {1000, -1000}, {-1e-10, 30}, {-745, -740}};
  for (const auto& point : points) {
    const double a = point.first, b = point.second;  // lambdas below capture them: not bindings in C++17
    INFO("a = " << a << ", b = " << b);
    const double m = std::max(a, b);
    const double expected = m + std::log(std::exp(a - m) + std::exp(b - m));
    const auto vv = test::ad_partials([](const var& x, const var& y) { return log_sum_exp(x, y); }, a, b);
    CHECK(log_sum_exp(a, b) == Approx(expected).epsilon(1e-15));
    CHECK(vv.value == log_sum_exp(a, b));
    // Softmax from differences to the max, which are exact.
    const double wa = std::exp(a - m), wb = std::exp(b - m);
    CHECK(vv.d_a == Approx(wa / (wa + wb)).epsilon(4e-16));
    CHECK(vv.d_b == Approx(wb / (wa + wb)).epsilon(4e-16));
    CHECK(vv.d_a + vv.d_b == Approx(1.0).epsilon(1e-15));
    const auto fd_a = test::central_difference([&](double t) { return log_sum_exp(t, b); }, a, 1e-3);
    const auto fd_b = test::central_difference([&](double t) { return log_sum_exp(a, t); }, b, 1e-3);
    CHECK(vv.d_a == Approx(fd_a.derivative).epsilon(1e-8).margin(fd_a.rounding_bound));
    CHECK(vv.d_b == Approx(fd_b.derivative).epsilon(1e-8).margin(fd_b.rounding_bound));

    CHECK(log_sum_exp(var(a), b).val() == vv.value);
    CHECK(log_sum_exp(a, var(b)).val() == vv.value);
    CHECK(test::ad_derivative([b = b](const var& x) { return log_sum_exp(x, b); }, a) == vv.d_a);
    CHECK(test::ad_derivative([a = a](const var& y) { return log_sum_exp(a, y); }, b) == vv.d_b);
  }
  CHECK(log_sum_exp(800.0, 800.0) == Approx(800 + std::log(2.0)).epsilon(1e-15));
  CHECK(log_sum_exp(-inf, 3.0) == 3.0);
  CHECK(log_sum_exp(3.0, -inf) == 3.0);
  CHECK(log_sum_exp(-inf, -inf) == -inf);
  CHECK(log_sum_exp(inf, 3.0) == inf);
  CHECK(log_sum_exp(inf, inf) == inf);  // as the vector version: log(inf + inf) is inf, not NaN
  CHECK(std::isnan(log_sum_exp(std::nan(""), 1.0)));

  // Partials keep full precision however large the arguments: equal arguments split the gradient
  // exactly in two.
  for (double big : {700.0, 1e10, -1e10, 1e300}) {
    INFO("a = b = " << big);
    const auto equal = test::ad_partials([](const var& x, const var& y) { return log_sum_exp(x, y); }, big, big);
    CHECK(equal.d_a == 0.5);
    CHECK(equal.d_b == 0.5);
    CHECK(test::ad_derivative([big](const var& x) { return log_sum_exp(x, big); }, big) == 0.5);
  }
  // An infinite argument takes the whole gradient.
  const auto with_inf = test::ad_partials([](const var& x, const var& y) { return log_sum_exp(x, y); }, inf, 2.0);
  CHECK(with_inf.value == inf);
  CHECK(with_inf.d_a == 1.0);
  CHECK(with_inf.d_b == 0.0);

  // An operand at -inf contributes nothing, including to the gradient.
  const auto with_neg_inf = test::ad_partials([](const var& x, const var& y) { return log_sum_exp(x, y); }, -inf, 2.0);
  CHECK(with_neg_inf.value == 2.0);
  CHECK(with_neg_inf.d_a == 0.0);
  CHECK(with_neg_inf.d_b == 1.0);
  const auto both_neg_inf = test::ad_partials([](const var& x, const var& y) { return log_sum_exp(x, y); }, -inf, -inf);
  CHECK(both_neg_inf.value == -inf);
  CHECK(both_neg_inf.d_a == 0.0);
  CHECK(both_neg_inf.d_b == 0.0);
  CHECK(test::ad_derivative([](const var& x) { return log_sum_exp(x, -inf); }, -inf) == 0.0);
}

TEST_CASE("log_sum_exp of an Eigen vector: one node, softmax gradient, no overflow") {
  clean_tape tape;
  const std::vector<Eigen::VectorXd> inputs = {
      (Eigen::VectorXd(3) << 1, 2, 3).finished(), (Eigen::VectorXd(4) << 800, 800, 799, -1000).finished(),
      (Eigen::VectorXd(3) << -700, -701, -745).finished(), (Eigen::VectorXd(1) << 0.5).finished(),
      (Eigen::VectorXd(3) << -inf, 0.0, std::log(3.0)).finished()};
  for (const auto& x : inputs) {
    INFO("x = " << x.transpose());
    const double m = x.maxCoeff();
    const double expected = m + std::log((x.array() - m).exp().sum());
    CHECK(log_sum_exp(x) == Approx(expected).epsilon(1e-15));
    nested_tape region;
    vector_v xv = to_var(x);
    const std::size_t before = tape_size();
    var y = log_sum_exp(xv);
    CHECK(tape_size() == before + 1);
    CHECK(y.val() == log_sum_exp(x));
    grad(y);
    // std::exp, not Eigen's vectorised exp, which returns subnormals rather than 0 far below -708.
    const Eigen::VectorXd weights = x.unaryExpr([m](double xi) { return std::exp(xi - m); });
    const Eigen::VectorXd softmax = weights / weights.sum();
    for (Eigen::Index i = 0; i < x.size(); ++i) {
      CHECK(xv(i).adj() == Approx(softmax(i)).epsilon(1e-14));
      if (std::isfinite(x(i))) {
        const auto fd = test::central_difference(
            [&](double t) {
              Eigen::VectorXd shifted = x;
              shifted(i) = t;
              return log_sum_exp(shifted);
            },
            x(i), 1e-3);
        CHECK(xv(i).adj() == Approx(fd.derivative).epsilon(1e-8).margin(fd.rounding_bound));
      }
    }
    // Two-argument form agrees for pairs.
    if (x.size() >= 2) CHECK(log_sum_exp(x.head(2)) == Approx(log_sum_exp(x(0), x(1))).epsilon(1e-15));
  }
  CHECK(log_sum_exp(Eigen::VectorXd(3).setConstant(-inf)) == -inf);
  CHECK(log_sum_exp(Eigen::VectorXd(0)) == -inf);
  CHECK(log_sum_exp((Eigen::VectorXd(2) << inf, 1.0).finished()) == inf);
  CHECK(std::isnan(log_sum_exp((Eigen::VectorXd(2) << std::nan(""), 1.0).finished())));

  // Equal large arguments share the gradient equally, to the last bit or two.
  for (double big : {700.0, 1e10}) {
    INFO("x = " << big << " three times");
    vector_v same = to_var(Eigen::VectorXd::Constant(3, big));
    var y = log_sum_exp(same);
    grad(y);
    for (int i = 0; i < 3; ++i) CHECK(same(i).adj() == Approx(1.0 / 3).epsilon(4e-16));
  }

  vector_v empty(0);
  var y = log_sum_exp(empty);
  CHECK(y.val() == -inf);
  grad(y);  // nothing to propagate, and no NaN from exp(-inf - -inf)
  vector_v all_neg_inf = to_var(Eigen::VectorXd(2).setConstant(-inf));
  var z = log_sum_exp(all_neg_inf);
  grad(z);
  CHECK(all_neg_inf(0).adj() == 0.0);
  CHECK(all_neg_inf(1).adj() == 0.0);
}

TEST_CASE("log_sum_exp of a var expression differentiates through the expression") {
  clean_tape tape;
  vector_v x = to_var((Eigen::VectorXd(3) << 0.1, -0.2, 0.3).finished());
  const std::size_t before = tape_size();
  var y = log_sum_exp(x * 2.0);
  CHECK(tape_size() == before + 3 + 1);  // each product once, then the log_sum_exp node
  grad(y);
  Eigen::VectorXd twice = 2 * value_of(x);
  const Eigen::VectorXd weights = (twice.array() - twice.maxCoeff()).exp();
  const Eigen::VectorXd softmax = weights / weights.sum();
  CHECK(y.val() == Approx(log_sum_exp(twice)).epsilon(1e-15));
  for (int i = 0; i < 3; ++i) CHECK(x(i).adj() == Approx(2 * softmax(i)).epsilon(1e-14));
}
