// An application written with Boost.MPI that runs map_rect on half of its ranks: the even ranks form a
// cluster on their own communicator and compute a gradient, while the odd ranks wait; then all ranks meet
// again on the world communicator. `ctest -R example_boost_mpi` runs it at 2 and 4 ranks and compares the
// bits with maprect-example's.
#include <boost/mpi/collectives.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>
#include <cmath>
#include <cstdio>
#include <maprect/maprect.hpp>
#include <vector>

/// One group's log likelihood: y ~ normal(mu + offset, exp(log_sigma)) (as in example.cpp).
struct group_normal {
  template <class T1, class T2>
  Eigen::Matrix<maprect::return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(
      const Eigen::Matrix<T1, Eigen::Dynamic, 1>& shared, const Eigen::Matrix<T2, Eigen::Dynamic, 1>& offset,
      const std::vector<double>& y, const std::vector<int>& /*x_i*/, std::ostream* /*msgs*/) const {
    using std::exp;
    const auto mean = shared(0) + offset(0);
    const auto sigma = exp(shared(1));
    maprect::return_type_t<T1, T2> lp = 0;
    for (double y_i : y) lp -= 0.5 * maprect::square((y_i - mean) / sigma) + log(sigma);
    Eigen::Matrix<maprect::return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
    out(0) = lp;
    return out;
  }
};

MAPRECT_REGISTER(7, group_normal);

/// The gradient of example.cpp's model, on the root of `cluster`; prints it as hex floats.
void print_gradient(const maprect::cluster& cluster) {
  const int groups = 100, points = 50;
  std::vector<std::vector<double>> y(groups, std::vector<double>(points));
  for (int j = 0; j < groups; ++j)
    for (int i = 0; i < points; ++i) y[j][i] = 1.0 + 0.01 * j + std::sin(0.7 * i + j);
  const std::vector<std::vector<int>> no_ints(groups);
  const maprect::vector_v shared = maprect::to_var(Eigen::Vector2d(1.0, -0.3));
  std::vector<maprect::vector_v> offsets;
  for (int j = 0; j < groups; ++j) offsets.push_back(maprect::to_var(Eigen::VectorXd::Constant(1, 0.01 * (j % 5))));
  const maprect::var lp = maprect::map_rect<7, group_normal>(shared, offsets, y, no_ints).sum();
  maprect::grad(lp);
  std::printf("ranks %d\n", cluster.size());
  std::printf("log density %a\nd/dmu %a\nd/dlog_sigma %a\nd/doffset[99] %a\n", lp.val(), shared(0).adj(),
              shared(1).adj(), offsets[99](0).adj());
}

int main(int argc, char** argv) {
  boost::mpi::environment env(argc, argv);
  boost::mpi::communicator world;
  const boost::mpi::communicator half = world.split(world.rank() % 2);
  int answered = 0;
  if (world.rank() % 2 == 0) {
    maprect::cluster cluster(half);
    if (cluster.is_root()) {
      print_gradient(cluster);
      answered = 1;
    } else {
      cluster.serve();
    }
  }  // the cluster releases its workers here; the application's communicators stay its own
  // The application goes on with Boost.MPI on every rank, the cluster's ranks included.
  const int total = boost::mpi::all_reduce(world, answered, std::plus<int>());
  if (world.rank() == 0) std::printf("roots %d\n", total);
  return total == 1 ? 0 : 1;
}
