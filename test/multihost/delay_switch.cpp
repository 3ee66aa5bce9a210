// maprect-delay-switch: a user-space IPv4 switch between TUN devices that hands every packet to its
// destination a fixed time after it arrived: the one-way latency of a longer link, on kernels without the
// netem qdisc (scripts/netns-hosts.sh).
//
//   maprect-delay-switch --delay-us D <netns>:<device>:<address> ...
//
// For each host: enters the network namespace at path <netns> (such as /var/run/netns/h1), attaches to the
// TUN device <device> there (IFF_TUN | IFF_NO_PI; created if it does not exist, the caller's persistent one
// otherwise) and sends it the IPv4 packets addressed to <address>. Packets to other addresses, and any that
// are not IPv4, are dropped, as are packets beyond `queue_limit` waiting for one device. One FIFO per output:
// with one delay for all, arrival order is due order. D = 0 forwards at once. Runs until SIGTERM or SIGINT,
// then exits 0; run it under SCHED_FIFO (`chrt -f 10`) so that busy ranks cannot hold packets up.
//
// Waiting is one ppoll over the devices and a signalfd with the time to the next due packet as its timeout:
// an hrtimer, as precise as clock_nanosleep(TIMER_ABSTIME) under PR_SET_TIMERSLACK 1 (and no slack at all
// under SCHED_FIFO), but woken by a packet arriving meanwhile, which a sleep would read late. A timer still
// fires late by the machine's wake-up latency (15-40 us in the virtual machine of docs/cost-model.md, which
// would add that to every delay), so the switch measures that lateness at start and wakes as much early,
// polling the devices without sleeping for the rest.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr std::size_t queue_limit = 4096;   // packets waiting for one device; a full queue drops, as a switch does
constexpr std::size_t max_packet = 65536;  // the largest IPv4 packet: any MTU fits

/// A file descriptor closed when it goes out of scope.
class unique_fd {
 public:
  explicit unique_fd(int fd = -1) : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  unique_fd& operator=(unique_fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

/// The system error of the last call, as an exception naming what failed.
std::runtime_error system_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

/// One packet on its way: when it is due at its output, and its bytes.
struct packet {
  std::int64_t due_ns;
  std::vector<unsigned char> bytes;
};

/// One host's side of the switch: its TUN device, its address, the packets waiting to be written to it.
struct port {
  std::string spec;
  in_addr_t address;
  unique_fd tun;
  std::deque<packet> queue;
  std::size_t dropped = 0;
  std::size_t written = 0;
  std::int64_t late_ns = 0;  // summed over the written packets: how long after their due time they went
};

/// CLOCK_MONOTONIC in nanoseconds.
std::int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return std::int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

/// Attaches to (or creates) TUN device `device` inside the network namespace at path `netns`, non-blocking,
/// and returns this thread to the namespace it was in.
unique_fd open_tun_in(const std::string& netns, const std::string& device) {
  if (device.empty() || device.size() >= IFNAMSIZ)
    throw std::invalid_argument("device name '" + device + "': 1 to 15 characters");
  unique_fd home(open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  unique_fd there(open(netns.c_str(), O_RDONLY | O_CLOEXEC));
  if (home.get() < 0) throw system_error("/proc/self/ns/net");
  if (there.get() < 0) throw system_error("network namespace " + netns);
  if (setns(there.get(), CLONE_NEWNET) != 0) throw system_error("setns " + netns);
  unique_fd tun(open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC));
  const int open_errno = errno;
  ifreq request{};
  request.ifr_flags = IFF_TUN | IFF_NO_PI;
  std::strncpy(request.ifr_name, device.c_str(), IFNAMSIZ - 1);
  const int attached = tun.get() < 0 ? -1 : ioctl(tun.get(), TUNSETIFF, &request);
  const int attach_errno = errno;
  if (setns(home.get(), CLONE_NEWNET) != 0) throw system_error("setns back from " + netns);
  errno = tun.get() < 0 ? open_errno : attach_errno;
  if (tun.get() < 0) throw system_error("/dev/net/tun");
  if (attached != 0) throw system_error("TUNSETIFF " + device + " in " + netns);
  return tun;
}

/// A port from "<netns>:<device>:<address>", its device attached.
port make_port(const std::string& spec) {
  const std::size_t first = spec.find(':'), last = spec.rfind(':');
  if (first == std::string::npos || first == last)
    throw std::invalid_argument("host '" + spec + "': expected <netns>:<device>:<address>");
  port p;
  p.spec = spec;
  if (inet_pton(AF_INET, spec.substr(last + 1).c_str(), &p.address) != 1)
    throw std::invalid_argument("host '" + spec + "': '" + spec.substr(last + 1) + "' is no IPv4 address");
  p.tun = open_tun_in(spec.substr(0, first), spec.substr(first + 1, last - first - 1));
  return p;
}

/// The port whose address is the destination of IPv4 packet `bytes`, or nullptr.
port* route(std::vector<port>& ports, const unsigned char* bytes, std::size_t n) {
  if (n < 20 || (bytes[0] >> 4) != 4) return nullptr;
  in_addr_t destination;
  std::memcpy(&destination, bytes + 16, sizeof destination);
  for (port& p : ports)
    if (p.address == destination) return &p;
  return nullptr;
}

/// Reads every packet waiting on `in`'s device and queues it at its output, due `delay_ns` from now.
void read_all(port& in, std::vector<port>& ports, std::int64_t delay_ns, std::vector<unsigned char>& buffer) {
  for (;;) {
    const ssize_t n = read(in.tun.get(), buffer.data(), buffer.size());
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n < 0) throw system_error("read from " + in.spec);
    if (n == 0) return;
    port* out = route(ports, buffer.data(), static_cast<std::size_t>(n));
    if (out == nullptr) continue;
    if (out->queue.size() >= queue_limit) {
      ++out->dropped;
      continue;
    }
    out->queue.push_back({now_ns() + delay_ns, std::vector<unsigned char>(buffer.begin(), buffer.begin() + n)});
  }
}

/// Writes every queued packet that is due by `now`; returns when the next one is due (-1: none waits).
std::int64_t write_due(std::vector<port>& ports, std::int64_t now) {
  std::int64_t next = -1;
  for (port& p : ports) {
    while (!p.queue.empty() && p.queue.front().due_ns <= now) {
      const std::vector<unsigned char>& b = p.queue.front().bytes;
      const std::int64_t sent_ns = now_ns();
      // A TUN write hands the packet to the host's stack and does not block; a refused one is a lost packet.
      if (write(p.tun.get(), b.data(), b.size()) < 0) {
        ++p.dropped;
      } else {
        ++p.written;
        p.late_ns += sent_ns - p.queue.front().due_ns;
      }
      p.queue.pop_front();
    }
    if (!p.queue.empty() && (next < 0 || p.queue.front().due_ns < next)) next = p.queue.front().due_ns;
  }
  return next;
}

/// SIGTERM and SIGINT, blocked, as a descriptor that becomes readable when one arrives.
unique_fd stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0) throw system_error("sigprocmask");
  unique_fd fd(signalfd(-1, &set, SFD_CLOEXEC));
  if (fd.get() < 0) throw system_error("signalfd");
  return fd;
}

/// The time of the sleep left until `deadline_ns` (none when it has passed).
timespec until(std::int64_t deadline_ns) {
  const std::int64_t wait = std::max<std::int64_t>(0, deadline_ns - now_ns());
  return {static_cast<time_t>(wait / 1000000000), static_cast<long>(wait % 1000000000)};
}

/// How late a ppoll timeout of `wait_ns` fires on this machine: the 45th of 50 waits, fastest first (waking
/// that much early, the switch is rarely late and spins for a few microseconds).
std::int64_t timer_lateness_ns(std::int64_t wait_ns) {
  std::vector<std::int64_t> late;
  for (int i = 0; i < 50; ++i) {
    const std::int64_t due = now_ns() + wait_ns;
    const timespec t = until(due);
    ppoll(nullptr, 0, &t, nullptr);
    late.push_back(now_ns() - due);
  }
  std::nth_element(late.begin(), late.begin() + 44, late.end());
  return std::max<std::int64_t>(0, late[44]);
}

/// Forwards packets between the ports until a stop signal arrives, waking `early_ns` before a packet is due.
void run(std::vector<port>& ports, std::int64_t delay_ns, std::int64_t early_ns, int stop_fd) {
  std::vector<pollfd> fds;
  for (const port& p : ports) fds.push_back({p.tun.get(), POLLIN, 0});
  fds.push_back({stop_fd, POLLIN, 0});
  std::vector<unsigned char> buffer(max_packet);
  for (;;) {
    const std::int64_t next = write_due(ports, now_ns());
    const timespec timeout = until(next - early_ns);
    if (ppoll(fds.data(), fds.size(), next >= 0 ? &timeout : nullptr, nullptr) < 0) {
      if (errno == EINTR) continue;
      throw system_error("ppoll");
    }
    if (fds.back().revents != 0) return;
    for (std::size_t i = 0; i < ports.size(); ++i) {
      if (fds[i].revents & (POLLERR | POLLHUP | POLLNVAL))
        throw std::runtime_error("device of " + ports[i].spec + " went away");
      if (fds[i].revents & POLLIN) read_all(ports[i], ports, delay_ns, buffer);
    }
  }
}

/// The delay in nanoseconds from the value of --delay-us.
std::int64_t parse_delay(const char* text) {
  char* end = nullptr;
  errno = 0;
  const double us = std::strtod(text, &end);
  if (end == text || *end != '\0' || errno != 0 || !(us >= 0) || us > 1e7)
    throw std::invalid_argument(std::string("--delay-us '") + text + "': expected microseconds from 0 to 1e7");
  return static_cast<std::int64_t>(us * 1000 + 0.5);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 5 || std::strcmp(argv[1], "--delay-us") != 0)
      throw std::invalid_argument("usage: maprect-delay-switch --delay-us D <netns>:<device>:<address> (two or more)");
    const std::int64_t delay_ns = parse_delay(argv[2]);
    const unique_fd stop = stop_signals();
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    const std::int64_t early_ns = delay_ns > 0 ? timer_lateness_ns(std::min<std::int64_t>(delay_ns, 1000000)) : 0;
    std::vector<port> ports;
    for (int a = 3; a < argc; ++a) ports.push_back(make_port(argv[a]));
    std::printf("maprect-delay-switch: %zu hosts, one-way delay %.1f us, timers fire %.1f us late here\n", ports.size(),
                1e-3 * delay_ns, 1e-3 * early_ns);
    std::fflush(stdout);
    run(ports, delay_ns, early_ns, stop.get());
    std::size_t dropped = 0, written = 0;
    std::int64_t late_ns = 0;
    for (const port& p : ports) {
      dropped += p.dropped;
      written += p.written;
      late_ns += p.late_ns;
    }
    std::printf("maprect-delay-switch: stopped; %zu packets forwarded, %.2f us after their due time on average; "
                "%zu dropped\n",
                written, written > 0 ? 1e-3 * static_cast<double>(late_ns) / written : 0.0, dropped);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "maprect-delay-switch: %s\n", e.what());
    return 1;
  }
}
