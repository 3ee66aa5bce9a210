// A new root share for a call site: each worker receives the rows of the jobs it gains and keeps the rest.
#include <vector>

#include "src/map_rect/root_steps.hpp"

namespace maprect::detail {

void move_share(cluster_state& s, root_site& site, const call_request& req, int root_jobs) {
  const chunk_plan before = site.plan, now{req.n_jobs, s.size, root_jobs};
  const int row_real = site.row_real, row_int = site.row_int;
  s.root.mid_call = true;
  wire::request header = header_of(command::move_share, req, row_real, row_int);
  header.root_jobs = root_jobs;
  send_request(s, header);  // the call that follows sends the shared parameters

  // Per worker, in job order, what it gains; the copy of the workers' rows (kept only for rows the caller
  // may change) follows them: a kept row as the worker holds it, a gained one as it is sent now.
  const bool copy = site.data_id == 0;
  gained_rows& g = s.call.gained;
  g = {};
  std::vector<double> x_r;
  std::vector<int> x_i;
  if (copy) {
    x_r.reserve(static_cast<std::size_t>(now.n_jobs - root_jobs) * row_real);
    x_i.reserve(static_cast<std::size_t>(now.n_jobs - root_jobs) * row_int);
  }
  for (int r = 1; r < s.size; ++r) {
    g.begin_worker(r, s.size);
    for_each_job_moved(before, now, r, [&](int j, bool gained, int kept) {
      const std::vector<double>& caller_real = (*req.x_r)[j];
      const std::vector<int>& caller_int = (*req.x_i)[j];
      if (gained) g.add(site.counts[j], caller_int, caller_real);
      if (!copy) return;
      if (gained) {
        x_r.insert(x_r.end(), caller_real.begin(), caller_real.end());
        x_i.insert(x_i.end(), caller_int.begin(), caller_int.end());
      } else {
        const auto k = static_cast<std::size_t>(kept + before.first(r) - before.root_jobs);
        x_r.insert(x_r.end(), site.x_r.begin() + k * row_real, site.x_r.begin() + (k + 1) * row_real);
        x_i.insert(x_i.end(), site.x_i.begin() + k * row_int, site.x_i.begin() + (k + 1) * row_int);
      }
    });
    g.end_worker(r);
  }
  exchange_gained(s.ends(), g);
  s.root.last_traffic.sent += sizeof(int) * (g.counts.size() + g.ints.size()) + sizeof(double) * g.reals.size();

  site.plan = now;
  site.param_layout.assign(now, req.n_job_params);
  site.x_r.swap(x_r);
  site.x_i.swap(x_i);
  site.next_root_jobs = -1;
  lay_out_results(s, site);
  s.root.mid_call = false;
}

}  // namespace maprect::detail
