#pragma once
/// \file Initial values as CmdStan takes them: a JSON object of constrained values for some or all
/// parameters, checked against their names, shapes and bounds and mapped to the unconstrained scale.

#include <Eigen/Dense>

#include <string>
#include <vector>

#include "interface.hpp"

namespace maprect {

/// Unconstrained values from an init file, and which of them it gave.
struct init_values {
  Eigen::VectorXd unconstrained;  ///< the given values on the unconstrained scale, 0 elsewhere
  std::vector<bool> given;        ///< per unconstrained value: set by the file
};

/// The parameters `init` names, unconstrained. Names that are not parameters are ignored (CmdStan ignores
/// them too: an init file may hold generated quantities). Throws data_error for a wrong shape or type, and
/// std::domain_error naming the value's column (theta.3) for a value outside its bounds.
inline init_values read_init_values(const parameter_list& parameters, const model_data& init) {
  init_values out{Eigen::VectorXd::Zero(static_cast<Eigen::Index>(parameters.size())),
                  std::vector<bool>(parameters.size(), false)};
  for (const parameter_declaration& d : parameters.declarations()) {
    if (!init.has(d.name)) continue;
    const std::vector<double> values = init.values(d.name, d.shape.dims());
    const std::vector<std::size_t> storage = json_to_storage(d.shape);
    const std::vector<std::size_t> csv = csv_to_storage(d.shape);
    const std::vector<std::string> names = csv_names(d.name, d.shape);
    std::vector<std::string> name_of(names.size());  // storage index -> its column name
    for (std::size_t k = 0; k < csv.size(); ++k) name_of[csv[k]] = names[k];
    for (std::size_t k = 0; k < values.size(); ++k) {
      const std::size_t i = d.offset + storage[k];
      out.unconstrained(static_cast<Eigen::Index>(i)) =
          unconstrain(values[k], d.range, init.source() + ": parameter " + name_of[storage[k]]);
      out.given[i] = true;
    }
  }
  return out;
}

}  // namespace maprect
