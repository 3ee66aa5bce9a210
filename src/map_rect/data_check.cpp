// The root's check that the workers' rows are still the caller's, on every steady call given x_r/x_i
// (data_check.hpp), and whether a call fits the plan its site was made for.
#include <atomic>

#include "src/map_rect/data_check.hpp"
#include "src/map_rect/root_steps.hpp"

namespace maprect::detail {

bool same_shape(const root_site& site, const call_request& req, int row_real, int row_int) {
  return site.planned && site.kinds == req.kinds && site.n_shared == req.n_shared &&
         site.n_job_params == req.n_job_params && site.plan.n_jobs == req.n_jobs && site.row_real == row_real &&
         site.row_int == row_int;
}

namespace {

/// True when rows [begin, end) of the workers' (counted from site.rows_first) equal the copy they hold.
bool rows_current(const root_site& site, const call_request& req, int begin, int end) {
  const std::size_t w = static_cast<std::size_t>(site.rows_first);
  const auto real_at = static_cast<std::size_t>(begin) * static_cast<std::size_t>(site.row_real);
  const auto int_at = static_cast<std::size_t>(begin) * static_cast<std::size_t>(site.row_int);
  return rows_equal(req.x_r->data() + w + begin, req.x_r->data() + w + end, site.x_r.data() + real_at,
                    site.row_real) &&
         rows_equal(req.x_i->data() + w + begin, req.x_i->data() + w + end, site.x_i.data() + int_at, site.row_int);
}

/// The data check's batches on the root's team: any batch that differs marks the whole check failed.
struct team_row_check {
  const root_site& site;
  const call_request& req;
  std::atomic<bool> differs{false};
  static void run(void* self, int, int begin, int end) {
    auto& c = *static_cast<team_row_check*>(self);
    if (!c.differs.load(std::memory_order_relaxed) && !rows_current(c.site, c.req, begin, end))
      c.differs.store(true, std::memory_order_relaxed);
  }
};

/// Values of the workers' rows below which one thread checks them: a team's dispatch (about a microsecond)
/// costs what comparing some thousands of values does.
constexpr long long team_check_values = 32768;

/// True when the workers' rows equal the copy they hold, bit for bit; on the root's team when they are many
/// (the rows are independent). The root's own jobs read the caller's rows, so only the workers' can be stale
/// (with every row everywhere, every job's).
bool same_data(map_rect_context& s, const root_site& site, const call_request& req) {
  const int rows = site.plan.n_jobs - site.rows_first;
  const long long values = static_cast<long long>(rows) * (site.row_real + site.row_int);
  if (s.team == nullptr || values < team_check_values) {
    const std::size_t w = static_cast<std::size_t>(site.rows_first);
    return rows_equal(req.x_r->data() + w, req.x_r->data() + site.plan.n_jobs, site.x_r.data(), site.row_real) &&
           rows_equal(req.x_i->data() + w, req.x_i->data() + site.plan.n_jobs, site.x_i.data(), site.row_int);
  }
  team_row_check check{site, req};
  s.team->run(rows, std::max(1, rows / (4 * s.team->size())), &team_row_check::run, &check);
  return !check.differs.load(std::memory_order_relaxed);
}

}  // namespace

bool workers_data_current(map_rect_context& s, const root_site& site, const call_request& req, int& checked_rows) {
  if (req.data_id != 0) {
    checked_rows = 0;
    return true;
  }
  checked_rows = site.plan.n_jobs - site.rows_first;
  return same_data(s, site, req);
}

}  // namespace maprect::detail
