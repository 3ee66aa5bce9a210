// maprect fit: MAP estimate with LBFGSpp's L-BFGS; every gradient is one map_rect call over the cluster.
#include <maprect/maprect.hpp>

#include <LBFGS.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>

#include "commands.hpp"
#include "json_output.hpp"
#include "sample_model.hpp"
#include "spmd.hpp"

namespace maprect::cli {

namespace {

/// A registered model as the fit sees it: a log density with gradient (no Jacobian: the mode of the
/// constrained density, as CmdStan's optimize), a start, and named estimates.
class fit_problem {
 public:
  explicit fit_problem(loaded_model loaded) : loaded_(std::move(loaded)) {}
  /// What is being fitted, for the report.
  std::string description() const { return loaded_.description; }
  /// Number of unconstrained parameters.
  int size() const { return loaded_.model->size(); }
  /// The model's initial_values() where it has them, zero on the unconstrained scale elsewhere.
  Eigen::VectorXd initial() const {
    const nlohmann::json values = loaded_.model->initial_values();
    if (values.is_null()) return Eigen::VectorXd::Zero(size());
    return read_init_values(loaded_.model->parameters(), model_data(values, "the model's initial values")).unconstrained;
  }
  /// Log density at x; writes its gradient.
  double log_density_gradient(const Eigen::VectorXd& x, Eigen::VectorXd& gradient) const {
    return loaded_.model->log_density(x, gradient, false);
  }
  /// Every column (parameters, then generated quantities) at x.
  std::vector<std::pair<std::string, double>> estimates(const Eigen::VectorXd& x) const {
    const Eigen::VectorXd values = loaded_.model->write_array(x);
    std::vector<std::pair<std::string, double>> out;
    for (std::size_t k = 0; k < loaded_.model->column_names().size(); ++k)
      out.emplace_back(loaded_.model->column_names()[k], values(static_cast<Eigen::Index>(k)));
    return out;
  }
  /// The true value of a column, when the model knows it.
  std::optional<double> truth(const std::string& name) const {
    for (const auto& [n, v] : loaded_.model->truth())
      if (n == name) return v;
    return std::nullopt;
  }

 private:
  loaded_model loaded_;
};

std::unique_ptr<fit_problem> make_problem(const fit_options& o) {
  return std::make_unique<fit_problem>(load_model(o.model, o.data, o.jobs, o.points));
}

/// -log density for LBFGSpp, timing every gradient and printing a line per iteration.
class objective {
 public:
  explicit objective(const fit_problem& problem) : problem_(problem) {}

  /// LBFGSpp's call: value to minimise at x, and its gradient.
  double operator()(const Eigen::VectorXd& x, Eigen::VectorXd& gradient) {
    const auto start = std::chrono::steady_clock::now();
    const double lp = problem_.log_density_gradient(x, gradient);
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++gradients_;
    gradient = -gradient;
    return -lp;
  }

  /// Called by the line search when an iteration has found its point (fx = -log density there).
  void iteration_done(double fx, const Eigen::VectorXd& gradient) {
    const int n = gradients_ - gradients_at_last_;
    const double ms = n > 0 ? 1e3 * (seconds_ - seconds_at_last_) / n : 0.0;
    gradients_at_last_ = gradients_;
    seconds_at_last_ = seconds_;
    ++iterations_;
    last_gradient_norm_ = gradient.norm();
    std::printf("iter %4d  log density %16.8f  |grad| %10.3e  %8.3f ms/gradient\n", iterations_, -fx,
                last_gradient_norm_, ms);
    std::fflush(stdout);
  }

  /// Prints the starting point as iteration 0.
  void start(double fx, const Eigen::VectorXd& gradient) {
    gradients_at_last_ = gradients_;
    seconds_at_last_ = seconds_;
    last_gradient_norm_ = gradient.norm();
    std::printf("iter %4d  log density %16.8f  |grad| %10.3e  %8.3f ms/gradient\n", 0, -fx, last_gradient_norm_,
                gradients_ > 0 ? 1e3 * seconds_ / gradients_ : 0.0);
    std::fflush(stdout);
  }

  int iterations() const { return iterations_; }
  int gradients() const { return gradients_; }
  double seconds() const { return seconds_; }
  double last_gradient_norm() const { return last_gradient_norm_; }

 private:
  const fit_problem& problem_;
  int gradients_ = 0, gradients_at_last_ = 0, iterations_ = 0;
  double seconds_ = 0, seconds_at_last_ = 0, last_gradient_norm_ = 0;
};

/// LBFGSpp's Nocedal-Wright line search, then a report of the finished iteration (LBFGSpp 0.1 has no
/// iteration callback; the line search is the one place that sees every accepted point).
template <class Scalar>
class reporting_line_search {
 public:
  template <class Objective>
  static void LineSearch(Objective& f, Scalar& fx, Eigen::Matrix<Scalar, Eigen::Dynamic, 1>& x,
                         Eigen::Matrix<Scalar, Eigen::Dynamic, 1>& grad, Scalar& step,
                         const Eigen::Matrix<Scalar, Eigen::Dynamic, 1>& drt,
                         const Eigen::Matrix<Scalar, Eigen::Dynamic, 1>& xp, const LBFGSpp::LBFGSParam<Scalar>& param) {
    LBFGSpp::LineSearchNocedalWright<Scalar>::LineSearch(f, fx, x, grad, step, drt, xp, param);
    f.iteration_done(fx, grad);
  }
};

struct fit_result {
  Eigen::VectorXd x;
  double log_density = 0;
  double gradient_norm = 0;
  bool converged = false;
  std::string status;
  int iterations = 0;
  int gradients = 0;
  double ms_per_gradient = 0;
  double check_difference = 0;
  cluster::traffic traffic;
};

/// The cluster's gradient against the in-process run at x0: the largest difference over the partials and the
/// value. The runtime is bit-exact by design, so anything but 0 is a bug.
double check_against_in_process(const fit_problem& problem, const Eigen::VectorXd& x0, const cluster& c) {
  Eigen::VectorXd g_cluster, g_local;
  const double lp_cluster = problem.log_density_gradient(x0, g_cluster);
  double lp_local = 0;
  {
    in_process_scope local;
    lp_local = problem.log_density_gradient(x0, g_local);
  }
  const double difference = std::max((g_cluster - g_local).cwiseAbs().maxCoeff(), std::fabs(lp_cluster - lp_local));
  std::printf("gradient check at the start: largest |cluster - in process| = %.3g over %d partials and the value%s\n",
              difference, problem.size(), c.size() == 1 ? " (one rank: both ran in process)" : "");
  return difference;
}

/// The solver's settings: strong-Wolfe backtracking line search, at most `max_iter` iterations.
LBFGSpp::LBFGSParam<double> solver_settings(int max_iter) {
  LBFGSpp::LBFGSParam<double> param;
  param.epsilon = 1e-6;
  param.epsilon_rel = 1e-8;
  param.past = 1;
  param.delta = 1e-12;
  param.max_iterations = max_iter;
  param.max_linesearch = 40;
  param.linesearch = LBFGSpp::LBFGS_LINESEARCH_BACKTRACKING_STRONG_WOLFE;
  return param;
}

/// L-BFGS from r.x; sets r.x, the status and the counts of iterations and gradients.
void minimise(const fit_problem& problem, int max_iter, fit_result& r) {
  const LBFGSpp::LBFGSParam<double> param = solver_settings(max_iter);
  LBFGSpp::LBFGSSolver<double, reporting_line_search> solver(param);
  objective f(problem);
  Eigen::VectorXd g;
  f.start(f(r.x, g), g);
  double fx = 0;
  try {
    solver.minimize(f, r.x, fx);
    r.converged = f.iterations() < max_iter || f.last_gradient_norm() <= param.epsilon;
    r.status = r.converged ? "converged" : "stopped at --max-iter " + std::to_string(max_iter);
  } catch (const std::exception& e) {
    // The line search gives up when rounding hides any further decrease: converged if the gradient is
    // negligible against the density's scale, a failure otherwise.
    fx = f(r.x, g);
    const bool flat = g.norm() <= 1e-4 * std::max(1.0, std::fabs(fx));
    if (!flat) throw std::runtime_error(std::string("fit failed: ") + e.what());
    r.converged = true;
    r.status = "converged (line search at rounding level)";
  }
  r.iterations = f.iterations();
  r.gradients = f.gradients();
  r.ms_per_gradient = 1e3 * f.seconds() / std::max(1, f.gradients());
}

/// The fit's outcome on stdout: status, estimates (against the truth when known), time and bytes per gradient.
void print_fit_report(const fit_problem& problem, const fit_result& r, const cluster& c) {
  std::printf("%s after %d iterations (%d gradients): log density %.8f, |grad| %.3e\n", r.status.c_str(),
              r.iterations, r.gradients, r.log_density, r.gradient_norm);
  const auto estimates = problem.estimates(r.x);
  constexpr std::size_t shown = 40;  // the rest is in --out's JSON
  std::printf("%-16s %14s %14s\n", "column", "estimate", "true");
  for (std::size_t k = 0; k < estimates.size() && k < shown; ++k) {
    const std::optional<double> truth = problem.truth(estimates[k].first);
    if (truth)
      std::printf("%-16s %14.6f %14.6f\n", estimates[k].first.c_str(), estimates[k].second, *truth);
    else
      std::printf("%-16s %14.6f\n", estimates[k].first.c_str(), estimates[k].second);
  }
  if (estimates.size() > shown) std::printf("... and %zu more columns\n", estimates.size() - shown);
  std::printf("time per gradient: %.4f ms (mean of %d, %d rank%s)\n", r.ms_per_gradient, r.gradients, c.size(),
              c.size() == 1 ? "" : "s");
  if (c.size() > 1)
    std::printf("bytes per call (root): sent %llu, received %llu\n", static_cast<unsigned long long>(r.traffic.sent),
                static_cast<unsigned long long>(r.traffic.received));
  else
    std::printf("bytes per call: 0 (one rank: calls run in process)\n");
  std::fflush(stdout);
}

fit_result fit_on_root(const fit_problem& problem, const fit_options& o, const cluster& c) {
  fit_result r;
  std::printf("maprect fit: %s, %d parameters, %d rank%s x %d thread%s\n", problem.description().c_str(),
              problem.size(), c.size(), c.size() == 1 ? "" : "s", c.threads(), c.threads() == 1 ? "" : "s");
  r.x = problem.initial();
  r.check_difference = check_against_in_process(problem, r.x, c);
  minimise(problem, o.max_iter, r);
  Eigen::VectorXd final_gradient;
  r.log_density = problem.log_density_gradient(r.x, final_gradient);
  r.gradient_norm = final_gradient.norm();
  r.traffic = c.last_call_traffic();
  print_fit_report(problem, r, c);
  return r;
}

/// The named estimates at x, each with its true value or null.
json estimates_json(const fit_problem& problem, const Eigen::VectorXd& x) {
  json out = json::array();
  for (const auto& [name, estimate] : problem.estimates(x)) {
    const std::optional<double> truth = problem.truth(name);
    out.push_back({{"name", name}, {"estimate", estimate}, {"truth", truth ? json(*truth) : json(nullptr)}});
  }
  return out;
}

void write_fit_json(std::ostream& out, const fit_problem& problem, const fit_options& o, const fit_result& r,
                    int ranks, const std::string& invocation) {
  const json document = {{"command", "fit"},
                         {"model", o.model},
                         {"data", o.data.empty() ? "embedded" : o.data},
                         {"description", problem.description()},
                         {"ranks", ranks},
                         {"command_line", invocation},
                         {"hostname", host_name()},
                         {"date", utc_timestamp()},
                         {"parameters", problem.size()},
                         {"converged", r.converged},
                         {"status", r.status},
                         {"iterations", r.iterations},
                         {"gradients", r.gradients},
                         {"log_density", r.log_density},
                         {"gradient_norm", r.gradient_norm},
                         {"gradient_check_max_abs_diff", r.check_difference},
                         {"ms_per_gradient", r.ms_per_gradient},
                         {"bytes_sent_per_call", r.traffic.sent},
                         {"bytes_received_per_call", r.traffic.received},
                         {"estimates", estimates_json(problem, r.x)},
                         {"x", std::vector<double>(r.x.data(), r.x.data() + r.x.size())}};
  write_json_document(out, document);
}

}  // namespace

void add_fit_options(CLI::App& app, fit_options& o) {
  app.add_option("--model", o.model, "model to fit")->check(CLI::IsMember(registered_model_names()))->capture_default_str();
  CLI::Option* data = app.add_option("--data", o.data, "CmdStan JSON data (logreg: also CSV group,y,x); default: embedded data");
  app.add_option("--jobs", o.jobs, "groups (logreg, default 8) or subjects (pk2cmt, default 16) of the embedded data")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()))
      ->excludes(data);
  app.add_option("--points", o.points,
                 "points per group of the embedded data (logreg: 200, pointwise_regression: 50)")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()))
      ->excludes(data);
  app.add_option("--max-iter", o.max_iter, "L-BFGS iteration limit")->check(CLI::Range(1, std::numeric_limits<int>::max()))->capture_default_str();
  app.add_option("--out", o.out, "write the result as JSON to this file");
  add_threads_option(app, o.threads);
}

int run_fit(const fit_options& o, const std::string& invocation) {
  // Checks that need no file: the same on every rank, before any communication.
  const cluster::options threads = cluster_options(o.threads);
  check_model_arguments(o.model, o.data, o.jobs, o.points);

  // The root reads the data and opens the output; every rank learns whether that worked before the cluster
  // exists, so a bad file ends all ranks with the same code and no rank waits for work.
  std::unique_ptr<fit_problem> problem;
  std::ofstream out;
  std::string failure;
  if (world_rank() == 0) {
    try {
      problem = make_problem(o);
      if (!o.out.empty()) {
        out.open(o.out);
        if (!out) throw std::runtime_error(o.out + ": cannot write (" + std::string(std::strerror(errno)) + ")");
      }
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  if (!agree(failure.empty())) {
    print_error(failure);
    return 1;
  }

  int code = 0;
  {
    cluster c(MPI_COMM_WORLD, threads);
    if (!c.is_root()) {
      c.serve();
    } else {
      try {
        const fit_result r = fit_on_root(*problem, o, c);
        if (out.is_open()) {
          write_fit_json(out, *problem, o, r, c.size(), invocation);
          out.close();
          if (!out) throw std::runtime_error(o.out + ": write failed");
        }
      } catch (const std::exception& e) {
        print_error(e.what());
        code = 1;
      }
      c.stop();
    }
  }
  return agree(code);
}

}  // namespace maprect::cli
