// The call-site registry: one per process, filled before main.
#include <maprect/detail/registry.hpp>

#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace maprect::detail {
namespace {

struct registration {
  functor_entry entry;
  std::string conflict;                                 // name of a second functor registered for the same id
  functor_kind conflict_kind = functor_kind::map_rect;  // the front door that second functor serves
};

std::map<int, registration>& registry() {
  static std::map<int, registration> r;
  return r;
}

/// A reduce_sum call site's argument types, as first called.
struct signature {
  const std::type_info* type;
  std::string names;
};

}  // namespace

bool register_functor(int call_id, const functor_entry& entry) {
  auto [it, inserted] = registry().try_emplace(call_id, registration{entry, {}});
  const functor_entry& first = it->second.entry;
  if (!inserted && (*first.type != *entry.type || first.kind != entry.kind) && it->second.conflict.empty()) {
    it->second.conflict = entry.name;
    it->second.conflict_kind = entry.kind;
  }
  return true;
}

const functor_entry* find_functor(int call_id) { return find_functor(call_id, "map_rect"); }

const functor_entry* find_functor(int call_id, const char* front_door) {
  auto it = registry().find(call_id);
  if (it == registry().end()) return nullptr;
  const registration& r = it->second;
  if (r.conflict.empty()) return &r.entry;
  const std::string id = std::string(front_door) + ": call id " + std::to_string(call_id);
  if (r.conflict_kind != r.entry.kind)
    throw std::invalid_argument(id + " is registered for " + kind_name(r.entry.kind) + " with functor " +
                                r.entry.name + " and for " + kind_name(r.conflict_kind) + " with functor " +
                                r.conflict + "; give each call site its own id");
  throw std::invalid_argument(id + " is registered for two functors, " + r.entry.name + " and " + r.conflict +
                              "; give each call site its own id");
}

std::string readable_type_name(const std::type_info& type) {
  int status = 0;
  const std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(type.name(), nullptr, nullptr, &status),
                                                     std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(type.name());
}

void check_reduce_signature(int call_id, const std::type_info& type, const std::string& names) {
  static std::mutex guard;  // call sites may be first called from several threads at once
  static std::map<int, signature> first_calls;
  const std::lock_guard<std::mutex> lock(guard);
  auto [it, inserted] = first_calls.try_emplace(call_id, signature{&type, names});
  if (inserted || *it->second.type == type) return;
  throw std::invalid_argument("reduce_sum: call id " + std::to_string(call_id) + " was called with arguments " +
                              it->second.names + " and now with " + names +
                              "; every call of a call site passes the same argument count and types (give "
                              "each call site its own id)");
}

}  // namespace maprect::detail
