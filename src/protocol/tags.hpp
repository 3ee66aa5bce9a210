#pragma once
// Every message tag the runtime uses on a cluster's communicator, in one place, so that no two kinds of
// message can share one. Collectives carry no tag; these are the point-to-point messages beside them.

namespace maprect::detail {

/// The message that carries a job's error to the root (fetch_error).
constexpr int error_tag = 0;

/// The empty message a worker sends when its jobs of a call are done (only with a timeout): the root can
/// then name the ranks that have not answered.
constexpr int done_tag = 1;

/// The empty messages by which the root times its round trip to each worker at start-up (rank_facts).
constexpr int round_trip_tag = 2;

/// The claims between ranks by message, of map_rect's jobs and reduce_sum's slices alike.
namespace claims_tag {
constexpr int ask = 10;         ///< an ask_message: worker -> root, or root -> the owner of jobs
constexpr int grant = 11;       ///< a grant_message: root -> thief, or worker -> root (empty: none left)
constexpr int grant_reals = 12; ///< root -> worker thief: the batch's job parameters, then its x_r rows (map_rect),
                                ///< or its slices' values (reduce_sum)
constexpr int grant_ints = 13;  ///< root -> worker thief: the batch's planned output counts, whether each job's
                                ///< rows follow (the root's of a job_data go to each worker once), its x_i rows
constexpr int result = 14;      ///< worker -> root: a result_head, of its own jobs or of a batch it ran
constexpr int blocks = 15;      ///< worker -> root: the blocks of the result just announced
}  // namespace claims_tag

}  // namespace maprect::detail
