// The move_share command, both sides: a new root share for a call site; each worker receives the rows and
// output counts of the jobs it gains and keeps the rest.
#include <vector>

#include "src/map_rect/root_steps.hpp"
#include "src/worker/worker_steps.hpp"

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
  // With every row everywhere the copy already holds every job's rows, and stays.
  const bool copy = site.data_id == 0 && !site.rows_everywhere;
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
  if (copy) {
    site.x_r.swap(x_r);
    site.x_i.swap(x_i);
  }
  if (!site.rows_everywhere) site.rows_first = root_jobs;
  site.next_root_jobs = -1;
  lay_out_results(s, site);
  s.root.mid_call = false;
}

// ---- the worker's side ----

void serve_move_share(cluster_state& s, const wire::request& v) {
  worker_site& site = s.worker.sites[v.call_id];
  const chunk_plan before = site.plan, now{v.n_jobs, s.size, v.root_jobs};
  const job_range mine{now.first(s.rank), now.first(s.rank + 1)};
  gained_rows& g = s.call.gained;
  g.expect(jobs_gained({before.first(s.rank), before.first(s.rank + 1)}, mine).size(), v.row_real, v.row_int);
  exchange_gained(s.ends(), g);

  if (site.rows_everywhere) {  // every row is here already: only the plan and the planned counts move
    site.plan = now;
    site.job_begin = mine.begin;
    site.n_jobs = mine.size();
    site.counts.assign(site.all_counts.begin() + mine.begin, site.all_counts.begin() + mine.end);
    lay_out_site(s, site, v);
    return;
  }
  const auto jobs = static_cast<std::size_t>(mine.size());
  std::vector<std::vector<double>> x_r(jobs);
  std::vector<std::vector<int>> x_i(jobs);
  std::vector<int> planned(jobs);
  std::size_t next = 0;  // the next gained job's place in what was received
  for_each_job_moved(before, now, s.rank, [&](int j, bool gained, int kept) {
    const auto local = static_cast<std::size_t>(j - mine.begin);
    if (gained) {
      planned[local] = g.counts[next];
      x_r[local].assign(g.reals.begin() + next * v.row_real, g.reals.begin() + (next + 1) * v.row_real);
      x_i[local].assign(g.ints.begin() + next * v.row_int, g.ints.begin() + (next + 1) * v.row_int);
      ++next;
    } else {
      planned[local] = site.counts[kept];
      x_r[local] = std::move(site.x_r[kept]);
      x_i[local] = std::move(site.x_i[kept]);
    }
  });
  site.plan = now;
  site.job_begin = mine.begin;
  site.n_jobs = mine.size();
  site.x_r = std::move(x_r);
  site.x_i = std::move(x_i);
  site.rows_first = mine.begin;
  site.counts = std::move(planned);
  lay_out_site(s, site, v);
}

}  // namespace maprect::detail
