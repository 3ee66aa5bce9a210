#pragma once
// Comparing a map_rect call over the cluster with the same call in process, bit for bit.
#include <catch2/catch.hpp>
#include <cstring>
#include <maprect/map_rect.hpp>
#include <vector>
#include "src/cluster/test_hooks.hpp"

namespace maprect::test {

/// Runs f with the cluster's backend switched off, so map_rect runs in process on the root.
template <class F>
auto in_process(F&& f) {
  const detail::remote_call saved = detail::remote_backend;
  detail::remote_backend = nullptr;
  auto result = f();
  detail::remote_backend = saved;
  return result;
}

inline bool bit_equal(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// Checks that `got` holds the bits of `want`, entry by entry.
inline void check_same_bits(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    INFO("entry " << k);
    CHECK(bit_equal(got[k], want[k]));
  }
}

/// What one map_rect call added to the root's tape.
struct tape_added {
  std::size_t bytes = 0;  ///< arena bytes
  std::size_t nodes = 0;  ///< nodes
};

/// The values of `out`, then the gradient of their sum (shared parameters first, then each job's) where
/// they are var; frees the tape.
template <class T_out, class T_shared, class T_job>
std::vector<double> values_and_gradient(const Eigen::Matrix<T_out, Eigen::Dynamic, 1>& out,
                                        const Eigen::Matrix<T_shared, Eigen::Dynamic, 1>& phi,
                                        const std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>>& theta) {
  std::vector<double> result;
  for (Eigen::Index k = 0; k < out.size(); ++k) result.push_back(value_of(out(k)));
  if constexpr (is_var_v<T_out>) {
    if (out.size() > 0) {
      var total = out.sum();
      grad(total);
      if constexpr (is_var_v<T_shared>)
        for (Eigen::Index s = 0; s < phi.size(); ++s) result.push_back(phi(s).adj());
      if constexpr (is_var_v<T_job>)
        for (auto& t : theta)
          for (Eigen::Index p = 0; p < t.size(); ++p) result.push_back(t(p).adj());
    }
  }
  recover_memory();
  return result;
}

/// Values and gradient (shared first, then each job's) of sum(map_rect(...)) for parameters of the given kinds;
/// what the call added to the tape goes to `added` if given.
template <int Id, class F, class T_shared, class T_job>
std::vector<double> evaluate(const Eigen::VectorXd& phi_d, const std::vector<Eigen::VectorXd>& theta_d,
                             const std::vector<std::vector<double>>& x_r, const std::vector<std::vector<int>>& x_i,
                             tape_added* added = nullptr) {
  Eigen::Matrix<T_shared, Eigen::Dynamic, 1> phi = phi_d.cast<T_shared>();
  std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>> theta;
  for (auto& t : theta_d) theta.push_back(t.cast<T_job>());
  const std::size_t bytes_before = tape_bytes(), nodes_before = tape_size();
  auto out = map_rect<Id, F>(phi, theta, x_r, x_i);
  if (added) *added = {tape_bytes() - bytes_before, tape_size() - nodes_before};
  return values_and_gradient(out, phi, theta);
}

template <int Id, class F, class T_shared, class T_job>
void check_bit_equal(const Eigen::VectorXd& phi, const std::vector<Eigen::VectorXd>& theta,
                     const std::vector<std::vector<double>>& x_r, const std::vector<std::vector<int>>& x_i) {
  // Call by call, from a site that has forgotten its calls on both sides: MAPRECT_REVERSE=auto chooses each
  // call's mode by the site's last call.
  std::vector<tape_added> serial_tapes(3);
  detail::forget_reverse_choices_for_tests();
  const auto serials = in_process([&] {
    std::vector<std::vector<double>> out;
    for (int repeat = 0; repeat < 3; ++repeat)
      out.push_back(evaluate<Id, F, T_shared, T_job>(phi, theta, x_r, x_i, &serial_tapes[repeat]));
    return out;
  });
  detail::forget_reverse_choices_for_tests();
  tape_added distributed_tape;
  for (int repeat = 0; repeat < 3; ++repeat) {  // first call ships data; later ones are steady state
    const auto distributed = evaluate<Id, F, T_shared, T_job>(phi, theta, x_r, x_i, &distributed_tape);
    const std::vector<double>& serial = serials[repeat];
    const tape_added& serial_tape = serial_tapes[repeat];
    INFO("repeat " << repeat);
    // The root's tape holds the same nodes and bytes as in process: one node per output, nothing more.
    CHECK(distributed_tape.nodes == serial_tape.nodes);
    CHECK(distributed_tape.bytes == serial_tape.bytes);
    check_same_bits(distributed, serial);
  }
}

}  // namespace maprect::test
