// Uses the installed maprect: one map_rect call and one reduce_sum call in process on tiny functors, checked
// by hand.
#include <maprect/maprect.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

namespace {
/// Job j returns phi(0) * theta(0) + x_r[0] + x_i[0].
struct scaled_job {
  template <class T1, class T2>
  Eigen::Matrix<maprect::return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(
      const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi, const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
      const std::vector<double>& x_r, const std::vector<int>& x_i, std::ostream*) const {
    Eigen::Matrix<maprect::return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
    out(0) = phi(0) * theta(0) + x_r[0] + x_i[0];
    return out;
  }
};
/// Terms [start, end] of x, each times scale.
struct scaled_terms {
  template <class T>
  T operator()(const std::vector<double>& x, int start, int end, std::ostream*, const T& scale) const {
    T sum = 0;
    for (int i = start; i <= end; ++i) sum += scale * x[i - start];
    return sum;
  }
};
}  // namespace

MAPRECT_REGISTER(7, scaled_job);
MAPRECT_REGISTER_REDUCE(8, scaled_terms);

int main() {
  using namespace maprect;
  vector_v phi(1);
  phi << 2.0;
  std::vector<vector_v> theta(3, vector_v(1));
  for (int j = 0; j < 3; ++j) theta[j] << 0.5 * (j + 1);  // 0.5, 1.0, 1.5
  const std::vector<std::vector<double>> x_r{{0.25}, {0.5}, {0.75}};
  const std::vector<std::vector<int>> x_i{{1}, {2}, {3}};

  // sum_j 2 * 0.5(j+1) + x_r + x_i = 6 + 1.5 + 6 = 13.5; d/dphi = 3; d/dtheta_j = 2.
  var total = map_rect<7, scaled_job>(phi, theta, x_r, x_i).sum();
  grad(total);
  const bool ok = std::abs(total.val() - 13.5) < 1e-14 && std::abs(phi(0).adj() - 3.0) < 1e-14 &&
                  std::abs(theta[0](0).adj() - 2.0) < 1e-14 && std::abs(theta[2](0).adj() - 2.0) < 1e-14;
  std::printf("consumer: map_rect sum %.17g, d/dphi %.17g: %s\n", total.val(), phi(0).adj(), ok ? "OK" : "WRONG");
  recover_memory();

  // (1 + 2 + 3 + 4) * 0.5 = 5, d/dscale = 10.
  const var scale = 0.5;
  const var sum = reduce_sum<8, scaled_terms>(std::vector<double>{1, 2, 3, 4}, 3, nullptr, scale);
  grad(sum);
  const bool reduced = sum.val() == 5.0 && scale.adj() == 10.0;
  std::printf("consumer: reduce_sum %.17g, d/dscale %.17g: %s\n", sum.val(), scale.adj(), reduced ? "OK" : "WRONG");
  recover_memory();
  return ok && reduced ? 0 : 1;
}
