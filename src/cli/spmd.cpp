// SPMD helpers of the maprect program.
#include "spmd.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "commands.hpp"

namespace maprect::cli {

mpi_session::mpi_session(int& argc, char**& argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  }
}

mpi_session::~mpi_session() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

void print_error(const std::string& message) {
  if (world_rank() != 0) return;
  std::string line;
  for (std::size_t i = 0; i < message.size(); ++i) {
    if (message[i] == '\n') {
      if (i + 1 < message.size()) line += "; ";
    } else {
      line += message[i];
    }
  }
  std::fflush(stdout);
  std::fprintf(stderr, "maprect: error: %s\n", line.c_str());
  std::fflush(stderr);
}

int agree(int value) {
  MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return value;
}

bool open_output_on_root(const std::string& path, std::ofstream& out) {
  std::string failure;
  if (world_rank() == 0 && !path.empty()) {
    out.open(path);
    if (!out) failure = path + ": cannot write (" + std::string(std::strerror(errno)) + ")";
  }
  if (agree(failure.empty())) return true;
  print_error(failure);
  return false;
}

std::string command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i > 0) line += ' ';
    line += arg.find(' ') == std::string::npos ? arg : "'" + arg + "'";
  }
  return line;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace maprect::cli

namespace maprect::cli {

void add_threads_option(CLI::App& app, std::string& threads) {
  app.add_option("--threads", threads,
                 "threads each rank runs its jobs on: N or auto (CPUs of the rank's affinity mask shared among "
                 "its host's ranks); default: MAPRECT_THREADS, else 1");
}

cluster::options cluster_options(const std::string& threads) {
  cluster::options o;
  if (threads.empty()) return o;
  if (threads == "auto") {
    o.threads = -1;
    return o;
  }
  const bool digits = threads.find_first_not_of("0123456789") == std::string::npos && threads.size() <= 4;
  const int n = digits ? std::stoi(threads) : 0;
  if (n < 1 || n > 1024)
    throw std::invalid_argument("--threads must be auto or a thread count from 1 to 1024, not '" + threads + "'");
  o.threads = n;
  return o;
}

}  // namespace maprect::cli
