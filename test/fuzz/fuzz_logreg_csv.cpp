// Fuzz target: the logreg CSV data reader (`maprect fit|sample --data FILE`). Malformed input must end as a
// one-line csv_error (or the read error) naming the file; a file that reads must hold what the model needs.
#include <cmath>
#include <set>
#include <sstream>

#include "fuzz_input.hpp"
#include "csv.hpp"
#include "logreg.hpp"

namespace {

void check_data(const maprect::models::logreg_data& d, const std::string& text) {
  using maprect::fuzz::finding;
  if (d.x_r.empty() || d.x_r.size() != d.x_i.size() || d.group_names.size() != d.x_r.size())
    finding("inconsistent group counts", text);
  if (std::set<std::string>(d.group_names.begin(), d.group_names.end()).size() != d.group_names.size())
    finding("a group label twice", text);
  for (std::size_t j = 0; j < d.x_r.size(); ++j) {
    const int n = d.x_i[j][0];
    if (n < 1 || static_cast<std::size_t>(n) > d.x_r[j].size()) finding("a bad point count", text);
    for (int i = 0; i < n; ++i) {
      if (!std::isfinite(d.x_r[j][static_cast<std::size_t>(i)])) finding("a non-finite x", text);
      const int y = d.x_i[j][static_cast<std::size_t>(i) + 1];
      if (y != 0 && y != 1) finding("a y other than 0 or 1", text);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = maprect::fuzz::input_text(data, size);
  std::istringstream in(text);
  try {
    check_data(maprect::models::parse_logreg_csv(in, "fuzz.csv"), text);
  } catch (const maprect::models::csv_error& e) {
    maprect::fuzz::require_one_line(e, "fuzz.csv: line ");
  }
  return 0;
}
