// maprect-results-dump FILE: runs a fixed set of map_rect calls over the cluster (the standard model at several
// sizes in all four parameter type combinations, and ragged outputs including jobs without any) and writes
// every value and gradient entry as a hex float (%a) to FILE on the root. scripts/netns-hosts.sh runs it over
// shared memory and across network-namespace hosts over TCP and compares the files byte for byte.
// Prints the host name of every rank to stdout (not to FILE, which must not depend on placement).
#include <maprect/maprect.hpp>
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "support/benchmark_model.hpp"

using namespace maprect;

namespace {

/// Job j returns x_i[j][0] outputs (possibly none): output k is (k+1) * sum(theta) * exp(phi(0)) + x_r[j][k].
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

}  // namespace

MAPRECT_REGISTER(51, test::logistic_job);
MAPRECT_REGISTER(52, ragged_job);

namespace {

/// Writes the outputs' values, then (if any are var) the gradient of their sum: shared first, then each job's.
template <int Id, class F, class T_shared, class T_job>
void dump(std::FILE* out, const char* name, const Eigen::VectorXd& phi_d, const std::vector<Eigen::VectorXd>& theta_d,
          const std::vector<std::vector<double>>& x_r, const std::vector<std::vector<int>>& x_i) {
  Eigen::Matrix<T_shared, Eigen::Dynamic, 1> phi = phi_d.cast<T_shared>();
  std::vector<Eigen::Matrix<T_job, Eigen::Dynamic, 1>> theta;
  for (const auto& t : theta_d) theta.push_back(t.cast<T_job>());
  const auto outputs = map_rect<Id, F>(phi, theta, x_r, x_i);
  std::fprintf(out, "%s J=%zu shared=%s job=%s outputs=%ld\n", name, theta_d.size(),
               is_var_v<T_shared> ? "var" : "double", is_var_v<T_job> ? "var" : "double",
               static_cast<long>(outputs.size()));
  for (Eigen::Index k = 0; k < outputs.size(); ++k) std::fprintf(out, "value %a\n", value_of(outputs(k)));
  if constexpr (is_var_v<T_shared> || is_var_v<T_job>) {
    if (outputs.size() > 0) {
      var total = outputs.sum();
      grad(total);
      if constexpr (is_var_v<T_shared>)
        for (Eigen::Index s = 0; s < phi.size(); ++s) std::fprintf(out, "d_shared %a\n", phi(s).adj());
      if constexpr (is_var_v<T_job>)
        for (const auto& t : theta)
          for (Eigen::Index p = 0; p < t.size(); ++p) std::fprintf(out, "d_job %a\n", t(p).adj());
    }
  }
  recover_memory();
}

template <int Id, class F>
void dump_all_kinds(std::FILE* out, const char* name, const Eigen::VectorXd& phi,
                    const std::vector<Eigen::VectorXd>& theta, const std::vector<std::vector<double>>& x_r,
                    const std::vector<std::vector<int>>& x_i) {
  dump<Id, F, var, var>(out, name, phi, theta, x_r, x_i);
  dump<Id, F, var, double>(out, name, phi, theta, x_r, x_i);
  dump<Id, F, double, var>(out, name, phi, theta, x_r, x_i);
  dump<Id, F, double, double>(out, name, phi, theta, x_r, x_i);
}

int run(const char* path) {
  std::FILE* out = std::fopen(path, "w");
  if (out == nullptr) {
    std::perror(path);
    return 1;
  }
  // Standard model: J smaller than, equal to and larger than the ranks; the soak size 64 x 10.
  for (auto [J, N] : {std::pair{1, 5}, std::pair{3, 7}, std::pair{16, 20}, std::pair{33, 3}, std::pair{64, 10},
                      std::pair{200, 50}}) {
    const test::benchmark_data d(J, N);
    const std::string name = "standard N=" + std::to_string(N);
    // Twice: the first call of a shape ships the data, the second is the steady state.
    for (int repeat = 0; repeat < 2; ++repeat)
      dump_all_kinds<51, test::logistic_job>(out, name.c_str(), d.phi, d.theta, d.x_r, d.x_i);
  }
  // Ragged outputs: 0..3 per job, some jobs none.
  for (int J : {1, 2, 5, 11, 40}) {
    std::vector<std::vector<double>> x_r(J, std::vector<double>{0.5, -1.5, 2.5});
    std::vector<std::vector<int>> x_i(J, std::vector<int>{0});
    Eigen::VectorXd phi(1);
    phi << 0.2;
    std::vector<Eigen::VectorXd> theta(J, Eigen::VectorXd::Zero(3));
    for (int j = 0; j < J; ++j) {
      x_i[j][0] = (j * 7) % 4;
      theta[j] << 0.1 * j, -0.05 * j, 1.0 / (j + 1);
    }
    for (int repeat = 0; repeat < 2; ++repeat) dump_all_kinds<52, ragged_job>(out, "ragged", phi, theta, x_r, x_i);
  }
  return std::fclose(out) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  cluster c(argc, argv);
  // Where every rank runs, on the root's stdout (a collective of our own, before the cluster serves).
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(host, &length);
  std::vector<char> hosts(c.is_root() ? static_cast<std::size_t>(c.size()) * MPI_MAX_PROCESSOR_NAME : 0);
  MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
             MPI_COMM_WORLD);
  if (!c.is_root()) {
    c.serve();
    return 0;
  }
  for (int r = 0; r < c.size(); ++r) std::printf("rank %d on host %s\n", r, &hosts[r * MPI_MAX_PROCESSOR_NAME]);
  if (argc < 2) {
    std::fprintf(stderr, "usage: maprect-results-dump FILE\n");
    c.stop();
    return 2;
  }
  const int status = run(argv[1]);
  c.stop();
  return status;
}
