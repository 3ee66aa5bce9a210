// Keeping a call site's rows on a worker between calls.
#include "workers/call_site_cache.hpp"

namespace maprect::detail {

void worker_site::store_rows(const double* real, int row_real, const int* ints, int row_int) {
  x_r.resize(static_cast<std::size_t>(n_jobs));
  x_i.resize(static_cast<std::size_t>(n_jobs));
  for (int j = 0; j < n_jobs; ++j) {
    x_r[j].assign(real + static_cast<std::ptrdiff_t>(j) * row_real, real + static_cast<std::ptrdiff_t>(j + 1) * row_real);
    x_i[j].assign(ints + static_cast<std::ptrdiff_t>(j) * row_int, ints + static_cast<std::ptrdiff_t>(j + 1) * row_int);
  }
}

}  // namespace maprect::detail
