// Checkpoints of a chain (checkpoint.hpp): written whole and renamed into place, read back with every field checked.
#include "src/sampling/checkpoint.hpp"

#include <Eigen/Dense>

#include <cerrno>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace maprect {
namespace detail {

std::uint64_t fnv1a(const std::string& text, std::uint64_t h) {
  for (const unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

namespace {

/// `x` as a hexadecimal float: exact, so that a restored chain goes on with the same bits.
std::string hex_double(double x) {
  char text[64];
  std::snprintf(text, sizeof text, "%a", x);
  return text;
}

/// `x` in decimal, for errors.
std::string decimal(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", x);
  return text;
}

/// A vector as "key n values...".
void put_vector(std::ostream& out, const char* key, const Eigen::VectorXd& v) {
  out << key << ' ' << v.size();
  for (Eigen::Index i = 0; i < v.size(); ++i) out << ' ' << hex_double(v(i));
  out << '\n';
}

/// A matrix as "key rows cols values...", column by column.
void put_matrix(std::ostream& out, const char* key, const Eigen::MatrixXd& m) {
  out << key << ' ' << m.rows() << ' ' << m.cols();
  for (Eigen::Index i = 0; i < m.size(); ++i) out << ' ' << hex_double(m.data()[i]);
  out << '\n';
}

/// Reads the checkpoint's lines in order, naming the file and the key in every error.
class checkpoint_reader {
 public:
  checkpoint_reader(std::istream& in, std::string path) : in_(in), path_(std::move(path)) {}
  std::istringstream line(const std::string& key) {
    std::string text;
    if (!std::getline(in_, text)) fail("ends before '" + key + "'");
    std::istringstream fields(text);
    std::string found;
    fields >> found;
    if (found != key) fail("expected '" + key + "', found '" + found + "'");
    key_ = key;
    return fields;
  }
  double number(std::istream& fields) {
    std::string token;
    if (!(fields >> token)) fail("'" + key_ + "' has too few values");
    char* end = nullptr;
    errno = 0;
    const double x = std::strtod(token.c_str(), &end);
    if (end == token.c_str() || *end != '\0') fail("'" + key_ + "' holds '" + token + "', not a number");
    // strtod flags underflow too, but the subnormal it returns is exact for %a text; only overflow is wrong.
    if (errno == ERANGE && std::fabs(x) > DBL_MIN) fail("'" + key_ + "' holds '" + token + "', out of range");
    return x;
  }
  /// An integer in [low, high] (within 2^53, where doubles hold every integer).
  long integer(std::istream& fields, double low = -0x1p53, double high = 0x1p53) {
    const double x = number(fields);
    if (!(x >= low && x <= high)) fail("'" + key_ + "' holds " + decimal(x) + ", out of range");
    if (x != std::trunc(x)) fail("'" + key_ + "' holds a non-integer");
    return static_cast<long>(x);
  }
  /// An integer that fits an int.
  int int_value(std::istream& fields) { return static_cast<int>(integer(fields, INT_MIN, INT_MAX)); }
  /// A finite number > 0 (step sizes, inverse metric elements).
  double positive(std::istream& fields) {
    const double x = number(fields);
    if (!(std::isfinite(x) && x > 0)) fail("'" + key_ + "' holds " + decimal(x) + ", not a finite positive number");
    return x;
  }
  /// A finite number (the dual averaging's state).
  double finite(std::istream& fields) {
    const double x = number(fields);
    if (!std::isfinite(x)) fail("'" + key_ + "' holds " + decimal(x) + ", not a finite number");
    return x;
  }
  /// "KEY n x1 .. xn", its numbers read with `value` (a member such as &checkpoint_reader::number).
  Eigen::VectorXd vector(const std::string& key, double (checkpoint_reader::*value)(std::istream&) =
                                                     &checkpoint_reader::number) {
    std::istringstream fields = line(key);
    const long n = integer(fields, 0, 1L << 24);
    std::vector<double> v;  // grown as values come, so that a false length allocates nothing
    for (long i = 0; i < n; ++i) v.push_back((this->*value)(fields));
    return Eigen::Map<const Eigen::VectorXd>(v.data(), n);
  }
  Eigen::MatrixXd matrix(const std::string& key) {
    std::istringstream fields = line(key);
    const long rows = integer(fields), cols = integer(fields);
    if (rows < 0 || cols < 0 || rows > (1L << 12) || cols > (1L << 12)) fail("'" + key + "' has a bad shape");
    std::vector<double> v;  // grown as values come, so that a false shape allocates nothing
    for (long i = 0; i < rows * cols; ++i) v.push_back(number(fields));
    return Eigen::Map<const Eigen::MatrixXd>(v.data(), rows, cols);
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(path_ + ": damaged checkpoint: " + what);
  }

 private:
  std::istream& in_;
  std::string path_;
  std::string key_;
};

/// Every line of the checkpoint between its version and its checksum.
std::string checkpoint_body(const chain_checkpoint& c) {
  std::ostringstream out;
  const chain_state& s = c.state;
  out << "fingerprint " << c.fingerprint << '\n';
  out << "output_bytes " << c.output_bytes << '\n';
  out << "draw_rows " << c.draw_rows << '\n';
  out << "seconds " << hex_double(c.warmup_seconds) << ' ' << hex_double(c.sampling_seconds) << '\n';
  out << "iteration " << s.iteration << '\n';
  out << "step_size " << hex_double(s.step_size) << '\n';
  put_vector(out, "q", s.q);
  put_vector(out, "inv_metric", s.inv_metric);
  const step_size_adaptation& a = s.step_adapt;
  out << "dual_averaging";
  for (double x : {a.delta, a.gamma, a.kappa, a.t0, a.mu, a.counter, a.s_bar, a.x_bar}) out << ' ' << hex_double(x);
  out << '\n';
  const metric_windows& w = s.metric_adapt.windows;
  out << "windows " << w.num_warmup << ' ' << w.init_buffer << ' ' << w.term_buffer << ' ' << w.base_window << ' '
      << w.counter << ' ' << w.window_size << ' ' << w.next_window << '\n';
  out << "welford_n " << s.metric_adapt.samples.n << '\n';
  put_vector(out, "welford_m", s.metric_adapt.samples.m);
  put_vector(out, "welford_m2", s.metric_adapt.samples.m2);
  put_matrix(out, "dense_inv_metric", s.dense_inv_metric);
  out << "welford_dense_n " << s.metric_adapt.covariance.n << '\n';
  put_vector(out, "welford_dense_m", s.metric_adapt.covariance.m);
  put_matrix(out, "welford_dense_m2", s.metric_adapt.covariance.m2);
  out << "rng " << s.rng << '\n';
  return out.str();
}

/// The body of checkpoint file `path`, its checksum verified; throws std::runtime_error when damaged.
std::string checked_checkpoint_body(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error(path + ": cannot open the checkpoint (" + std::strerror(errno) + ")");
  std::stringstream whole;
  whole << file.rdbuf();
  const std::string text = whole.str();
  const std::size_t at = text.rfind("checksum ");
  if (at == std::string::npos || (at > 0 && text[at - 1] != '\n'))
    throw std::runtime_error(path + ": damaged checkpoint: no checksum line (truncated?)");
  std::string body = text.substr(0, at);
  char expected[32];
  std::snprintf(expected, sizeof expected, "%016llx", static_cast<unsigned long long>(fnv1a(body)));
  if (text.compare(at + 9, 16, expected) != 0)
    throw std::runtime_error(path + ": damaged checkpoint: the checksum does not match its contents");
  return body;
}

/// Reads the chain's state that follows the fingerprint.
void read_chain_state(checkpoint_reader& r, chain_state& s) {
  {
    auto f = r.line("iteration");
    s.iteration = r.int_value(f);
  }
  {
    auto f = r.line("step_size");
    s.step_size = r.positive(f);
  }
  s.q = r.vector("q");
  s.inv_metric = r.vector("inv_metric", &checkpoint_reader::positive);
  {
    auto f = r.line("dual_averaging");
    step_size_adaptation& a = s.step_adapt;
    for (double* x : {&a.delta, &a.gamma, &a.kappa, &a.t0, &a.mu, &a.counter, &a.s_bar, &a.x_bar}) *x = r.finite(f);
  }
  {
    auto f = r.line("windows");
    metric_windows& w = s.metric_adapt.windows;
    for (int* x : {&w.num_warmup, &w.init_buffer, &w.term_buffer, &w.base_window, &w.counter, &w.window_size,
                   &w.next_window})
      *x = r.int_value(f);
  }
  {
    auto f = r.line("welford_n");
    s.metric_adapt.samples.n = r.integer(f, 0);
  }
  s.metric_adapt.samples.m = r.vector("welford_m");
  s.metric_adapt.samples.m2 = r.vector("welford_m2");
  s.dense_inv_metric = r.matrix("dense_inv_metric");
  {
    auto f = r.line("welford_dense_n");
    s.metric_adapt.covariance.n = r.integer(f);
  }
  s.metric_adapt.covariance.m = r.vector("welford_dense_m");
  s.metric_adapt.covariance.m2 = r.matrix("welford_dense_m2");
  std::getline(r.line("rng") >> std::ws, s.rng);
  std::istringstream rng_text(s.rng);
  std::mt19937_64 engine;
  if (!(rng_text >> engine)) r.fail("'rng' holds a damaged random number state");
}

}  // namespace
}  // namespace detail

void write_checkpoint(const std::string& path, const chain_checkpoint& c) {
  const std::string body = "maprect-checkpoint 3\n" + detail::checkpoint_body(c);
  char checksum[32];
  std::snprintf(checksum, sizeof checksum, "%016llx", static_cast<unsigned long long>(detail::fnv1a(body)));
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(temporary + ": cannot write (" + std::strerror(errno) + ")");
    out << body << "checksum " << checksum << '\n';
    out.flush();
    if (!out) throw std::runtime_error(temporary + ": write failed");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    throw std::runtime_error(path + ": cannot replace the checkpoint (" + std::strerror(errno) + ")");
}

std::string fingerprint_difference(const std::string& a, const std::string& b) {
  std::istringstream in_a(a);
  std::string field;
  while (in_a >> field) {
    const std::string key = field.substr(0, field.find('=') + 1);
    const std::size_t at = (" " + b).find(" " + key);
    if (at == std::string::npos) return key.substr(0, key.size() - 1) + " is missing in this run";
    const std::size_t end = b.find(' ', at);
    const std::string other = b.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (other != field) return "it was written with " + field + ", this run has " + other;
  }
  return "its settings differ from this run's";
}

chain_checkpoint read_checkpoint(const std::string& path, const std::string& expected_fingerprint) {
  std::istringstream in(detail::checked_checkpoint_body(path));
  detail::checkpoint_reader r(in, path);
  {
    auto f = r.line("maprect-checkpoint");
    const long version = r.integer(f);
    if (version != 3)
      r.fail("version " + std::to_string(version) + ", this maprect reads version 3 (rerun without --resume)");
  }
  chain_checkpoint c;
  std::string fingerprint;
  std::getline(r.line("fingerprint") >> std::ws, fingerprint);
  c.fingerprint = fingerprint;
  if (fingerprint != expected_fingerprint)
    throw std::runtime_error(path + ": the checkpoint belongs to another run (" +
                             fingerprint_difference(fingerprint, expected_fingerprint) + "); refusing to resume");
  {
    auto f = r.line("output_bytes");
    c.output_bytes = static_cast<std::uint64_t>(r.integer(f, 0));
  }
  {
    auto f = r.line("draw_rows");
    c.draw_rows = r.integer(f);
  }
  {
    auto f = r.line("seconds");
    c.warmup_seconds = r.number(f);
    c.sampling_seconds = r.number(f);
  }
  detail::read_chain_state(r, c.state);
  return c;
}

}  // namespace maprect
