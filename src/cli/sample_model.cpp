// The program's models, from the registry: data loading, the sampler's view, and --init.
#include "sample_model.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "src/sampling/checkpoint.hpp"

namespace maprect::cli {

namespace {

/// A file's bytes; throws data_error naming it when it cannot be read.
std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

/// FNV-1a of a file's bytes, as hex: a cheap identity of the data for checkpoints.
std::string file_identity(const std::string& path) {
  std::ostringstream out;
  out << "fnv1a-" << std::hex << std::setw(16) << std::setfill('0') << detail::fnv1a(file_bytes(path));
  return out.str();
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

/// JSON unless the model reads CSV and the file neither ends in .json nor starts (after blanks) with '{'.
bool is_csv(const model_entry& entry, const std::string& path) {
  if (!entry.read_csv || ends_with(path, ".json")) return false;
  if (std::filesystem::is_directory(path)) return true;  // the CSV reader names it
  std::ifstream in(path, std::ios::binary);
  char c = 0;
  while (in.get(c) && std::isspace(static_cast<unsigned char>(c))) {
  }
  return !(in && c == '{');
}

}  // namespace

std::vector<std::string> registered_model_names() {
  std::vector<std::string> names;
  for (const auto& [name, entry] : model_registry()) names.push_back(name);
  return names;
}

void check_model_arguments(const std::string& name, const std::string& data, int jobs, int points) {
  const model_entry& entry = find_model(name);
  if (!data.empty() || (jobs <= 0 && points <= 0)) return;
  if (!entry.embedded_data)
    throw std::invalid_argument("--jobs and --points set the embedded data of logreg and pk2cmt; " + name +
                                " reads its data from --data");
  entry.embedded_data(jobs, points);  // throws std::invalid_argument for sizes the model does not take
}

model_data load_model_data(const std::string& name, const std::string& path, int jobs, int points,
                           std::string& identity) {
  const model_entry& entry = find_model(name);
  if (path.empty()) {
    if (!entry.embedded_data) {
      identity = "none";
      return model_data(nlohmann::json::object(), "the data (no --data given)");
    }
    identity = "embedded-" + std::to_string(jobs) + "x" + std::to_string(points);
    return model_data(entry.embedded_data(jobs, points), "the embedded data");
  }
  model_data data = is_csv(entry, path) ? model_data(entry.read_csv(path), path) : model_data::read(path);
  identity = file_identity(path);
  return data;
}

loaded_model load_model(const std::string& name, const std::string& data, int jobs, int points) {
  loaded_model m;
  const model_data d = load_model_data(name, data, jobs, points, m.data_identity);
  m.model = find_model(name).make(d);
  m.description = name + ": " + m.model->description() + (data.empty() ? " (embedded data)" : " from " + data);
  return m;
}

double default_delta(const std::string& model) {
  const auto it = model_registry().find(model);
  return it == model_registry().end() ? sample_options{}.delta : it->second.adapt_delta;
}

std::shared_ptr<sample_model> make_sample_model(const sample_command_options& o) {
  const loaded_model loaded = load_model(o.model, o.data, o.jobs, o.points);
  auto m = std::make_shared<sample_model>();
  const std::shared_ptr<const maprect::model> model = loaded.model;
  m->name = o.model;
  m->description = loaded.description;
  m->data_identity = loaded.data_identity;
  m->size = model->size();
  m->log_density = [model](const Eigen::VectorXd& q, Eigen::VectorXd& g) { return model->log_density(q, g, true); };
  m->columns = model->column_names();
  m->write_array = [model](const Eigen::VectorXd& q) { return model->write_array(q); };
  m->truth = model->truth();
  m->model = model;
  return m;
}

init_option parse_init(const std::string& text) {
  init_option init;
  char* end = nullptr;
  const double radius = text.empty() ? NAN : std::strtod(text.c_str(), &end);
  if (end && *end == '\0' && !text.empty()) {
    if (!(radius >= 0) || !std::isfinite(radius))
      throw std::invalid_argument("--init " + text + ": a radius must be a finite number >= 0");
    init.radius = radius;
    return init;
  }
  if (!std::filesystem::is_regular_file(text))
    throw std::invalid_argument("--init '" + text + "': neither a number >= 0 nor a readable JSON file");
  init.file = text;
  return init;
}

std::string init_identity(const init_option& init) {
  if (init.file.empty()) {
    std::ostringstream out;
    out << std::setprecision(17) << init.radius;
    return out.str();
  }
  return "file:" + file_identity(init.file);
}

std::vector<std::string> check_init_file(const maprect::model& model, const std::string& file) {
  const model_data init = model_data::read(file, "parameter");
  read_init_values(model.parameters(), init);
  std::vector<std::string> unknown;
  for (const auto& [name, value] : init.json().items()) {
    bool known = false;
    for (const std::string& column : model.column_names())
      known = known || column == name || column.compare(0, name.size() + 1, name + ".") == 0;
    if (!known) unknown.push_back(name);
  }
  return unknown;
}

Eigen::VectorXd initial_point(const sample_model& m, const init_option& init, std::uint64_t seed, int chain) {
  const init_values given = read_init_values(m.model->parameters(), model_data::read(init.file, "parameter"));
  // A stream of its own, so that the chain's RNG (momenta, tree directions) is untouched by the file.
  sampler_rng rng(seed ^ 0x1a17f11e5eedull, chain);
  Eigen::VectorXd q = given.unconstrained, gradient;
  std::string why;
  for (int attempt = 0; attempt < 100; ++attempt) {
    for (Eigen::Index i = 0; i < q.size(); ++i)
      if (!given.given[static_cast<std::size_t>(i)]) q(i) = rng.uniform(-init.radius, init.radius);
    try {
      if (std::isfinite(m.log_density(q, gradient)) && gradient.allFinite()) return q;
      why = "the log density or its gradient is not finite";
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (std::find(given.given.begin(), given.given.end(), false) == given.given.end()) break;  // nothing to redraw
  }
  throw std::domain_error("chain " + std::to_string(chain) + ": no valid start from " + init.file + ": " + why);
}

}  // namespace maprect::cli
