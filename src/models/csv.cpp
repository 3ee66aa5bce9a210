// The CSV reader: rows, header columns, numbers, and errors that say where.
#include "csv.hpp"

#include <cmath>
#include <cstdlib>

namespace maprect::models {

namespace {

std::string describe_place(const std::string& source, int line, int column, const std::string& column_name) {
  std::string place = source + ": line " + std::to_string(line);
  if (column > 0) {
    place += ", column " + std::to_string(column);
    if (!column_name.empty()) place += " (" + column_name + ")";
  }
  return place;
}

std::string trim(const std::string& s, std::size_t begin, std::size_t end) {
  while (begin < end && (s[begin] == ' ' || s[begin] == '\t')) ++begin;
  while (end > begin && (s[end - 1] == ' ' || s[end - 1] == '\t' || s[end - 1] == '\r')) --end;
  return s.substr(begin, end - begin);
}

}  // namespace

csv_error::csv_error(const std::string& source, int line, int column, const std::string& column_name,
                     const std::string& message)
    : std::runtime_error(describe_place(source, line, column, column_name) + ": " + message),
      line_(line),
      column_(column) {}

bool csv_reader::next(csv_row& row) {
  std::string text;
  while (std::getline(in_, text)) {
    ++line_;
    if (trim(text, 0, text.size()).empty()) continue;
    row.line = line_;
    row.fields.clear();
    std::size_t begin = 0;
    while (true) {
      const std::size_t comma = text.find(',', begin);
      const std::size_t end = comma == std::string::npos ? text.size() : comma;
      row.fields.push_back(trim(text, begin, end));
      if (comma == std::string::npos) break;
      begin = comma + 1;
    }
    return true;
  }
  if (in_.bad()) throw std::runtime_error(source_ + ": read error after line " + std::to_string(line_));
  return false;
}

std::vector<int> csv_columns(const csv_row& header, const std::vector<std::string>& wanted,
                             const std::string& source) {
  std::string expected;
  for (const auto& w : wanted) expected += (expected.empty() ? "" : ",") + w;
  std::vector<int> index(wanted.size(), -1);
  for (std::size_t c = 0; c < header.fields.size(); ++c) {
    const std::string& name = header.fields[c];
    std::size_t w = 0;
    while (w < wanted.size() && wanted[w] != name) ++w;
    if (w == wanted.size())
      throw csv_error(source, header.line, static_cast<int>(c) + 1, "",
                      "unknown column '" + name + "' in the header (expected columns " + expected + ")");
    if (index[w] >= 0)
      throw csv_error(source, header.line, static_cast<int>(c) + 1, name,
                      "column '" + name + "' appears twice in the header");
    index[w] = static_cast<int>(c);
  }
  for (std::size_t w = 0; w < wanted.size(); ++w)
    if (index[w] < 0)
      throw csv_error(source, header.line, 0, "",
                      "missing column '" + wanted[w] + "' in the header (expected columns " + expected + ")");
  return index;
}

double csv_double(const csv_row& row, int column, const std::string& column_name, const std::string& source) {
  const std::string& field = row.fields[static_cast<std::size_t>(column)];
  if (field.empty()) throw csv_error(source, row.line, column + 1, column_name, "empty value, expected a number");
  char* end = nullptr;
  const double value = std::strtod(field.c_str(), &end);
  if (end != field.c_str() + field.size())
    throw csv_error(source, row.line, column + 1, column_name, "'" + field + "' is not a number");
  if (!std::isfinite(value))
    throw csv_error(source, row.line, column + 1, column_name, "'" + field + "' is not a finite number");
  return value;
}

}  // namespace maprect::models
