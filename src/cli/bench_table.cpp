// maprect bench: the printed table, one row per size and kernel, and the notes below it.
#include <cstdio>
#include <string>

#include "bench_records.hpp"

namespace maprect::cli {

const bench_record* find_record(const std::vector<bench_record>& records, int J, int N, const std::string& kernel,
                                const std::string& backend) {
  for (const auto& r : records)
    if (r.jobs == J && r.points == N && r.kernel == kernel && r.backend == backend) return &r;
  return nullptr;
}

namespace {

std::string cell(const std::optional<double>& x, const char* format) {
  if (!x) return "-";
  char text[32];
  std::snprintf(text, sizeof text, format, *x);
  return text;
}

std::string cell(double x, const char* format) { return cell(std::optional<double>(x), format); }

std::string time_cell(const bench_record* r) { return r ? cell(r->median_us, "%.2f") : std::string("-"); }

void print_header(int ranks) {
  std::printf("\nmedian time per gradient in us (%d rank%s); ratios: median over rounds of each round's ratio "
              "(cl/floor: of medians); first: first call / steady\n",
              ranks, ranks == 1 ? "" : "s");
  std::printf("%-9s %-6s %9s %9s %9s %9s %9s | %7s %7s %7s %8s %6s | %10s %16s %8s | %15s\n", "JxN", "kernel",
              "analytic", "single", "in_proc", "cluster", "mpi_floor", "st/an", "ip/st", "speedup", "cl/floor",
              "first", "first_call", "bytes sent/recv", "tape B/o", "us/job root|wkr");
}

/// The row of one size and kernel: the median times of every backend, the ratios, and what the cluster's
/// calls cost beyond time (first call, bytes, tape, work per job on each side).
void print_row(const std::vector<bench_record>& rs, const bench_summary& s) {
  const bench_record* local = find_record(rs, s.jobs, s.points, s.kernel, "in_process");
  const bench_record* remote = find_record(rs, s.jobs, s.points, s.kernel, "cluster");
  std::string bytes = "-";
  if (remote && remote->bytes_sent)
    bytes = std::to_string(*remote->bytes_sent) + "/" + std::to_string(*remote->bytes_received);
  const bench_record* tape_source = remote ? remote : local;
  const std::string size = std::to_string(s.jobs) + "x" + std::to_string(s.points);
  std::string per_job = "-";
  if (remote && remote->root_us_per_job && remote->worker_us_per_job)
    per_job = cell(remote->root_us_per_job, "%.3g") + "|" + cell(remote->worker_us_per_job, "%.3g");
  std::printf("%-9s %-6s %9s %9s %9s %9s %9s | %7s %7s %7s %8s %6s | %10s %16s %8s | %15s\n", size.c_str(),
              s.kernel.c_str(), time_cell(find_record(rs, s.jobs, s.points, "none", "analytic")).c_str(),
              time_cell(find_record(rs, s.jobs, s.points, s.kernel, "single_tape")).c_str(),
              time_cell(local).c_str(), time_cell(remote).c_str(),
              time_cell(find_record(rs, s.jobs, s.points, "none", "raw_mpi_floor")).c_str(),
              cell(s.single_tape_over_analytic, "%.2f").c_str(), cell(s.in_process_over_single_tape, "%.2f").c_str(),
              cell(s.cluster_speedup_over_in_process, "%.2f").c_str(),
              cell(s.cluster_over_raw_mpi_floor, "%.2f").c_str(), cell(s.first_call_over_steady, "%.2f").c_str(),
              remote && remote->first_call_us ? cell(*remote->first_call_us, "%.1f").c_str() : "-", bytes.c_str(),
              tape_source ? cell(tape_source->tape_bytes_per_output, "%.0f").c_str() : "-", per_job.c_str());
}

/// The notes under the table: per-job overhead and plain tape against the cluster at 512x1, the root's data
/// check, and the root tape's bytes per output.
void print_notes(const bench_results& results, int ranks) {
  const auto& rs = results.records;
  const auto& ss = results.summaries;
  for (const auto& s : ss)
    if (s.jobs == 512 && s.points == 1 && s.in_process_overhead_us_per_job)
      std::printf("per-job overhead of in_process over single_tape at 512x1 (%s): %.3f us/job\n", s.kernel.c_str(),
                  *s.in_process_overhead_us_per_job);
  for (const auto& s : ss)
    if (s.jobs == 512 && s.points == 1 && s.single_tape_over_cluster)
      std::printf("one plain tape / cluster at 512x1 (%s): %.2f\n", s.kernel.c_str(), *s.single_tape_over_cluster);
  for (const auto& s : ss)
    if (s.check_over_in_process) {
      const bench_record* remote = find_record(rs, s.jobs, s.points, s.kernel, "cluster");
      std::printf("root's data check per cluster call at %dx%d (%s): %.1f us, %.2f%% of the in_process call\n",
                  s.jobs, s.points, s.kernel.c_str(), remote ? remote->check_us.value_or(0) : 0.0,
                  100 * *s.check_over_in_process);
    }
  for (const auto& r : rs)
    if (r.backend == (ranks > 1 ? "cluster" : "in_process") && r.tape_bytes_per_output) {
      std::printf("root tape per map_rect output (%s): %.1f B = node %.0f + partials %.0f + operand records %.1f; "
                  "%.2f nodes per output\n",
                  r.backend.c_str(), *r.tape_bytes_per_output, *r.tape_node_bytes_per_output,
                  *r.tape_partials_bytes_per_output, *r.tape_other_bytes_per_output, *r.tape_nodes_per_output);
      break;
    }
}

/// The root's serial work per steady cluster call, one row per size and kernel, after the table: from the
/// root-work calls in which the root ran no jobs, and how many calls gave it jobs instead (with the estimate
/// from those, which only a machine without other load makes trustworthy).
void print_root_serial_work(const bench_results& results) {
  bool header = false;
  for (const auto& r : results.records) {
    if (r.backend != "cluster" || !r.root_serial_calls) continue;
    if (!header) {
      std::printf("\nroot's serial work per steady cluster call, rows as %s (CPU us of its thread, medians; serial = "
                  "call - collecting answers; share: of the in_process gradient's CPU us; one clock read %.2f us)\n",
                  results.data == "job_data" ? "a job_data" : "x_r/x_i", results.clock_read_us);
      std::printf("%-9s %-6s %9s %9s %10s %10s %10s %9s %6s | %8s %6s %10s\n", "JxN", "kernel", "serial", "min",
                  "share", "in_proc", "call", "collect", "calls", "w/ jobs", "jobs", "estimate");
      header = true;
    }
    const std::string size = std::to_string(r.jobs) + "x" + std::to_string(r.points);
    const std::optional<double> share =
        r.root_serial_over_in_process ? std::optional<double>(100 * *r.root_serial_over_in_process) : std::nullopt;
    std::printf("%-9s %-6s %9s %9s %10s %10s %10s %9s %6d | %8d %6d %10s\n", size.c_str(), r.kernel.c_str(),
                cell(r.root_serial_us, "%.2f").c_str(), cell(r.root_serial_min_us, "%.2f").c_str(),
                cell(share, "%.4f%%").c_str(), cell(r.root_serial_in_process_cpu_us, "%.1f").c_str(),
                cell(r.root_serial_call_cpu_us, "%.1f").c_str(),
                cell(r.root_serial_wait_cpu_us, "%.1f").c_str(), *r.root_serial_calls,
                r.root_serial_calls_with_jobs.value_or(0), r.root_serial_jobs_run.value_or(0),
                cell(r.root_serial_with_jobs_us, "%.1f").c_str());
  }
  if (header)
    std::printf("(w/ jobs: calls in which the root ran jobs, left out above; estimate: their CPU us less collecting "
                "and\n the jobs' wall-clock us, which load drives down; MAPRECT_BALANCE=even keeps the root off "
                "those jobs)\n");
}

/// One row per reduce_sum record: its time, against one plain tape and map_rect(...).sum() on the same
/// ranks, and its bytes per call.
void print_reduce_rows(const std::vector<bench_record>& rs) {
  bool header = false;
  for (const auto& r : rs) {
    if (r.backend != "reduce_sum") continue;
    if (!header) {
      std::printf("\nreduce_sum over the groups (%d rank%s): median us per gradient; ratios: median over rounds\n",
                  r.ranks, r.ranks == 1 ? "" : "s");
      std::printf("%-9s %-6s %9s %9s %12s %12s %16s\n", "JxN", "kernel", "grainsize", "reduce", "single/red",
                  "map_rect/red", "bytes sent/recv");
      header = true;
    }
    std::string bytes = "-";
    if (r.bytes_sent) bytes = std::to_string(*r.bytes_sent) + "/" + std::to_string(r.bytes_received.value_or(0));
    const std::string size = std::to_string(r.jobs) + "x" + std::to_string(r.points);
    std::printf("%-9s %-6s %9d %9s %12s %12s %16s\n", size.c_str(), r.kernel.c_str(), r.grainsize.value_or(0),
                cell(r.median_us, "%.2f").c_str(), cell(r.single_tape_over_this, "%.2f").c_str(),
                cell(r.map_rect_over_this, "%.2f").c_str(), bytes.c_str());
  }
}

}  // namespace

void print_bench_table(const bench_results& results, int ranks) {
  print_header(ranks);
  for (const auto& s : results.summaries) print_row(results.records, s);
  print_notes(results, ranks);
  print_root_serial_work(results);
  print_reduce_rows(results.records);
  std::fflush(stdout);
}

}  // namespace maprect::cli
