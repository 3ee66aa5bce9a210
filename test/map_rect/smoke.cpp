// The standard model through map_rect in process, against its closed form.
#include <catch2/catch.hpp>

#include "support/benchmark_model.hpp"

MAPRECT_REGISTER(901, maprect::test::logistic_job);

TEST_CASE("map_rect var/var matches the closed form of the standard model") {
  using namespace maprect;
  test::benchmark_data d(8, 20);
  vector_v phi = to_var(d.phi);
  std::vector<vector_v> theta;
  for (auto& t : d.theta) theta.push_back(to_var(t));
  var lp = map_rect<901, test::logistic_job>(phi, theta, d.x_r, d.x_i).sum();
  grad(lp);
  Eigen::VectorXd expected;
  CHECK(lp.val() == Approx(d.closed_form(expected)).epsilon(1e-13));
  CHECK(phi(0).adj() == Approx(expected(0)).epsilon(1e-12));
  CHECK(phi(1).adj() == Approx(expected(1)).epsilon(1e-12));
  for (int j = 0; j < 8; ++j) {
    CHECK(theta[j](0).adj() == Approx(expected(2 + 2 * j)).epsilon(1e-12));
    CHECK(theta[j](1).adj() == Approx(expected(3 + 2 * j)).epsilon(1e-12));
  }
  recover_memory();
}
