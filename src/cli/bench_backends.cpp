// The backends of maprect bench (see bench_backends.hpp), and the call ids of their map_rect and reduce_sum
// call sites.
#include "bench_backends.hpp"

#include <array>
#include <stdexcept>
#include <string>
#include <utility>

#include "bench_root_work.hpp"

namespace maprect::cli {

namespace {

constexpr int scalar_call_base = 100;
constexpr int vector_call_base = 200;
constexpr int scalar_first_call_base = 1000;
constexpr int vector_first_call_base = 2000;
constexpr int scalar_root_work_base = 500;
constexpr int vector_root_work_base = 600;
constexpr int first_call_ids = max_bench_sizes * first_call_samples;

using scalar_job = models::logreg_standard_scalar_job;
using vector_job = models::logreg_standard_vector_job;

template <class F, std::size_t... I>
bool register_call_ids(int base, const char* name, std::index_sequence<I...>) {
  (detail::register_functor(base + static_cast<int>(I), detail::make_functor_entry<F>(name)), ...);
  return true;
}
// What MAPRECT_REGISTER does, for ranges of ids; runs before main on every rank.
constexpr const char* scalar_name = "maprect::models::logreg_standard_scalar_job";
constexpr const char* vector_name = "maprect::models::logreg_standard_vector_job";
const bool ids_registered =
    register_call_ids<scalar_job>(scalar_call_base, scalar_name, std::make_index_sequence<max_bench_sizes>{}) &&
    register_call_ids<vector_job>(vector_call_base, vector_name, std::make_index_sequence<max_bench_sizes>{}) &&
    register_call_ids<scalar_job>(scalar_first_call_base, scalar_name, std::make_index_sequence<first_call_ids>{}) &&
    register_call_ids<vector_job>(vector_first_call_base, vector_name, std::make_index_sequence<first_call_ids>{}) &&
    register_call_ids<scalar_job>(scalar_root_work_base, scalar_name, std::make_index_sequence<max_bench_sizes>{}) &&
    register_call_ids<vector_job>(vector_root_work_base, vector_name, std::make_index_sequence<max_bench_sizes>{});

/// The standard model as a partial sum over groups: group j's term is the output of map_rect's job for it.
template <class Job>
struct groups_partial {
  template <class T_group, class T_shared>
  return_type_t<T_group, T_shared> operator()(const std::vector<Eigen::Matrix<T_group, Eigen::Dynamic, 1>>& groups,
                                              int start, int end, std::ostream* msgs,
                                              const Eigen::Matrix<T_shared, Eigen::Dynamic, 1>& phi,
                                              const std::vector<std::vector<double>>& x_r,
                                              const std::vector<std::vector<int>>& x_i) const {
    const Job job{};
    return_type_t<T_group, T_shared> lp = 0;
    for (int j = start; j <= end; ++j)
      lp += job(phi, groups[static_cast<std::size_t>(j - start)], x_r[static_cast<std::size_t>(j)],
                x_i[static_cast<std::size_t>(j)], msgs)(0);
    return lp;
  }
};

constexpr int scalar_reduce_call = 400;
constexpr int vector_reduce_call = 401;

template <int CallId, class Job>
void reduce_groups_gradient(bench_workspace& w) {
  w.make_leaves();
  w.finish(reduce_sum<CallId, groups_partial<Job>>(w.theta, w.grainsize, nullptr, w.phi, w.problem->x_r,
                                                   w.problem->x_i));
}

template <class F>
void plain_tape_gradient(bench_workspace& w) {
  w.make_leaves();
  const F f{};
  const int J = static_cast<int>(w.theta.size());
  vector_v outputs(J);
  for (int j = 0; j < J; ++j) outputs(j) = f(w.phi, w.theta[j], w.problem->x_r[j], w.problem->x_i[j], nullptr)(0);
  w.finish(outputs.sum());
}

/// map_rect of call site `CallId` on the workspace's leaves, with its rows as a job_data when it has one.
template <int CallId, class F>
vector_v call_site_outputs(const bench_workspace& w) {
  return w.data != nullptr ? map_rect<CallId, F>(w.phi, w.theta, *w.data)
                           : map_rect<CallId, F>(w.phi, w.theta, w.problem->x_r, w.problem->x_i);
}

template <int CallId, class F>
void call_site_gradient(bench_workspace& w) {
  w.make_leaves();
  w.finish(call_site_outputs<CallId, F>(w).sum());
}

/// Like call_site_gradient, and records the CPU time of the root's thread in the map_rect call alone.
template <int CallId, class F>
void root_work_call_site_gradient(bench_workspace& w) {
  w.make_leaves();
  const double start = thread_cpu_us();
  const vector_v outputs = call_site_outputs<CallId, F>(w);
  w.call_cpu_us = thread_cpu_us() - start;
  w.finish(outputs.sum());
}

/// Like call_site_gradient, and records what the call added to the root's tape (outside the timings).
template <int CallId, class F>
void counted_call_site_gradient(bench_workspace& w) {
  w.make_leaves();
  const std::size_t bytes_before = tape_bytes(), nodes_before = tape_size();
  const vector_v outputs = call_site_outputs<CallId, F>(w);
  w.call_tape_bytes = tape_bytes() - bytes_before;
  w.call_tape_nodes = tape_size() - nodes_before;
  w.finish(outputs.sum());
}

template <class F, int Base, std::size_t N, std::size_t... I>
std::array<gradient_fn, N> call_site_table(std::index_sequence<I...>) {
  return {&call_site_gradient<Base + static_cast<int>(I), F>...};
}

template <class F, int Base, std::size_t... I>
std::array<gradient_fn, max_bench_sizes> counted_table(std::index_sequence<I...>) {
  return {&counted_call_site_gradient<Base + static_cast<int>(I), F>...};
}

template <class F, int Base, std::size_t... I>
std::array<gradient_fn, max_bench_sizes> root_work_table(std::index_sequence<I...>) {
  return {&root_work_call_site_gradient<Base + static_cast<int>(I), F>...};
}

const auto scalar_steady =
    call_site_table<scalar_job, scalar_call_base, max_bench_sizes>(std::make_index_sequence<max_bench_sizes>{});
const auto vector_steady =
    call_site_table<vector_job, vector_call_base, max_bench_sizes>(std::make_index_sequence<max_bench_sizes>{});
const auto scalar_counted = counted_table<scalar_job, scalar_call_base>(std::make_index_sequence<max_bench_sizes>{});
const auto vector_counted = counted_table<vector_job, vector_call_base>(std::make_index_sequence<max_bench_sizes>{});
const auto scalar_root_work =
    root_work_table<scalar_job, scalar_root_work_base>(std::make_index_sequence<max_bench_sizes>{});
const auto vector_root_work =
    root_work_table<vector_job, vector_root_work_base>(std::make_index_sequence<max_bench_sizes>{});
const auto scalar_first_calls =
    call_site_table<scalar_job, scalar_first_call_base, first_call_ids>(std::make_index_sequence<first_call_ids>{});
const auto vector_first_calls =
    call_site_table<vector_job, vector_first_call_base, first_call_ids>(std::make_index_sequence<first_call_ids>{});

}  // namespace

MAPRECT_REGISTER_REDUCE(scalar_reduce_call, groups_partial<scalar_job>)
MAPRECT_REGISTER_REDUCE(vector_reduce_call, groups_partial<vector_job>)

const char* kernel_name(bench_kernel k) { return k == bench_kernel::scalar ? "scalar" : "vector"; }

bench_workspace::bench_workspace(const models::logreg_standard_problem& p)
    : problem(&p), theta(p.x_r.size(), vector_v(2)), gradient(p.params.size()) {}

void bench_workspace::make_leaves() {
  const Eigen::VectorXd& x = problem->params;
  phi(0) = var(x(0));
  phi(1) = var(x(1));
  for (std::size_t j = 0; j < theta.size(); ++j) {
    theta[j](0) = var(x(2 + 2 * j));
    theta[j](1) = var(x(3 + 2 * j));
  }
}

void bench_workspace::finish(const var& lp) {
  grad(lp);
  value = lp.val();
  gradient(0) = phi(0).adj();
  gradient(1) = phi(1).adj();
  for (std::size_t j = 0; j < theta.size(); ++j) {
    gradient(2 + 2 * j) = theta[j](0).adj();
    gradient(3 + 2 * j) = theta[j](1).adj();
  }
  recover_memory();
}

void analytic_gradient(bench_workspace& w) {
  w.value = models::logreg_standard_closed_form(*w.problem, w.problem->params, w.gradient);
}

gradient_fn single_tape_gradient(bench_kernel k) {
  return k == bench_kernel::scalar ? &plain_tape_gradient<scalar_job> : &plain_tape_gradient<vector_job>;
}

gradient_fn map_rect_gradient(bench_kernel k, std::size_t size_index) {
  return (k == bench_kernel::scalar ? scalar_steady : vector_steady).at(size_index);
}

gradient_fn counted_map_rect_gradient(bench_kernel k, std::size_t size_index) {
  return (k == bench_kernel::scalar ? scalar_counted : vector_counted).at(size_index);
}

gradient_fn root_work_gradient(bench_kernel k, std::size_t size_index) {
  return (k == bench_kernel::scalar ? scalar_root_work : vector_root_work).at(size_index);
}

int root_work_call_id(bench_kernel k, std::size_t size_index) {
  if (size_index >= static_cast<std::size_t>(max_bench_sizes))
    throw std::out_of_range("root_work_call_id: size number " + std::to_string(size_index) + ", at most " +
                            std::to_string(max_bench_sizes - 1));
  return (k == bench_kernel::scalar ? scalar_root_work_base : vector_root_work_base) + static_cast<int>(size_index);
}

gradient_fn reduce_sum_gradient(bench_kernel k) {
  return k == bench_kernel::scalar ? &reduce_groups_gradient<scalar_reduce_call, scalar_job>
                                   : &reduce_groups_gradient<vector_reduce_call, vector_job>;
}

std::vector<gradient_fn> first_call_gradients(bench_kernel k, std::size_t size_index) {
  const auto& table = k == bench_kernel::scalar ? scalar_first_calls : vector_first_calls;
  const auto begin = table.begin() + static_cast<std::ptrdiff_t>(size_index * first_call_samples);
  return {begin, begin + first_call_samples};
}

}  // namespace maprect::cli
