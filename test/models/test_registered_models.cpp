// The built-in models on the model interface against the classes they transcribe: the same data from their
// JSON as embedded, the same log density and gradient bit for bit where no parameter is bounded (logreg,
// pk2cmt), to rounding where the interface adds the Jacobian (eight_schools), and their data errors.
#include <catch2/catch.hpp>

#include <maprect/model.hpp>

#include <eight_schools.hpp>
#include <logreg.hpp>
#include <pk2cmt.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/matchers.hpp"

using namespace maprect;
using maprect::test::message_contains;

namespace {

std::unique_ptr<model> make(const std::string& name, const nlohmann::json& data) {
  return find_model(name).make(model_data(data, "t.json"));
}
std::unique_ptr<model> embedded(const std::string& name, int jobs = 0, int points = 0) {
  return make(name, find_model(name).embedded_data(jobs, points));
}
Eigen::VectorXd point(int n, double scale) {
  Eigen::VectorXd x(n);
  for (int i = 0; i < n; ++i) x(i) = scale * std::sin(1.3 * i + 0.4);
  return x;
}

}  // namespace

TEST_CASE("logreg on the interface is logreg_model bit for bit, columns in Stan's order", "[registered]") {
  const auto m = embedded("logreg", 5, 30);
  const models::logreg_model old(5, 30);
  REQUIRE(m->size() == old.size());
  const Eigen::VectorXd x = point(m->size(), 0.7);
  Eigen::VectorXd g_new, g_old;
  double lp_old = 0;
  gradient([&](const vector_v& v) { return old.log_density(v); }, x, lp_old, g_old);
  CHECK(m->log_density(x, g_new, true) == lp_old);
  CHECK(g_new == g_old);
  CHECK(m->column_names().at(2) == "effects.1.1");  // u_1
  CHECK(m->column_names().at(3) == "effects.2.1");  // u_2
  CHECK(m->write_array(x)(3) == x(4));             // u_2 is stored after (u_1, v_1)
  CHECK(m->truth() == std::vector<std::pair<std::string, double>>{{"alpha", 0.3}, {"beta", -0.5}});
}

TEST_CASE("logreg's CSV data read through the interface are the CSV reader's groups", "[registered]") {
  const std::string path = (std::filesystem::temp_directory_path() / "maprect-registered-logreg.csv").string();
  std::ofstream(path) << "group,y,x\nb,1,0.5\na,0,-1\nb,0,2\n";
  const nlohmann::json json = find_model("logreg").read_csv(path);
  CHECK(json["group"] == nlohmann::json({1, 1, 2}));  // b first: it appears first
  CHECK(json["x"] == nlohmann::json({0.5, 2.0, -1.0}));
  const auto m = make("logreg", json);
  const models::logreg_model old(models::read_logreg_csv(path));
  Eigen::VectorXd g_new, g_old;
  double lp_old = 0;
  const Eigen::VectorXd x = point(m->size(), 0.5);
  gradient([&](const vector_v& v) { return old.log_density(v); }, x, lp_old, g_old);
  CHECK(m->log_density(x, g_new, true) == lp_old);
  CHECK(m->truth().empty());
}

TEST_CASE("pk2cmt on the interface is pk2cmt_model bit for bit, with its natural-scale quantities", "[registered]") {
  const auto m = embedded("pk2cmt", 3);
  const models::pk2cmt_model old(3);
  REQUIRE(m->size() == old.size());
  const Eigen::VectorXd x = old.initial() + point(old.size(), 0.05);
  Eigen::VectorXd g_new, g_old;
  const double lp_old = old.log_density_gradient(x, g_old);
  CHECK(m->log_density(x, g_new, true) == lp_old);
  CHECK(g_new == g_old);
  const auto& columns = m->column_names();
  CHECK(columns.at(11) == "theta.1.1");
  CHECK(columns.at(12) == "theta.2.1");
  CHECK(columns.at(11 + 15) == "CL");
  CHECK(m->write_array(x)(11 + 15) == Approx(std::exp(x(0))).epsilon(1e-15));
  CHECK(m->write_array(x)(12) == x(11 + 5));  // subject 2's CL is stored after subject 1's five values
  const Eigen::VectorXd start =
      read_init_values(m->parameters(), model_data(m->initial_values(), "init")).unconstrained;
  CHECK(start == old.initial());
}

TEST_CASE("eight_schools on the interface is eight_schools_model to rounding: the Jacobian is added last",
          "[registered]") {
  const auto m = embedded("eight_schools");
  const models::eight_schools_model old;
  const Eigen::VectorXd x = point(10, 0.9);
  Eigen::VectorXd g_new, g_old;
  double lp_old = 0;
  gradient([&](const vector_v& v) { return old.log_density(v); }, x, lp_old, g_old);
  CHECK(m->log_density(x, g_new, true) == Approx(lp_old).epsilon(1e-15));
  for (int i = 0; i < 10; ++i) CHECK(g_new(i) == Approx(g_old(i)).epsilon(1e-14).margin(1e-15));
  Eigen::VectorXd g_fit;  // a fit leaves log tau out
  CHECK(m->log_density(x, g_fit, false) == Approx(lp_old - x(1)).epsilon(1e-15));
  CHECK((m->write_array(x) - old.write_array(x)).cwiseAbs().maxCoeff() == 0);
  CHECK(m->column_names() == old.column_names());
  CHECK(find_model("eight_schools").adapt_delta == models::eight_schools_default_delta);
}

TEST_CASE("built-in models' data errors name the variable", "[registered]") {
  CHECK_THROWS_MATCHES(make("eight_schools", {{"J", 2}, {"y", {1, 2}}, {"sigma", {1}}}), data_error,
                       message_contains({"data variable 'sigma' in t.json: expected shape [2], got [1]"}));
  CHECK_THROWS_MATCHES(make("eight_schools", {{"J", 2}, {"y", {1, 2}}, {"sigma", {1, 0}}}), data_error,
                       message_contains({"data variable 'sigma' in t.json: element 2 is 0.000000, but must be > 0"}));
  CHECK_THROWS_MATCHES(make("logreg", {{"N", 2}, {"J", 2}, {"group", {1, 1}}, {"y", {0, 1}}, {"x", {0.5, 1}}}),
                       data_error, message_contains({"data variable 'group' in t.json: group 2 has no points"}));
  CHECK_THROWS_MATCHES(make("logreg", {{"N", 2}, {"J", 1}, {"group", {1, 1}}, {"y", {0, 3}}, {"x", {0.5, 1}}}),
                       data_error, message_contains({"'y' in t.json: 3 is outside its bounds <lower=0, upper=1>"}));
  CHECK_THROWS_MATCHES(find_model("eight_schools").embedded_data(4, 0), std::invalid_argument,
                       message_contains({"--jobs: eight_schools has its 8 schools"}));
  nlohmann::json pk = find_model("pk2cmt").embedded_data(2, 0);
  pk["time"][1] = 0.1;  // before the first observation
  CHECK_THROWS_MATCHES(make("pk2cmt", pk), data_error, message_contains({"subject 1's times must be > 0 and increasing"}));
}
