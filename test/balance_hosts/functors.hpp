#pragma once
// Functors of the balancing tests: jobs whose cost depends on the rank that runs them, never their results.
#include <mpi.h>

#include <chrono>
#include <fstream>
#include <maprect/map_rect.hpp>
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
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::this_thread::sleep_for(std::chrono::microseconds(x_i[3] + (rank == 0 ? x_i[4] : 0)));
    const std::string mark = relieved_mark(x_i[2]);
    if (x_i[0] >= 0 && rank != x_i[0]) {
      std::ofstream(mark) << rank << '\n';
    } else if (x_i[1] == 1 && value_of(phi(1)) > 0.5) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!std::ifstream(mark).good()) {
        if (std::chrono::steady_clock::now() > until)
          throw std::runtime_error("job " + std::to_string(x_r[0]) + " was not relieved within 20 s");
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
    return scaled_outputs(phi, theta, x_r[0], 1);
  }
};

}  // namespace maprect::test
