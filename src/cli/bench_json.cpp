// maprect bench: the JSON report, every record and summary with how and where they were taken.
#include "bench_records.hpp"
#include "json_output.hpp"
#include "spmd.hpp"

namespace maprect::cli {

namespace {

json record_json(const bench_record& r) {
  return {{"jobs", r.jobs},
          {"points", r.points},
          {"kernel", r.kernel},
          {"backend", r.backend},
          {"ranks", r.ranks},
          {"working_ranks", r.working_ranks},
          {"repeats", r.repeats},
          {"median_us", r.median_us},
          {"min_us", r.min_us},
          {"mean_us", r.mean_us},
          {"first_call_us", value_or_null(r.first_call_us)},
          {"first_call_over_steady", value_or_null(r.first_call_over_steady)},
          {"root_us_per_job", value_or_null(r.root_us_per_job)},
          {"worker_us_per_job", value_or_null(r.worker_us_per_job)},
          {"check_us", value_or_null(r.check_us)},
          {"root_jobs", value_or_null(r.root_jobs)},
          {"threads", value_or_null(r.threads)},
          {"thread_slowest_us", value_or_null(r.thread_slowest_us)},
          {"thread_fastest_us", value_or_null(r.thread_fastest_us)},
          {"worker_thread_slowest_us", value_or_null(r.worker_thread_slowest_us)},
          {"worker_thread_fastest_us", value_or_null(r.worker_thread_fastest_us)},
          {"root_serial_us", value_or_null(r.root_serial_us)},
          {"root_serial_min_us", value_or_null(r.root_serial_min_us)},
          {"root_serial_over_in_process", value_or_null(r.root_serial_over_in_process)},
          {"root_serial_in_process_cpu_us", value_or_null(r.root_serial_in_process_cpu_us)},
          {"root_serial_call_cpu_us", value_or_null(r.root_serial_call_cpu_us)},
          {"root_serial_wait_cpu_us", value_or_null(r.root_serial_wait_cpu_us)},
          {"root_serial_calls", value_or_null(r.root_serial_calls)},
          {"root_serial_checked_rows", value_or_null(r.root_serial_checked_rows)},
          {"root_serial_calls_with_jobs", value_or_null(r.root_serial_calls_with_jobs)},
          {"root_serial_jobs_run", value_or_null(r.root_serial_jobs_run)},
          {"root_serial_with_jobs_us", value_or_null(r.root_serial_with_jobs_us)},
          {"log_density", value_or_null(r.log_density)},
          {"max_abs_diff_vs_analytic", value_or_null(r.max_abs_diff_vs_analytic)},
          {"bytes_sent", value_or_null(r.bytes_sent)},
          {"bytes_received", value_or_null(r.bytes_received)},
          {"bytes_through_memory", value_or_null(r.bytes_through_memory)},
          {"tape_bytes_per_output", value_or_null(r.tape_bytes_per_output)},
          {"tape_nodes_per_output", value_or_null(r.tape_nodes_per_output)},
          {"grainsize", value_or_null(r.grainsize)},
          {"single_tape_over_this", value_or_null(r.single_tape_over_this)},
          {"map_rect_over_this", value_or_null(r.map_rect_over_this)},
          {"tape_breakdown",
           {{"node", value_or_null(r.tape_node_bytes_per_output)},
            {"partials", value_or_null(r.tape_partials_bytes_per_output)},
            {"operand_records", value_or_null(r.tape_other_bytes_per_output)}}}};
}

json summary_json(const bench_summary& s, int ranks) {
  return {{"jobs", s.jobs},
          {"points", s.points},
          {"kernel", s.kernel},
          {"ranks", ranks},
          {"single_tape_over_analytic", value_or_null(s.single_tape_over_analytic)},
          {"in_process_over_single_tape", value_or_null(s.in_process_over_single_tape)},
          {"cluster_speedup_over_in_process", value_or_null(s.cluster_speedup_over_in_process)},
          {"cluster_over_raw_mpi_floor", value_or_null(s.cluster_over_raw_mpi_floor)},
          {"in_process_overhead_us_per_job", value_or_null(s.in_process_overhead_us_per_job)},
          {"first_call_over_steady", value_or_null(s.first_call_over_steady)},
          {"check_over_in_process", value_or_null(s.check_over_in_process)},
          {"single_tape_over_cluster", value_or_null(s.single_tape_over_cluster)}};
}

}  // namespace

void write_bench_json(std::ostream& out, const bench_results& results, int ranks, int repeat,
                      const std::string& command_line) {
  json records = json::array();
  for (const auto& r : results.records) records.push_back(record_json(r));
  json summaries = json::array();
  for (const auto& s : results.summaries) summaries.push_back(summary_json(s, ranks));
  const json document = {
      {"records", std::move(records)},
      {"summary", std::move(summaries)},
      {"ranks", ranks},
      {"repeat", repeat},
      {"data", results.data},
      {"thread_cpu_clock_read_us", results.clock_read_us},
      {"command_line", command_line},
      {"hostname", host_name()},
      {"date", utc_timestamp()},
      {"unit", "microseconds per gradient"},
      {"method", "backends timed round-robin, one sample each per round; ratios are medians over rounds of each "
                 "round's ratio"},
      {"model", "standard benchmark model (docs/benchmark-model.md)"}};
  write_json_document(out, document);
}

}  // namespace maprect::cli
