// The call-site registry: one per process, filled before main.
#include <maprect/detail/registry.hpp>

#include <map>
#include <stdexcept>

namespace maprect::detail {
namespace {

struct registration {
  functor_entry entry;
  std::string conflict;  // name of a second functor registered for the same id
};

std::map<int, registration>& registry() {
  static std::map<int, registration> r;
  return r;
}

}  // namespace

bool register_functor(int call_id, const functor_entry& entry) {
  auto [it, inserted] = registry().try_emplace(call_id, registration{entry, {}});
  if (!inserted && *it->second.entry.type != *entry.type && it->second.conflict.empty())
    it->second.conflict = entry.name;
  return true;
}

const functor_entry* find_functor(int call_id) {
  auto it = registry().find(call_id);
  if (it == registry().end()) return nullptr;
  if (!it->second.conflict.empty())
    throw std::invalid_argument("map_rect: call id " + std::to_string(call_id) + " is registered for two functors, " +
                                it->second.entry.name + " and " + it->second.conflict +
                                "; give each call site its own id");
  return &it->second.entry;
}

}  // namespace maprect::detail
