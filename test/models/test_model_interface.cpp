// The model interface: Stan's transforms and log-Jacobians against closed forms and finite differences,
// Stan's column names and orders, CmdStan JSON data and init files with their errors by type and message,
// and a model through model_adapter (the Jacobian added while sampling, not for a fit).
#include <catch2/catch.hpp>

#include <maprect/model.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "support/matchers.hpp"

using namespace maprect;
using maprect::test::message_contains;

namespace {

const bounds lower_only{-1.5, HUGE_VAL}, upper_only{-HUGE_VAL, 3.0}, both{-2.0, 5.0};

/// d constrain / du by central differences.
double slope(double u, const bounds& b) {
  const double h = 1e-6;
  return (constrain(u + h, b) - constrain(u - h, b)) / (2 * h);
}

model_data data_of(const std::string& text) { return model_data::parse(text, "d.json"); }

}  // namespace

TEST_CASE("constrain matches Stan's transforms and log-Jacobians in closed form", "[model]") {
  for (double u : {-3.0, -0.4, 0.0, 0.7, 2.5}) {
    double lj = 0;
    CHECK(constrain(u, lower_only, lj) == Approx(-1.5 + std::exp(u)).epsilon(1e-15));
    CHECK(lj == u);
    lj = 0;
    CHECK(constrain(u, upper_only, lj) == Approx(3.0 - std::exp(u)).epsilon(1e-15));
    CHECK(lj == u);
    lj = 0;
    const double p = 1 / (1 + std::exp(-u));
    CHECK(constrain(u, both, lj) == Approx(-2.0 + 7.0 * p).epsilon(1e-15));
    CHECK(lj == Approx(std::log(7.0) + std::log(p) + std::log(1 - p)).epsilon(1e-14));
    lj = 0;
    CHECK(constrain(u, bounds{}, lj) == u);
    CHECK(lj == 0);
  }
}

TEST_CASE("each log-Jacobian is log |dx/du| by finite differences, and unconstrain inverts", "[model]") {
  for (const bounds& b : {lower_only, upper_only, both})
    for (double u : {-2.0, -0.3, 0.0, 1.1, 2.0}) {
      double lj = 0;
      const double x = constrain(u, b, lj);
      CHECK(lj == Approx(std::log(std::fabs(slope(u, b)))).margin(1e-8));
      CHECK(unconstrain(x, b, "x") == Approx(u).margin(1e-12));
    }
}

TEST_CASE("the var transform's gradient, Jacobian included, matches finite differences", "[model]") {
  for (const bounds& b : {lower_only, upper_only, both}) {
    const double u0 = 0.37, h = 1e-6;
    auto f = [&](double u) {  // x^2 + log J: a density term in x plus the Jacobian
      double lj = 0;
      const double x = constrain(u, b, lj);
      return x * x + lj;
    };
    var u = u0, lj = 0;
    const var x = constrain(u, b, lj);
    var total = x * x + lj;
    grad(total);
    CHECK(total.val() == Approx(f(u0)).epsilon(1e-14));
    CHECK(u.adj() == Approx((f(u0 + h) - f(u0 - h)) / (2 * h)).epsilon(1e-7));
    recover_memory();
  }
}

TEST_CASE("unconstrain refuses values on or outside a bound, naming them", "[model]") {
  CHECK_THROWS_MATCHES(unconstrain(-1.5, lower_only, "tau"), std::domain_error,
                       message_contains({"tau = -1.5 is outside its bounds <lower=-1.5>"}));
  CHECK_THROWS_MATCHES(unconstrain(3.5, upper_only, "p"), std::domain_error, message_contains({"<upper=3>"}));
  CHECK_THROWS_MATCHES(unconstrain(5.0, both, "q"), std::domain_error, message_contains({"<lower=-2, upper=5>"}));
  CHECK_THROWS_MATCHES(unconstrain(NAN, bounds{}, "m"), std::domain_error, message_contains({"m = nan"}));
  CHECK_THROWS_MATCHES(parameter_list().real("s").bounds(1, 1), std::invalid_argument,
                       message_contains({"parameter 's': bounds need lower < upper, got lower=1, upper=1"}));
}

TEST_CASE("column names and orders are Stan's: column-major, arrays stored row-major", "[model]") {
  parameter_list p;
  p.real("mu");
  p.matrix("Sigma", 2, 3);
  p.vectors("theta", 2, 3);
  CHECK(csv_names("Sigma", p.at("Sigma").shape) ==
        std::vector<std::string>{"Sigma.1.1", "Sigma.2.1", "Sigma.1.2", "Sigma.2.2", "Sigma.1.3", "Sigma.2.3"});
  CHECK(csv_to_storage(p.at("Sigma").shape) == std::vector<std::size_t>{0, 1, 2, 3, 4, 5});
  // theta[1] = storage 0..2, theta[2] = 3..5; the CSV runs theta.1.1, theta.2.1, theta.1.2, ...
  CHECK(csv_names("theta", p.at("theta").shape).at(1) == "theta.2.1");
  CHECK(csv_to_storage(p.at("theta").shape) == std::vector<std::size_t>{0, 3, 1, 4, 2, 5});
  // JSON nests a matrix by rows: [[a, b, c], [d, e, f]] holds Sigma[1,1], Sigma[1,2], ...
  CHECK(json_to_storage(p.at("Sigma").shape) == std::vector<std::size_t>{0, 2, 4, 1, 3, 5});
  CHECK(json_to_storage(p.at("theta").shape) == std::vector<std::size_t>{0, 1, 2, 3, 4, 5});
  CHECK(p.at("theta").offset == 7);
  CHECK(p.size() == 13);
  CHECK_THROWS_MATCHES(p.real("mu"), std::invalid_argument, message_contains({"parameter 'mu' is declared twice"}));
}

TEST_CASE("CmdStan JSON data are read with their shapes", "[model][data]") {
  const model_data d = data_of(R"({"N": 3, "y": [1.5, 2, -3], "M": [[1, 2, 3], [4, 5, 6]], "k": [0, 1, 1],
                                   "z": ["Infinity", "-Infinity", "NaN"], "v": [[1, 2], [3, 4], [5, 6]]})");
  CHECK(d.integer("N", 1) == 3);
  CHECK(d.vector("y", 3) == Eigen::Vector3d(1.5, 2, -3));
  const Eigen::MatrixXd M = d.matrix("M", 2, 3);
  CHECK(M(0, 2) == 3);
  CHECK(M(1, 0) == 4);
  CHECK(d.integers("k", 3, 0, 1) == std::vector<int>{0, 1, 1});
  const std::vector<double> z = d.reals("z");
  CHECK((z[0] == HUGE_VAL && z[1] == -HUGE_VAL && std::isnan(z[2])));
  CHECK(d.vectors("v", 3, 2)[2](1) == 6);
  const model_data empty = data_of(R"({"e": []})");  // [] is any empty array, as CmdStan reads it
  CHECK(empty.vector("e", 0).size() == 0);
  CHECK(empty.matrix("e", 0, 3).cols() == 3);
  CHECK(empty.vectors("e", 0, 4).empty());
  CHECK_THROWS_MATCHES(empty.vector("e", 2), data_error, message_contains({"expected shape [2], got [0]"}));
}

TEST_CASE("data errors name the variable, the expected and given shape, or line and column", "[model][data]") {
  const model_data d = data_of(R"({"N": 3, "y": [1, 2], "r": 2.5, "s": "x", "g": [[1, 2], [3]], "b": [0, 2]})");
  CHECK_THROWS_MATCHES(d.vector("y", 3), data_error,
                       message_contains({"data variable 'y' in d.json: expected shape [3], got [2]"}));
  CHECK_THROWS_MATCHES(d.matrix("y"), data_error, message_contains({"'y' in d.json: expected shape [*,*], got [2]"}));
  CHECK_THROWS_MATCHES(d.real("x"), data_error, message_contains({"data variable 'x' in d.json: missing (expected shape [])"}));
  CHECK_THROWS_MATCHES(d.integer("r"), data_error, message_contains({"'r' in d.json: expected integers, got number 2.5"}));
  CHECK_THROWS_MATCHES(d.real("s"), data_error, message_contains({"'s' in d.json: expected a number or an array, got string \"x\""}));
  CHECK_THROWS_MATCHES(d.matrix("g"), data_error,
                       message_contains({"'g' in d.json: ragged array: element 2 has shape [1], element 1 has [2]"}));
  CHECK_THROWS_MATCHES(d.integers("b", 2, 0, 1), data_error, message_contains({"'b' in d.json: 2 is outside its bounds"}));
  CHECK_THROWS_MATCHES(data_of("{\n  \"N\": 3,\n  \"y\": [1, 2,, 3]\n}"), data_error,
                       message_contains({"d.json:3:14: JSON syntax error while parsing value - unexpected ','"}));
  CHECK_THROWS_MATCHES(data_of("[1, 2]"), data_error, message_contains({"d.json: the data must be a JSON object"}));
  CHECK_THROWS_MATCHES(model_data::read("/no/such/file.json"), data_error,
                       message_contains({"/no/such/file.json: cannot open (No such file"}));
}

TEST_CASE("line_and_column counts nlohmann's 1-based byte position", "[model][data]") {
  CHECK(line_and_column("ab\ncd", 1) == std::pair<std::size_t, std::size_t>{1, 1});
  CHECK(line_and_column("ab\ncd", 4) == std::pair<std::size_t, std::size_t>{2, 1});
  CHECK(line_and_column("ab\ncd", 5) == std::pair<std::size_t, std::size_t>{2, 2});
}

namespace {

/// A toy model: mu ~ normal(0, 1), sigma ~ exponential(1) with <lower=0>, p ~ uniform on <lower=0, upper=1>,
/// and S a 2x2 matrix ~ normal(0, 1); generated quantity mu2 = 2 mu.
struct toy {
  explicit toy(const model_data& d) : scale(d.real("scale")) {}
  void parameters(parameter_list& p) const {
    p.real("mu");
    p.real("sigma").lower(0);
    p.real("p").bounds(0, 1);
    p.matrix("S", 2, 2);
  }
  template <class T>
  T log_density(const parameter_values<T>& p) const {
    const T mu = p.real("mu"), sigma = p.real("sigma");
    return -0.5 * mu * mu / (scale * scale) - sigma - 0.5 * p.matrix("S").squaredNorm() + 0 * p.real("p");
  }
  void generated_quantities(const parameter_values<double>& p, quantity_writer& out) const {
    out.real("mu2", 2 * p.real("mu"));
  }
  double scale;
};

}  // namespace

TEST_CASE("model_adapter adds the log-Jacobian while sampling and only then", "[model]") {
  const model_adapter<toy> m(data_of(R"({"scale": 2})"));
  CHECK(m.size() == 7);
  CHECK(m.column_names() == std::vector<std::string>{"mu", "sigma", "p", "S.1.1", "S.2.1", "S.1.2", "S.2.2", "mu2"});
  Eigen::VectorXd u(7), g, g_fit;
  u << 0.3, -0.2, 0.4, 1, 2, 3, 4;
  const double sigma = std::exp(-0.2), p = 1 / (1 + std::exp(-0.4));
  const double model_lp = -0.5 * 0.09 / 4 - sigma - 0.5 * 30;
  const double jacobian = -0.2 + std::log(p) + std::log(1 - p);
  CHECK(m.log_density(u, g, true) == Approx(model_lp + jacobian).epsilon(1e-14));
  CHECK(m.log_density(u, g_fit, false) == Approx(model_lp).epsilon(1e-14));
  CHECK(g(0) == Approx(-0.3 / 4));
  CHECK(g(1) == Approx(-sigma + 1));        // d/du (-exp(u) + u)
  CHECK(g(2) == Approx(1 - 2 * p));         // d/du (log p + log(1 - p))
  CHECK(g_fit(1) == Approx(-sigma));
  const Eigen::VectorXd row = m.write_array(u);
  CHECK(row(1) == Approx(sigma).epsilon(1e-15));
  CHECK(row(2) == Approx(p).epsilon(1e-15));
  CHECK(row(7) == 0.6);
}

TEST_CASE("init files: values by name, shapes and bounds checked, other names ignored", "[model][init]") {
  const model_adapter<toy> m(data_of(R"({"scale": 2})"));
  const init_values v = read_init_values(
      m.parameters(), model_data::parse(R"({"sigma": 2, "S": [[1, 2], [3, 4]], "mu2": 7})", "i.json", "parameter"));
  CHECK(v.given == std::vector<bool>{false, true, false, true, true, true, true});
  CHECK(v.unconstrained(1) == Approx(std::log(2.0)));
  CHECK(v.unconstrained(4) == 3);  // S[2,1], stored second
  const auto init = [&](const std::string& text) {
    return read_init_values(m.parameters(), model_data::parse(text, "i.json", "parameter"));
  };
  CHECK_THROWS_MATCHES(init(R"({"sigma": -1})"), std::domain_error,
                       message_contains({"i.json: parameter sigma = -1 is outside its bounds <lower=0>"}));
  CHECK_THROWS_MATCHES(init(R"({"p": 1})"), std::domain_error, message_contains({"parameter p = 1", "<lower=0, upper=1>"}));
  CHECK_THROWS_MATCHES(init(R"({"S": [[1, 2, 3], [3, 4, 5]]})"), data_error,
                       message_contains({"parameter 'S' in i.json: expected shape [2,2], got [2,3]"}));
  CHECK_THROWS_MATCHES(init(R"({"mu": [1]})"), data_error, message_contains({"parameter 'mu' in i.json: expected shape [], got [1]"}));
  CHECK_THROWS_MATCHES(init("{\"mu\": }"), data_error, message_contains({"i.json:1:8: JSON syntax error while parsing value - unexpected '}'"}));
}

TEST_CASE("a second model of the same name is refused", "[model]") {
  register_model(make_model_entry<toy>("toy_registered_once"));
  CHECK_THROWS_MATCHES(register_model(make_model_entry<toy>("toy_registered_once")), std::logic_error,
                       message_contains({"two models are named 'toy_registered_once'"}));
  CHECK_THROWS_MATCHES(find_model("no_such_model"), std::invalid_argument,
                       message_contains({"--model: 'no_such_model' is not a registered model", "toy_registered_once"}));
}

namespace {

/// toy's parameters, whose log density reads `read` as a real, and whose generated quantities write one value
/// more where mu > 1 than at the zero point the column names come from.
struct misreading_toy : toy {
  misreading_toy(const model_data& d, std::string r) : toy(d), read(std::move(r)) {}
  explicit misreading_toy(const model_data& d) : misreading_toy(d, d.json().value("read", std::string("mu"))) {}
  template <class T>
  T log_density(const parameter_values<T>& p) const {
    return read == "S" ? T(p.vector("S")(0)) : p.real(read);
  }
  void generated_quantities(const parameter_values<double>& p, quantity_writer& out) const {
    out.real("mu2", 2 * p.real("mu"));
    if (p.real("mu") > 1) out.real("mu3", 3 * p.real("mu"));
  }
  std::string read;
};

}  // namespace

TEST_CASE("a model that reads its parameters wrongly or changes its quantities' shapes gets a clear error", "[model]") {
  Eigen::VectorXd u = Eigen::VectorXd::Zero(7), g;
  const model_adapter<misreading_toy> unknown(data_of(R"({"scale": 2, "read": "nope"})"));
  CHECK_THROWS_MATCHES(unknown.log_density(u, g, true), std::out_of_range,
                       message_contains({"no parameter named 'nope'"}));
  const model_adapter<misreading_toy> other_type(data_of(R"({"scale": 2, "read": "S"})"));
  CHECK_THROWS_MATCHES(other_type.log_density(u, g, true), std::invalid_argument,
                       message_contains({"parameter 'S' is read with another type than it was declared with"}));
  const model_adapter<misreading_toy> growing(data_of(R"({"scale": 2})"));
  CHECK(growing.write_array(u).size() == 8);  // mu = 0: mu2 alone, as at the zero point
  u(0) = 2;
  CHECK_THROWS_MATCHES(growing.write_array(u), std::runtime_error,
                       message_contains({"generated_quantities wrote 2 values, 1 at the first draw: names and shapes "
                                         "must not change"}));
}
