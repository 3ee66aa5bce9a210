#pragma once
// Job functors of the in-process map_rect tests.
#include <maprect/map_rect.hpp>

#include <stdexcept>
#include <string>

#include "support/benchmark_model.hpp"

namespace maprect::test {

/// Job j returns x_i[j][0] outputs (possibly none); output k is
/// (k + 1) phi0 theta0 + phi1 x_r[k] + theta1^2.
struct ragged_outputs_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i, std::ostream*) const {
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(x_i[0]);
    for (int k = 0; k < x_i[0]; ++k) out(k) = (k + 1.0) * phi(0) * theta(0) + phi(1) * x_r[k] + square(theta(1));
    return out;
  }
};

/// Throws the exception named by x_i[j][0] (1: domain_error, 2: invalid_argument, 3: a non-standard
/// type) with message "bad job <j>", j = x_i[j][1]; otherwise returns phi0 * theta0.
struct throwing_job {
  struct not_a_std_exception {};
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>&,
                                                                     const std::vector<int>& x_i, std::ostream*) const {
    const std::string message = "bad job " + std::to_string(x_i[1]);
    if (x_i[0] == 1) throw std::domain_error(message);
    if (x_i[0] == 2) throw std::invalid_argument(message);
    if (x_i[0] == 3) throw not_a_std_exception{};
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
    out(0) = phi(0) * theta(0);
    return out;
  }
};

/// Returns the job's parameters themselves, then phi0: outputs that are leaves of the job's region.
struct parameters_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>&, const std::vector<int>&,
                                                                     std::ostream* msgs) const {
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(theta.size() + 1);
    for (Eigen::Index p = 0; p < theta.size(); ++p) out(p) = theta(p);
    out(theta.size()) = phi(0);
    if (msgs) *msgs << "job sees " << theta.size() << " parameters;";
    return out;
  }
};

/// Runs a reverse sweep of its own over its parameters (as a functor with an inner gradient would)
/// before returning phi0 * theta0^2 and theta0 + theta1: the outputs' partials must not see that sweep.
struct inner_sweep_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>&, const std::vector<int>&,
                                                                     std::ostream*) const {
    if constexpr (is_var_v<T1> || is_var_v<T2>) {
      nested_tape region;
      const auto inner = 7.0 * phi(0) * theta(0) + 3.0 * theta(1);
      grad(inner);
    }
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(2);
    out(0) = phi(0) * theta(0) * theta(0);
    out(1) = theta(0) + theta(1);
    return out;
  }
};

/// Job j returns K = x_i[0] outputs over S shared and P job parameters; output k is
/// phi0 exp(z_k) + phi1 (k + 1), z_k = sum_p theta_p x_r[k P + p] (x_r holds K x P covariates).
struct wide_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>& x_r,
                                                                     const std::vector<int>& x_i, std::ostream*) const {
    using R = return_type_t<T1, T2>;
    const Eigen::Index P = theta.size();
    Eigen::Matrix<R, Eigen::Dynamic, 1> out(x_i[0]);
    for (int k = 0; k < x_i[0]; ++k) {
      R z = 0;
      for (Eigen::Index p = 0; p < P; ++p) z += theta(p) * x_r[static_cast<std::size_t>(k * P + p)];
      out(k) = phi(0) * exp(z) + phi(1) * (k + 1.0);
    }
    return out;
  }
};

/// A node whose reverse step throws std::domain_error("reverse of a job failed").
class throwing_chain_vari final : public vari {
 public:
  explicit throwing_chain_vari(double v) : vari(v) {}
  void chain() override { throw std::domain_error("reverse of a job failed"); }
};

/// Returns phi0 * theta0, times one more node whose reverse step throws when x_i[0] is 1.
struct reverse_throwing_job {
  template <class T1, class T2>
  Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi,
                                                                     const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
                                                                     const std::vector<double>&,
                                                                     const std::vector<int>& x_i, std::ostream*) const {
    Eigen::Matrix<return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
    out(0) = phi(0) * theta(0);
    if constexpr (is_var_v<return_type_t<T1, T2>>)
      if (x_i[0] == 1) out(0) = out(0) * var(new throwing_chain_vari(1.0));
    return out;
  }
};

}  // namespace maprect::test
