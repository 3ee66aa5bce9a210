// reduce_sum's slices under the claims engine (claimed_slices.hpp): the root's side, and the worker's.
#include "src/reduce_sum/claimed_slices.hpp"

#include <algorithm>
#include <chrono>

namespace maprect::detail {

namespace {

/// The values of slices [begin, end)'s terms: where they start among the packed sliced values, and how many.
struct value_span {
  std::size_t at;
  int count;
};
value_span values_of(const reduce_layout& layout, int begin, int end) {
  const std::size_t at = layout.slice_values_at(begin);
  return {at, static_cast<int>(layout.slice_values_at(end) - at)};
}

/// Doubles of the blocks of slices [begin, end).
int blocks_of(const reduce_layout& layout, int begin, int end) {
  return static_cast<int>(layout.block_at(end) - layout.block_at(begin));
}

}  // namespace

long long most_rank_values(const reduce_layout& layout, const reduce_split& split, int ranks) {
  long long most = 0;
  for (int r = 0; r < ranks; ++r)
    most = std::max<long long>(most, values_of(layout, split.first(r), split.first(r + 1)).count);
  return most;
}

bool reduce_host_claims_for(const rank_context& s, const reduce_layout& layout, const reduce_split& split) {
  return s.host.shares_ranges(most_rank_values(layout, split, s.size));
}

void share_root_slices(rank_context& s, const reduce_request& req, const reduce_split& split, claims_broker& broker,
                       bool claimable) {
  if (!reduce_host_claims_for(s, *req.layout, split)) return;
  const int n = claimable ? split.first(1) : 0;
  const value_span mine = values_of(*req.layout, 0, n);
  std::atomic<std::uint64_t>* word =
      s.host.publish_range(req.sliced + mine.at, static_cast<std::size_t>(mine.count), n, s.size, s.sequence, true);
  if (n > 0) broker.attach_host_range(word);
}

reduce_claimed_slices::reduce_claimed_slices(rank_context& s, reduce_root_buffers& buffers, const reduce_request& req,
                                             const reduce_split& split, lowest_failure& failure)
    : s_(s), b_(buffers), req_(req), split_(split), failure_(failure), payloads_(s.comm) {
  const auto ranks = static_cast<std::size_t>(s.size);
  b_.statuses.assign(ranks * wire::status_doubles, 0.0);
  b_.claim_ends.assign(ranks, 0);
  b_.claim_taken.assign(ranks, 0);
  b_.claim_batches.assign(ranks, 0);
  b_.claim_firsts.resize(ranks + 1);
  for (int r = 0; r <= s.size; ++r) b_.claim_firsts[r] = split.first(r);
}

void reduce_claimed_slices::send_batch(int thief, int owner, job_range g) {
  const value_span v = values_of(*req_.layout, global_job(owner, g.begin), global_job(owner, g.end));
  if (v.count == 0) return;
  payloads_.post(thief, claims_tag::grant_reals, req_.sliced + v.at, v.count);
  s_.last_traffic.sent += sizeof(double) * static_cast<std::uint64_t>(v.count);
}

void reduce_claimed_slices::finish_sends() {
  payloads_.complete();
}

wire::status reduce_claimed_slices::run_on_root(int owner, job_range g, int& failed_job) {
  const int begin = global_job(owner, g.begin), end = global_job(owner, g.end);
  job_error error;
  const int failed = req_.session->run(begin, end, b_.taken.data() + req_.layout->block_at(begin), false, error);
  b_.claim_taken[0] += g.size();
  b_.claim_batches[0] += 1;
  s_.last_profile.taken_jobs += g.size();
  if (failed == INT_MAX) return wire::status::ok;
  keep_slice_failure(failure_, failed, std::move(error));
  failed_job = failed;
  return wire::status::failed;
}

wire::status reduce_claimed_slices::run(job_range g, int& failed_job) {
  job_error error;
  double* blocks = b_.own.data() + req_.layout->block_at(g.begin);
  failed_job = req_.session->run(g.begin, g.end, blocks, true, error);
  if (failed_job == INT_MAX) return wire::status::ok;
  keep_slice_failure(failure_, failed_job, std::move(error));
  return wire::status::failed;
}

double* reduce_claimed_slices::place_result(int from, const result_head& head, int& n) {
  const int owner = head.owner, code = head.code;
  const int begin = global_job(owner, head.begin);
  const int end = global_job(owner, head.end);
  double* status = b_.statuses.data() + static_cast<std::ptrdiff_t>(from) * wire::status_doubles;
  // Its status names the lowest slice it ran that failed, in its own range or in a batch, whichever result
  // came first (the batches it claimed in host memory come before its own).
  lowest_failure lowest;
  lowest.keep(static_cast<wire::status>(status[0]), from, static_cast<int>(status[failed_slice_at]));
  lowest.keep(static_cast<wire::status>(code), from, head.job);
  n = 0;
  if (owner == from) {  // its own slices [first, end), and its status
    head.write_status(status);
    b_.claim_ends[from] = end;
    n = blocks_of(*req_.layout, begin, end);
  } else {
    if (code != result_head::not_run) {
      b_.claim_taken[from] += end - begin;
      b_.claim_batches[from] += 1;
    }
    if (code == static_cast<int>(wire::status::ok)) n = blocks_of(*req_.layout, begin, end);
  }
  status[0] = static_cast<double>(lowest.code);
  status[failed_slice_at] = lowest.job;
  return b_.taken.data() + req_.layout->block_at(begin);
}

namespace {

/// A worker's slices of one reduce call under claims by message: its own range's, with their values in
/// site.sliced, and the batches of other ranks' whose values the root sends.
class reduce_worker_slices final : public worker_claimed_work {
 public:
  reduce_worker_slices(rank_context& s, reduce_worker_site& site, const double* shared, const reduce_split& split)
      : s_(s), site_(site), shared_(shared), split_(split), first_(split.first(s.rank)) {
    site_.answer.assign(wire::status_doubles + blocks_of(site.layout, first_, split.first(s.rank + 1)), 0.0);
  }
  int own_jobs() const override { return split_.first(s_.rank + 1) - first_; }
  int unrunnable_job() override;
  wire::status run_own(job_range g, int& failed_job) override {
    double* blocks = site_.answer.data() + wire::status_doubles + blocks_of(site_.layout, first_, first_ + g.begin);
    return run(first_ + g.begin, first_ + g.end, blocks, failed_job);
  }
  int global_job(int owner, int local) const override { return split_.first(owner) + local; }
  void receive_batch(const grant_message& got) override;
  wire::status run_batch(const grant_message& got, block_buffer& blocks, int& failed_job) override {
    const int begin = global_job(got.owner, got.begin), end = global_job(got.owner, got.end);
    blocks.resize(static_cast<std::size_t>(blocks_of(site_.layout, begin, end)));
    return run(begin, end, blocks.data(), failed_job);
  }
  const double* own_blocks(int end, int& n) override {
    n = blocks_of(site_.layout, first_, first_ + end);
    return site_.answer.data() + wire::status_doubles;
  }
  /// The slices run on the job tape of whichever thread runs them.
  bool runs_aside() const override { return true; }
  job_claims* host_claims() override { return host_; }
  wire::status run_host_batch(int owner, job_range got, block_buffer& blocks, int& failed_job) override;
  /// Puts this rank's values where its host's workers read them and its range in its claim word, so that they
  /// claim each other's slices in host memory.
  void share_with_host();

 private:
  wire::status run(int begin, int end, double* blocks, int& failed_job);

  rank_context& s_;
  reduce_worker_site& site_;
  const double* shared_;
  reduce_split split_;
  int first_;
  job_claims* host_ = nullptr;  ///< share_with_host's claim words
};

void reduce_worker_slices::share_with_host() {
  const value_span mine = values_of(site_.layout, first_, split_.first(s_.rank + 1));
  s_.host.publish_range(site_.sliced.data() + mine.at, static_cast<std::size_t>(mine.count), own_jobs(), s_.size,
                        s_.sequence, true);
  host_ = &s_.host.claims;
}

wire::status reduce_worker_slices::run_host_batch(int owner, job_range got, block_buffer& blocks, int& failed_job) {
  const int begin = global_job(owner, got.begin), end = global_job(owner, got.end);
  const value_span v = values_of(site_.layout, begin, end);
  const std::size_t owner_at = values_of(site_.layout, split_.first(owner), begin).at;
  std::copy_n(s_.host.peer_params(owner) + (v.at - owner_at), v.count, site_.sliced.data() + v.at);
  blocks.resize(static_cast<std::size_t>(blocks_of(site_.layout, begin, end)));
  return run(begin, end, blocks.data(), failed_job);
}

int reduce_worker_slices::unrunnable_job() {
  if (site_.runner != nullptr) return -1;
  s_.last_error = site_.missing_runner();
  return first_;
}

wire::status reduce_worker_slices::run(int begin, int end, double* blocks, int& failed_job) {
  job_error error;
  const int failed = site_.run(begin, end, shared_, s_.team.get(), blocks, error);
  if (failed == INT_MAX) return wire::status::ok;
  s_.last_error = std::move(error);
  failed_job = failed;
  return wire::status::failed;
}

void reduce_worker_slices::receive_batch(const grant_message& got) {
  const value_span v =
      values_of(site_.layout, global_job(got.owner, got.begin), global_job(got.owner, got.end));
  if (v.count > 0)
    receive_grant_payload(s_.comm, claims_tag::grant_reals, site_.sliced.data() + v.at, v.count);
}

}  // namespace

void serve_reduce_claims(rank_context& s, reduce_worker_site& site, const double* shared, const reduce_split& split) {
  reduce_worker_slices work(s, site, shared, split);
  // Every rank of the host, the root too, decides alike (the largest range's values against its host's room),
  // since each waits for the others' ranges before it claims.
  if (reduce_host_claims_for(s, site.layout, split)) work.share_with_host();
  serve_claims(claims_of(s), work, s.settings.test_held_rank == s.rank);
}

}  // namespace maprect::detail
