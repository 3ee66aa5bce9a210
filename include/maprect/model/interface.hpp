#pragma once
/// \file The model interface: a user's model class, seen by the program through maprect::model, and the
/// registry that MAPRECT_REGISTER_MODEL fills. See docs/models.md.
///
/// A model class M has (Stan's blocks in brackets):
///   explicit M(const maprect::model_data& data);                            [data, transformed data]
///   void parameters(maprect::parameter_list& p) const;                      [parameters]
///   template <class T> T log_density(const maprect::parameter_values<T>& p) const;  [model]
/// and may have:
///   void generated_quantities(const maprect::parameter_values<double>& p, maprect::quantity_writer& out) const;
///   std::string description() const;                  one line for the program's report
///   std::vector<std::pair<std::string, double>> truth() const;   known true values, by column name
///   nlohmann::json initial_values() const;             constrained start for `fit` (as an --init file)
///   static constexpr double adapt_delta = 0.9;         the sampler's target acceptance when not 0.8
///   static nlohmann::json embedded_data(int jobs, int points);   data to use when no --data is given
///   static nlohmann::json read_csv(const std::string& path);     --data as CSV, turned into JSON variables

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../ad.hpp"
#include "data.hpp"
#include "parameters.hpp"

namespace maprect {

/// A model as the program runs it: a density on the unconstrained scale and the CSV columns of a draw.
class model {
 public:
  virtual ~model() = default;
  /// The declared parameters.
  virtual const parameter_list& parameters() const = 0;
  /// Unconstrained values in all: the sampler's dimension.
  int size() const { return static_cast<int>(parameters().size()); }
  /// Log density at unconstrained u, and its gradient; with the transforms' log-Jacobian when `jacobian`
  /// (sampling), without it (a MAP fit, as CmdStan's optimize).
  virtual double log_density(const Eigen::VectorXd& u, Eigen::VectorXd& gradient, bool jacobian) const = 0;
  /// The parameters' columns, then the generated quantities', in Stan's naming and order.
  virtual const std::vector<std::string>& column_names() const = 0;
  /// The columns' values at unconstrained u.
  virtual Eigen::VectorXd write_array(const Eigen::VectorXd& u) const = 0;
  /// One line for the report.
  virtual std::string description() const = 0;
  /// Known true values by column name (simulated data); empty when unknown.
  virtual std::vector<std::pair<std::string, double>> truth() const = 0;
  /// Constrained values to start a fit from, as an init file holds them; null when the model has none.
  virtual nlohmann::json initial_values() const = 0;

  /// The constrained values at unconstrained u, in storage order (no Jacobian).
  Eigen::VectorXd constrained(const Eigen::VectorXd& u) const {
    Eigen::VectorXd x(u.size());
    for (const parameter_declaration& d : parameters().declarations())
      for (std::size_t i = d.offset; i < d.offset + d.shape.size(); ++i) x(i) = constrain(u(i), d.range);
    return x;
  }
};

namespace detail {

template <class M, class = void>
struct has_generated_quantities : std::false_type {};
template <class M>
struct has_generated_quantities<M, std::void_t<decltype(std::declval<const M&>().generated_quantities(
                                       std::declval<const parameter_values<double>&>(), std::declval<quantity_writer&>()))>>
    : std::true_type {};
template <class M, class = void>
struct has_description : std::false_type {};
template <class M>
struct has_description<M, std::void_t<decltype(std::string(std::declval<const M&>().description()))>> : std::true_type {};
template <class M, class = void>
struct has_truth : std::false_type {};
template <class M>
struct has_truth<M, std::void_t<decltype(std::declval<const M&>().truth())>> : std::true_type {};
template <class M, class = void>
struct has_initial_values : std::false_type {};
template <class M>
struct has_initial_values<M, std::void_t<decltype(std::declval<const M&>().initial_values())>> : std::true_type {};
template <class M, class = void>
struct has_adapt_delta : std::false_type {};
template <class M>
struct has_adapt_delta<M, std::void_t<decltype(double(M::adapt_delta))>> : std::true_type {};
template <class M, class = void>
struct has_embedded_data : std::false_type {};
template <class M>
struct has_embedded_data<M, std::void_t<decltype(M::embedded_data(0, 0))>> : std::true_type {};

template <class M, class = void>
struct has_read_csv : std::false_type {};
template <class M>
struct has_read_csv<M, std::void_t<decltype(M::read_csv(std::string()))>> : std::true_type {};

}  // namespace detail

/// maprect::model for a model class M (see the file comment for what M provides).
template <class M>
class model_adapter final : public model {
 public:
  /// Builds M from the data, then reads its parameters block and its generated quantities' names.
  explicit model_adapter(const model_data& data) : model_(data) {
    model_.parameters(parameters_);
    for (const parameter_declaration& d : parameters_.declarations()) {
      const std::vector<std::string> names = csv_names(d.name, d.shape);
      columns_.insert(columns_.end(), names.begin(), names.end());
    }
    const quantity_writer quantities = generated(Eigen::VectorXd::Zero(size()));
    columns_.insert(columns_.end(), quantities.names().begin(), quantities.names().end());
  }

  const parameter_list& parameters() const override { return parameters_; }
  double log_density(const Eigen::VectorXd& u, Eigen::VectorXd& gradient, bool jacobian) const override {
    double lp = 0;
    maprect::gradient([&](const vector_v& q) { return density(q, jacobian); }, u, lp, gradient);
    return lp;
  }
  const std::vector<std::string>& column_names() const override { return columns_; }
  Eigen::VectorXd write_array(const Eigen::VectorXd& u) const override {
    const Eigen::VectorXd x = constrained(u);
    const quantity_writer quantities = generated(u);
    const std::size_t own = static_cast<std::size_t>(x.size()), extra = quantities.values().size();
    if (own + extra != columns_.size())
      throw std::runtime_error("generated_quantities wrote " + std::to_string(extra) + " values, " +
                               std::to_string(columns_.size() - own) + " at the first draw: names and shapes must not change");
    Eigen::VectorXd out(static_cast<Eigen::Index>(own + extra));
    std::size_t k = 0;
    for (const parameter_declaration& d : parameters_.declarations())
      for (std::size_t i : csv_to_storage(d.shape)) out(static_cast<Eigen::Index>(k++)) = x(d.offset + i);
    for (double v : quantities.values()) out(static_cast<Eigen::Index>(k++)) = v;
    return out;
  }
  std::string description() const override {
    if constexpr (detail::has_description<M>::value) return model_.description();
    else return std::to_string(size()) + " unconstrained parameters";
  }
  std::vector<std::pair<std::string, double>> truth() const override {
    if constexpr (detail::has_truth<M>::value) return model_.truth();
    else return {};
  }
  nlohmann::json initial_values() const override {
    if constexpr (detail::has_initial_values<M>::value) return model_.initial_values();
    else return nullptr;
  }
  /// The model object itself.
  const M& get() const { return model_; }

  /// The density on the unconstrained scale: constrain, then M's log density, then the log-Jacobian.
  template <class T>
  T density(const Eigen::Matrix<T, Eigen::Dynamic, 1>& q, bool jacobian) const {
    Eigen::Matrix<T, Eigen::Dynamic, 1> x = q;
    T log_jacobian = 0;
    bool bounded = false;
    for (const parameter_declaration& d : parameters_.declarations()) {
      if (d.range.unbounded()) continue;  // the identity: no tape node, so unbounded models keep their bits
      bounded = true;
      for (std::size_t i = d.offset; i < d.offset + d.shape.size(); ++i)
        x(static_cast<Eigen::Index>(i)) = constrain(q(static_cast<Eigen::Index>(i)), d.range, log_jacobian);
    }
    T lp = model_.log_density(parameter_values<T>(parameters_, std::move(x)));
    if (jacobian && bounded) lp += log_jacobian;
    return lp;
  }

 private:
  quantity_writer generated(const Eigen::VectorXd& u) const {
    quantity_writer out;
    if constexpr (detail::has_generated_quantities<M>::value)
      model_.generated_quantities(parameter_values<double>(parameters_, constrained(u)), out);
    return out;
  }

  M model_;
  parameter_list parameters_;
  std::vector<std::string> columns_;
};

/// A registered model: how the program builds it, and its sampler default.
struct model_entry {
  std::string name;                                                  ///< --model's value
  std::function<std::unique_ptr<model>(const model_data&)> make;     ///< builds the model on its data
  double adapt_delta = 0.8;                                          ///< target acceptance statistic
  std::function<nlohmann::json(int jobs, int points)> embedded_data; ///< data without --data; empty: none
  std::function<nlohmann::json(const std::string& path)> read_csv;   ///< CSV --data as JSON; empty: JSON only
};

/// Every model the program knows, by name (filled at static initialisation).
inline std::map<std::string, model_entry>& model_registry() {
  static std::map<std::string, model_entry> registry;
  return registry;
}

/// The entry of model class M under `name`.
template <class M>
model_entry make_model_entry(const std::string& name) {
  model_entry e;
  e.name = name;
  e.make = [](const model_data& data) -> std::unique_ptr<model> { return std::make_unique<model_adapter<M>>(data); };
  if constexpr (detail::has_adapt_delta<M>::value) e.adapt_delta = M::adapt_delta;
  if constexpr (detail::has_embedded_data<M>::value)
    e.embedded_data = [](int jobs, int points) { return M::embedded_data(jobs, points); };
  if constexpr (detail::has_read_csv<M>::value) e.read_csv = [](const std::string& path) { return M::read_csv(path); };
  return e;
}

/// Adds an entry; a second model of the same name is a std::logic_error (at start-up).
inline bool register_model(model_entry entry) {
  const std::string name = entry.name;
  if (!model_registry().emplace(name, std::move(entry)).second)
    throw std::logic_error("MAPRECT_REGISTER_MODEL: two models are named '" + name + "'");
  return true;
}

/// The entry named `name`; throws std::invalid_argument listing the registered names when there is none.
inline const model_entry& find_model(const std::string& name) {
  const auto it = model_registry().find(name);
  if (it != model_registry().end()) return it->second;
  std::string known;
  for (const auto& [n, e] : model_registry()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("--model: '" + name + "' is not a registered model (registered: " + known + ")");
}

}  // namespace maprect

/// Registers model class TYPE under the name NAME (an identifier: what --model takes). Put it in a source
/// file the program links.
#define MAPRECT_REGISTER_MODEL(NAME, ...)                                                            \
  static const bool maprect_model_registered_##NAME [[maybe_unused]] =                               \
      ::maprect::register_model(::maprect::make_model_entry<__VA_ARGS__>(#NAME))
