// logreg: the functors against the standard model's closed form and finite differences for all four
// parameter kinds, ragged groups from CSV against the same groups given directly, every malformed-CSV case,
// and the deterministic simulation.
#include <catch2/catch.hpp>

#include <csv.hpp>
#include <logreg.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/benchmark_model.hpp"
#include "support/matchers.hpp"

using namespace maprect;
using namespace maprect::models;
using maprect::test::message_contains;

// The standard-layout functors under call ids of this test binary.
MAPRECT_REGISTER(101, maprect::models::logreg_standard_scalar_job);
MAPRECT_REGISTER(102, maprect::models::logreg_standard_vector_job);

namespace {

template <class T>
Eigen::Matrix<T, Eigen::Dynamic, 1> as(const Eigen::VectorXd& x) {
  if constexpr (std::is_same_v<T, var>)
    return to_var(x);
  else
    return x;
}

template <class T>
double adjoint_or_nan(const T& x) {
  if constexpr (std::is_same_v<T, var>)
    return x.adj();
  else
    return std::nan("");
}

// Sum of the map_rect outputs at (phi, theta) in double: the function finite differences look at.
template <int Id, class F>
double total_log_likelihood(const Eigen::VectorXd& phi, const std::vector<Eigen::VectorXd>& theta,
                            const std::vector<std::vector<double>>& x_r, const std::vector<std::vector<int>>& x_i) {
  return map_rect<Id, F>(phi, theta, x_r, x_i).sum();
}

// map_rect with the given kinds: value against the closed form, and every var partial against the closed form
// and a central difference.
template <int Id, class F, class TS, class TJ>
void check_kinds(const test::benchmark_data& d, const std::vector<std::vector<double>>& x_r,
                 const std::vector<std::vector<int>>& x_i) {
  Eigen::VectorXd closed_gradient;
  const double closed_lp = d.closed_form(closed_gradient);
  const int J = static_cast<int>(d.theta.size());
  nested_tape region;
  const Eigen::Matrix<TS, Eigen::Dynamic, 1> phi = as<TS>(d.phi);
  std::vector<Eigen::Matrix<TJ, Eigen::Dynamic, 1>> theta;
  for (const auto& t : d.theta) theta.push_back(as<TJ>(t));
  const auto out = map_rect<Id, F>(phi, theta, x_r, x_i);
  REQUIRE(out.size() == J);
  const auto total = out.sum();
  CHECK(value_of(total) == Approx(closed_lp).epsilon(1e-12));
  if constexpr (std::is_same_v<return_type_t<TS, TJ>, var>) grad(total);

  const double h = 1e-6;
  if constexpr (std::is_same_v<TS, var>) {
    for (int s = 0; s < 2; ++s) {
      Eigen::VectorXd up = d.phi, down = d.phi;
      up(s) += h;
      down(s) -= h;
      const double fd = (total_log_likelihood<Id, F>(up, d.theta, x_r, x_i) -
                         total_log_likelihood<Id, F>(down, d.theta, x_r, x_i)) / (2 * h);
      CHECK(adjoint_or_nan(phi(s)) == Approx(closed_gradient(s)).epsilon(1e-10).margin(1e-10));
      CHECK(adjoint_or_nan(phi(s)) == Approx(fd).epsilon(1e-6).margin(1e-6));
    }
  }
  if constexpr (std::is_same_v<TJ, var>) {
    for (int j = 0; j < J; ++j)
      for (int p = 0; p < 2; ++p) {
        std::vector<Eigen::VectorXd> up = d.theta, down = d.theta;
        up[j](p) += h;
        down[j](p) -= h;
        const double fd = (total_log_likelihood<Id, F>(d.phi, up, x_r, x_i) -
                           total_log_likelihood<Id, F>(d.phi, down, x_r, x_i)) / (2 * h);
        CHECK(adjoint_or_nan(theta[j](p)) == Approx(closed_gradient(2 + 2 * j + p)).epsilon(1e-10).margin(1e-10));
        CHECK(adjoint_or_nan(theta[j](p)) == Approx(fd).epsilon(1e-6).margin(1e-6));
      }
  }
}

template <int Id, class F>
void check_all_kinds(const test::benchmark_data& d, const std::vector<std::vector<double>>& x_r,
                     const std::vector<std::vector<int>>& x_i) {
  SECTION("double, double") { check_kinds<Id, F, double, double>(d, x_r, x_i); }
  SECTION("double, var") { check_kinds<Id, F, double, var>(d, x_r, x_i); }
  SECTION("var, double") { check_kinds<Id, F, var, double>(d, x_r, x_i); }
  SECTION("var, var") { check_kinds<Id, F, var, var>(d, x_r, x_i); }
}

// The standard data in logreg_job's ragged layout (all groups the same size, so no padding).
logreg_data standard_as_ragged(const test::benchmark_data& d) { return pack_logreg_groups(d.x_r, d.x_i); }

}  // namespace

TEST_CASE("logreg_job matches the standard model's closed form and finite differences", "[logreg]") {
  const test::benchmark_data d(7, 13);
  const logreg_data ragged = standard_as_ragged(d);
  check_all_kinds<logreg_call_id, logreg_job>(d, ragged.x_r, ragged.x_i);
}

TEST_CASE("standard scalar kernel matches the closed form and finite differences", "[logreg]") {
  const test::benchmark_data d(7, 13);
  check_all_kinds<101, logreg_standard_scalar_job>(d, d.x_r, d.x_i);
}

TEST_CASE("standard vector kernel matches the closed form and finite differences", "[logreg]") {
  const test::benchmark_data d(7, 13);
  check_all_kinds<102, logreg_standard_vector_job>(d, d.x_r, d.x_i);
}

TEST_CASE("scalar kernel puts about four nodes per point on the tape", "[logreg]") {
  const test::benchmark_data d(1, 100);
  nested_tape region;
  const vector_v phi = to_var(d.phi);
  const vector_v theta = to_var(d.theta[0]);
  const std::size_t before = tape_size();
  const auto out = logreg_standard_scalar_job{}(phi, theta, d.x_r[0], d.x_i[0], nullptr);
  const std::size_t nodes = tape_size() - before;
  CHECK(nodes <= 4 * 100 + 4);
  CHECK(nodes >= 4 * 100);
  (void)out;
}

TEST_CASE("model gradient on ragged groups matches finite differences", "[logreg]") {
  const logreg_data data = pack_logreg_groups({{0.5, -1.0, 2.0, 0.1, -0.3}, {1.5}, {-2.0, 0.7, 0.0}},
                                              {{1, 0, 1, 1, 0}, {0}, {1, 1, 0}});
  const logreg_model model(data);
  REQUIRE(model.size() == 8);
  Eigen::VectorXd x(8);
  x << 0.2, -0.4, 0.3, -0.1, -0.6, 0.5, 0.05, 0.9;
  double lp = 0;
  Eigen::VectorXd g;
  gradient([&](const vector_v& p) { return model.log_density(p); }, x, lp, g);
  CHECK(lp == Approx(model.log_density(x)).epsilon(1e-14));
  const double h = 1e-6;
  for (int k = 0; k < x.size(); ++k) {
    Eigen::VectorXd up = x, down = x;
    up(k) += h;
    down(k) -= h;
    const double fd = (model.log_density(up) - model.log_density(down)) / (2 * h);
    CHECK(g(k) == Approx(fd).epsilon(1e-6).margin(1e-7));
  }
}

TEST_CASE("ragged groups from CSV equal the same groups given directly", "[logreg][csv]") {
  // Groups interleaved, of sizes 3, 1 and 4, labelled by strings and non-contiguous numbers; columns reordered.
  std::istringstream csv(
      "x, group ,y\r\n"
      "0.5,b,1\r\n"
      "-1.25,17,0\n"
      "\n"
      "2,b,0\n"
      "0.125,3,1\n"
      "1e-1,17,1\n"
      "-0.75,b,1\n"
      "3.5,17,0\n"
      "0,17,1\n");
  const logreg_data from_csv = parse_logreg_csv(csv, "test.csv");
  const logreg_data direct =
      pack_logreg_groups({{0.5, 2.0, -0.75}, {-1.25, 0.1, 3.5, 0.0}, {0.125}}, {{1, 0, 1}, {0, 1, 0, 1}, {1}},
                         {"b", "17", "3"});
  CHECK(from_csv.group_names == direct.group_names);
  CHECK(from_csv.x_r == direct.x_r);
  CHECK(from_csv.x_i == direct.x_i);
  CHECK(from_csv.true_parameters.size() == 0);
  // Padded to the widest group: 4 reals, 1 + 4 ints.
  CHECK(from_csv.x_r[2] == std::vector<double>{0.125, 0, 0, 0});
  CHECK(from_csv.x_i[2] == std::vector<int>{1, 1, 0, 0, 0});

  // Padding never counts: the density equals the sum over the unpadded groups.
  const logreg_model model(from_csv);
  Eigen::VectorXd x(model.size());
  x << 0.1, 0.2, 0.3, -0.3, 0.0, 0.4, -0.2, 0.1;
  const std::vector<std::vector<double>> xs = {{0.5, 2.0, -0.75}, {-1.25, 0.1, 3.5, 0.0}, {0.125}};
  const std::vector<std::vector<int>> ys = {{1, 0, 1}, {0, 1, 0, 1}, {1}};
  double expected = -0.5 * (x(0) * x(0) + x(1) * x(1)) / (2.5 * 2.5) - 0.5 * x.tail(6).squaredNorm();
  for (int j = 0; j < 3; ++j)
    expected += logreg_group_log_likelihood(x(0) + x(2 + 2 * j), x(1) + x(3 + 2 * j), xs[j].data(), ys[j].data(),
                                            static_cast<int>(xs[j].size()), nullptr, nullptr);
  CHECK(model.log_density(x) == Approx(expected).epsilon(1e-14));
}

TEST_CASE("malformed CSV names line and column", "[logreg][csv]") {
  auto parse = [](const std::string& text) {
    std::istringstream in(text);
    return parse_logreg_csv(in, "bad.csv");
  };
  SECTION("empty file") { CHECK_THROWS_WITH(parse(""), Catch::Contains("bad.csv: line 1: empty file")); }
  SECTION("blank lines only") { CHECK_THROWS_WITH(parse("\n \n"), Catch::Contains("line 3: empty file")); }
  SECTION("missing column") {
    CHECK_THROWS_WITH(parse("group,y\n1,0\n"), Catch::Contains("bad.csv: line 1: missing column 'x'"));
  }
  SECTION("unknown column") {
    CHECK_THROWS_WITH(parse("group,y,z\n"), Catch::Contains("line 1, column 3: unknown column 'z'"));
  }
  SECTION("repeated column") {
    CHECK_THROWS_WITH(parse("group,y,y,x\n"), Catch::Contains("line 1, column 3 (y): column 'y' appears twice"));
  }
  SECTION("no data rows") {
    CHECK_THROWS_WITH(parse("group,y,x\n\n"), Catch::Contains("line 3: no data rows"));
  }
  SECTION("missing value") {
    CHECK_THROWS_WITH(parse("group,y,x\n1,0,0.5\n2,1\n"),
                      Catch::Contains("bad.csv: line 3, column 3 (x): missing value: 2 fields, expected 3"));
  }
  SECTION("extra field") {
    CHECK_THROWS_WITH(parse("group,y,x\n1,0,0.5,9\n"), Catch::Contains("line 2, column 4: extra field"));
  }
  SECTION("non-numeric x") {
    CHECK_THROWS_WITH(parse("group,y,x\n1,0,0.5\n1,1,abc\n"),
                      Catch::Contains("line 3, column 3 (x): 'abc' is not a number"));
  }
  SECTION("number with trailing junk") {
    CHECK_THROWS_WITH(parse("group,y,x\n1,0,0.5kg\n"), Catch::Contains("line 2, column 3 (x): '0.5kg' is not a number"));
  }
  SECTION("non-finite x") {
    CHECK_THROWS_WITH(parse("group,y,x\n1,0,nan\n"), Catch::Contains("line 2, column 3 (x): 'nan' is not a finite"));
  }
  SECTION("non-numeric y") {
    CHECK_THROWS_WITH(parse("group,x,y\n1,0.5,yes\n"), Catch::Contains("line 2, column 3 (y): 'yes' is not a number"));
  }
  SECTION("y not 0 or 1") {
    CHECK_THROWS_WITH(parse("group,y,x\n1,0,0.5\n1,2,0.5\n"),
                      Catch::Contains("line 3, column 2 (y): y must be 0 or 1, got '2'"));
  }
  SECTION("empty value") {
    CHECK_THROWS_WITH(parse("group,y,x\n1,,0.5\n"), Catch::Contains("line 2, column 2 (y): empty value"));
  }
  SECTION("empty group") {
    CHECK_THROWS_WITH(parse("group,y,x\n,1,0.5\n"), Catch::Contains("line 2, column 1 (group): empty group label"));
  }
  SECTION("line and column are also fields of the exception") {
    try {
      parse("group,y,x\n1,0,0.5\n\n1,1,x\n");
      FAIL("no exception");
    } catch (const csv_error& e) {
      CHECK(e.line() == 4);
      CHECK(e.column() == 3);
    }
  }
}

TEST_CASE("unreadable CSV files are reported by name", "[logreg][csv]") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  CHECK_THROWS_WITH(read_logreg_csv((dir / "maprect-no-such-file.csv").string()),
                    Catch::Contains("maprect-no-such-file.csv: cannot open"));
  CHECK_THROWS_WITH(read_logreg_csv(dir.string()), Catch::Contains("is a directory"));
  const std::filesystem::path good = dir / "maprect-test-logreg.csv";
  {
    std::ofstream out(good);
    out << "group,y,x\na,1,0.5\n";
  }
  const logreg_data d = read_logreg_csv(good.string());
  CHECK(d.x_r == std::vector<std::vector<double>>{{0.5}});
  std::filesystem::remove(good);
}

TEST_CASE("malformed job rows are rejected by the functor", "[logreg]") {
  const Eigen::VectorXd phi = Eigen::VectorXd::Zero(2);
  const std::vector<Eigen::VectorXd> theta(1, Eigen::VectorXd::Zero(2));
  const Eigen::VectorXd three = Eigen::VectorXd::Zero(3);
  const std::vector<std::vector<double>> x_r = {{0.5}};
  const std::vector<std::vector<int>> too_many = {{3, 1}}, one = {{1, 1}};
  CHECK_THROWS_WITH((map_rect<logreg_call_id, logreg_job>(phi, theta, x_r, too_many)),
                    Catch::Contains("group of 3 points does not fit"));
  CHECK_THROWS_WITH((map_rect<logreg_call_id, logreg_job>(three, theta, x_r, one)),
                    Catch::Contains("expected 2 shared and 2 job parameters"));
}

TEST_CASE("embedded data are deterministic and carry their truth", "[logreg]") {
  const logreg_data a = simulate_logreg(5, 30);
  const logreg_data b = simulate_logreg(5, 30);
  CHECK(a.x_r == b.x_r);
  CHECK(a.x_i == b.x_i);
  REQUIRE(a.true_parameters.size() == 12);
  CHECK(a.true_parameters(0) == logreg_true_alpha);
  CHECK(a.true_parameters(1) == logreg_true_beta);
  double sum_u = 0;
  for (int j = 0; j < 5; ++j) sum_u += a.true_parameters(2 + 2 * j);
  CHECK(sum_u == Approx(0).margin(1e-12));
  const logreg_data c = simulate_logreg(5, 30, logreg_default_seed + 1);
  CHECK(c.x_r != a.x_r);
  const logreg_model model(5, 30);
  const auto truth = model.truth();
  const auto estimates = model.estimates(model.initial());
  REQUIRE(truth.size() == estimates.size());
  for (std::size_t k = 0; k < truth.size(); ++k) CHECK(truth[k].first == estimates[k].first);
  CHECK(truth[0] == std::pair<std::string, double>("alpha", logreg_true_alpha));
  CHECK_THROWS_WITH(simulate_logreg(0, 3), Catch::Contains("at least one group"));
}

TEST_CASE("the standard problem and its closed form agree with the shared test model", "[logreg]") {
  const logreg_standard_problem p = make_logreg_standard_problem(5, 17);
  const test::benchmark_data d(5, 17);
  CHECK(p.x_r == d.x_r);
  CHECK(p.x_i == d.x_i);
  CHECK(p.params.head(2) == d.phi);
  Eigen::VectorXd expected, got;
  const double lp_expected = d.closed_form(expected);
  const double lp = logreg_standard_closed_form(p, p.params, got);
  CHECK(lp == Approx(lp_expected).epsilon(1e-13));
  CHECK((got - expected).cwiseAbs().maxCoeff() < 1e-12);
}
