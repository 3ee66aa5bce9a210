#pragma once
// Functors of the MPI tests: the standard model, ragged outputs, and failures on chosen jobs.
#include <chrono>
#include <maprect/map_rect.hpp>
#include <stdexcept>

namespace maprect::test {

/// Job j returns x_i[j][0] outputs (possibly none): output k is (k+1) * sum(theta) * phi(0) + x_r[j][k].
struct ragged_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i, std::ostream*) const {
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(x_i[0]);
    for (int k = 0; k < x_i[0]; ++k) out(k) = (k + 1.0) * theta.sum() * exp(phi(0)) + x_r[k % x_r.size()];
    return out;
  }
};

/// Job j returns theta(0) outputs (its value, rounded down; the data play no part): output k is
/// (k + 1) * theta(1) * exp(phi(0)) + x_r[j][0].
struct parameter_count_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>&, std::ostream*) const {
    const int n = static_cast<int>(value_of(theta(0)));
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(n);
    for (int k = 0; k < n; ++k) out(k) = (k + 1.0) * theta(1) * exp(phi(0)) + x_r[0];
    return out;
  }
};

/// Throws the exception named by x_i[j][0] (0: none, 1: domain_error, 2: invalid_argument, 3: out_of_range,
/// 4: range_error, 5: overflow_error, 6: underflow_error, 7: length_error, 8: logic_error, 9: runtime_error,
/// 10: a non-standard exception) with message "boom at <x_i[j][1]>"; otherwise one output.
struct throwing_job {
  struct custom_error {};
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>&,
                                                                     const std::vector<int>& x_i, std::ostream*) const {
    const std::string msg = "boom at " + std::to_string(x_i[1]);
    switch (x_i[0]) {
      case 1: throw std::domain_error(msg);
      case 2: throw std::invalid_argument(msg);
      case 3: throw std::out_of_range(msg);
      case 4: throw std::range_error(msg);
      case 5: throw std::overflow_error(msg);
      case 6: throw std::underflow_error(msg);
      case 7: throw std::length_error(msg);
      case 8: throw std::logic_error(msg);
      case 9: throw std::runtime_error(msg);
      case 10: throw custom_error{};
      default: break;
    }
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
    out(0) = phi.sum() * theta.sum();
    return out;
  }
};

/// Spins for x_i[j][0] microseconds, then returns x_i[j][1] outputs, output k being
/// (k + 1) * exp(phi(0)) * sum(theta) + x_r[j][0]; throws std::out_of_range("slow job gave up") when
/// x_i[j][2] is not 0. Long jobs leave time for the root to take over a worker's.
struct slow_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i, std::ostream*) const {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(x_i[0]);
    while (std::chrono::steady_clock::now() < until) {
    }
    if (x_i[2] != 0) throw std::out_of_range("slow job gave up");
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(x_i[1]);
    for (int k = 0; k < x_i[1]; ++k) out(k) = (k + 1.0) * exp(phi(0)) * theta.sum() + x_r[0];
    return out;
  }
};

}  // namespace maprect::test

namespace maprect::test {

/// Calls map_rect itself (on a ragged inner job per data value): a map_rect inside a functor runs in process
/// on whichever rank runs the outer job.
struct nested_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>&, std::ostream*) const;
};

}  // namespace maprect::test
