// pk2cmt: the ODE solve against the closed form, gradients against finite differences for all four
// parameter kinds, the job's value against the closed form plus the random-effect density, map_rect against
// per-subject calls, deterministic simulation, and the model density (centred parameterisation).
#include <catch2/catch.hpp>

#include <pk2cmt.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

using namespace maprect;
using namespace maprect::models;

namespace {

// Closed form of the linear model after one oral dose at t = 0. With alpha > beta the roots of
// s^2 + (k10 + k12 + k21) s + k10 k21 (the disposition rates), partial fractions of the Laplace transforms
//   A_c(s) = D ka (s + k21) / ((s + ka)(s + alpha)(s + beta)),  A_p(s) = D ka k12 / (same)
// give sums of three exponentials. Generic in T so that the tape differentiates it exactly.
template <class T>
std::array<T, 3> closed_form_amounts(const std::array<T, 5>& pk, double dose, double t) {
  const T k10 = pk[0] / pk[2], k12 = pk[1] / pk[2], k21 = pk[1] / pk[3], ka = pk[4];
  const T s = k10 + k12 + k21;
  const T root = sqrt(s * s - 4.0 * k10 * k21);
  const T alpha = 0.5 * (s + root), beta = 0.5 * (s - root);
  const T e_alpha = exp(-alpha * t), e_beta = exp(-beta * t), e_ka = exp(-ka * t);
  const T w_alpha = 1.0 / ((ka - alpha) * (beta - alpha));
  const T w_beta = 1.0 / ((ka - beta) * (alpha - beta));
  const T w_ka = 1.0 / ((alpha - ka) * (beta - ka));
  return {dose * e_ka,
          dose * ka * ((k21 - alpha) * w_alpha * e_alpha + (k21 - beta) * w_beta * e_beta + (k21 - ka) * w_ka * e_ka),
          dose * ka * k12 * (w_alpha * e_alpha + w_beta * e_beta + w_ka * e_ka)};
}

const std::vector<std::array<double, 5>> parameter_sets = {
    {5.0, 8.0, 30.0, 60.0, 1.2},   // the simulated population
    {2.0, 15.0, 10.0, 100.0, 3.0}, // fast distribution, slow elimination
    {20.0, 1.0, 50.0, 5.0, 0.3},   // flip-flop: absorption slower than elimination
};

// Central difference of f at x in coordinate k.
template <class F>
double central_difference(const F& f, Eigen::VectorXd x, int k, double h) {
  x(k) += h;
  const double up = f(x);
  x(k) -= 2 * h;
  const double down = f(x);
  return (up - down) / (2 * h);
}

// Sum over k of log Normal(theta_k | mu_k, omega_k) with phi = (mu, log omega, log sigma).
double random_effect_log_density(const Eigen::VectorXd& phi, const Eigen::VectorXd& theta) {
  double lp = 0;
  for (int k = 0; k < 5; ++k) {
    const double omega = std::exp(phi(5 + k));
    const double z = (theta(k) - phi(k)) / omega;
    lp += -0.5 * z * z - std::log(omega * std::sqrt(2 * M_PI));
  }
  return lp;
}

// A subject away from the truth so that the gradient is not near zero.
struct subject_fixture {
  pk2cmt_data data = simulate_pk2cmt(4);
  Eigen::VectorXd phi = data.true_phi;
  Eigen::VectorXd theta = data.true_theta[1];
  subject_fixture() {
    phi(0) += 0.2;
    phi(3) -= 0.1;
    phi(7) += 0.3;
    phi(10) += 0.1;
    theta(1) -= 0.2;
    theta(4) += 0.5;
  }
  double value(const Eigen::VectorXd& p, const Eigen::VectorXd& t) const {
    return pk2cmt_job()(p, t, data.x_r[1], data.x_i[1], nullptr)(0);
  }
};

}  // namespace

TEST_CASE("pk2cmt: the ODE solve matches the closed form, amounts and sensitivities") {
  const std::vector<double> times = {0.1, 0.25, 0.5, 1, 2, 4, 6, 8, 12, 24, 48, 96};
  const double dose = 100;
  for (const auto& pk : parameter_sets) {
    const pk2cmt_solution plain = pk2cmt_solve(pk, dose, times, 0);
    const pk2cmt_solution sens = pk2cmt_solve(pk, dose, times, 1);
    REQUIRE(plain.amounts.size() == times.size());
    REQUIRE(plain.sensitivities.empty());
    REQUIRE(sens.sensitivities.size() == times.size());
    for (std::size_t i = 0; i < times.size(); ++i) {
      const std::array<double, 3> exact = closed_form_amounts(pk, dose, times[i]);
      for (int s = 0; s < 3; ++s) {
        INFO("CL " << pk[0] << " t " << times[i] << " state " << s);
        CHECK(plain.amounts[i][s] == Approx(exact[s]).epsilon(1e-8).margin(1e-9));
        CHECK(sens.amounts[i][s] == Approx(exact[s]).epsilon(1e-8).margin(1e-9));
      }
      // Exact sensitivities: the closed form on the tape, with respect to log parameters.
      nested_tape region;
      std::array<var, 5> log_pk, pk_v;
      for (int k = 0; k < 5; ++k) {
        log_pk[k] = var(std::log(pk[k]));
        pk_v[k] = exp(log_pk[k]);
      }
      const std::array<var, 3> a = closed_form_amounts(pk_v, dose, times[i]);
      for (int s = 0; s < 3; ++s) {
        set_zero_nested_adjoints();
        grad(a[s]);
        for (int k = 0; k < 5; ++k) {
          INFO("CL " << pk[0] << " t " << times[i] << " state " << s << " d/dlog " << pk2cmt_pk_names[k]);
          CHECK(sens.sensitivities[i][3 * k + s] == Approx(log_pk[k].adj()).epsilon(1e-7).margin(1e-8));
        }
      }
    }
  }
}

TEST_CASE("pk2cmt: second-order sensitivities match differences of the first-order ones") {
  const std::vector<double> times = {0.25, 1, 4, 12, 24};
  const double dose = 100, h = 1e-5;
  for (const auto& pk : parameter_sets) {
    const pk2cmt_solution two = pk2cmt_solve(pk, dose, times, 2);
    const pk2cmt_solution one = pk2cmt_solve(pk, dose, times, 1);
    REQUIRE(two.second_order.size() == times.size());
    for (int l = 0; l < 5; ++l) {
      std::array<double, 5> up = pk, down = pk;
      up[l] *= std::exp(h);
      down[l] *= std::exp(-h);
      const pk2cmt_solution s_up = pk2cmt_solve(up, dose, times, 1), s_down = pk2cmt_solve(down, dose, times, 1);
      for (std::size_t i = 0; i < times.size(); ++i)
        for (int k = 0; k < 5; ++k)
          for (int c = 0; c < 3; ++c) {
            INFO("CL " << pk[0] << " t " << times[i] << " d2/dlog " << k << " dlog " << l << " state " << c);
            const double fd = (s_up.sensitivities[i][3 * k + c] - s_down.sensitivities[i][3 * k + c]) / (2 * h);
            const int pair = pk2cmt_pair_index(std::min(k, l), std::max(k, l));
            CHECK(two.second_order[i][3 * pair + c] == Approx(fd).epsilon(1e-5).margin(1e-5 * dose));
            CHECK(two.sensitivities[i][3 * k + c] ==
                  Approx(one.sensitivities[i][3 * k + c]).epsilon(1e-8).margin(1e-8));
          }
    }
  }
}

TEST_CASE("pk2cmt: gradients match central differences for all four parameter kinds") {
  const subject_fixture f;
  const double h = 1e-5;
  const double value = f.value(f.phi, f.theta);
  Eigen::VectorXd fd_phi(pk2cmt_n_shared), fd_theta(pk2cmt_n_pk);
  for (int k = 0; k < pk2cmt_n_shared; ++k)
    fd_phi(k) = central_difference([&](const Eigen::VectorXd& p) { return f.value(p, f.theta); }, f.phi, k, h);
  for (int k = 0; k < pk2cmt_n_pk; ++k)
    fd_theta(k) = central_difference([&](const Eigen::VectorXd& t) { return f.value(f.phi, t); }, f.theta, k, h);
  // Not a stationary point: every group of partials (mu, log omega, log sigma, theta) is far from zero.
  CHECK(fd_phi.head(5).norm() > 1);
  CHECK(fd_phi.segment(5, 5).norm() > 1);
  CHECK(std::fabs(fd_phi(10)) > 1);
  CHECK(fd_theta.norm() > 1);

  const auto check_phi = [&](const vector_v& phi) {
    for (int k = 0; k < pk2cmt_n_shared; ++k) {
      INFO("d/dphi " << k);
      CHECK(phi(k).adj() == Approx(fd_phi(k)).epsilon(1e-6).margin(1e-6));
    }
  };
  const auto check_theta = [&](const vector_v& theta) {
    for (int k = 0; k < pk2cmt_n_pk; ++k) {
      INFO("d/dtheta " << k);
      CHECK(theta(k).adj() == Approx(fd_theta(k)).epsilon(1e-6).margin(1e-6));
    }
  };
  const pk2cmt_job job;
  const auto& x_r = f.data.x_r[1];
  const auto& x_i = f.data.x_i[1];

  SECTION("double, double") {
    const Eigen::VectorXd y = job(f.phi, f.theta, x_r, x_i, nullptr);
    REQUIRE(y.size() == 1);
    CHECK(y(0) == value);
  }
  SECTION("double, var") {
    nested_tape region;
    vector_v theta = to_var(f.theta);
    const vector_v y = job(f.phi, theta, x_r, x_i, nullptr);
    REQUIRE(y.size() == 1);
    CHECK(y(0).val() == value);  // the same steps whatever the kinds
    grad(y(0));
    check_theta(theta);
  }
  SECTION("var, double") {
    nested_tape region;
    vector_v phi = to_var(f.phi);
    const vector_v y = job(phi, f.theta, x_r, x_i, nullptr);
    CHECK(y(0).val() == value);  // the same steps whatever the kinds
    grad(y(0));
    check_phi(phi);
  }
  SECTION("var, var") {
    nested_tape region;
    vector_v phi = to_var(f.phi);
    vector_v theta = to_var(f.theta);
    const vector_v y = job(phi, theta, x_r, x_i, nullptr);
    CHECK(y(0).val() == value);  // the same steps whatever the kinds
    grad(y(0));
    check_phi(phi);
    check_theta(theta);
  }
}

TEST_CASE("pk2cmt: the job's value is the observations' density, the random effects' and the Laplace term") {
  const subject_fixture f;
  const auto& x_r = f.data.x_r[1];
  const int width = static_cast<int>(x_r.size() / 2);
  std::array<double, 5> pk;
  for (int k = 0; k < 5; ++k) pk[k] = std::exp(f.theta(k));
  const double sigma = std::exp(f.phi(10));
  double expected = 0;
  for (int i = 0; i < f.data.x_i[1][0]; ++i) {
    const double c = closed_form_amounts(pk, x_r[0], x_r[1 + i])[1] / pk[2];
    const double y = x_r[1 + width + i];
    const double z = (std::log(y) - std::log(c)) / sigma;
    expected += -0.5 * z * z - std::log(sigma * y * std::sqrt(2 * M_PI));
  }
  expected += random_effect_log_density(f.phi, f.theta);
  // Laplace term -1/2 log det(diag(1 / omega^2) + G^T G / sigma^2), G = d log C / d theta from the closed
  // form on the tape.
  Eigen::MatrixXd h = Eigen::MatrixXd::Zero(5, 5);
  for (int i = 0; i < f.data.x_i[1][0]; ++i) {
    nested_tape region;
    std::array<var, 5> theta_v, pk_v;
    for (int k = 0; k < 5; ++k) {
      theta_v[k] = var(f.theta(k));
      pk_v[k] = exp(theta_v[k]);
    }
    const var log_c = log(closed_form_amounts(pk_v, x_r[0], x_r[1 + i])[1] / pk_v[2]);
    grad(log_c);
    Eigen::VectorXd g(5);
    for (int k = 0; k < 5; ++k) g(k) = theta_v[k].adj();
    h += g * g.transpose() / (sigma * sigma);
  }
  for (int k = 0; k < 5; ++k) h(k, k) += std::exp(-2 * f.phi(5 + k));
  expected -= 0.5 * std::log(h.determinant());
  CHECK(f.value(f.phi, f.theta) == Approx(expected).epsilon(1e-9));
  // Without observations H = diag(1 / omega^2): the Laplace term cancels the -log omega of the density.
  const auto [x_r_none, x_i_none] = pk2cmt_pack_subject(100, {}, {}, 3);
  CHECK(pk2cmt_job()(f.phi, f.theta, x_r_none, x_i_none, nullptr)(0) ==
        Approx(random_effect_log_density(f.phi, f.theta) + f.phi.segment(5, 5).sum()).epsilon(1e-14));
}

TEST_CASE("pk2cmt: map_rect over several subjects equals the per-subject calls") {
  const pk2cmt_data d = simulate_pk2cmt(6);
  Eigen::VectorXd phi = d.true_phi;
  phi(1) += 0.15;
  std::vector<Eigen::VectorXd> theta = d.true_theta;
  for (std::size_t j = 0; j < theta.size(); ++j) theta[j](j % 5) -= 0.3;
  const pk2cmt_job job;

  const Eigen::VectorXd values = map_rect<pk2cmt_call_id, pk2cmt_job>(phi, theta, d.x_r, d.x_i);
  REQUIRE(values.size() == 6);
  for (int j = 0; j < 6; ++j) CHECK(values(j) == job(phi, theta[j], d.x_r[j], d.x_i[j], nullptr)(0));

  // Gradient of the sum: map_rect against the functor applied job by job on the tape.
  const auto sum_gradient = [&](bool through_map_rect) {
    nested_tape region;
    vector_v phi_v = to_var(phi);
    std::vector<vector_v> theta_v;
    for (const auto& t : theta) theta_v.push_back(to_var(t));
    var total = 0;
    if (through_map_rect) {
      total = map_rect<pk2cmt_call_id, pk2cmt_job>(phi_v, theta_v, d.x_r, d.x_i).sum();
    } else {
      for (int j = 0; j < 6; ++j) total += job(phi_v, theta_v[j], d.x_r[j], d.x_i[j], nullptr)(0);
    }
    grad(total);
    Eigen::VectorXd g(pk2cmt_n_shared + 5 * 6);
    g.head(pk2cmt_n_shared) = adjoint_of(phi_v);
    for (int j = 0; j < 6; ++j) g.segment(pk2cmt_n_shared + 5 * j, 5) = adjoint_of(theta_v[j]);
    return std::make_pair(total.val(), g);
  };
  const auto [lp_map, g_map] = sum_gradient(true);
  const auto [lp_jobs, g_jobs] = sum_gradient(false);
  CHECK(lp_map == Approx(values.sum()).epsilon(1e-14));
  CHECK(lp_map == Approx(lp_jobs).epsilon(1e-14));
  for (Eigen::Index k = 0; k < g_map.size(); ++k) {
    INFO("coordinate " << k);
    CHECK(g_map(k) == Approx(g_jobs(k)).epsilon(1e-13).margin(1e-13));
  }
}

TEST_CASE("pk2cmt: padded observations are ignored") {
  const pk2cmt_data d = simulate_pk2cmt(1);
  const int width = static_cast<int>(pk2cmt_schedule.size());
  const std::vector<double> times(pk2cmt_schedule.begin(), pk2cmt_schedule.begin() + 5);
  const std::vector<double> conc(d.x_r[0].begin() + 1 + width, d.x_r[0].begin() + 1 + width + 5);
  const auto [x_r_short, x_i_short] = pk2cmt_pack_subject(d.x_r[0][0], times, conc, 5);
  auto [x_r_padded, x_i_padded] = pk2cmt_pack_subject(d.x_r[0][0], times, conc, 12);
  REQUIRE(x_i_padded[0] == 5);
  x_r_padded[1 + 7] = 99;  // junk in the padding must not matter
  const pk2cmt_job job;
  CHECK(job(d.true_phi, d.true_theta[0], x_r_short, x_i_short, nullptr)(0) ==
        job(d.true_phi, d.true_theta[0], x_r_padded, x_i_padded, nullptr)(0));
}

TEST_CASE("pk2cmt: malformed data and parameters are reported through map_rect") {
  const pk2cmt_data d = simulate_pk2cmt(3);
  std::vector<std::vector<double>> x_r = d.x_r;
  std::vector<std::vector<int>> x_i = d.x_i;
  SECTION("decreasing times") {
    std::swap(x_r[2][3], x_r[2][4]);
    CHECK_THROWS_AS((map_rect<pk2cmt_call_id, pk2cmt_job>(d.true_phi, d.true_theta, x_r, x_i)), std::invalid_argument);
  }
  SECTION("more observations than the row holds") {
    x_i[1][0] = 10;
    CHECK_THROWS_AS((map_rect<pk2cmt_call_id, pk2cmt_job>(d.true_phi, d.true_theta, x_r, x_i)), std::invalid_argument);
  }
  SECTION("wrong number of job parameters") {
    std::vector<Eigen::VectorXd> theta(3, Eigen::VectorXd::Zero(4));
    CHECK_THROWS_AS((map_rect<pk2cmt_call_id, pk2cmt_job>(d.true_phi, theta, x_r, x_i)), std::invalid_argument);
  }
  SECTION("non-finite parameters") {
    const double inf = std::numeric_limits<double>::infinity();
    for (int k : {4, 7}) {  // a median and an omega: neither reaches the ODE solver
      Eigen::VectorXd phi = d.true_phi;
      phi(k) = inf;
      CHECK_THROWS_AS((map_rect<pk2cmt_call_id, pk2cmt_job>(phi, d.true_theta, x_r, x_i)), std::domain_error);
    }
    std::vector<Eigen::VectorXd> theta = d.true_theta;
    theta[1](2) = -inf;
    CHECK_THROWS_AS((map_rect<pk2cmt_call_id, pk2cmt_job>(d.true_phi, theta, x_r, x_i)), std::domain_error);
  }
}

TEST_CASE("pk2cmt: the simulated study is deterministic") {
  const pk2cmt_data a = simulate_pk2cmt(20);
  const pk2cmt_data b = simulate_pk2cmt(20);
  REQUIRE(a.x_r.size() == 20);
  CHECK(a.x_r == b.x_r);
  CHECK(a.x_i == b.x_i);
  for (int j = 0; j < 20; ++j) CHECK(a.true_eta[j] == b.true_eta[j]);
  // The subjects' log parameters are the population's shifted by the scaled random effects.
  REQUIRE(a.true_theta.size() == 20);
  for (int j = 0; j < 20; ++j)
    for (int k = 0; k < 5; ++k)
      CHECK(a.true_theta[j](k) == a.true_phi(k) + pk2cmt_true_omegas[k] * a.true_eta[j](k));
  // The first subjects do not depend on how many are simulated.
  const pk2cmt_data small = simulate_pk2cmt(3);
  for (int j = 0; j < 3; ++j) CHECK(small.x_r[j] == a.x_r[j]);
  // Another seed, another study.
  CHECK(simulate_pk2cmt(3, 7).x_r[0] != small.x_r[0]);

  for (const auto& row : a.x_r) {
    REQUIRE(row.size() == 1 + 2 * pk2cmt_schedule.size());
    for (std::size_t i = 0; i < pk2cmt_schedule.size(); ++i) {
      CHECK(row[1 + i] == pk2cmt_schedule[i]);
      CHECK(row[1 + pk2cmt_schedule.size() + i] > 0);
    }
  }
  // Pinned values: a change of generator, draw order or schedule shows here.
  CHECK(a.true_eta[0](0) == Approx(0.3835381494).epsilon(1e-9));
  CHECK(a.x_r[0][1 + pk2cmt_schedule.size()] == Approx(0.3503267325).epsilon(1e-9));
  CHECK(a.x_r[19][2 * pk2cmt_schedule.size()] == Approx(0.2328595224).epsilon(1e-9));

  // Sample moments of the random effects are near the standard normal's.
  pk2cmt_data big = simulate_pk2cmt(400);
  double sum = 0, sum_sq = 0;
  for (const auto& e : big.true_eta) {
    sum += e.sum();
    sum_sq += e.squaredNorm();
  }
  const double n = 5.0 * 400;
  CHECK(std::fabs(sum / n) < 0.1);
  CHECK(std::fabs(sum_sq / n - 1) < 0.1);
}

TEST_CASE("pk2cmt_model: packing, density at the truth against a perturbed point, gradient") {
  const pk2cmt_model model(16);
  REQUIRE(model.size() == 11 + 5 * 16);
  const Eigen::VectorXd truth = model.true_parameters();
  REQUIRE(model.initial().size() == model.size());
  const double lp_true = model.log_density(truth);
  CHECK(std::isfinite(model.log_density(model.initial())));

  Eigen::VectorXd perturbed = truth;
  perturbed(0) += 0.3;   // CL
  perturbed(2) -= 0.3;   // V1
  perturbed(10) += 0.5;  // sigma
  CHECK(lp_true > model.log_density(perturbed));
  Eigen::VectorXd shifted_theta = truth;
  shifted_theta.tail(5 * 16).array() += 0.3;
  CHECK(lp_true > model.log_density(shifted_theta));
  Eigen::VectorXd wide_omega = truth;
  wide_omega.segment(5, 5).array() += 1.0;  // the failure of the non-centred joint fit: omega far too large
  CHECK(lp_true > model.log_density(wide_omega));

  // The start: omega 0.5, every subject at the population medians.
  const Eigen::VectorXd x0 = model.initial();
  CHECK(std::exp(x0(5)) == Approx(0.5));
  for (int j = 0; j < 16; ++j) CHECK(x0.segment(11 + 5 * j, 5) == x0.head(5));

  Eigen::VectorXd gradient;
  const double lp = model.log_density_gradient(perturbed, gradient);
  CHECK(lp == Approx(model.log_density(perturbed)).epsilon(1e-13));
  REQUIRE(gradient.size() == model.size());
  CHECK(tape_size() == 0);  // the nested region is gone
  const auto f = [&](const Eigen::VectorXd& x) { return model.log_density(x); };
  for (int k : {0, 4, 7, 10, 11, 15, 11 + 5 * 15 + 2}) {
    INFO("coordinate " << k);
    CHECK(gradient(k) == Approx(central_difference(f, perturbed, k, 1e-5)).epsilon(1e-6).margin(1e-5));
  }

  const auto est = model.estimates(truth);
  const auto tru = model.truth();
  REQUIRE(est.size() == 11);
  REQUIRE(tru.size() == 11);
  CHECK(est[0].first == "CL");
  CHECK(est[10].first == "sigma");
  for (std::size_t i = 0; i < est.size(); ++i) {
    CHECK(est[i].first == tru[i].first);
    CHECK(est[i].second == Approx(tru[i].second).epsilon(1e-14));
  }
  CHECK(tru[2].second == Approx(30.0));
  CHECK(tru[5].first == "omega_CL");
}
