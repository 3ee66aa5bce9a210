#pragma once
// A reduce_sum call site as the root and a worker hold it between calls, and how a call's slices are
// split over the ranks. Private to the library.
#include <maprect/detail/reduce_layout.hpp>
#include <maprect/detail/reduce_site.hpp>
#include <maprect/detail/wire.hpp>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/protocol/chunk_plan.hpp"
#include "src/cluster/settings.hpp"
#include "src/protocol/collectives.hpp"

namespace maprect::detail {

namespace wire {

/// A reduce request's header: the fields of `request` it uses, by name. s_n_shared holds the values of the
/// shared arguments' vars, which travel as a call's shared parameters.
struct reduce_header {
  int call_id = 0;          ///< the call site
  int n_shared = 0;         ///< S: values of the shared arguments' vars
  int n_terms = 0;          ///< N
  int grainsize = 1;        ///< G
  int payload_bytes = 0;    ///< a new payload of this many bytes follows; 0: the workers' copy is current
  call_route route = call_route::messages;  ///< how the values, blocks and status travel
  int root_slices = 0;      ///< slices the root runs (the workers split the rest evenly)
  bool reserve_slots = false;  ///< after the call every rank sizes its host slot for this split

  /// As a request (s_n_job: payload_bytes, s_n_jobs: n_terms, s_row_real: grainsize, s_arg: route,
  /// s_root_jobs: root_slices, s_row_int: reserve_slots).
  request to_request() const {
    request r;
    r.cmd = command::reduce;
    r.call_id = call_id;
    r.n_shared = n_shared;
    r.n_job = payload_bytes;
    r.n_jobs = n_terms;
    r.row_real = grainsize;
    r.arg = static_cast<int>(route);
    r.root_jobs = root_slices;
    r.row_int = reserve_slots ? 1 : 0;
    return r;
  }
  /// The reduce header a request carries.
  static reduce_header of(const request& r) {
    return {r.call_id,   r.n_shared,   r.n_jobs, r.row_real, r.n_job, static_cast<call_route>(r.arg),
            r.root_jobs, r.row_int != 0};
  }
};

}  // namespace wire

/// Rank r runs slices [first(r), first(r + 1)): contiguous ranges in rank order, the root's first. The root
/// runs root_slices (its share, tuned as a map_rect call site's is) and the workers split the rest as evenly
/// as whole slices allow, the larger ranges first. The request carries the root's share, so that both sides
/// compute the same split.
struct reduce_split {
  int n_slices = 0;     ///< slices of the call
  int ranks = 1;        ///< ranks of the cluster
  int root_slices = 0;  ///< slices the root runs

  /// The even split: the root's range the larger, so that a call of one slice runs on the root.
  static reduce_split even(int n_slices, int ranks) {
    return {n_slices, ranks, n_slices - static_cast<int>(static_cast<long long>(n_slices) * (ranks - 1) / ranks)};
  }
  /// The first slice of rank r (r = ranks: n_slices).
  int first(int r) const {
    if (r <= 0) return 0;
    if (r >= ranks) return n_slices;
    const long long rest = n_slices - root_slices, workers = ranks - 1;
    return n_slices - static_cast<int>(rest * (ranks - r) / workers);
  }
};

/// The root's copy of what the workers hold of a call site: the payload they were last sent, and the layout
/// it gives them (the messages of a call are sized by it).
struct reduce_root_site {
  bool shipped = false;                    ///< a payload has gone out for this call site
  std::string payload;                     ///< that payload, byte for byte
  int n_terms = 0;                         ///< its N
  std::size_t n_shared = 0;                ///< its shared vars
  std::vector<std::size_t> term_offsets;   ///< its term offsets
  reduce_split split;                      ///< the last call's split of its slices over the ranks
  int next_root_slices = -1;               ///< a root share for the next call, or -1
  double last_call_s = 0;                  ///< wall seconds of its last call: whether the next one's claims pay

  /// Whether the workers, with the payload they hold, lay out a call as `layout` does.
  bool lays_out_as(const reduce_layout& layout) const {
    return shipped && n_terms == layout.plan().n_terms && n_shared == layout.n_shared() &&
           term_offsets == layout.term_offsets();
  }
};

/// Whether a reduce_sum call that travels by `route` claims slices by message (src/reduce_sum/claimed_slices.hpp):
/// the root picks that route under auto wherever the ranks cannot claim in host memory (ranks on other hosts, a
/// call that ships a payload or does not fit the slots, MAPRECT_TRANSPORT=messages) and claims pay
/// (claims_by_message_pay). Root and workers read it from the request alike.
inline bool claims_by_message(wire::call_route route) { return route == wire::call_route::claims; }

/// The root's buffers of reduce calls, kept between calls.
struct reduce_root_buffers {
  rank_layout values;           ///< the sliced values each rank receives
  rank_layout answers;          ///< each rank's status and blocks by message (through the slots: the status
                                ///< alone, or nothing through host memory)
  wire::call_route route = wire::call_route::messages;  ///< how this call's values, blocks and status travel
  std::vector<double> own;      ///< the root's own blocks
  std::vector<double> taken;    ///< blocks of the workers' slices the root took over, at layout.block_at
  std::vector<double> received; ///< the workers' status and blocks, at answers.displs
  std::vector<int> ends;        ///< per rank, where the slices it ran end (others ran the rest; the root's:
                                ///< below its range's end only by claims between all ranks)
  long long taken_doubles = 0;  ///< by claims between all ranks: blocks of other ranks' slices the root ran
  std::vector<double> statuses; ///< claims by message: each worker's status, wire::status_doubles apiece
  std::vector<int> claim_firsts;   ///< claims by message: per rank, the first slice of its range; then N slices
  std::vector<int> claim_ends;     ///< claims by message: per rank, where its own slices ended (others ran the rest)
  std::vector<int> claim_taken;    ///< claims by message: per rank, slices of other ranks' ranges it ran
  std::vector<int> claim_batches;  ///< claims by message: per rank, batches of other ranks' ranges it ran
  std::vector<int> claim_taken_in_host;  ///< claims by message: of claim_taken, those claimed in host memory
  collective_kind collective = collective_kind::flat;  ///< how the call's scatter and gather run
  int chunk_out = 0;            ///< the largest worker's values
  int chunk_back = 0;           ///< the largest worker's planned status and blocks
  std::size_t chosen_for[3] = {0, 0, 0};  ///< slices, sliced values and blocks the kind was chosen for

  /// Whether this call's values and blocks go through the host slots.
  bool via_slots() const { return wire::in_slots(route); }
};

/// A worker's copy of a call site: the runner of its argument types with the data and shapes loaded, the
/// term offsets of its sliced argument, and this call's values and answer.
struct reduce_worker_site {
  std::unique_ptr<reduce_site_runner> runner;  ///< null when this rank cannot run the site's slices
  std::string missing;                         ///< then why not
  std::vector<std::size_t> term_offsets;       ///< as shipped
  reduce_layout layout;                        ///< this call's
  std::vector<double> sliced;                  ///< the sliced values, this rank's range filled (indexed as on the root)
  std::vector<double> answer;                  ///< status, then this rank's blocks
  std::string payload;                         ///< the last payload received

  /// Runs slices [first, last) of this call into `blocks` with the shared values `shared` on `team` (if not
  /// null), as reduce_site_runner::run: the lowest failing slice with its exception in `error`, or INT_MAX.
  /// Without a runner the first slice fails, saying why.
  int run(int first, int last, const double* shared, thread_team* team, double* blocks, job_error& error) const {
    if (runner != nullptr) return runner->run(layout, first, last, shared, sliced.data(), team, blocks, error);
    error = missing_runner();
    return first;
  }
  /// The error of a slice this rank cannot run, having no runner.
  job_error missing_runner() const { return {error_type::invalid_argument, missing}; }
};

/// reduce_sum's state on a rank: the root's call sites and its calls' buffers, or a worker's copies of the sites.
struct reduce_state {
  std::unordered_map<int, reduce_root_site> root_sites;
  reduce_root_buffers root;
  std::unordered_map<int, reduce_worker_site> worker_sites;
};

}  // namespace maprect::detail
