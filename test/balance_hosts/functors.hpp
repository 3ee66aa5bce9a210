#pragma once
// Functors of the balancing tests: jobs whose cost depends on the rank that runs them, never their results.
#include <mpi.h>

#include <chrono>
#include <fstream>
#include <maprect/map_rect.hpp>
#include <maprect/reduce_sum.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace maprect::test {

/// Spins for x_i[0] microseconds, then on world rank x_i[3] sleeps x_i[4] microseconds more: a job whose cost
/// depends on the rank that runs it.
inline void spend_job_time(const std::vector<int>& x_i) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(x_i[0]);
  while (std::chrono::steady_clock::now() < until) {
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == x_i[3]) std::this_thread::sleep_for(std::chrono::microseconds(x_i[4]));
}

/// `outputs` outputs, output k being (k + 1) * exp(phi(0)) * sum(theta) + offset.
template <class T1, class T2>
Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> scaled_outputs(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                       const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                       double offset, int outputs) {
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(outputs);
  for (int k = 0; k < outputs; ++k) out(k) = (k + 1.0) * exp(phi(0)) * theta.sum() + offset;
  return out;
}

/// Spends its time as spend_job_time says, then returns scaled_outputs: x_i[j][1] outputs (one more when
/// theta(1) exceeds 100) offset by x_r[j][0]; throws std::out_of_range("job gave up at <x_r[j][0]>") when
/// x_i[j][2] is not 0 or theta(0) is negative (a parameter: the call's data stay, so a steady call fails).
/// Whichever rank runs a job, its outputs are the same.
struct rank_slowed_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i, std::ostream*) const {
    spend_job_time(x_i);
    if (x_i[2] != 0 || value_of(theta(0)) < 0) throw std::out_of_range("job gave up at " + std::to_string(x_r[0]));
    return scaled_outputs(phi, theta, x_r[0], x_i[1] + (value_of(theta(1)) > 100 ? 1 : 0));
  }
};

/// The file relieved_job marks for `token`.
inline std::string relieved_mark(int token) { return "/tmp/maprect-relieved-" + std::to_string(token); }

/// Sleeps `us` microseconds, `root_us` more on the root. A job of world rank `owner`'s chunk (`owner` >= 0) run
/// by another rank marks so in relieved_mark(token); run by the owner, a job that `waits` then waits for the mark
/// (at most 20 s, then throws std::runtime_error("job <name> was not relieved within 20 s")).
inline void wait_to_be_relieved(int owner, bool waits, int token, int us, int root_us, const std::string& name) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::this_thread::sleep_for(std::chrono::microseconds(us + (rank == 0 ? root_us : 0)));
  const std::string mark = relieved_mark(token);
  if (owner >= 0 && rank != owner) {
    std::ofstream(mark) << rank << '\n';
    return;
  }
  if (!waits) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!std::ifstream(mark).good()) {
    if (std::chrono::steady_clock::now() > until)
      throw std::runtime_error("job " + name + " was not relieved within 20 s");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

/// Sleeps x_i[3] microseconds, x_i[4] more on the root. A job of world rank x_i[0]'s chunk (x_i[0] >= 0) run by
/// another rank marks so in relieved_mark(x_i[2]); run by that rank, the job with x_i[1] = 1 then waits for the
/// mark once phi(1) > 0.5, and throws std::runtime_error("job <x_r[0]> was not relieved within 20 s") if none
/// comes. So that job ends only once its owner granted some of its jobs while it ran. One output, as
/// scaled_outputs says.
struct relieved_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i, std::ostream*) const {
    wait_to_be_relieved(x_i[0], x_i[1] == 1 && value_of(phi(1)) > 0.5, x_i[2], x_i[3], x_i[4], std::to_string(x_r[0]));
    return scaled_outputs(phi, theta, x_r[0], 1);
  }
};

/// relieved_job's rule for reduce_sum's slices of one term: slice `start` belongs to world rank info[0] when it
/// lies in [info[1], info[2]); slice info[3] waits once phi[1] > 0.5; info[4] is the token, info[5] and info[6]
/// the sleeps. The value: phi[0] * term + sin(phi[1] + term), wherever it runs.
struct relieved_partial {
  template <class T_slice, class T_phi>
  return_type_t<T_slice, T_phi> operator()(const std::vector<T_slice>& slice, int start, int, std::ostream*,
                                           const std::vector<T_phi>& phi, const std::vector<int>& info) const {
    const bool of_owner = start >= info[1] && start < info[2];
    wait_to_be_relieved(of_owner ? info[0] : -1, start == info[3] && value_of(phi[1]) > 0.5, info[4], info[5],
                        info[6], "slice " + std::to_string(start));
    return phi[0] * slice[0] + sin(phi[1] + slice[0]);
  }
};

/// reduce_sum<Id, relieved_partial> of `terms`, one a slice, after a reverse pass from it: the value, then the
/// adjoints of phi and of the terms.
template <int Id>
std::vector<double> relieved_sum_and_adjoints(const std::vector<var>& terms, const std::vector<var>& phi,
                                              const std::vector<int>& info) {
  std::vector<vari*> operands = {phi[0].vi_, phi[1].vi_};
  for (const var& v : terms) operands.push_back(v.vi_);
  const var y = reduce_sum<Id, relieved_partial>(terms, 1, nullptr, phi, info);
  set_zero_all_adjoints();
  grad(y);
  std::vector<double> out = {y.val()};
  for (vari* v : operands) out.push_back(v->adj_);
  return out;
}

}  // namespace maprect::test
