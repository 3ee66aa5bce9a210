// The steps that the worker's side of a map_rect call's commands share (worker_steps.hpp).
#include "src/worker/worker_steps.hpp"

#include <algorithm>
#include <maprect/detail/job_error.hpp>
#include <maprect/detail/job_runner.hpp>
#include <maprect/detail/registry.hpp>
#include <string>

#include "src/protocol/chunk_plan.hpp"
#include "src/protocol/exchange.hpp"

namespace maprect::detail {

job_error unregistered_call(int call_id, int rank) {
  return {error_type::invalid_argument,
          "call id " + std::to_string(call_id) + " is not registered on rank " + std::to_string(rank)};
}

void receive_job_parameters(map_rect_context& s, worker_site& site, const wire::request& v) {
  site.job_params.resize(static_cast<std::size_t>(v.n_job) * site.n_jobs);
  if (static_cast<long long>(v.n_job) * v.n_jobs == 0) return;
  post_parameters(s.ends(), named_collective(v, v.chunk_out), nullptr, {}, site.job_params.data(),
                  static_cast<int>(site.job_params.size()));
}

int run_jobs(map_rect_context& s, worker_site& site, const wire::request& v, const double* shared,
             const double* job_params, int status_slots, bool claiming, int& end, double* slot_blocks) {
  site.out.assign(static_cast<std::size_t>(status_slots), 0.0);
  site.run_counts.assign(static_cast<std::size_t>(site.n_jobs), 0);
  end = 0;
  auto next = [&]() -> job_range {
    if (claiming) return s.host.claims.claim_front();
    return end == 0 ? job_range{0, site.n_jobs} : job_range{};
  };
  int begin = 0, cursor = 0;
  try {
    const functor_entry* f = find_functor(v.call_id);
    if (f == nullptr)
      throw std::invalid_argument(unregistered_call(v.call_id, s.rank).message);
    for (job_range got = next(); !got.empty(); got = next()) {
      begin = got.begin;
      end = got.end;
      const chunk_input in{shared,
                           v.n_shared,
                           job_params + static_cast<std::ptrdiff_t>(got.begin) * v.n_job,
                           v.n_job,
                           site.own_x_r() + got.begin,
                           site.own_x_i() + got.begin,
                           got.size(),
                           nullptr};
      s.chunks.run(s.team.get(), f->run[v.kinds], in, site.out, site.run_counts.data() + got.begin, cursor);
      if (claiming && !std::equal(site.run_counts.begin() + got.begin, site.run_counts.begin() + got.end,
                                  site.counts.begin() + got.begin)) {
        end = s.host.claims.claim_rest();  // counts_changed: the blocks no longer fit the plan
        return -1;
      }
      if (slot_blocks) {
        const std::size_t from = static_cast<std::size_t>(status_slots + site.block_at[got.begin]);
        std::copy(site.out.data() + from, site.out.data() + site.out.size(), slot_blocks + site.block_at[got.begin]);
        s.host.claims.publish(got.end);
      }
    }
  } catch (...) {
    s.last_error = current_job_error();
    if (claiming) end = s.host.claims.claim_rest();
    return site.job_begin + begin + cursor;
  }
  return -1;
}

void lay_out_site(map_rect_context& s, worker_site& site, const wire::request& v) {
  const int rows = rows_per_output(static_cast<param_kinds>(v.kinds), v.n_shared, v.n_job);
  site.block_at.resize(static_cast<std::size_t>(site.n_jobs));
  site.planned_doubles = lay_out_answer(site.counts.data(), site.n_jobs, rows, site.block_at.data());
  if (site.rows_everywhere) {  // where any rank's jobs' blocks go in its slot, as the root lays them out
    site.all_block_at.resize(site.all_counts.size());
    for (int r = 0; r < s.size; ++r)
      block_offsets(site.all_counts.data() + site.plan.first(r), site.plan.jobs(r), rows,
                    site.all_block_at.data() + site.plan.first(r));
  }
  s.host.reserve(slot_doubles(v.n_job, site.n_jobs, site.planned_doubles), s.comm,
                 static_cast<long long>(v.n_job) * site.n_jobs);
}

}  // namespace maprect::detail
