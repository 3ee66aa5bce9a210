#pragma once
/// \file A model's data in CmdStan's JSON format (nlohmann-json): one object whose keys are the variables;
/// a scalar is a number, an array or vector a JSON array, a matrix an array of rows, array[n] vector[k] an
/// array of n arrays of k. Reals may be "Infinity", "-Infinity" or "NaN" as CmdStan writes them. Every
/// accessor checks the type and the shape, and its error names the variable, the expected and the given shape.

#include <nlohmann/json.hpp>

#include <Eigen/Dense>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "shape.hpp"

namespace maprect {

/// Bad data: a missing variable, a wrong shape or type, a JSON syntax error. The message names the source.
struct data_error : std::runtime_error {
  /// The whole message.
  explicit data_error(const std::string& message) : std::runtime_error(message) {}
};

/// Line and column (1-based) of byte `position` (1-based, as nlohmann's parse_error::byte counts) in `text`.
inline std::pair<std::size_t, std::size_t> line_and_column(const std::string& text, std::size_t position) {
  std::size_t line = 1, column = 0;
  for (std::size_t i = 0; i < position && i < text.size(); ++i) {
    if (text[i] == '\n') ++line, column = 0;
    else ++column;
  }
  return {line, column == 0 ? 1 : column};
}

/// A model's data: the variables of a CmdStan JSON object, read with checked shapes.
class model_data {
 public:
  /// No data: an empty object (a model that reads nothing still works).
  model_data() : json_(nlohmann::json::object()), source_("no data") {}
  /// Data already in memory; `source` names it in messages.
  model_data(nlohmann::json object, std::string source, std::string noun = "data variable")
      : json_(std::move(object)), source_(std::move(source)), noun_(std::move(noun)) {
    if (!json_.is_object()) throw data_error(source_ + ": the data must be a JSON object of variables");
  }

  /// Parses CmdStan JSON text; a syntax error names source:line:column.
  static model_data parse(const std::string& text, const std::string& source, const std::string& noun = "data variable") {
    try {
      return model_data(nlohmann::json::parse(text), source, noun);
    } catch (const nlohmann::json::out_of_range& e) {  // a number beyond a double: nlohmann names no position
      std::string why = e.what();
      const std::size_t bracket = why.find("] ");
      if (bracket != std::string::npos) why = why.substr(bracket + 2);
      throw data_error(source + ": " + why);
    } catch (const nlohmann::json::parse_error& e) {
      const auto [line, column] = line_and_column(text, e.byte);
      std::string why = e.what();  // "[json.exception.parse_error.101] parse error at line 1, column 5: ..."
      const std::size_t colon = why.find(": ");
      if (colon != std::string::npos) why = why.substr(colon + 2);
      const std::string lead = "syntax error ";  // nlohmann's usual start: "syntax error while parsing value - ..."
      why = why.compare(0, lead.size(), lead) == 0 ? why.substr(lead.size()) : ": " + why;
      throw data_error(source + ":" + std::to_string(line) + ":" + std::to_string(column) + ": JSON syntax error " + why);
    }
  }
  /// Reads a CmdStan JSON file.
  static model_data read(const std::string& path, const std::string& noun = "data variable") {
    if (std::filesystem::is_directory(path)) throw data_error(path + ": is a directory, not a JSON file");
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw data_error(path + ": cannot open (" + std::strerror(errno) + ")");
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw data_error(path + ": cannot read the data file");
    return parse(text.str(), path, noun);
  }

  /// An object of named numbers (a simulation's true values, say); throws data_error naming a value that is
  /// not a number.
  std::vector<std::pair<std::string, double>> named_reals(const std::string& name) const {
    const nlohmann::json& object = json_.at(name);
    if (!object.is_object()) throw data_error(where(name) + ": expected an object of numbers, got " + describe(object));
    std::vector<std::pair<std::string, double>> out;
    for (const auto& [key, value] : object.items()) {
      if (!value.is_number()) throw data_error(where(name + "." + key) + ": expected a number, got " + describe(value));
      out.emplace_back(key, value.get<double>());
    }
    return out;
  }

  /// Where the data came from (a file name, "embedded", ...).
  const std::string& source() const { return source_; }
  /// The JSON object itself, for reading anything the accessors do not cover.
  const nlohmann::json& json() const { return json_; }
  /// True when the data have variable `name`.
  bool has(const std::string& name) const { return json_.contains(name); }

  /// int name; with Stan's <lower=L, upper=U> when given.
  int integer(const std::string& name, long lower = std::numeric_limits<int>::min(),
              long upper = std::numeric_limits<int>::max()) const {
    return integers_of(name, {}, lower, upper)[0];
  }
  /// array[n] int name (n < 0: any length).
  std::vector<int> integers(const std::string& name, int n = -1, long lower = std::numeric_limits<int>::min(),
                            long upper = std::numeric_limits<int>::max()) const {
    return integers_of(name, {n}, lower, upper);
  }
  /// real name.
  double real(const std::string& name) const { return reals_of(name, {})[0]; }
  /// array[n] real name (n < 0: any length).
  std::vector<double> reals(const std::string& name, int n = -1) const { return reals_of(name, {n}); }
  /// vector[n] name (n < 0: any length).
  Eigen::VectorXd vector(const std::string& name, int n = -1) const {
    const std::vector<double> v = reals_of(name, {n});
    return Eigen::Map<const Eigen::VectorXd>(v.data(), static_cast<Eigen::Index>(v.size()));
  }
  /// matrix[r, c] name, given as an array of r rows of c (r, c < 0: any).
  Eigen::MatrixXd matrix(const std::string& name, int r = -1, int c = -1) const {
    std::vector<int> dims;
    const std::vector<double> v = reals_of(name, {r, c}, &dims);
    Eigen::MatrixXd m(dims[0], dims[1]);
    for (int i = 0; i < dims[0]; ++i)
      for (int j = 0; j < dims[1]; ++j) m(i, j) = v[static_cast<std::size_t>(i) * dims[1] + j];
    return m;
  }
  /// array[n] vector[k] name (n, k < 0: any): map_rect's job parameters or rows.
  std::vector<Eigen::VectorXd> vectors(const std::string& name, int n = -1, int k = -1) const {
    std::vector<int> dims;
    const std::vector<double> v = reals_of(name, {n, k}, &dims);
    std::vector<Eigen::VectorXd> out;
    for (int i = 0; i < dims[0]; ++i)
      out.push_back(Eigen::Map<const Eigen::VectorXd>(v.data() + static_cast<std::size_t>(i) * dims[1], dims[1]));
    return out;
  }

  /// The dimensions of a JSON value as CmdStan reads it ({} for a number); throws data_error naming the
  /// variable for ragged arrays and values that are neither numbers nor arrays.
  std::vector<int> shape_of(const std::string& name, const nlohmann::json& value) const {
    if (!value.is_array()) {
      if (!value.is_number() && !is_special_real(value))
        throw data_error(where(name) + ": expected a number or an array, got " + describe(value));
      return {};
    }
    std::vector<int> dims = {static_cast<int>(value.size())};
    if (value.empty()) return dims;
    const std::vector<int> inner = shape_of(name, value[0]);
    for (std::size_t i = 1; i < value.size(); ++i)
      if (shape_of(name, value[i]) != inner)
        throw data_error(where(name) + ": ragged array: element " + std::to_string(i + 1) + " has shape " +
                         dims_text(shape_of(name, value[i])) + ", element 1 has " + dims_text(inner));
    dims.insert(dims.end(), inner.begin(), inner.end());
    return dims;
  }

  /// "data variable 'y' in data.json": how messages name a variable.
  std::string where(const std::string& name) const { return noun_ + " '" + name + "' in " + source_; }

  /// Any real variable of the given dimensions (JSON nesting, entries < 0: any length), row-major as nested.
  std::vector<double> values(const std::string& name, const std::vector<int>& dims) const { return reals_of(name, dims); }

 private:
  static bool is_special_real(const nlohmann::json& v) {
    return v.is_string() && (v == "Infinity" || v == "-Infinity" || v == "NaN" || v == "inf" || v == "-inf");
  }
  static std::string describe(const nlohmann::json& v) {
    std::string text = v.dump();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return std::string(v.type_name()) + " " + text;
  }

  /// The variable's numbers in row-major order of its JSON nesting, after checking its shape against
  /// `expected` (entries < 0 match any length); writes the actual dimensions to `dims` when given.
  std::vector<const nlohmann::json*> values_of(const std::string& name, const std::vector<int>& expected,
                                               std::vector<int>* dims) const {
    if (!has(name)) throw data_error(where(name) + ": missing (expected shape " + expected_text(expected) + ")");
    const nlohmann::json& value = json_.at(name);
    std::vector<int> given = shape_of(name, value);
    if (!given.empty() && given.back() == 0)  // [] stands for any empty array: a matrix[0, 3] too, as in CmdStan
      for (std::size_t d = given.size(); d < expected.size(); ++d) given.push_back(std::max(expected[d], 0));
    bool match = given.size() == expected.size();
    for (std::size_t d = 0; match && d < given.size(); ++d) match = expected[d] < 0 || expected[d] == given[d];
    if (!match) throw data_error(where(name) + ": expected shape " + expected_text(expected) + ", got " + dims_text(given));
    if (dims) *dims = given;
    std::vector<const nlohmann::json*> flat;
    flatten(value, flat);
    return flat;
  }
  /// A shape as expected: "[8]", "[2,3]", "[]", with "*" for any length.
  static std::string expected_text(const std::vector<int>& dims) {
    std::string s = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + (dims[i] < 0 ? std::string("*") : std::to_string(dims[i]));
    return s + "]";
  }
  static void flatten(const nlohmann::json& v, std::vector<const nlohmann::json*>& out) {
    if (!v.is_array()) return out.push_back(&v);
    for (const auto& e : v) flatten(e, out);
  }

  std::vector<double> reals_of(const std::string& name, const std::vector<int>& expected,
                               std::vector<int>* dims = nullptr) const {
    std::vector<double> out;
    for (const nlohmann::json* v : values_of(name, expected, dims)) {
      if (v->is_number()) out.push_back(v->get<double>());
      else if (*v == "NaN") out.push_back(std::numeric_limits<double>::quiet_NaN());
      else out.push_back(v->get<std::string>().front() == '-' ? -HUGE_VAL : HUGE_VAL);
    }
    return out;
  }

  std::vector<int> integers_of(const std::string& name, const std::vector<int>& expected, long lower,
                               long upper) const {
    std::vector<int> out;
    for (const nlohmann::json* v : values_of(name, expected, nullptr)) {
      if (!v->is_number_integer())
        throw data_error(where(name) + ": expected integers, got " + describe(*v));
      const long long i = v->get<long long>();
      if (i < lower || i > upper)
        throw data_error(where(name) + ": " + std::to_string(i) + " is outside its bounds <lower=" +
                         std::to_string(lower) + ", upper=" + std::to_string(upper) + ">");
      out.push_back(static_cast<int>(i));
    }
    return out;
  }

  nlohmann::json json_;
  std::string source_;
  std::string noun_ = "data variable";
};

}  // namespace maprect
