// The cost model's arithmetic (see cost_model.hpp and docs/cost-model.md).
#include "cost_model.hpp"

#include <algorithm>
#include <maprect/detail/claims_pay.hpp>
#include <cmath>
#include <queue>
#include <sstream>
#include <stdexcept>

namespace maprect::plan {

namespace {

constexpr double bytes_per_double = 8;
/// The slowest thread's share, over the mean share, from which a prediction counts as limited by balance.
constexpr double balance_threshold = 1.25;

void require_at_least(const char* name, double value, double least) {
  if (!(value >= least)) {  // also NaN
    std::ostringstream msg;
    msg << "cost model: " << name << " = " << value << ", must be >= " << least;
    throw std::invalid_argument(msg.str());
  }
}

void require_positive(const char* name, double value) {
  if (!(value > 0)) {
    std::ostringstream msg;
    msg << "cost model: " << name << " = " << value << ", must be > 0";
    throw std::invalid_argument(msg.str());
  }
}

void validate_link(const char* alpha, const char* beta, const char* overhead, const link_figures& l) {
  require_at_least(alpha, l.alpha_s, 0);
  require_positive(beta, l.beta_bytes_per_s);
  require_at_least(overhead, l.overhead_s, 0);
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

int ceil_log2(int n) {
  int levels = 0;
  for (int reach = 1; reach < n; reach *= 2) ++levels;
  return levels;
}

/// Ranks on rank 0's host, and hosts in all.
std::pair<int, int> host_split(const cost_inputs& in, int ranks) {
  return {std::min(ranks, in.ranks_per_host), ceil_div(ranks, in.ranks_per_host)};
}

/// The root receives (or sends) `messages` one after another over `l` after one latency.
double serial_messages(const link_figures& l, int messages, double bytes) {
  if (messages <= 0) return 0;
  return l.alpha_s + (messages - 1) * l.overhead_s + bytes / l.beta_bytes_per_s;
}

double flat_seconds(const cost_inputs& in, int ranks, double bytes_per_job) {
  const int on_root_host = host_split(in, ranks).first;
  const double per_rank = bytes_per_job * in.jobs / ranks;
  const int local = on_root_host - 1, remote = ranks - on_root_host;
  if (remote == 0) return serial_messages(in.local, local, per_rank * local);
  // One latency of the slower link; the root then handles every message in turn, local ones included.
  return in.remote.alpha_s + local * in.local.overhead_s + (remote - 1) * in.remote.overhead_s +
         per_rank * local / in.local.beta_bytes_per_s + per_rank * remote / in.remote.beta_bytes_per_s;
}

double hierarchical_seconds(const cost_inputs& in, int ranks, double bytes_per_job) {
  const auto [on_root_host, hosts] = host_split(in, ranks);
  if (hosts == 1 || on_root_host == 1) return flat_seconds(in, ranks, bytes_per_job);
  const double per_rank = bytes_per_job * in.jobs / ranks;
  // Every host's leader collects its own ranks at the same time, then the leaders talk to the root.
  const double within_hosts = serial_messages(in.local, on_root_host - 1, per_rank * (on_root_host - 1));
  const double between_leaders = serial_messages(in.remote, hosts - 1, per_rank * (ranks - on_root_host));
  return within_hosts + between_leaders;
}

double tree_seconds(const cost_inputs& in, int ranks, double bytes_per_job) {
  const auto [on_root_host, hosts] = host_split(in, ranks);
  // Fixed-size chunks: every rank's padded to the largest share. Round k of the tree moves 2^k chunks, first
  // within the hosts, then between them: log rounds of latency, and every chunk crosses the root's links.
  const double chunk = bytes_per_job * ceil_div(in.jobs, ranks);
  return ceil_log2(on_root_host) * in.local.alpha_s + chunk * (on_root_host - 1) / in.local.beta_bytes_per_s +
         ceil_log2(hosts) * in.remote.alpha_s + chunk * (ranks - on_root_host) / in.remote.beta_bytes_per_s;
}

/// The request's broadcast: its header and the shared parameters' values.
double request_seconds(const cost_inputs& in, int ranks) {
  return broadcast_seconds(in, ranks, in.request_bytes + bytes_per_double * in.shared_params);
}

}  // namespace

double broadcast_seconds(const cost_inputs& in, int ranks, double bytes) {
  if (ranks <= 1) return 0;
  const auto [on_root_host, hosts] = host_split(in, ranks);
  return ceil_log2(hosts) * (in.remote.alpha_s + bytes / in.remote.beta_bytes_per_s) +
         ceil_log2(on_root_host) * (in.local.alpha_s + bytes / in.local.beta_bytes_per_s);
}

namespace {

/// The job times the model uses: the measured ones, or J of the mean time.
double job_time_sum(const cost_inputs& in, int begin, int end) {
  if (in.job_times_s.empty()) return (end - begin) * in.job_s;
  double t = 0;
  for (int j = begin; j < end; ++j) t += in.job_times_s[static_cast<std::size_t>(j)];
  return t;
}

double dearest_job(const cost_inputs& in, int begin, int end) {
  if (begin >= end) return 0;
  if (in.job_times_s.empty()) return in.job_s;
  return *std::max_element(in.job_times_s.begin() + begin, in.job_times_s.begin() + end);
}

/// First job of rank r under the runtime's even split (src/protocol/chunk_plan.hpp).
int even_first(int jobs, int ranks, int r) {
  if (r <= 0) return 0;
  if (r >= ranks) return jobs;
  const int root = jobs / ranks;
  return root + static_cast<int>(static_cast<long long>(jobs - root) * (r - 1) / (ranks - 1));
}

/// The claims engine's state while claims_schedule_seconds plays a call: each rank's unstarted jobs
/// [front, back) of the even split, each thread's end of its current batch, prefix sums of the job times.
struct claims_engine {
  const cost_inputs& in;
  int threads;
  std::vector<double> scale, prefix, busy_until;
  std::vector<int> front, back;

  claims_engine(const cost_inputs& inputs, int ranks, int threads_per_rank)
      : in(inputs), threads(threads_per_rank), busy_until(static_cast<std::size_t>(ranks) * threads_per_rank) {
    for (int r = 0; r < ranks; ++r) {
      scale.push_back(rank_scale(in, r));
      front.push_back(even_first(in.jobs, ranks, r));
      back.push_back(even_first(in.jobs, ranks, r + 1));
    }
    prefix.push_back(0);
    for (int j = 0; j < in.jobs; ++j) prefix.push_back(prefix.back() + job_time_sum(in, j, j + 1));
    // The root checks the workers' rows before it starts its own jobs, spread over its team.
    const double check_s = root_check_seconds(in, ranks);
    for (int t = 0; t < threads; ++t) busy_until[static_cast<std::size_t>(t)] = check_s / threads;
  }

  double cost(int rank, int begin, int end) const { return scale[rank] * (prefix[end] - prefix[begin]); }

  /// When rank v's threads would be done with its unstarted jobs themselves, from `now`.
  double owner_end(int v, double now) const {
    double held = 0;
    for (int t = 0; t < threads; ++t) held += std::max(0.0, busy_until[static_cast<std::size_t>(v * threads + t)] - now);
    return now + (held + cost(v, front[v], back[v])) / threads;
  }

  /// Thread k, free at `now`, takes its rank's next job or claims a batch: returns its seconds, or -1 when
  /// nothing is left that it would finish before the owner would (a slow rank leaves a fast one's last jobs).
  double next_batch(int k, double now) {
    const int r = k / threads;
    if (front[r] < back[r]) {
      const int j = front[r]++;
      return cost(r, j, j + 1);
    }
    int v = -1;  // the rank with the most unstarted jobs
    for (int u = 0; u < static_cast<int>(front.size()); ++u)
      if (back[u] - front[u] > (v < 0 ? 0 : back[v] - front[v])) v = u;
    if (v < 0) return -1;
    const int first = std::max(front[v], back[v] - in.claim_batch);
    const double mine = cost(r, first, back[v]);
    if (now + mine >= owner_end(v, now)) return -1;
    back[v] = first;
    return mine;
  }
};

double compute_seconds(const cost_inputs& in, int jobs_on_slowest, int threads_in_all) {
  double t = jobs_on_slowest * in.job_s;
  // Expected largest of P T sums of n jobs with independent times: n mean + sd sqrt(n) sqrt(2 ln(P T)).
  if (threads_in_all > 1 && in.job_spread_s > 0)
    t += in.job_spread_s * std::sqrt(2.0 * jobs_on_slowest * std::log(static_cast<double>(threads_in_all)));
  return t;
}

bound_kind limiting_bound(const cost_inputs& in, const prediction& p) {
  if (p.root_s >= p.messages_s && p.root_s > p.compute_s) return bound_kind::root;
  if (p.messages_s > p.compute_s) return bound_kind::messages;
  const double mean_share = p.core_sharing * in.job_s * in.jobs / (static_cast<double>(p.ranks) * p.threads);
  return p.compute_s >= balance_threshold * mean_share ? bound_kind::balance : bound_kind::compute;
}

/// The kind of the least time; flat, then hierarchical, when equal.
gather_kind cheapest_of(double flat_s, double hierarchical_s, double tree_s) {
  gather_kind k = hierarchical_s < flat_s ? gather_kind::hierarchical : gather_kind::flat;
  if (tree_s < std::min(flat_s, hierarchical_s)) k = gather_kind::tree;
  return k;
}

/// Everything but the efficiency.
prediction predict_terms(const cost_inputs& in, int ranks, int threads) {
  prediction p;
  p.ranks = ranks;
  p.threads = threads;
  p.hosts = host_split(in, ranks).second;
  p.jobs_on_slowest = ceil_div(in.jobs, ranks * threads);
  const int threads_on_host = std::min(ranks, in.ranks_per_host) * threads;
  if (in.cores_per_host > 0 && threads_on_host > in.cores_per_host)
    p.core_sharing = static_cast<double>(threads_on_host) / in.cores_per_host;
  // More threads than cores: they take turns, and the slowest thread's jobs take that much longer.
  // Without job times or rank speeds, jobs whose costs fall at random: the spread term stands for them.
  const bool uniform = in.job_times_s.empty() && in.rank_job_scale.empty();
  const double counted = p.core_sharing;
  const double compute_alone_s = uniform ? compute_seconds(in, p.jobs_on_slowest, ranks * threads)
                                         : static_compute_seconds(in, ranks, threads);
  // Where the launched ranks' phases were measured, a call's compute waits for its slowest rank, which may
  // run after the others: their factor at its length replaces the count. The least compute stays a bound.
  p.core_sharing = phase_core_sharing(in, ranks, threads, compute_alone_s, counted);
  p.compute_s = p.core_sharing * compute_alone_s;
  const double schedule_s = claims_schedule_seconds(in, ranks, threads);
  p.compute_claims_s = schedule_s * phase_core_sharing(in, ranks, threads, schedule_s, counted);
  p.compute_bound_s = counted * claimed_compute_seconds(in, ranks, threads);
  p.termination_s = termination_seconds(in, ranks);
  p.root_check_s = root_check_seconds(in, ranks);
  p.root_s = in.root_call_s + static_cast<double>(in.jobs) * in.outputs_per_job * in.root_output_s + p.root_check_s;
  p.broadcast_s = request_seconds(in, ranks);
  if (ranks > 1) {
    const double out = scatter_bytes_per_job(in), back = gather_bytes_per_job(in);
    p.flat_s = flat_seconds(in, ranks, out) + flat_seconds(in, ranks, back);
    p.hierarchical_s = hierarchical_seconds(in, ranks, out) + hierarchical_seconds(in, ranks, back);
    p.tree_s = tree_seconds(in, ranks, out) + tree_seconds(in, ranks, back);
    p.gather = cheapest_of(p.flat_s, p.hierarchical_s, p.tree_s);
    p.scatter_s = collective_seconds(in, ranks, out, p.gather);
    p.gather_s = collective_seconds(in, ranks, back, p.gather);
    p.scatter_overlap_s = scatter_overlap_seconds(in, ranks);
  }
  // A request's broadcast, the parameters' scatter and the blocks' gather, with any rank between turns.
  p.collective_wait_s = 3 * collective_wait_seconds(in, ranks);
  p.messages_s = p.broadcast_s + p.scatter_s + p.gather_s - p.scatter_overlap_s + p.collective_wait_s;
  p.total_s = p.root_s + p.messages_s + p.compute_s;
  const double flat_messages_s = p.broadcast_s + p.flat_s - p.scatter_overlap_s + p.collective_wait_s;
  p.total_flat_s = p.root_s + flat_messages_s + p.compute_s;
  // Claimed jobs' blocks come back by job index from whichever rank ran them: as flat as the gather. The
  // other ranks claim the root's jobs while it checks their rows: the check is in the schedule instead.
  p.total_claims_s = p.root_s - p.root_check_s + flat_messages_s + p.termination_s + p.compute_claims_s;
  // On one host auto claims in host memory; across hosts by message, where calls last long enough for that.
  p.claims = ranks > 1 && (p.hosts == 1 || detail::claims_pay(p.total_claims_s, 2 * in.remote.alpha_s));
  p.total_auto_s = ranks == 1 || p.claims ? p.total_claims_s : p.total_flat_s;
  p.bound = limiting_bound(in, p);
  return p;
}

}  // namespace

const char* gather_name(gather_kind k) {
  switch (k) {
    case gather_kind::flat: return "flat";
    case gather_kind::hierarchical: return "hierarchical";
    case gather_kind::tree: return "tree";
  }
  return "?";
}

const char* bound_name(bound_kind k) {
  switch (k) {
    case bound_kind::compute: return "compute";
    case bound_kind::balance: return "balance";
    case bound_kind::messages: return "messages";
    case bound_kind::root: return "root";
  }
  return "?";
}

namespace {

/// The measured phases: a factor per length, lengths positive and ascending, factors at least 1.
void validate_phases(const cost_inputs& in) {
  if (in.phase_sharing.size() != in.phase_lengths_s.size()) {
    std::ostringstream msg;
    msg << "cost model: phase_sharing holds " << in.phase_sharing.size() << " factors, must be one per length ("
        << in.phase_lengths_s.size() << ")";
    throw std::invalid_argument(msg.str());
  }
  for (std::size_t i = 0; i < in.phase_lengths_s.size(); ++i) {
    const double length = in.phase_lengths_s[i];
    if (!(length > 0) || (i > 0 && !(length > in.phase_lengths_s[i - 1]))) {
      std::ostringstream msg;
      msg << "cost model: phase_lengths_s[" << i << "] = " << length << ", must be positive and ascending";
      throw std::invalid_argument(msg.str());
    }
    require_at_least(("phase_sharing[" + std::to_string(i) + "]").c_str(), in.phase_sharing[i], 1);
  }
  require_at_least("phase_round_s", in.phase_round_s, 0);
}

}  // namespace

void validate(const cost_inputs& in) {
  require_at_least("job_s", in.job_s, 0);
  require_at_least("job_spread_s", in.job_spread_s, 0);
  require_at_least("jobs", in.jobs, 1);
  require_at_least("outputs_per_job", in.outputs_per_job, 1);
  require_at_least("shared_params", in.shared_params, 0);
  require_at_least("job_params", in.job_params, 0);
  require_at_least("root_output_s", in.root_output_s, 0);
  require_at_least("root_call_s", in.root_call_s, 0);
  require_at_least("root_check_s_per_job", in.root_check_s_per_job, 0);
  validate_link("local.alpha_s", "local.beta_bytes_per_s", "local.overhead_s", in.local);
  validate_link("remote.alpha_s", "remote.beta_bytes_per_s", "remote.overhead_s", in.remote);
  require_at_least("ranks_per_host", in.ranks_per_host, 1);
  require_at_least("cores_per_host", in.cores_per_host, 0);
  require_at_least("request_bytes", in.request_bytes, 0);
  if (!in.job_times_s.empty() && static_cast<int>(in.job_times_s.size()) != in.jobs) {
    std::ostringstream msg;
    msg << "cost model: job_times_s holds " << in.job_times_s.size() << " times, must be empty or jobs = " << in.jobs;
    throw std::invalid_argument(msg.str());
  }
  for (std::size_t j = 0; j < in.job_times_s.size(); ++j)
    require_at_least(("job_times_s[" + std::to_string(j) + "]").c_str(), in.job_times_s[j], 0);
  for (std::size_t r = 0; r < in.rank_job_scale.size(); ++r)
    require_positive(("rank_job_scale[" + std::to_string(r) + "]").c_str(), in.rank_job_scale[r]);
  require_at_least("claim_batch", in.claim_batch, 1);
  validate_phases(in);
}

double rank_scale(const cost_inputs& in, int rank) {
  const auto& s = in.rank_job_scale;
  if (s.empty()) return 1;
  if (rank >= 0 && rank < static_cast<int>(s.size())) return s[static_cast<std::size_t>(rank)];
  std::vector<double> sorted = s;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

double static_compute_seconds(const cost_inputs& in, int ranks, int threads) {
  require_at_least("ranks", ranks, 1);
  require_at_least("threads", threads, 1);
  double slowest = 0;
  for (int r = 0; r < ranks; ++r) {
    const int begin = even_first(in.jobs, ranks, r), end = even_first(in.jobs, ranks, r + 1);
    const double own = std::max(job_time_sum(in, begin, end) / threads, dearest_job(in, begin, end));
    slowest = std::max(slowest, rank_scale(in, r) * own);
  }
  return slowest;
}

double claimed_compute_seconds(const cost_inputs& in, int ranks, int threads) {
  require_at_least("ranks", ranks, 1);
  require_at_least("threads", threads, 1);
  double speeds = 0, fastest = rank_scale(in, 0);
  for (int r = 0; r < ranks; ++r) {
    speeds += threads / rank_scale(in, r);
    fastest = std::min(fastest, rank_scale(in, r));
  }
  return std::max(job_time_sum(in, 0, in.jobs) / speeds, fastest * dearest_job(in, 0, in.jobs));
}

double root_check_seconds(const cost_inputs& in, int ranks) {
  return in.jobs * (ranks - 1.0) / ranks * in.root_check_s_per_job;
}

double claims_schedule_seconds(const cost_inputs& in, int ranks, int threads) {
  require_at_least("ranks", ranks, 1);
  require_at_least("threads", threads, 1);
  require_at_least("claim_batch", in.claim_batch, 1);
  claims_engine e(in, ranks, threads);
  // Threads by the time they are next free (then by index, so that ties resolve the same way every time).
  using slot = std::pair<double, int>;
  std::priority_queue<slot, std::vector<slot>, std::greater<slot>> free_at;
  for (int k = 0; k < ranks * threads; ++k) free_at.push({e.busy_until[static_cast<std::size_t>(k)], k});
  double makespan = 0;
  while (!free_at.empty()) {
    const auto [now, k] = free_at.top();
    free_at.pop();
    const double busy = e.next_batch(k, now);
    if (busy < 0) {
      makespan = std::max(makespan, now);
    } else {
      e.busy_until[static_cast<std::size_t>(k)] = now + busy;
      free_at.push({now + busy, k});
    }
  }
  return makespan;
}

double termination_seconds(const cost_inputs& in, int ranks) {
  require_at_least("ranks", ranks, 1);
  if (ranks == 1) return 0;
  const bool across = host_split(in, ranks).second > 1;
  const link_figures& l = across ? in.remote : in.local;
  return (across ? 2 * l.alpha_s : 0.0) + (ranks - 1) * l.overhead_s;
}

double scatter_bytes_per_job(const cost_inputs& in) { return bytes_per_double * in.job_params; }

double gather_bytes_per_job(const cost_inputs& in) {
  const int rows = 1 + in.shared_params + in.job_params;
  return bytes_per_double * in.outputs_per_job * rows;
}

double collective_seconds(const cost_inputs& in, int ranks, double bytes_per_job, gather_kind kind) {
  require_at_least("ranks", ranks, 1);
  require_at_least("bytes_per_job", bytes_per_job, 0);
  if (ranks == 1) return 0;
  switch (kind) {
    case gather_kind::flat: return flat_seconds(in, ranks, bytes_per_job);
    case gather_kind::hierarchical: return hierarchical_seconds(in, ranks, bytes_per_job);
    case gather_kind::tree: return tree_seconds(in, ranks, bytes_per_job);
  }
  return 0;
}

double scatter_overlap_seconds(const cost_inputs& in, int ranks) {
  require_at_least("ranks", ranks, 1);
  if (ranks == 1) return 0;
  // Every kind of scatter, like the broadcast, pays at least one latency of the link to the farthest ranks.
  const link_figures& l = host_split(in, ranks).second > 1 ? in.remote : in.local;
  return std::max(0.0, l.alpha_s - l.overhead_s);
}

gather_kind cheapest_collective(const cost_inputs& in, int ranks, double out_bytes_per_job, double back_bytes_per_job) {
  require_at_least("ranks", ranks, 1);
  require_at_least("out_bytes_per_job", out_bytes_per_job, 0);
  require_at_least("back_bytes_per_job", back_bytes_per_job, 0);
  if (ranks == 1) return gather_kind::flat;
  auto both = [&](gather_kind k) {
    return collective_seconds(in, ranks, out_bytes_per_job, k) + collective_seconds(in, ranks, back_bytes_per_job, k);
  };
  return cheapest_of(both(gather_kind::flat), both(gather_kind::hierarchical), both(gather_kind::tree));
}

gather_kind auto_collective(const cost_inputs& in, int ranks, int hosts, double out_bytes_per_job,
                            double back_bytes_per_job) {
  validate(in);
  require_at_least("hosts", hosts, 1);
  if (hosts == 1) return gather_kind::flat;
  return cheapest_collective(in, ranks, out_bytes_per_job, back_bytes_per_job);
}

prediction predict(const cost_inputs& in, int ranks, int threads) {
  validate(in);
  require_at_least("ranks", ranks, 1);
  require_at_least("threads", threads, 1);
  prediction p = predict_terms(in, ranks, threads);
  const double serial = predict_terms(in, 1, 1).total_s;
  p.efficiency = p.total_s > 0 ? serial / (static_cast<double>(ranks) * threads * p.total_s) : 1.0;
  return p;
}

std::vector<int> rank_counts(int ranks_max, const std::vector<int>& extra) {
  require_at_least("ranks_max", ranks_max, 1);
  std::vector<int> out;
  for (long long p = 1; p <= ranks_max; p *= 2) out.push_back(static_cast<int>(p));
  for (int p : extra) {
    require_at_least("extra rank count", p, 1);
    out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<prediction> predict_table(const cost_inputs& in, const std::vector<int>& ranks, int threads) {
  std::vector<prediction> out;
  out.reserve(ranks.size());
  for (int p : ranks) out.push_back(predict(in, p, threads));
  return out;
}

}  // namespace maprect::plan
