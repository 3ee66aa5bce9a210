// libmaprect-bind-network.so, preloaded (LD_PRELOAD) into mpirun, Open MPI's daemons and the ranks: a TCP
// socket bound to the wildcard address (0.0.0.0 or ::) is bound instead to this host's address on the network
// MAPRECT_NETWORK names (interface names or CIDR networks, comma-separated, as Open MPI's *_if_include take
// them). Open MPI 4.1 binds every TCP listener to the wildcard whatever btl_tcp_if_include and
// oob_tcp_if_include say; with this its listeners are reachable on the job's network only. An IPv6 wildcard
// with no IPv6 address on that network (link-local ones do not count) goes to ::1. Other binds are left alone; unset, nothing changes.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

using bind_function = int (*)(int, const sockaddr*, socklen_t);

/// Whether address `a` (of family `family`) is in the CIDR network `text` ("10.1.0.0/16", "fd00::/8").
bool in_network(int family, const void* a, const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) return false;
  unsigned char net[16] = {};
  if (inet_pton(family, text.substr(0, slash).c_str(), net) != 1) return false;
  const int bits = std::atoi(text.c_str() + slash + 1);
  const auto* bytes = static_cast<const unsigned char*>(a);
  for (int b = 0; b < bits && b < (family == AF_INET ? 32 : 128); ++b) {
    const unsigned char mask = static_cast<unsigned char>(0x80u >> (b % 8));
    if ((bytes[b / 8] & mask) != (net[b / 8] & mask)) return false;
  }
  return true;
}

/// Whether interface `name` with address `a` matches an item of the comma list `network`.
bool on_network(const char* name, int family, const void* a, const std::string& network) {
  std::size_t start = 0;
  while (start <= network.size()) {
    const std::size_t end = std::min(network.find(',', start), network.size());
    const std::string item = network.substr(start, end - start);
    if (item == name || in_network(family, a, item)) return true;
    start = end + 1;
  }
  return false;
}

/// This host's first address of `family` on `network` into `out` (an in_addr or in6_addr); false if none.
bool address_on(const std::string& network, int family, void* out) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (const ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != family) continue;
    const void* a = family == AF_INET ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr)
                                      : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr);
    // A link-local IPv6 address needs a scope to bind to: it is no address of the job's network.
    if (family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(static_cast<const in6_addr*>(a))) continue;
    if (!on_network(i->ifa_name, family, a, network)) continue;
    std::memcpy(out, a, family == AF_INET ? sizeof(in_addr) : sizeof(in6_addr));
    found = true;
  }
  freeifaddrs(list);
  return found;
}

bool is_stream(int fd) {
  int type = 0;
  socklen_t length = sizeof type;
  return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0 && type == SOCK_STREAM;
}

}  // namespace

/// bind(2), with TCP wildcard binds moved onto MAPRECT_NETWORK (see the file's head).
extern "C" int bind(int fd, const sockaddr* addr, socklen_t length) {
  static const auto real_bind = reinterpret_cast<bind_function>(dlsym(RTLD_NEXT, "bind"));
  const char* network = std::getenv("MAPRECT_NETWORK");
  if (network == nullptr || network[0] == '\0' || addr == nullptr || !is_stream(fd)) return real_bind(fd, addr, length);
  if (addr->sa_family == AF_INET && length >= sizeof(sockaddr_in)) {
    sockaddr_in moved;
    std::memcpy(&moved, addr, sizeof moved);
    if (moved.sin_addr.s_addr != htonl(INADDR_ANY)) return real_bind(fd, addr, length);
    if (!address_on(network, AF_INET, &moved.sin_addr)) {
      std::fprintf(stderr, "maprect-bind-network: this host has no IPv4 address on MAPRECT_NETWORK=%s\n", network);
      errno = EADDRNOTAVAIL;
      return -1;
    }
    return real_bind(fd, reinterpret_cast<const sockaddr*>(&moved), sizeof moved);
  }
  if (addr->sa_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
    sockaddr_in6 moved;
    std::memcpy(&moved, addr, sizeof moved);
    if (std::memcmp(&moved.sin6_addr, &in6addr_any, sizeof(in6_addr)) != 0) return real_bind(fd, addr, length);
    if (!address_on(network, AF_INET6, &moved.sin6_addr)) moved.sin6_addr = in6addr_loopback;
    return real_bind(fd, reinterpret_cast<const sockaddr*>(&moved), sizeof moved);
  }
  return real_bind(fd, addr, length);
}
