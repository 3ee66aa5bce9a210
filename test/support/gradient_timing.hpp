#pragma once
// What the skewed benchmarks share: a gradient as one flat vector of doubles, and the timing of a gradient in
// process and over the cluster, with whether the two agree bit for bit.
#include <maprect/maprect.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

namespace maprect::test {

/// The value of `lp`, then the adjoints of `phi` and of each of `theta` in order, after a reverse pass from
/// `lp`; the tape is recovered.
inline std::vector<double> value_and_gradient(const var& lp, const Eigen::Matrix<var, Eigen::Dynamic, 1>& phi,
                                              const std::vector<Eigen::Matrix<var, Eigen::Dynamic, 1>>& theta) {
  grad(lp);
  std::vector<double> out{lp.val()};
  for (Eigen::Index s = 0; s < phi.size(); ++s) out.push_back(phi(s).adj());
  for (const auto& t : theta)
    for (Eigen::Index p = 0; p < t.size(); ++p) out.push_back(t(p).adj());
  recover_memory();
  return out;
}

/// The median and the fastest seconds of one gradient over a run of them.
struct timing {
  double median = 0;
  double fastest = 0;
};

/// Times `repeat` calls of `gradient` (returning a std::vector<double>) after `warm_up` untimed ones; `result`
/// holds the last call's.
template <class Gradient>
timing time_gradient(Gradient&& gradient, int warm_up, int repeat, std::vector<double>& result) {
  for (int k = 0; k < warm_up; ++k) result = gradient();
  std::vector<double> seconds;
  for (int k = 0; k < repeat; ++k) {
    const auto start = std::chrono::steady_clock::now();
    result = gradient();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return {seconds[repeat / 2], seconds.front()};
}

/// A gradient timed in process and over the live cluster.
struct in_process_and_cluster {
  timing in_process;
  timing cluster;
  bool same_bits = false;  ///< the last results of both agree bit for bit
};

/// Times `gradient` in process (no remote backend), then over the cluster, as time_gradient does.
template <class Gradient>
in_process_and_cluster time_in_process_and_cluster(Gradient&& gradient, int warm_up, int repeat) {
  std::vector<double> serial, distributed;
  in_process_and_cluster t;
  const detail::remote_call saved = detail::remote_backend;
  detail::remote_backend = nullptr;
  t.in_process = time_gradient(gradient, warm_up, repeat, serial);
  detail::remote_backend = saved;
  t.cluster = time_gradient(gradient, warm_up, repeat, distributed);
  t.same_bits = serial.size() == distributed.size() &&
                std::memcmp(serial.data(), distributed.data(), sizeof(double) * serial.size()) == 0;
  return t;
}

}  // namespace maprect::test
