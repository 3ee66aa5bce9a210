#pragma once
/// \file Which functor serves which call site: filled at static initialisation by MAPRECT_REGISTER.

#include <stdexcept>
#include <string>
#include <typeinfo>

#include "../thread_team.hpp"
#include "job_error.hpp"
#include "job_runner.hpp"

namespace maprect::detail {

/// Which front door a registered functor serves.
enum class functor_kind : int {
  map_rect = 0,   ///< registered with MAPRECT_REGISTER
  reduce_sum = 1  ///< registered with MAPRECT_REGISTER_REDUCE
};

/// The front door and the macro of a kind, for messages.
inline std::string kind_name(functor_kind k) {
  return k == functor_kind::map_rect ? "map_rect (MAPRECT_REGISTER)" : "reduce_sum (MAPRECT_REGISTER_REDUCE)";
}

struct deferred_call;

/// Runs a chunk's jobs forward onto the kept tapes of `call` (a deferred call over a cluster), on `team` or,
/// when it is null, this thread, their records behind those of call.jobs; returns the chunk's lowest failing
/// job, its error in `error`, or -1.
using kept_chunk_runner = int (*)(const chunk_input& in, deferred_call& call, thread_team* team, job_error& error);

/// The kept chunk runner of functor F for one combination of var parameter kinds (deferred_forward.hpp).
template <class F, param_kinds Kinds>
int run_kept_chunk(const chunk_input& in, deferred_call& call, thread_team* team, job_error& error);

/// The kept chunk runner where no tape can be kept: parameters all double, or a reduce_sum functor.
inline int refuse_kept_chunk(const chunk_input&, deferred_call&, thread_team*, job_error& error) {
  error = {error_type::invalid_argument, "a deferred call needs var parameters and a map_rect functor"};
  return 0;
}

/// A registered functor: its name and its chunk runners for each combination of parameter kinds.
struct functor_entry {
  const std::type_info* type;                  ///< typeid of the functor
  std::string name;                            ///< as written in MAPRECT_REGISTER(_REDUCE)
  chunk_runner run[4];                         ///< indexed by param_kinds (map_rect functors only)
  functor_kind kind = functor_kind::map_rect;  ///< the front door it serves
  kept_chunk_runner run_kept[4] = {&refuse_kept_chunk, &refuse_kept_chunk, &refuse_kept_chunk,
                                   &refuse_kept_chunk};  ///< deferred calls, by param_kinds
};

/// Records that `entry` serves `call_id`; a second, different functor (or the same one for the other front
/// door) for the same id is remembered as a conflict and reported by find_functor(). Returns true (for
/// static initialisers).
bool register_functor(int call_id, const functor_entry& entry);

/// The functor serving `call_id`, or null if none; throws std::invalid_argument if two functors were
/// registered for it, or one id for map_rect and for reduce_sum (the message starts with "map_rect: ").
const functor_entry* find_functor(int call_id);

/// find_functor(call_id), its messages starting with `front_door` ("map_rect", "reduce_sum").
const functor_entry* find_functor(int call_id, const char* front_door);

/// A type's name as C++ spells it (demangled where the compiler allows).
std::string readable_type_name(const std::type_info& type);

/// Records the argument types `signature` (readable: `names`) of reduce_sum call site `call_id` at its first
/// call; throws std::invalid_argument naming both lists when a later call passes other types.
void check_reduce_signature(int call_id, const std::type_info& signature, const std::string& names);

/// The entry for F, with all four chunk runners.
template <class F>
functor_entry make_functor_entry(const char* name) {
  return functor_entry{&typeid(F),
                       name,
                       {&run_chunk<F, param_kinds::dd>, &run_chunk<F, param_kinds::dv>,
                        &run_chunk<F, param_kinds::vd>, &run_chunk<F, param_kinds::vv>},
                       functor_kind::map_rect,
                       {&refuse_kept_chunk, &run_kept_chunk<F, param_kinds::dv>, &run_kept_chunk<F, param_kinds::vd>,
                        &run_kept_chunk<F, param_kinds::vv>}};
}

/// The chunk runner of a reduce_sum functor, in case a map_rect request names its id on some rank.
inline void refuse_map_rect_chunk(const chunk_input&, block_buffer&, int*, int&) {
  throw std::invalid_argument("this call id is registered for " + kind_name(functor_kind::reduce_sum) +
                              ", not for " + kind_name(functor_kind::map_rect));
}

/// The entry of a reduce_sum functor F.
template <class F>
functor_entry make_reduce_entry(const char* name) {
  return functor_entry{&typeid(F), name,
                       {&refuse_map_rect_chunk, &refuse_map_rect_chunk, &refuse_map_rect_chunk,
                        &refuse_map_rect_chunk},
                       functor_kind::reduce_sum};
}

/// Throws std::invalid_argument if `e` (the entry of call_id) serves another front door than `kind`.
inline void check_kind(const functor_entry& e, int call_id, functor_kind kind, const char* front_door) {
  if (e.kind != kind)
    throw std::invalid_argument(std::string(front_door) + ": call id " + std::to_string(call_id) +
                                " is registered for " + kind_name(e.kind) + " with functor " + e.name +
                                ", not for " + kind_name(kind));
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
    check_kind(*e, CallId, functor_kind::map_rect, "map_rect");
    if (*e->type != typeid(F))
      throw std::invalid_argument("map_rect: call id " + std::to_string(CallId) + " is registered for " + e->name +
                                  ", not for the functor of this call (" + typeid(F).name() + ")");
    return e;
  }();
  return *entry;
}

/// The reduce_sum entry serving call site CallId, checked to be F; throws std::invalid_argument otherwise.
template <int CallId, class F>
const functor_entry& checked_reduce_entry() {
  static const functor_entry* const entry = [] {
    const functor_entry* e = find_functor(CallId, "reduce_sum");
    if (e == nullptr)
      throw std::invalid_argument("reduce_sum: call id " + std::to_string(CallId) +
                                  " is not registered; add MAPRECT_REGISTER_REDUCE(" + std::to_string(CallId) +
                                  ", YourFunctor) at namespace scope");
    check_kind(*e, CallId, functor_kind::reduce_sum, "reduce_sum");
    if (*e->type != typeid(F))
      throw std::invalid_argument("reduce_sum: call id " + std::to_string(CallId) + " is registered for " +
                                  e->name + ", not for the functor of this call (" +
                                  readable_type_name(typeid(F)) + ")");
    return e;
  }();
  return *entry;
}

}  // namespace maprect::detail

#define MAPRECT_DETAIL_CAT2(a, b) a##b
#define MAPRECT_DETAIL_CAT(a, b) MAPRECT_DETAIL_CAT2(a, b)

// The registration macros end in a complete declaration, so a trailing semicolon is an empty declaration:
// both `MAPRECT_REGISTER(1, f)` and `MAPRECT_REGISTER(1, f);` compile.

/// At namespace scope: functor F (may contain commas) serves map_rect call site CALL_ID on every rank.
#define MAPRECT_REGISTER(CALL_ID, ...)                                                     \
  static const bool MAPRECT_DETAIL_CAT(maprect_registered_, __COUNTER__) =               \
      ::maprect::detail::register_functor(                                               \
          (CALL_ID), ::maprect::detail::make_functor_entry<__VA_ARGS__>(#__VA_ARGS__));

/// At namespace scope: partial-sum functor F (may contain commas) serves reduce_sum call site CALL_ID on
/// every rank.
#define MAPRECT_REGISTER_REDUCE(CALL_ID, ...)                                              \
  static const bool MAPRECT_DETAIL_CAT(maprect_registered_, __COUNTER__) =               \
      ::maprect::detail::register_functor(                                               \
          (CALL_ID), ::maprect::detail::make_reduce_entry<__VA_ARGS__>(#__VA_ARGS__));
