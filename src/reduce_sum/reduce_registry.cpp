// The slice runners of reduce_sum call sites, by key (call id and argument types): one table per process,
// filled before main.
#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <maprect/detail/reduce_site.hpp>
#include <memory>
#include <mutex>

#include "src/cluster/test_hooks.hpp"

namespace maprect::detail {
namespace {

std::map<std::string, reduce_runner_factory>& runners() {
  static std::map<std::string, reduce_runner_factory> r;
  return r;
}

std::mutex& runners_guard() {
  static std::mutex m;
  return m;
}

}  // namespace

bool register_reduce_runner(const std::string& key, reduce_runner_factory make) {
  const std::lock_guard<std::mutex> lock(runners_guard());
  runners().try_emplace(key, make);
  return true;
}

reduce_runner_factory find_reduce_runner(const std::string& key) {
  const std::lock_guard<std::mutex> lock(runners_guard());
  const auto it = runners().find(key);
  return it == runners().end() ? nullptr : it->second;
}

void forget_reduce_runner(const std::string& key) {
  const std::lock_guard<std::mutex> lock(runners_guard());
  runners().erase(key);
}

std::string readable_reduce_key(const std::string& key) {
  const std::size_t space = key.find(' ');
  if (space == std::string::npos) return key;
  const std::string mangled = key.substr(space + 1);
  int status = 0;
  const std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                                     std::free);
  return "call id " + key.substr(0, space) + " with functor and arguments " +
         (status == 0 && name ? std::string(name.get()) : mangled);
}

}  // namespace maprect::detail
