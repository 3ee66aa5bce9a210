// The cluster's lifecycle on every rank: MPI set-up, the root's release of the workers, tear-down.
#include <maprect/cluster.hpp>

#include <boost/mpi/communicator.hpp>
#include <stdexcept>

#include "src/balance/claims_engine.hpp"
#include "src/cluster/cluster_state.hpp"

namespace maprect {

namespace {
void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("maprect::cluster: ") + what + " failed");
}
}  // namespace

cluster::cluster(int& argc, char**& argv, const options& opts) : state_(std::make_unique<detail::cluster_state>()) {
  state_->threads_asked = opts.threads;
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) {
    int provided = 0;
    check_mpi(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    state_->owns_mpi = true;
  }
  detail::start_cluster(*state_, MPI_COMM_WORLD);
}

cluster::cluster(MPI_Comm comm, const options& opts) : state_(std::make_unique<detail::cluster_state>()) {
  state_->threads_asked = opts.threads;
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) throw std::logic_error("maprect::cluster(MPI_Comm): MPI is not initialised");
  detail::start_cluster(*state_, comm);
}

cluster::cluster(const boost::mpi::communicator& comm, const options& opts)
    : cluster(static_cast<MPI_Comm>(comm), opts) {}

cluster::~cluster() {
  stop();
  detail::finish_cluster(*state_);
  if (state_->owns_mpi) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
}

bool cluster::is_root() const { return state_->rank == 0; }
int cluster::rank() const { return state_->rank; }
int cluster::size() const { return state_->size; }
int cluster::threads() const { return state_->settings.threads; }
void cluster::serve() { detail::serve(*state_); }
void cluster::stop() { detail::stop_cluster(*state_); }
cluster::traffic cluster::last_call_traffic() const { return state_->last_traffic; }
cluster::profile cluster::last_call_profile() const { return state_->last_profile; }

detail::balance_report detail::last_call_balance() {
  const cluster_state* s = live_cluster_root();
  if (s == nullptr || !s->call.claimed) return {};
  return {s->call.worker_ends, s->call.worker_taken, s->call.runners, s->call.worker_taken_in_host};
}

}  // namespace maprect
