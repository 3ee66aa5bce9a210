#pragma once
// map_rect's jobs under the claims engine: what a batch of them needs on a thief (the caller's parameters,
// planned output counts and rows, sent by the root), how the root runs a worker's batch from the caller's
// data, and where the blocks of a result go. The engine itself is src/balance/ (claims_broker on the root,
// serve_claims on a worker); this is the one kind of work it runs that is map_rect's.
#include <deque>
#include <maprect/detail/call.hpp>
#include <maprect/detail/job_error.hpp>
#include <maprect/detail/registry.hpp>
#include <vector>

#include "src/balance/claims_engine.hpp"
#include "src/map_rect/map_rect_state.hpp"

namespace maprect::detail {

class claims_broker;

/// The caller's parameters, planned output counts and rows of every job of a call, on the root, from job 0.
struct owned_rows {
  const double* job_params = nullptr;        ///< P values per job
  int n_job_params = 0;                      ///< P
  const int* counts = nullptr;               ///< planned output counts
  const std::vector<double>* x_r = nullptr;  ///< one row per job
  const std::vector<int>* x_i = nullptr;     ///< one row per job
  rows_sent* sent = nullptr;                 ///< which worker holds which rows of the call's job_data
};

/// The rows of a batch granted to a worker thief, kept until they have gone (grant_payloads).
struct granted_rows {
  std::vector<double> reals;  ///< the batch's job parameters, then its x_r rows
  std::vector<int> ints;      ///< its planned output counts, whether each job's rows follow, its x_i rows
};

/// Root: sends worker thieves what they need to run the batches granted to them, from the caller's data.
class rows_to_thieves {
 public:
  rows_to_thieves(MPI_Comm comm, owned_rows rows) : payloads_(comm), rows_(rows) {}
  /// Sends `thief` the parameters, counts and rows of jobs [first + g.begin, first + g.end).
  void send(int thief, int first, job_range g);
  /// Completes the sends: once a thief has heard "none", it has received all of them.
  void finish();

 private:
  grant_payloads payloads_;
  owned_rows rows_;
  std::deque<granted_rows> sent_;  ///< on their way (a deque: their addresses stay)
};

/// Runs the jobs of `in`, the first of them global job `first`, with `runner` on the rank's team: their blocks
/// appended to `out` and their output counts into `counts`. Returns ok; failed, the failing global job in
/// `failed_job` and its exception in `error`; or counts_changed where a count differs from `planned`'s.
wire::status run_planned_batch(map_rect_context& s, chunk_runner runner, const chunk_input& in, int first,
                               const int* planned, block_buffer& out, int* counts, int& failed_job, job_error& error);

/// Runs worker r's local jobs `got` on the root from the caller's data, into their place in `region` (the
/// blocks of r's chunk). On a failure records it in `failure`, as the root's.
void run_batch_on_root(map_rect_context& s, const root_site& site, const call_request& req, double* region, int r,
                       job_range got, lowest_failure& failure);

/// Root: the jobs of one steady call of `site` under claims by message, for claims_broker. The blocks of
/// worker r's jobs go to its region of `buffer` (where a gather puts them), its status ahead of them.
class map_rect_claimed_jobs final : public root_claimed_work {
 public:
  map_rect_claimed_jobs(map_rect_context& s, const root_site& site, const call_request& req, double* buffer,
                        owned_rows rows);
  int jobs_of(int r) const override { return site_.plan.jobs(r); }
  void send_batch(int thief, int owner, job_range g) override { rows_.send(thief, site_.plan.first(owner), g); }
  void finish_sends() override { rows_.finish(); }
  int global_job(int owner, int local) const override { return site_.plan.first(owner) + local; }
  wire::status run_on_root(int owner, job_range g, int& failed_job) override;
  double* place_result(int from, const result_head& head, int& n) override;
  /// A batch on the root fills its own part of the buffer, apart from every result that comes meanwhile.
  bool runs_aside() const override { return true; }
  /// The lowest failure among the workers' batches the root ran, or a changed output count.
  const lowest_failure& failure() const { return failure_; }

 private:
  map_rect_context& s_;
  const root_site& site_;
  const call_request& req_;
  double* buffer_;
  rows_to_thieves rows_;
  lowest_failure failure_;
};

/// Worker thief: receives what the root sent with the batch `got` of call `v` (rows_to_thieves): the job
/// parameters into the front of `reals`, the planned output counts into the front of `ints`, and the rows kept
/// by job in s.worker.root_rows, where they stay for the next claims of a job_data's. Returns the batch's
/// first job.
int receive_granted_rows(map_rect_context& s, const worker_site& site, const wire::request& v, const grant_message& got,
                         std::vector<double>& reals, std::vector<int>& ints);

/// The `n` jobs from job `first` of the batch receive_granted_rows received last into `reals`, as a chunk with
/// the shared parameters `shared`.
chunk_input granted_batch_input(map_rect_context& s, const wire::request& v, const double* shared,
                                const std::vector<double>& reals, int first, int n);

/// Worker: its map_rect jobs of one call under claims by message, eager or deferred: its own chunk's, with its
/// parameters at `job_params`; the batches the root grants it, whose parameters and rows the root sends; and
/// the batches it claims in host memory, whose parameters its host's workers publish. How a batch runs, and
/// where a rank's own outputs go, is the command's.
class worker_job_batches : public worker_claimed_work {
 public:
  worker_job_batches(map_rect_context& s, const worker_site& site, const wire::request& v, const double* shared,
                     const double* job_params);
  int own_jobs() const override { return site_.n_jobs; }
  int unrunnable_job() override;
  wire::status run_own(job_range g, int& failed_job) override;
  int global_job(int owner, int local) const override { return site_.plan.first(owner) + local; }
  void receive_batch(const grant_message& got) override;
  wire::status run_batch(const grant_message& got, block_buffer& blocks, int& failed_job) override;
  /// The jobs keep no state on the thread that runs them.
  bool runs_aside() const override { return true; }
  job_claims* host_claims() override { return host_; }
  wire::status run_host_batch(int owner, job_range got, block_buffer& blocks, int& failed_job) override;
  /// Puts this rank's job parameters where its host's workers read them (with `counts`, their planned output
  /// counts behind them), and its range in its claim word, so that they claim each other's jobs in host memory.
  void share_with_host(const int* counts = nullptr);

 protected:
  /// Runs the jobs of `in`, the first global job `first`, their outputs appended to `out`: ok, failed (the
  /// failing global job in `failed_job`, its exception in `error`), or counts_changed where a count differs
  /// from `planned`'s.
  virtual wire::status run(const chunk_input& in, int first, const int* planned, block_buffer& out, int& failed_job,
                           job_error& error) = 0;
  /// Where run_own appends this rank's own outputs, and the planned output counts of its own jobs.
  virtual block_buffer& own_out() = 0;
  virtual const int* own_planned() const = 0;
  /// The planned output counts of `owner`'s local jobs `got`, a batch claimed in host memory.
  virtual const int* host_planned(int owner, job_range got) = 0;

  map_rect_context& s_;
  const worker_site& site_;
  const wire::request& v_;
  const double* shared_;
  const double* job_params_;
  const functor_entry* f_;
  std::vector<double> grant_reals_;  ///< the granted jobs' parameters, then x_r rows
  std::vector<int> grant_ints_;      ///< their planned output counts, whether each one's rows came, x_i rows
  int batch_first_ = 0;              ///< the first job of the batch received last
  job_claims* host_ = nullptr;       ///< share_with_host's claim words

 private:
  /// run(), a failing job's error kept for fetch_error.
  wire::status run_keeping_error(const chunk_input& in, int first, const int* planned, block_buffer& out,
                                 int& failed_job);
};

/// Root: the jobs' step of the deferred call `req` by claims by message (deferred_claims.cpp), once its job
/// parameters are out: its own jobs from the front and the claims it brokers, each job on the kept tapes of the
/// rank that runs it (the root's in `keep`, with who keeps which). Throws the lowest failing job's error.
/// Returns false when a job's output count differs from the site's deferred_counts, else true with every
/// output's value in `result`.
bool root_deferred_claims(map_rect_context& s, const root_site& site, const call_request& req, deferred_call& keep,
                          call_result& result);

/// Worker: its side of that step, on its chunk of the site's plan, the jobs it runs kept in `keep`.
void serve_deferred_claims(map_rect_context& s, const worker_site& site, const wire::request& v, const double* shared,
                           deferred_call& keep);

/// Whether the ranks of this rank's host claim each other's jobs in host memory in a call by claims by message
/// of a site planned as `plan` with `n_job_params` parameters per job (every rank holding every row where
/// `rows_everywhere`). Every rank of the host decides alike (the largest chunk's parameters against its host's
/// room), since each waits for the others' ranges before it claims.
bool host_claims_for(const map_rect_context& s, bool rows_everywhere, const chunk_plan& plan, int n_job_params);

/// The doubles a deferred call's largest range of jobs planned as `plan` takes in host memory: each job's
/// `n_job_params` parameters, then its planned output count.
long long deferred_range_doubles(const chunk_plan& plan, int n_job_params);

/// host_claims_for of a deferred call's forward pass, whose ranges hold deferred_range_doubles: on the root's
/// one host too, where it has no route through the slots.
bool deferred_host_claims_for(const map_rect_context& s, bool rows_everywhere, const chunk_plan& plan,
                              int n_job_params);

/// Root, in a call by claims by message of jobs planned as `plan`, where host_claims_for: puts its jobs'
/// parameters where the workers of its host read them, and its range in its claim word, for them and for its
/// own runs alike. Empty where nobody may take its jobs (stale rows, a message stream): its host's workers wait
/// for its range.
void share_root_range(map_rect_context& s, const chunk_plan& plan, const call_request& req, claims_broker& broker,
                      bool claimable, bool rows_everywhere);

/// Worker: steps 4 and 5 of a steady call by claims by message, once its job parameters are in
/// `job_params`: runs its jobs, answering the root's asks, sends their blocks, then runs the batches the
/// root grants it, sending each one's blocks, until the root answers "none".
void serve_call_stealing(map_rect_context& s, worker_site& site, const wire::request& v, const double* shared,
                         const double* job_params);

}  // namespace maprect::detail
