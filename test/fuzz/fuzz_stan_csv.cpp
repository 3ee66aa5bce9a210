// Fuzz target: the Stan CSV reader (`maprect sample --resume` reads the draws kept so far). Malformed input
// must end as a one-line std::runtime_error naming the file; a file that reads must be consistent.
#include <cmath>

#include "fuzz_input.hpp"
#include "src/sampling/stan_csv.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using maprect::fuzz::finding;
  const std::string text = maprect::fuzz::input_text(data, size);
  const std::string& path = maprect::fuzz::input_file(text, ".csv");
  try {
    const maprect::stan_csv r = maprect::read_stan_csv(path);
    if (r.columns.empty() || r.draws.cols() != static_cast<Eigen::Index>(r.columns.size()))
      finding("draws and column names disagree", text);
    if (!(r.step_size == 0 || (std::isfinite(r.step_size) && r.step_size > 0)))
      finding("a step size that is not a positive number", text);
    for (double m : r.inv_metric)
      if (!(std::isfinite(m) && m > 0)) finding("an inverse metric element that is not a positive number", text);
  } catch (const std::runtime_error& e) {
    maprect::fuzz::require_one_line(e, path + ": ");
  }
  return 0;
}
