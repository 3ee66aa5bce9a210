// Fuzz target: the metric file of `maprect sample --metric-file` (CmdStan's {"inv_metric": ...}), read as a
// diagonal and as a dense metric of 3 parameters. Malformed input must end as a one-line std::runtime_error
// naming the file; a metric that reads must be usable: finite, a positive diagonal, symmetric positive definite.
#include <Eigen/Cholesky>

#include <cmath>

#include "fuzz_input.hpp"
#include "sample_options.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using maprect::fuzz::finding;
  const std::string text = maprect::fuzz::input_text(data, size);
  const std::string& path = maprect::fuzz::input_file(text, ".json");
  for (const maprect::metric_kind kind : {maprect::metric_kind::diag, maprect::metric_kind::dense}) {
    try {
      const Eigen::MatrixXd m = maprect::cli::read_metric_file(path, kind, 3);
      if (!m.allFinite()) finding("a metric with a non-finite entry", text);
      if (kind == maprect::metric_kind::diag && (m.rows() != 3 || (m.array() <= 0).any()))
        finding("a diagonal metric that is not 3 positive numbers", text);
      if (kind == maprect::metric_kind::dense && Eigen::LLT<Eigen::MatrixXd>(m).info() != Eigen::Success)
        finding("a dense metric that is not positive definite", text);
    } catch (const std::runtime_error& e) {
      maprect::fuzz::require_one_line(e, path + ": ");
    }
  }
  return 0;
}
