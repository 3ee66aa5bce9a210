// A complete maprect program with a functor of its own: a normal model with a shared mean and scale and
// one offset per group. The README shows it abridged; `ctest -R example` runs it at 1 and 3 ranks.
#include <maprect/maprect.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

/// One group's log likelihood: y ~ normal(mu + offset, exp(log_sigma)).
struct group_normal {
  template <class T1, class T2>
  Eigen::Matrix<maprect::return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(
      const Eigen::Matrix<T1, Eigen::Dynamic, 1>& shared,  // (mu, log_sigma): the same for every group
      const Eigen::Matrix<T2, Eigen::Dynamic, 1>& job_params,  // (offset): this group's
      const std::vector<double>& y, const std::vector<int>& /*x_i*/, std::ostream* /*msgs*/) const {
    using std::exp;
    using std::log;
    const auto mean = shared(0) + job_params(0);
    const auto sigma = exp(shared(1));
    maprect::return_type_t<T1, T2> lp = 0;
    for (double y_i : y) lp -= 0.5 * maprect::square((y_i - mean) / sigma) + log(sigma);
    Eigen::Matrix<maprect::return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
    out(0) = lp;
    return out;
  }
};

// Call site 7 is served by group_normal, on every rank.
MAPRECT_REGISTER(7, group_normal);

int main(int argc, char** argv) {
  maprect::cluster cluster(argc, argv);  // initialises MPI if needed; rank 0 is the root
  if (!cluster.is_root()) {
    cluster.serve();  // workers run their share of every call until the root releases them
    return 0;
  }

  const int groups = 100, points = 50;
  std::vector<std::vector<double>> y(groups, std::vector<double>(points));
  for (int j = 0; j < groups; ++j)
    for (int i = 0; i < points; ++i) y[j][i] = 1.0 + 0.01 * j + std::sin(0.7 * i + j);
  const std::vector<std::vector<int>> no_ints(groups);  // every row empty: this model has no integer data

  const maprect::vector_v shared = maprect::to_var(Eigen::Vector2d(1.0, -0.3));
  // One parameter per group, each its own var: to_var makes one node per value (a copied var, or
  // vector_v::Constant, would share one node).
  std::vector<maprect::vector_v> offsets;
  for (int j = 0; j < groups; ++j) offsets.push_back(maprect::to_var(Eigen::VectorXd::Constant(1, 0.01 * (j % 5))));

  // One call: the groups are spread over the ranks; each output is one node on this tape.
  const maprect::var lp = maprect::map_rect<7, group_normal>(shared, offsets, y, no_ints).sum();
  maprect::grad(lp);
  std::printf("ranks %d\n", cluster.size());
  std::printf("log density %a\nd/dmu %a\nd/dlog_sigma %a\nd/doffset[99] %a\n", lp.val(), shared(0).adj(),
              shared(1).adj(), offsets[99](0).adj());
  return 0;
}  // ~cluster releases the workers (and finalises MPI, which it initialised)
