#pragma once
/// \file job_data: the per-job data of a map_rect call site, owned by maprect and immutable.

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace maprect {

/// The rows x_r and x_i of a call site's jobs, one row per job, checked once and never changed. Copies
/// share the rows and the identity of the object they were copied from; a job_data built anew, even from
/// equal rows, has an identity of its own. Over a cluster the workers keep the rows of the job_data they
/// were last sent, so a call with the same object (or a copy of it) sends no data and checks nothing, and
/// a call with another object ships its rows as new data.
class job_data {
 public:
  /// No jobs.
  job_data() : job_data(std::vector<std::vector<double>>{}, std::vector<std::vector<int>>{}) {}
  /// Rows of job j: x_r[j] (reals) and x_i[j] (ints). Throws std::invalid_argument naming the row and the
  /// sizes when x_r and x_i have different row counts or their rows are not all as long as their first.
  job_data(std::vector<std::vector<double>> x_r, std::vector<std::vector<int>> x_i)
      : rows_(std::make_shared<const rows>(checked(std::move(x_r), std::move(x_i)))) {}

  /// Real rows, one per job.
  const std::vector<std::vector<double>>& x_r() const { return rows_->x_r; }
  /// Integer rows, one per job.
  const std::vector<std::vector<int>>& x_i() const { return rows_->x_i; }
  /// Number of jobs (rows).
  int size() const { return static_cast<int>(rows_->x_r.size()); }
  /// Identity of the rows: equal for copies of one object, different (and never reused) for objects built
  /// apart. Never 0.
  std::uint64_t id() const { return rows_->id; }

 private:
  struct rows {
    std::vector<std::vector<double>> x_r;
    std::vector<std::vector<int>> x_i;
    std::uint64_t id;
  };

  static std::uint64_t next_id() {
    static std::atomic<std::uint64_t> last{0};
    return last.fetch_add(1, std::memory_order_relaxed) + 1;
  }

  template <class T>
  static void check_rows(const std::vector<std::vector<T>>& x, const char* name) {
    for (std::size_t j = 1; j < x.size(); ++j)
      if (x[j].size() != x[0].size())
        throw std::invalid_argument(std::string("job_data: ") + name + "[" + std::to_string(j) + "] has size " +
                                    std::to_string(x[j].size()) + ", expected " + std::to_string(x[0].size()) +
                                    " (the size of " + name + "[0])");
  }

  static rows checked(std::vector<std::vector<double>> x_r, std::vector<std::vector<int>> x_i) {
    if (x_r.size() != x_i.size())
      throw std::invalid_argument("job_data: x_r has " + std::to_string(x_r.size()) + " rows but x_i has " +
                                  std::to_string(x_i.size()) + " (one row of each per job)");
    check_rows(x_r, "x_r");
    check_rows(x_i, "x_i");
    return {std::move(x_r), std::move(x_i), next_id()};
  }

  std::shared_ptr<const rows> rows_;
};

}  // namespace maprect
