// maprect-fault-case <case> [target rank]: an SPMD program that makes map_rect calls and then fails in
// the way <case> names, for run_fault.sh to check that the job ends promptly and names the rank. One
// program serves every case so that the map_rect templates compile once.
//
// Cases (the target rank defaults to the last rank):
//   worker-sigkill  the target worker raises SIGKILL inside a functor
//   worker-abort    the target worker calls abort() inside a functor
//   worker-exit     the target worker calls std::exit(3) inside a functor
//   worker-exit0    the target worker calls std::exit(0) inside a functor
//   worker-hang     the target worker never returns from a functor (run with MAPRECT_TIMEOUT)
//   worker-hang-first  the same in the call site's first call
//   reduce-hang     the target worker never returns from a reduce_sum slice (run with MAPRECT_TIMEOUT)
//   reverse-hang    a deferred call's reverse pass never returns on the target worker (run with
//                   MAPRECT_TIMEOUT and MAPRECT_REVERSE=deferred)
//   reduce-hang-steady  the same in a steady call (the call number in the sliced vars, the data unchanged),
//                   which on one host with take-over waits for the workers' statuses in host memory
//   thief-hang      under claims by message, the target worker never returns from a job of the root's it
//                   claimed: the root's jobs (the first J / ranks) take 50 ms each on the root from the failing
//                   call on, so every worker claims some (run with MAPRECT_TIMEOUT)
//   worker-pause    the target worker, in the 4th call, creates $MAPRECT_FAULT_DIR/paused and waits inside the
//                   functor until $MAPRECT_FAULT_DIR/resume exists, then answers: a script can act on the job
//                   (inspect its sockets, take a link down) while the call is under way, without sleeps
//   calls           no fault: the calls, then exit 0
//   root-slow       the root's own jobs take 1.5 s once, its workers answer at once: with MAPRECT_TIMEOUT=1
//                   the call must still succeed (exit 0), since no worker is late
//   root-throw      the root throws out of main while the workers serve
//   root-exit       the root calls std::exit(0) while the workers serve
//   root-leak       the root returns from main without destroying its cluster
//   root-sigkill    the root raises SIGKILL while the workers serve
//   root-oom-mid-call  memory runs out on the root between the collectives of a call site's first call (one
//                   allocation made to fail): the job must end, naming the call, not leave the workers waiting
#include <maprect/maprect.hpp>

#include <chrono>
#include <csignal>
#include <new>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {
std::size_t fail_allocation_of = 0;  // root-oom-mid-call: the next allocation of exactly this many bytes fails
}  // namespace

// Every allocation of the program goes through here, so that one can be made to fail.
void* operator new(std::size_t bytes) {
  if (bytes != 0 && bytes == fail_allocation_of) {
    fail_allocation_of = 0;
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(bytes != 0 ? bytes : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

std::string fault;   // the case, the same on every rank
int target = -1;     // the rank that fails
int this_rank = 0;
constexpr int kCallsBeforeFault = 3;  // the fault strikes in a steady-state call, not in the first one

/// worker-pause: once, announces the pause with a file, then waits for the file that ends it.
void pause_for_resume() {
  static bool paused = false;
  if (paused) return;
  paused = true;
  const char* dir = std::getenv("MAPRECT_FAULT_DIR");
  if (dir == nullptr) {
    std::fprintf(stderr, "fault_case: worker-pause needs MAPRECT_FAULT_DIR\n");
    std::exit(2);
  }
  std::ofstream(std::string(dir) + "/paused") << "rank " << this_rank << "\n";
  const std::string resume = std::string(dir) + "/resume";
  while (!std::ifstream(resume)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void strike() {
  if (fault == "worker-sigkill") std::raise(SIGKILL);
  if (fault == "worker-abort") std::abort();
  if (fault == "worker-exit") std::exit(3);
  if (fault == "worker-exit0") std::exit(0);
  if (fault == "worker-hang" || fault == "worker-hang-first")
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  if (fault == "worker-pause") pause_for_resume();
  static bool slept = false;  // once: the timeout is what is tested, not patience
  if (fault == "root-slow" && !slept) {
    slept = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  }
}

/// The first call number that fails.
int first_failing_call() { return fault == "worker-hang-first" ? 0 : kCallsBeforeFault; }

/// worker-hang: the root's first job of each failing call waits 0.1 s, so that the target worker claims its
/// jobs (and hangs in one) before the root, done with its own, could take them all over.
void hold_root(int call) {
  static int held = -1;
  if (call < first_failing_call() || call == held) return;
  held = call;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

/// A node whose reverse step never returns (reverse-hang).
class hanging_vari final : public maprect::vari {
 public:
  hanging_vari() : maprect::vari(1.0) {}
  void chain() override {
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
};

/// One output per job, sum(phi) * sum(theta) + x_r[0]. phi(1) is the call number: from call
/// first_failing_call() on, the target rank fails as the case says.
struct fault_job {
  template <class T1, class T2>
  Eigen::Matrix<maprect::return_type_t<T1, T2>, Eigen::Dynamic, 1> operator()(
      const Eigen::Matrix<T1, Eigen::Dynamic, 1>& phi, const Eigen::Matrix<T2, Eigen::Dynamic, 1>& theta,
      const std::vector<double>& x_r, const std::vector<int>& x_i, std::ostream*) const {
    if (this_rank == target && maprect::value_of(phi(1)) >= first_failing_call()) strike();
    if (fault == "thief-hang" && x_i[0] == 1 && maprect::value_of(phi(1)) >= first_failing_call()) {
      while (this_rank == target) std::this_thread::sleep_for(std::chrono::seconds(1));
      if (this_rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (this_rank == 0 && fault == "worker-hang") hold_root(static_cast<int>(maprect::value_of(phi(1))));
    Eigen::Matrix<maprect::return_type_t<T1, T2>, Eigen::Dynamic, 1> out(1);
    out(0) = phi.sum() * theta.sum() + x_r[0];
    if constexpr (maprect::is_var_v<maprect::return_type_t<T1, T2>>)
      if (fault == "reverse-hang" && this_rank == target && maprect::value_of(phi(1)) >= first_failing_call())
        out(0) = out(0) * maprect::var(new hanging_vari());
    return out;
  }
};

/// reduce-hang: the sum of the slice's terms; from call first_failing_call() on (`number`), the target rank
/// never returns.
struct fault_partial {
  double operator()(const std::vector<double>& slice, int, int, std::ostream*, double number) const {
    if (this_rank == target && number >= first_failing_call())
      while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
    double sum = 0;
    for (double t : slice) sum += t;
    return sum;
  }
};

/// reduce-hang-steady: the sum of the slice's terms, each the call number; from call first_failing_call() on,
/// the target rank never returns, and the root holds its first slice 0.1 s (as hold_root does) so that the
/// target claims a slice before the root could take them all over.
struct steady_fault_partial {
  template <class T>
  T operator()(const std::vector<T>& slice, int, int, std::ostream*) const {
    const int call = static_cast<int>(maprect::value_of(slice[0]));
    if (this_rank == target && call >= first_failing_call())
      while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
    if (this_rank == 0) hold_root(call);
    T sum = 0;
    for (const T& t : slice) sum += t;
    return sum;
  }
};

}  // namespace

MAPRECT_REGISTER(1, fault_job);
MAPRECT_REGISTER(2, fault_job);
MAPRECT_REGISTER(5, fault_job);
MAPRECT_REGISTER_REDUCE(3, fault_partial);
MAPRECT_REGISTER_REDUCE(4, steady_fault_partial);

namespace {

/// One call of J jobs (every rank has some at np <= J) carrying `number` in phi(1); the first `marked` jobs
/// have x_i[j][0] = 1.
template <int CallId = 1>
double one_call(int number, int J = 8, int marked = 0) {
  Eigen::VectorXd phi(2);
  phi << 0.5, number;
  std::vector<Eigen::VectorXd> theta(J, Eigen::VectorXd::Constant(2, 0.25));
  std::vector<std::vector<double>> x_r(J, std::vector<double>{1.0});
  std::vector<std::vector<int>> x_i(J, std::vector<int>{0});
  for (int j = 0; j < marked; ++j) x_i[j][0] = 1;
  return maprect::map_rect<CallId, fault_job>(phi, theta, x_r, x_i).sum();
}

}  // namespace

int main(int argc, char** argv) {
  auto* c = new maprect::cluster(argc, argv);  // leaked on purpose by root-leak
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <case> [target rank]\n", argv[0]);
    return 2;
  }
  fault = argv[1];
  this_rank = c->rank();
  target = argc > 2 ? std::atoi(argv[2]) : fault == "root-slow" ? 0 : c->size() - 1;
  if (!c->is_root()) {
    c->serve();
    delete c;
    return 0;
  }
  const bool thief = fault == "thief-hang";
  for (int k = 0; k < kCallsBeforeFault + 2; ++k) one_call(k, thief ? 30 : 8, thief ? 30 / c->size() : 0);
  if (fault == "reduce-hang")
    for (int k = 0; k < kCallsBeforeFault + 2; ++k)
      maprect::reduce_sum<3, fault_partial>(std::vector<double>(8, 0.5), 1, nullptr, static_cast<double>(k));
  if (fault == "reduce-hang-steady")
    for (int k = 0; k < kCallsBeforeFault + 2; ++k) {
      const std::vector<maprect::var> terms(8, maprect::var(k));
      maprect::grad(maprect::reduce_sum<4, steady_fault_partial>(terms, 1, nullptr));
      maprect::recover_memory();
    }
  if (fault == "reverse-hang")
    for (int k = 0; k < kCallsBeforeFault + 2; ++k) {
      maprect::vector_v phi(2);
      phi << 0.5, k;
      const std::vector<maprect::vector_v> theta(8, maprect::vector_v::Constant(2, 0.25));
      const std::vector<std::vector<double>> x_r(8, std::vector<double>{1.0});
      const std::vector<std::vector<int>> x_i(8, std::vector<int>{0});
      maprect::grad(maprect::map_rect<5, fault_job>(phi, theta, x_r, x_i).sum());
      maprect::recover_memory();
    }
  if (fault == "root-throw") throw std::runtime_error("fault_case: the root gives up");
  if (fault == "root-exit") std::exit(0);
  if (fault == "root-sigkill") std::raise(SIGKILL);
  if (fault == "root-leak") return 0;
  if (fault == "root-oom-mid-call") {
    // The first call of call site 2 gathers every rank's status and output counts into J + 2 R ints,
    // after the data and parameters are sent: that allocation fails.
    const int J = 37;
    fail_allocation_of = sizeof(int) * static_cast<std::size_t>(J + 2 * c->size());
    one_call<2>(0, J);
  }
  delete c;
  std::printf("fault_case: %s done\n", fault.c_str());
  return 0;
}
