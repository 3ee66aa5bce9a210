// The models of src/models over the cluster: bit-equal to the in-process run in all type combinations.
#include <catch2/catch.hpp>

#include "mpi/compare.hpp"
#include "src/models/logreg.hpp"
#include "src/models/pk2cmt.hpp"
#include "support/mpi_test.hpp"

using namespace maprect;

TEST_CASE("pk2cmt over the cluster equals in process bit for bit") {
  const models::pk2cmt_data d = models::simulate_pk2cmt(7);
  const std::vector<Eigen::VectorXd> theta = d.true_theta;  // each subject's own log parameters
  using job = models::pk2cmt_job;
  constexpr int id = models::pk2cmt_call_id;
  test::check_bit_equal<id, job, var, var>(d.true_phi, theta, d.x_r, d.x_i);
  test::check_bit_equal<id, job, double, var>(d.true_phi, theta, d.x_r, d.x_i);
  test::check_bit_equal<id, job, var, double>(d.true_phi, theta, d.x_r, d.x_i);
  test::check_bit_equal<id, job, double, double>(d.true_phi, theta, d.x_r, d.x_i);
}

TEST_CASE("logreg with ragged groups over the cluster equals in process bit for bit") {
  const models::logreg_data d = models::simulate_logreg(9, 13);
  Eigen::VectorXd phi(2);
  phi << 0.2, -0.4;
  std::vector<Eigen::VectorXd> theta(9, Eigen::VectorXd::Zero(2));
  for (int j = 0; j < 9; ++j) theta[j] << 0.01 * j, -0.02 * j;
  using job = models::logreg_job;
  constexpr int id = models::logreg_call_id;
  test::check_bit_equal<id, job, var, var>(phi, theta, d.x_r, d.x_i);
  test::check_bit_equal<id, job, double, var>(phi, theta, d.x_r, d.x_i);
  test::check_bit_equal<id, job, var, double>(phi, theta, d.x_r, d.x_i);
  test::check_bit_equal<id, job, double, double>(phi, theta, d.x_r, d.x_i);
}
