// Fuzz target: a model's CmdStan JSON data and init files (`--data FILE.json`, `--init FILE.json`). The input is
// read as the data of every built-in model, and as an init file of each model it built one for. Malformed
// input must end as a one-line error naming the file; values outside a parameter's bounds as a domain_error.
#include <maprect/model.hpp>

#include <stdexcept>

#include "fuzz_input.hpp"

namespace {

/// A one-line error that names `source` (the data's messages name it after the variable).
void require_named(const std::exception& e, const std::string& source) {
  const std::string message = e.what();
  if (message.find('\n') != std::string::npos) maprect::fuzz::finding("an error of several lines", message);
  if (message.find(source) == std::string::npos) maprect::fuzz::finding("an error that does not name the file", message);
}

/// The input as an init file of `m`: a value that reads must be finite on the unconstrained scale.
void read_as_init(const maprect::model& m, const std::string& text) {
  const std::string source = "fuzz-init.json";
  try {
    const maprect::init_values v =
        maprect::read_init_values(m.parameters(), maprect::model_data::parse(text, source, "init variable"));
    for (Eigen::Index i = 0; i < v.unconstrained.size(); ++i)
      if (v.given[static_cast<std::size_t>(i)] && !std::isfinite(v.unconstrained(i)))
        maprect::fuzz::finding("an init value that is not finite on the unconstrained scale", text);
  } catch (const maprect::data_error& e) {
    require_named(e, source);
  } catch (const std::domain_error& e) {
    require_named(e, source);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = maprect::fuzz::input_text(data, size);
  const std::string source = "fuzz.json";
  for (const auto& [name, entry] : maprect::model_registry()) {
    try {
      const std::unique_ptr<maprect::model> m = entry.make(maprect::model_data::parse(text, source));
      if (m->column_names().empty()) maprect::fuzz::finding("a model without columns", text);
      read_as_init(*m, text);
    } catch (const maprect::data_error& e) {
      require_named(e, source);
    }
  }
  return 0;
}
