// The JSON readers' fuzz findings, each with the error (type and message) its input now gives.
#include <catch2/catch.hpp>

#include <maprect/model.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "metric_file.hpp"

namespace {

/// The bytes of a finding's input.
std::string finding(const std::string& name) {
  std::ifstream in(std::string(MAPRECT_FUZZ_DIR) + "/findings/" + name, std::ios::binary);
  REQUIRE(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("model data: a number beyond a double is a data_error naming the file") {
  // nlohmann's out_of_range escaped the reader, which caught only its parse_error, and ended the program.
  CHECK_THROWS_MATCHES(maprect::model_data::parse("{\"J\": 1e999}", "big.json"), maprect::data_error,
                       Catch::Matchers::Message("big.json: number overflow parsing '1e999'"));
}

TEST_CASE("model data: eight schools' sigma must be positive, named as a data variable") {
  // eight_schools_rows threw std::invalid_argument without the file's name.
  const maprect::model_data data = maprect::model_data::parse(finding("model_data/sigma_not_positive.json"), "s.json");
  CHECK_THROWS_MATCHES(maprect::find_model("eight_schools").make(data), maprect::data_error,
                       Catch::Matchers::Message("data variable 'sigma' in s.json: element 3 is -3.000000, but must be > 0"));
}

TEST_CASE("logreg data: more groups than points is refused before the groups are allocated") {
  const std::string text = R"({"N": 1, "J": 1000000000, "group": [1], "y": [0], "x": [0.5]})";
  CHECK_THROWS_MATCHES(maprect::find_model("logreg").make(maprect::model_data::parse(text, "l.json")), maprect::data_error,
                       Catch::Matchers::Message("data variable 'J' in l.json: 1000000000 groups, but N = 1 points: "
                                                "every group needs at least one"));
  const std::string truth = R"({"N": 1, "J": 1, "group": [1], "y": [0], "x": [0.5], "truth": {"alpha": "a"}})";
  CHECK_THROWS_MATCHES(maprect::find_model("logreg").make(maprect::model_data::parse(truth, "t.json")), maprect::data_error,
                       Catch::Matchers::Message("data variable 'truth.alpha' in t.json: expected a number, got string \"a\""));
}

TEST_CASE("metric file: a number beyond a double is an error naming the file") {
  const std::string path = std::string(MAPRECT_FUZZ_DIR) + "/findings/metric_file/number_overflow.json";
  CHECK_THROWS_MATCHES(maprect::cli::read_metric_file(path, maprect::metric_kind::diag, 3), std::runtime_error,
                       Catch::Matchers::Message(path + ": not JSON ([json.exception.out_of_range.406] number overflow "
                                                       "parsing '1.0e1042')"));
}
