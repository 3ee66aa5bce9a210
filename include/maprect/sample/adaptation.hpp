#pragma once
/// \file Stan's warm-up: step-size dual averaging (Hoffman and Gelman 2014) and the diagonal or dense metric
/// estimated in expanding windows (an initial buffer, windows doubling in length, a terminal buffer).

#include <Eigen/Dense>

#include <cmath>
#include <stdexcept>

namespace maprect {

/// Dual averaging of log step size towards a target mean acceptance statistic.
struct step_size_adaptation {
  double delta = 0.8;   ///< target acceptance statistic
  double gamma = 0.05;  ///< regularisation scale
  double kappa = 0.75;  ///< relaxation exponent
  double t0 = 10;       ///< iteration offset
  double mu = 0;        ///< log step size the iterates shrink towards
  double counter = 0;   ///< iterations since the last restart
  double s_bar = 0;     ///< averaged acceptance error
  double x_bar = 0;     ///< averaged log step size

  /// Forgets the iterates (mu stays).
  void restart() { counter = s_bar = x_bar = 0; }
  /// One iteration's acceptance statistic in; returns the next step size.
  double learn(double accept_stat) {
    ++counter;
    const double stat = accept_stat > 1 ? 1 : accept_stat;
    const double eta = 1.0 / (counter + t0);
    s_bar = (1.0 - eta) * s_bar + eta * (delta - stat);
    const double x = mu - s_bar * std::sqrt(counter) / gamma;
    const double x_eta = std::pow(counter, -kappa);
    x_bar = (1.0 - x_eta) * x_bar + x_eta * x;
    return std::exp(x);
  }
  /// The step size for sampling: exp of the averaged iterates.
  double final_step_size() const { return std::exp(x_bar); }
};

/// Running mean and sum of squared deviations (Welford), per coordinate.
struct welford_variance {
  long n = 0;          ///< samples added
  Eigen::VectorXd m;   ///< running mean
  Eigen::VectorXd m2;  ///< running sum of squared deviations

  /// Starts over in dimension `dim`.
  void restart(Eigen::Index dim) {
    n = 0;
    m = Eigen::VectorXd::Zero(dim);
    m2 = Eigen::VectorXd::Zero(dim);
  }
  /// Adds one sample.
  void add(const Eigen::VectorXd& q) {
    ++n;
    const Eigen::VectorXd delta = q - m;
    m += delta / static_cast<double>(n);
    m2 += (q - m).cwiseProduct(delta);
  }
  /// Sample variance (n - 1 in the denominator).
  Eigen::VectorXd variance() const { return n > 1 ? Eigen::VectorXd(m2 / (n - 1.0)) : Eigen::VectorXd(m2); }
};

/// Running mean and sum of outer products of deviations (Welford), for the dense metric.
struct welford_covariance {
  long n = 0;          ///< samples added
  Eigen::VectorXd m;   ///< running mean
  Eigen::MatrixXd m2;  ///< running sum of outer products of deviations

  /// Starts over in dimension `dim`.
  void restart(Eigen::Index dim) {
    n = 0;
    m = Eigen::VectorXd::Zero(dim);
    m2 = Eigen::MatrixXd::Zero(dim, dim);
  }
  /// Adds one sample.
  void add(const Eigen::VectorXd& q) {
    ++n;
    const Eigen::VectorXd delta = q - m;
    m += delta / static_cast<double>(n);
    m2 += (q - m) * delta.transpose();
  }
  /// Sample covariance (n - 1 in the denominator).
  Eigen::MatrixXd covariance() const { return n > 1 ? Eigen::MatrixXd(m2 / (n - 1.0)) : Eigen::MatrixXd(m2); }
};

/// Stan's windows for the metric: which warm-up iterations feed the estimator and where a window ends.
struct metric_windows {
  int num_warmup = 0;   ///< warm-up iterations
  int init_buffer = 0;  ///< iterations of step-size adaptation alone at the start
  int term_buffer = 0;  ///< iterations of step-size adaptation alone at the end
  int base_window = 0;  ///< length of the first metric window
  int counter = 0;      ///< warm-up iterations seen
  int window_size = 0;  ///< length of the current window
  int next_window = -1; ///< iteration that ends the current window

  /// True when Stan keeps the buffers and window as given: at least 20 warm-up iterations and room for all three.
  static bool fits(int warmup, int init, int term, int base) { return warmup < 20 || init + base + term <= warmup; }
  /// Stan's set_window_params: 75 / 25 / 50 unless they do not fit, then 15% / 75% / 10% of the warm-up; no
  /// metric adaptation below 20 warm-up iterations.
  void configure(int warmup, int init = 75, int term = 50, int base = 25) {
    num_warmup = init_buffer = term_buffer = base_window = 0;
    if (warmup < 20) {
      restart();
      return;
    }
    if (init + base + term > warmup) {
      init = static_cast<int>(0.15 * warmup);
      term = static_cast<int>(0.1 * warmup);
      base = warmup - (init + term);
    }
    num_warmup = warmup;
    init_buffer = init;
    term_buffer = term;
    base_window = base;
    restart();
  }
  /// Back to the first window.
  void restart() {
    counter = 0;
    window_size = base_window;
    next_window = init_buffer + window_size - 1;
  }
  /// The current iteration feeds the estimator.
  bool in_window() const {
    return counter >= init_buffer && counter < num_warmup - term_buffer && counter != num_warmup;
  }
  /// The current iteration ends a window.
  bool window_ends() const { return counter == next_window && counter != num_warmup; }
  /// Doubles the window; the last one stretches to the terminal buffer when another would not fit.
  void compute_next_window() {
    const int last = num_warmup - term_buffer - 1;
    if (next_window == last) return;
    window_size *= 2;
    next_window = counter + window_size;
    if (next_window != last && next_window + 2 * window_size >= num_warmup - term_buffer) next_window = last;
  }
};

/// The metric's adaptation: returns true when a window ended and the inverse metric was updated.
struct metric_adaptation {
  metric_windows windows;         ///< the window schedule
  welford_variance samples;       ///< draws of the current window (diagonal metric)
  welford_covariance covariance;  ///< draws of the current window (dense metric; empty otherwise)

  /// One warm-up draw in, for the diagonal metric.
  bool learn(Eigen::VectorXd& inv_metric, const Eigen::VectorXd& q) {
    if (windows.in_window()) samples.add(q);
    if (!windows.window_ends()) {
      ++windows.counter;
      return false;
    }
    windows.compute_next_window();
    const double n = static_cast<double>(samples.n);
    // Stan's regularisation: shrink towards 1e-3 by five pseudo-draws.
    inv_metric = (n / (n + 5.0)) * samples.variance() +
                 1e-3 * (5.0 / (n + 5.0)) * Eigen::VectorXd::Ones(inv_metric.size());
    if (!inv_metric.allFinite())
      throw std::runtime_error("numerical overflow in metric adaptation: the warm-up draws are not finite");
    samples.restart(inv_metric.size());
    ++windows.counter;
    return true;
  }
  /// One warm-up draw in, for the dense metric: Stan's regularised sample covariance of the window.
  bool learn(Eigen::MatrixXd& inv_metric, const Eigen::VectorXd& q) {
    if (windows.in_window()) covariance.add(q);
    if (!windows.window_ends()) {
      ++windows.counter;
      return false;
    }
    windows.compute_next_window();
    const double n = static_cast<double>(covariance.n);
    const Eigen::Index dim = inv_metric.rows();
    inv_metric = (n / (n + 5.0)) * covariance.covariance() +
                 1e-3 * (5.0 / (n + 5.0)) * Eigen::MatrixXd::Identity(dim, dim);
    if (!inv_metric.allFinite() || Eigen::LLT<Eigen::MatrixXd>(inv_metric).info() != Eigen::Success)
      throw std::runtime_error(
          "numerical overflow in metric adaptation: the warm-up draws' covariance is not positive definite");
    covariance.restart(dim);
    ++windows.counter;
    return true;
  }
};

}  // namespace maprect
