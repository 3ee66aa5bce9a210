#pragma once
/// \file Which functor serves which call site: filled at static initialisation by MAPRECT_REGISTER.

#include <string>
#include <typeinfo>

#include "job_runner.hpp"

namespace maprect::detail {

/// A registered functor: its name and its chunk runner for each combination of parameter kinds.
struct functor_entry {
  const std::type_info* type;  ///< typeid of the functor
  std::string name;            ///< as written in MAPRECT_REGISTER
  chunk_runner run[4];         ///< indexed by param_kinds
};

/// Records that `entry` serves `call_id`; a second, different functor for the same id is remembered
/// as a conflict and reported by find_functor(). Returns true (for static initialisers).
bool register_functor(int call_id, const functor_entry& entry);

/// The functor serving `call_id`, or null if none; throws std::invalid_argument if two functors were
/// registered for it.
const functor_entry* find_functor(int call_id);

/// The entry for F, with all four chunk runners.
template <class F>
functor_entry make_functor_entry(const char* name) {
  return functor_entry{&typeid(F), name,
                       {&run_chunk<F, param_kinds::dd>, &run_chunk<F, param_kinds::dv>,
                        &run_chunk<F, param_kinds::vd>, &run_chunk<F, param_kinds::vv>}};
}

/// The entry serving call site CallId, checked to be F; throws std::invalid_argument otherwise.
/// Looked up once per (CallId, F): registration is complete before main.
template <int CallId, class F>
const functor_entry& checked_functor_entry() {
  static const functor_entry* const entry = [] {
    const functor_entry* e = find_functor(CallId);
    if (e == nullptr)
      throw std::invalid_argument("map_rect: call id " + std::to_string(CallId) +
                                  " is not registered; add MAPRECT_REGISTER(" + std::to_string(CallId) +
                                  ", YourFunctor) at namespace scope");
    if (*e->type != typeid(F))
      throw std::invalid_argument("map_rect: call id " + std::to_string(CallId) + " is registered for " + e->name +
                                  ", not for the functor of this call (" + typeid(F).name() + ")");
    return e;
  }();
  return *entry;
}

}  // namespace maprect::detail

#define MAPRECT_DETAIL_CAT2(a, b) a##b
#define MAPRECT_DETAIL_CAT(a, b) MAPRECT_DETAIL_CAT2(a, b)

/// At namespace scope: functor F (may contain commas) serves call site CALL_ID on every rank.
#define MAPRECT_REGISTER(CALL_ID, ...)                                                     \
  static const bool MAPRECT_DETAIL_CAT(maprect_registered_, __COUNTER__) =               \
      ::maprect::detail::register_functor(                                               \
          (CALL_ID), ::maprect::detail::make_functor_entry<__VA_ARGS__>(#__VA_ARGS__))
