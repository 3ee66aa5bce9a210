// The models of `maprect sample`: logreg (call id 1), pk2cmt (call id 2), eight_schools (call id 3).
#include "sample_model.hpp"

#include <fstream>
#include <iomanip>
#include <sstream>

#include "eight_schools.hpp"
#include "logreg.hpp"
#include "pk2cmt.hpp"

namespace maprect::cli {

namespace {

constexpr int default_logreg_groups = 8;
constexpr int default_logreg_points = 200;
constexpr int default_pk2cmt_subjects = 16;

/// FNV-1a of a file's bytes, as hex: a cheap identity of the data for checkpoints.
std::string file_identity(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  std::ostringstream out;
  out << "fnv1a-" << std::hex << std::setw(16) << std::setfill('0') << detail::fnv1a(bytes.str());
  return out.str();
}

std::shared_ptr<sample_model> logreg(const sample_command_options& o) {
  auto m = std::make_shared<sample_model>();
  std::shared_ptr<models::logreg_model> model;
  if (!o.data.empty()) {
    model = std::make_shared<models::logreg_model>(models::read_logreg_csv(o.data));
    m->data_identity = file_identity(o.data);
    m->description = "logreg: " + std::to_string(model->n_groups()) + " groups from " + o.data;
  } else {
    const int groups = o.jobs > 0 ? o.jobs : default_logreg_groups;
    const int points = o.points > 0 ? o.points : default_logreg_points;
    model = std::make_shared<models::logreg_model>(groups, points);
    m->data_identity = "embedded-" + std::to_string(groups) + "x" + std::to_string(points);
    m->description = "logreg: " + std::to_string(groups) + " groups of " + std::to_string(points) + " points (embedded)";
  }
  m->size = model->size();
  m->log_density = var_log_density([model](const vector_v& q) { return model->log_density(q); });
  m->columns = {"alpha", "beta"};
  for (int j = 1; j <= model->n_groups(); ++j) {
    m->columns.push_back("u." + std::to_string(j));
    m->columns.push_back("v." + std::to_string(j));
  }
  m->write_array = [](const Eigen::VectorXd& q) { return q; };
  const Eigen::VectorXd& truth = model->data().true_parameters;
  if (truth.size() == m->size)
    m->truth = {{"alpha", truth(0)}, {"beta", truth(1)}};
  return m;
}

std::shared_ptr<sample_model> pk2cmt(const sample_command_options& o) {
  auto m = std::make_shared<sample_model>();
  const int subjects = o.jobs > 0 ? o.jobs : default_pk2cmt_subjects;
  auto model = std::make_shared<models::pk2cmt_model>(subjects);
  m->data_identity = "embedded-" + std::to_string(subjects);
  m->description = "pk2cmt: " + std::to_string(subjects) + " simulated subjects (embedded)";
  m->size = model->size();
  m->log_density = [model](const Eigen::VectorXd& q, Eigen::VectorXd& g) { return model->log_density_gradient(q, g); };
  for (const char* prefix : {"mu_", "log_omega_"})
    for (const char* pk : models::pk2cmt_pk_names) m->columns.push_back(std::string(prefix) + pk);
  m->columns.push_back("log_sigma");
  for (int j = 1; j <= subjects; ++j)
    for (int k = 1; k <= models::pk2cmt_n_pk; ++k)
      m->columns.push_back("theta." + std::to_string(j) + "." + std::to_string(k));
  m->write_array = [](const Eigen::VectorXd& q) { return q; };
  return m;
}

std::shared_ptr<sample_model> eight_schools() {
  auto m = std::make_shared<sample_model>();
  auto model = std::make_shared<models::eight_schools_model>();
  m->data_identity = "embedded";
  m->description = "eight_schools: non-centred, one map_rect job per school (embedded data)";
  m->size = model->size();
  m->log_density = var_log_density([model](const vector_v& q) { return model->log_density(q); });
  m->columns = model->column_names();
  m->write_array = [model](const Eigen::VectorXd& q) { return model->write_array(q); };
  return m;
}

}  // namespace

double default_delta(const std::string& model) {
  return model == "eight_schools" ? models::eight_schools_default_delta : sample_options{}.delta;
}

std::shared_ptr<sample_model> make_sample_model(const sample_command_options& o) {
  std::shared_ptr<sample_model> m;
  if (o.model == "eight_schools")
    m = eight_schools();
  else if (o.model == "pk2cmt")
    m = pk2cmt(o);
  else
    m = logreg(o);
  m->name = o.model;
  return m;
}

}  // namespace maprect::cli
