#pragma once
/// \file What a rank needs to run the slices of a reduce_sum call site it never called: a slice runner
/// registered per call id and argument types at static initialisation (so every rank of an SPMD program has
/// the runners of every reduce_sum the program instantiates), and the call site's *payload*, the data
/// arguments and the shapes of the parameter arguments as Boost.Serialization writes them.
///
/// Payload (binary archive, no header): the runner's key, the layout's term offsets, the sliced argument
/// (data as it is, or its skeleton with every value 0), then each shared argument the same way. Parameter
/// values are never in it: two calls whose data and shapes are equal have equal payloads, byte for byte.

#include <boost/archive/binary_iarchive.hpp>
#include <boost/archive/binary_oarchive.hpp>
#include <boost/serialization/string.hpp>
#include <climits>
#include <cstddef>
#include <memory>
#include <streambuf>
#include <string>
#include <tuple>
#include <typeinfo>
#include <vector>

#include "../thread_team.hpp"
#include "job_error.hpp"
#include "reduce_flatten.hpp"
#include "reduce_layout.hpp"
#include "reduce_serialize.hpp"
#include "reduce_slices.hpp"
#include "reduce_team.hpp"

namespace maprect::detail {

/// A call site's payload, loaded on a rank, that runs slices of the site's calls.
class reduce_site_runner {
 public:
  virtual ~reduce_site_runner() = default;
  /// Reads the data arguments and shapes that follow the key and term offsets in a payload.
  virtual void load(boost::archive::binary_iarchive& in) = 0;
  /// Runs slices [first, last) of a call laid out by `layout` into `blocks` (slice s's block at
  /// layout.block_at(s) - layout.block_at(first)), on `team` if not null; the parameter values are read from
  /// `shared_values` and `sliced_values` (indexed as on the root: term t's vars at layout.term_at(t)).
  /// Returns the lowest failing slice with its exception in `error`, or INT_MAX.
  virtual int run(const reduce_layout& layout, int first, int last, const double* shared_values,
                  const double* sliced_values, thread_team* team, double* blocks, job_error& error) = 0;
};

/// Makes a call site's runner.
using reduce_runner_factory = std::unique_ptr<reduce_site_runner> (*)();

/// Records the runner of the call site and argument types named `key`. Returns true (for static initialisers).
bool register_reduce_runner(const std::string& key, reduce_runner_factory make);

/// The factory registered for `key`, or null.
reduce_runner_factory find_reduce_runner(const std::string& key);

/// `key` as a message reads it: the call id and the demangled argument types.
std::string readable_reduce_key(const std::string& key);

/// Sets every value of a parameter argument's skeleton to 0: what is left is its shape.
inline void zero_values(double& x) { x = 0.0; }
template <int R, int C, int O, int MR, int MC>
void zero_values(Eigen::Matrix<double, R, C, O, MR, MC>& m) {
  m.setZero();
}
template <class T>
void zero_values(std::vector<T>& v) {
  for (T& e : v) zero_values(e);
}

/// Writes an argument into a payload: data as it is, a parameter as its skeleton with every value 0.
template <class T>
void write_argument(boost::archive::binary_oarchive& out, const T& x) {
  if constexpr (holds_var_v<T>) {
    typename flat<T>::value_type shape = skeleton_of(x);
    zero_values(shape);
    out << shape;
  } else {
    out << x;
  }
}

/// A stream buffer that appends to a string, so a payload is written into reused memory.
class string_append_buf : public std::streambuf {
 public:
  explicit string_append_buf(std::string& out) : out_(out) {}

 protected:
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) out_.push_back(static_cast<char>(c));
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    out_.append(s, static_cast<std::size_t>(n));
    return n;
  }

 private:
  std::string& out_;
};

/// Writes the payload of a call with these arguments, laid out by `layout`, into `out` (replaced).
template <class T_slice, class... Args>
void write_payload(std::string& out, const std::string& key, const reduce_layout& layout,
                   const std::vector<T_slice>& sliced, const Args&... args) {
  out.clear();
  string_append_buf buffer(out);
  std::ostream stream(&buffer);
  boost::archive::binary_oarchive archive(stream, boost::archive::no_header);
  archive << key << layout.term_offsets();
  write_argument(archive, sliced);
  (write_argument(archive, args), ...);
}

/// The runner of functor F over arguments (std::vector<T_slice>, Args...): holds the sliced argument and each
/// shared one as data or skeleton, and runs slices from packed values like the root's slice runner.
template <class F, class T_slice, class... Args>
class typed_site_runner final : public reduce_site_runner {
 public:
  void load(boost::archive::binary_iarchive& in) override {
    in >> sliced_;
    std::apply([&in](auto&... a) { ((in >> a), ...); }, args_);
  }

  int run(const reduce_layout& layout, int first, int last, const double* shared_values, const double* sliced_values,
          thread_team* team, double* blocks, job_error& error) override {
    auto run_range = [&](int b, int e, std::ostream* msgs, auto& sink, int& cursor) {
      std::apply(
          [&](const auto&... a) {
            slice_runner<F, T_slice, Args...>::run(layout, b, e, sliced_, sliced_values, shared_values, msgs,
                                                   std::tie(a...), sink, cursor);
          },
          args_);
    };
    return run_slice_range(team, layout, first, last, blocks, nullptr, run_range, error);
  }

 private:
  std::vector<typename flat<T_slice>::value_type> sliced_;
  std::tuple<typename flat<Args>::value_type...> args_;
};

/// Registers, at static initialisation, the runner of call site CallId with functor F and these argument
/// types; reduce_sum odr-uses `registered`, so every instantiation a program makes is registered on every rank.
template <int CallId, class F, class T_slice, class... Args>
struct reduce_site_registration {
  /// The runner's name: the call id and the mangled types of F and the arguments.
  static const std::string& key() {
    static const std::string k =
        std::to_string(CallId) + " " + typeid(std::tuple<F, std::vector<T_slice>, Args...>).name();
    return k;
  }
  /// A runner of this call site, for a rank that receives its payload.
  static std::unique_ptr<reduce_site_runner> make() {
    return std::make_unique<typed_site_runner<F, T_slice, Args...>>();
  }
  /// Registers make() under key() before main, on every rank.
  static inline const bool registered = register_reduce_runner(key(), &make);
};

}  // namespace maprect::detail
