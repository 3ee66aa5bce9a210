// plan for a registered model (a program built with maprect_add_program): one gradient of the model's log
// density runs with a backend that catches its first map_rect call, copying the call's functor, parameter
// values and data; that call site is then measured as `maprect plan` measures its built-in ones.
#include <maprect/maprect.hpp>

#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>

#include "plan_commands.hpp"
#include "plan_measure.hpp"
#include "plan_timing.hpp"
#include "sample_model.hpp"
#include "spmd.hpp"

namespace maprect::cli {

namespace {

/// Thrown by the catching backend once it holds the call.
struct call_caught {};

/// The first map_rect call of a gradient: its site, functor and parameter kinds.
struct caught_call {
  int call_id = 0;
  const detail::functor_entry* functor = nullptr;
  detail::param_kinds kinds = detail::param_kinds::vv;
  site_data site;
};

thread_local caught_call* catching = nullptr;

detail::call_result catch_call(const detail::call_request& r) {
  caught_call& c = *catching;
  c.call_id = r.call_id;
  c.functor = r.functor;
  c.kinds = r.kinds;
  c.site.x_r = *r.x_r;
  c.site.x_i = *r.x_i;
  c.site.phi = Eigen::Map<const Eigen::VectorXd>(r.shared, r.n_shared);
  for (int j = 0; j < r.n_jobs; ++j)
    c.site.theta.push_back(
        Eigen::Map<const Eigen::VectorXd>(r.job_params + static_cast<std::size_t>(j) * r.n_job_params, r.n_job_params));
  throw call_caught{};
}

/// While alive, this thread's map_rect calls go to catch_call (the previous backend is restored afterwards).
class catching_scope {
 public:
  explicit catching_scope(caught_call& c) : saved_(detail::remote_backend) {
    catching = &c;
    detail::remote_backend = &catch_call;
  }
  ~catching_scope() {
    detail::remote_backend = saved_;
    catching = nullptr;
  }
  catching_scope(const catching_scope&) = delete;
  catching_scope& operator=(const catching_scope&) = delete;

 private:
  detail::remote_call saved_;
};

/// An unconstrained point where the log density and its gradient are finite: 0, else uniform(-2, 2) draws.
Eigen::VectorXd finite_point(const maprect::model& m, const std::string& name) {
  Eigen::VectorXd u = Eigen::VectorXd::Zero(m.size()), g;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> uniform(-2, 2);
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (std::isfinite(m.log_density(u, g, true)) && g.allFinite()) return u;
    for (Eigen::Index i = 0; i < u.size(); ++i) u(i) = uniform(rng);
  }
  throw std::domain_error("plan: no point with a finite log density of " + name + " in 100 tries");
}

/// The first map_rect call of the gradient of `m` at u.
caught_call catch_first_call(const maprect::model& m, const Eigen::VectorXd& u, const std::string& name) {
  caught_call c;
  Eigen::VectorXd g;
  std::string why = "its gradient made none";
  try {
    const catching_scope scope(c);
    m.log_density(u, g, true);
  } catch (const call_caught&) {
    recover_memory();
    return c;
  } catch (const std::exception& e) {  // reduce_sum, for one, asks for a cluster where none serves
    why = e.what();
  }
  recover_memory();
  throw std::invalid_argument("plan measures a model's first map_rect call site, and " + name +
                              " made no map_rect call (" + why + ")");
}

/// The figures of caught call `c` of model `loaded` at u, its jobs through `chunks`.
site_figures model_figures(const loaded_model& loaded, const Eigen::VectorXd& u, const caught_call& c,
                           chunk_timer& chunks, int repeat) {
  const maprect::model& m = *loaded.model;
  const site_data& d = c.site;
  const int J = d.jobs();
  site_figures f;
  f.jobs = J;
  f.shared_params = detail::shared_is_var(c.kinds) ? static_cast<int>(d.phi.size()) : 0;
  f.job_params = detail::job_is_var(c.kinds) && J > 0 ? static_cast<int>(d.theta[0].size()) : 0;
  Eigen::VectorXd g;
  kept_timer kept(d, c.functor->run_kept[static_cast<int>(c.kinds)]);
  measure_both_modes([&] { m.log_density(u, g, true); }, chunks, kept, J, repeat, f);
  site_data shape = d;  // the root's work scales with the var parameters only
  if (f.shared_params == 0) shape.phi.resize(0);
  if (f.job_params == 0)
    for (Eigen::VectorXd& t : shape.theta) t.resize(0);
  measure_root_costs(shape, repeat, f);
  scale_kept_to_gradient(f);
  f.job_times_s = job_times(chunks, J);
  f.job_spread_s = spread_of(f.job_times_s);
  f.description = loaded.description + "; map_rect call site " + std::to_string(c.call_id) + " (" + c.functor->name +
                  "), " + std::to_string(J) + " jobs";
  return f;
}

}  // namespace

plan_call_site make_model_site(const std::string& name, const std::string& data, int jobs, int points, int repeat) {
  auto loaded = std::make_shared<const loaded_model>(load_model(name, data, jobs, points));
  const maprect::model& m = *loaded->model;
  auto u = std::make_shared<const Eigen::VectorXd>(finite_point(m, name));
  auto c = std::make_shared<const caught_call>(catch_first_call(m, *u, name));
  auto chunks = std::make_shared<chunk_timer>(c->site, c->functor->run[static_cast<int>(c->kinds)]);
  plan_call_site s;
  s.jobs = c->site.jobs();
  s.run_jobs = [c, chunks](int first, int n) { chunks->run(first, n); };
  s.measure = [loaded, u, c, chunks, repeat] { return model_figures(*loaded, *u, *c, *chunks, repeat); };
  return s;
}

int run_model_plan(const plan_options& o, const std::string& invocation) {
  check_model_arguments(o.model, o.data, o.jobs, o.points);
  return run_plan_with(o, invocation, [&] { return make_model_site(o.model, o.data, o.jobs, o.points, o.repeat); });
}

}  // namespace maprect::cli
