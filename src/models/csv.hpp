#pragma once
/// \file A small CSV reader for model data: comma-separated fields, a header row, and errors that name the
/// source, line and column. No quoting: model data are numbers and plain labels.
#include <istream>
#include <stdexcept>
#include <string>
#include <vector>

namespace maprect::models {

/// Malformed CSV content, at a 1-based line and column (column 0: the whole line).
class csv_error : public std::runtime_error {
 public:
  /// what() reads "SOURCE: line L, column C (NAME): MESSAGE", without the column part when column is 0 and
  /// without the name when it is empty.
  csv_error(const std::string& source, int line, int column, const std::string& column_name,
            const std::string& message);
  /// 1-based line.
  int line() const { return line_; }
  /// 1-based column, 0 when the error concerns the whole line.
  int column() const { return column_; }

 private:
  int line_;
  int column_;
};

/// One data row: its fields (trimmed of surrounding blanks) and where it was.
struct csv_row {
  std::vector<std::string> fields;  ///< as written, without surrounding spaces, tabs or a trailing CR
  int line = 0;                     ///< 1-based line number in the source
};

/// Reads rows one by one, skipping blank lines.
class csv_reader {
 public:
  /// Reads from `in`; `source` names it in errors (a file name).
  csv_reader(std::istream& in, std::string source) : in_(in), source_(std::move(source)) {}
  /// The next non-blank row; false at the end of the input.
  bool next(csv_row& row);
  /// The source's name.
  const std::string& source() const { return source_; }
  /// Last line read (1-based; 0 before the first).
  int line() const { return line_; }

 private:
  std::istream& in_;
  std::string source_;
  int line_ = 0;
};

/// Index of each wanted column in a header row; throws csv_error naming the header line and the missing or
/// repeated column, or the column of an unknown name.
std::vector<int> csv_columns(const csv_row& header, const std::vector<std::string>& wanted,
                             const std::string& source);

/// The field as a finite double; throws csv_error at (row.line, column + 1) otherwise.
double csv_double(const csv_row& row, int column, const std::string& column_name, const std::string& source);

}  // namespace maprect::models
