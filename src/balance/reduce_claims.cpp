// reduce_sum's claims between any two ranks, by message: the root's side (its own slices and its grants from
// their back, its asks once they are done, the workers' answers) and the worker's (its own slices while
// serving asks, batches taken from the root and the other workers, its answer).
#include "src/balance/reduce_claims.hpp"

#include <algorithm>
#include <deque>
#include <string>

#include "src/balance/steal.hpp"
#include "src/cluster/call_timeout.hpp"

namespace maprect::detail {

namespace {

/// Sends `ask` to `owner` and posts the receive of its grant into `range`, as post_ask does for map_rect,
/// under reduce_sum's own tags.
void post_slice_ask(MPI_Comm comm, int owner, const ask_message& ask, int (&range)[2], MPI_Request& reply) {
  post_ask(comm, owner, ask, range, 2, reply, reduce_claim_tag::ask, reduce_claim_tag::grant);
}

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
std::size_t blocks_of(const reduce_layout& layout, int begin, int end) {
  return layout.block_at(end) - layout.block_at(begin);
}

/// A thief's ask: whether it wants a batch, and the `held` slices it still has to run, at its own
/// `seconds_per_slice` (0: not timed).
ask_message slice_ask(bool want, int held, double seconds_per_slice) {
  // Held slices told in seconds when the thief has timed its own: the owner turns them into its own slices
  // at its own rate, so that a fast thief is granted what it runs while a slow owner runs one slice.
  if (seconds_per_slice > 0) return {want ? 1.0 : 0.0, 0.0, held * seconds_per_slice};
  return {want ? 1.0 : 0.0, static_cast<double>(held), 0.0};
}

/// A test's pin of a schedule in which others claim (MAPRECT_TEST_HOLD_RANK): on the held rank, called once
/// the first batch of its own slices has run, answers asks (`serve`) until some of `slices` went to another rank,
/// none is left, or `nobody_asks()`; at most 20 s, so that a test that sees no claims fails rather than hangs.
/// Whether a test's claims happen then does not depend on when the asks come.
template <class Serve, class NobodyAsks>
void hold_for_claims(const cluster_state& s, const unstarted_jobs& slices, Serve&& serve, NobodyAsks&& nobody_asks) {
  if (s.settings.test_held_rank != s.rank) return;
  const int left = slices.left();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  unsigned spins = 0;
  while (left > 0 && slices.left() == left && !nobody_asks() && std::chrono::steady_clock::now() < until) {
    serve();
    pause_in_claims(s.settings.policy, spins);
  }
}

/// Sends `thief` an owner's answer `g` to its ask, the owner's range starting at slice `first` (`g` in offsets
/// from it): later, none, or a batch, whose values a worker thief then receives from `values` (packed as the
/// layout packs them; the root holds them all) without waiting, the send kept in `sent`. Returns the values
/// sent, or -1 for "none".
int send_slice_grant(MPI_Comm comm, const reduce_layout& layout, const double* values, int first, int thief,
                     job_range g, std::deque<MPI_Request>& sent) {
  const bool batch = !is_later(g) && !g.empty();
  const int range[2] = {batch ? first + g.begin : g.begin, batch ? first + g.end : g.end};
  MPI_Send(range, 2, MPI_INT, thief, reduce_claim_tag::grant, comm);
  if (!batch) return is_later(g) ? 0 : -1;
  const value_span v = values_of(layout, range[0], range[1]);
  if (thief == 0 || v.count == 0) return 0;
  MPI_Isend(values + v.at, v.count, MPI_DOUBLE, thief, reduce_claim_tag::values, comm, &sent.emplace_back());
  return v.count;
}

/// An owner's own slices, root's or worker's: runs `slices` from the front in batches (`run(begin, end,
/// error)`, offsets into its range, returns the lowest failing slice or INT_MAX), answering asks (`serve`)
/// between batches, held after the first as hold_for_claims says. Stops at a failure, kept in `failure`, with
/// nothing left to grant. `seconds` is the time per slice of its latest batch, which the grants use.
template <class Run, class Serve, class NobodyAsks>
void run_own_range(const cluster_state& s, unstarted_jobs& slices, double& seconds, slice_failure& failure, Run&& run,
                   Serve&& serve, NobodyAsks&& nobody_asks) {
  const int threads = s.settings.threads;
  for (job_range got = slices.take_front(threads); !got.empty(); got = slices.take_front(threads)) {
    const auto start = std::chrono::steady_clock::now();
    job_error error;
    const int failed = run(got.begin, got.end, error);
    if (failed != INT_MAX) {
      failure.keep(failed, error);
      slices.drop_rest();  // the slices after it cannot fail first
      return;
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / got.size();
    serve();
    if (got.begin == 0) hold_for_claims(s, slices, serve, nobody_asks);
  }
}

}  // namespace

reduce_balance_report last_reduce_balance() {
  const cluster_state* s = live_cluster_root();
  if (s == nullptr || s->settings.balance == balance_mode::static_share) return {};
  const reduce_root_buffers& b = s->root.reduce;
  return {b.claim_firsts, b.claim_ends, b.claim_taken, b.claim_batches};
}

root_range_claims::root_range_claims(cluster_state& s, const reduce_request& req, int n, bool grantable)
    : s_(s), req_(req), grantable_(grantable) {
  slices_.reset(n);
}

int root_range_claims::run(double* own, slice_failure& failure) {
  const reduce_layout& layout = *req_.layout;
  run_own_range(
      s_, slices_, slice_seconds_, failure,
      [&](int begin, int end, job_error& error) {
        return req_.session->run(begin, end, own + layout.block_at(begin), true, error);
      },
      [this] { serve_asks(); }, [this] { return told_none_ == s_.size - 1; });
  return slices_.end();
}

void root_range_claims::serve_asks() {
  answer_asks(s_.comm, reduce_claim_tag::ask, [this](int thief, const ask_message& ask) {
    const job_range g =
        grantable_ && ask.want != 0 ? slices_.grant_back(ask.held(slice_seconds_)) : job_range{};
    const int values = send_slice_grant(s_.comm, *req_.layout, req_.sliced, 0, thief, g, sent_);
    if (values < 0) ++told_none_;
    else s_.root.last_traffic.sent += sizeof(double) * static_cast<std::uint64_t>(values);
  });
}

void root_range_claims::finish() {
  for (MPI_Request& r : sent_) MPI_Wait(&r, MPI_STATUS_IGNORE);
  sent_.clear();
}

namespace {

/// A grant's receive, tested while the root answers asks for its own slices.
struct grant_or_asks {
  MPI_Request* reply;
  root_range_claims* mine;
  static bool ready(void* context) {
    auto& t = *static_cast<grant_or_asks*>(context);
    t.mine->serve_asks();  // the worker may be waiting for the root's answer as the root waits for its
    int done = 0;
    MPI_Test(t.reply, &done, MPI_STATUS_IGNORE);
    return done != 0;
  }
};

}  // namespace

bool claim_slices_as_root(cluster_state& s, const reduce_request& req, root_range_claims& mine, double* taken,
                          bool want, double seconds_per_slice, slice_failure& failure,
                          std::chrono::steady_clock::time_point deadline, int& late) {
  const reduce_layout& layout = *req.layout;
  reduce_root_buffers& b = s.root.reduce;
  b.claim_taken.assign(static_cast<std::size_t>(s.size), 0);
  b.claim_batches.assign(static_cast<std::size_t>(s.size), 0);
  int range[2] = {0, 0};
  MPI_Request reply = MPI_REQUEST_NULL;
  grant_or_asks test{&reply, &mine};
  for (int r = 1; r < s.size; ++r) {
    post_slice_ask(s.comm, r, slice_ask(want, 0, 0), range, reply);
    while (true) {
      if (!wait_until(&grant_or_asks::ready, &test, s.settings.policy, deadline)) {
        late = r;
        return false;
      }
      const job_range got{range[0], range[1]};
      if (is_later(got)) {  // it came while the root ran the batch it held: it holds none now
        post_slice_ask(s.comm, r, slice_ask(want, 0, 0), range, reply);
        continue;
      }
      if (got.empty()) break;
      // The next ask goes before this batch runs: the worker answers it between its own batches, meanwhile.
      // After a failure the root asks for none, but runs what it was granted: a slice granted and run by
      // nobody could hide a failure before the one kept.
      want = want && failure.slice == INT_MAX;
      post_slice_ask(s.comm, r, slice_ask(want, got.size(), seconds_per_slice), range, reply);
      job_error error;
      failure.keep(req.session->run(got.begin, got.end, taken + layout.block_at(got.begin), false, error), error);
      b.claim_taken[0] += got.size();
      b.claim_batches[0] += 1;
      s.root.last_profile.taken_jobs += got.size();
    }
  }
  return true;
}

namespace {

/// Puts worker r's answer `a` (as serve_reduce_claims packs it) into `taken` and its status into `status`.
void place_answer(reduce_root_buffers& b, const reduce_layout& layout, const reduce_split& split, int r,
                  const std::vector<double>& a, double* taken, double* status) {
  std::copy_n(a.data(), wire::status_doubles, status);
  const int first = split.first(r), own_end = static_cast<int>(a[claim_answer::own_end]);
  b.claim_ends[r] = own_end;
  const double* at = a.data() + wire::status_doubles;
  const std::size_t own = blocks_of(layout, first, own_end);
  std::copy_n(at, own, taken + layout.block_at(first));
  at += own;
  for (int k = 0; k < static_cast<int>(a[claim_answer::batches]); ++k) {
    const int begin = static_cast<int>(at[0]), end = static_cast<int>(at[1]);
    at += batch_head_doubles;
    const std::size_t n = blocks_of(layout, begin, end);
    std::copy_n(at, n, taken + layout.block_at(begin));
    at += n;
    b.claim_taken[r] += end - begin;
    b.claim_batches[r] += 1;
  }
}

}  // namespace

bool receive_claimed_answers(cluster_state& s, const reduce_layout& layout, const reduce_split& split,
                             root_range_claims& mine, double* taken, std::vector<double>& statuses,
                             std::chrono::steady_clock::time_point deadline, std::vector<int>& late) {
  statuses.assign(static_cast<std::size_t>(s.size) * wire::status_doubles, 0.0);
  reduce_root_buffers& b = s.root.reduce;
  b.claim_ends.assign(static_cast<std::size_t>(s.size), 0);
  b.claim_ends[0] = mine.end();
  b.claim_firsts.resize(static_cast<std::size_t>(s.size) + 1);
  for (int r = 0; r <= s.size; ++r) b.claim_firsts[r] = split.first(r);
  std::vector<char> in(static_cast<std::size_t>(s.size), 0);
  std::vector<double>& a = b.received;
  unsigned spins = 0;
  for (int left = s.size - 1; left > 0;) {
    int ready = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, reduce_claim_tag::answer, s.comm, &ready, &st);
    if (!ready) {
      mine.serve_asks();  // a worker answers the root only once the root has told it "none"
      if (std::chrono::steady_clock::now() > deadline) {
        for (int q = 1; q < s.size; ++q)
          if (!in[q]) late.push_back(q);
        return false;
      }
      pause_in_claims(s.settings.policy, spins);
      continue;
    }
    int count = 0;
    MPI_Get_count(&st, MPI_DOUBLE, &count);
    a.resize(static_cast<std::size_t>(count));
    MPI_Recv(a.data(), count, MPI_DOUBLE, st.MPI_SOURCE, reduce_claim_tag::answer, s.comm, MPI_STATUS_IGNORE);
    const int r = st.MPI_SOURCE;
    place_answer(b, layout, split, r, a, taken, statuses.data() + static_cast<std::ptrdiff_t>(r) * wire::status_doubles);
    s.root.last_traffic.received += sizeof(double) * static_cast<std::uint64_t>(count);
    in[r] = 1;
    --left;
  }
  mine.finish();
  // Every worker answered the root directly, one message each: a flat gather in all but name.
  s.root.last_traffic.collective = plan::gather_name(plan::gather_kind::flat);
  s.root.last_traffic.gather_peers = s.size - 1;
  return true;
}

namespace {

/// A batch this worker ran for another worker, kept until it answers the root.
struct claimed_batch {
  int begin = 0, end = 0;  ///< its slices
  int failed = INT_MAX;    ///< its first failing slice
  std::vector<double> blocks;
};

/// One worker's part of a reduce call under claims.
class worker_slice_claims {
 public:
  worker_slice_claims(cluster_state& s, reduce_worker_site& site, const double* shared, int first, int last)
      : s_(s), site_(site), layout_(site.layout), shared_(shared), first_(first) {
    slices_.reset(last - first);
    site_.answer.assign(wire::status_doubles + blocks_of(layout_, first, last), 0.0);
  }

  /// Runs this rank's own slices from the front, answering asks between batches; stops at a failure.
  void run_own();
  /// Takes batches from each other worker in turn until each has none left, then answers asks until every
  /// other rank has been told "none".
  void claim_and_serve();
  /// Packs and sends the answer to the root; the first failure's error stays for fetch_error.
  void answer(double busy);

 private:
  int run(int begin, int end, double* blocks, job_error& error);
  void serve_asks();
  void grant(int thief, const ask_message& ask);
  job_range await_grant(int owner);
  void run_claimed(job_range got);

  cluster_state& s_;
  reduce_worker_site& site_;
  const reduce_layout& layout_;
  const double* shared_;
  int first_;
  unstarted_jobs slices_;      ///< its own range's slices, as offsets from first_
  slice_failure failure_;
  int told_none_ = 0;          ///< ranks told that this rank has no slices left
  double slice_seconds_ = 0;   ///< seconds per slice of its latest batch of its own
  std::vector<claimed_batch> claimed_;
  std::deque<MPI_Request> sent_;  ///< values on their way to thieves
  int grant_[2] = {0, 0};
  MPI_Request grant_request_ = MPI_REQUEST_NULL;
};

int worker_slice_claims::run(int begin, int end, double* blocks, job_error& error) {
  if (site_.runner == nullptr) {
    error = {error_type::invalid_argument, site_.missing};
    return begin;
  }
  return site_.runner->run(layout_, begin, end, shared_, site_.sliced.data(), s_.team.get(), blocks, error);
}

void worker_slice_claims::run_own() {
  double* blocks = site_.answer.data() + wire::status_doubles;
  run_own_range(
      s_, slices_, slice_seconds_, failure_,
      [&](int begin, int end, job_error& error) {
        return run(first_ + begin, first_ + end, blocks + blocks_of(layout_, first_, first_ + begin), error);
      },
      [this] { serve_asks(); }, [this] { return told_none_ == s_.size - 1; });
}

void worker_slice_claims::grant(int thief, const ask_message& ask) {
  // The thief's work in this worker's slices, at this worker's latest time per slice.
  const job_range g = ask.want != 0 ? slices_.grant_back(ask.held(slice_seconds_)) : job_range{};
  if (send_slice_grant(s_.comm, layout_, site_.sliced.data(), first_, thief, g, sent_) < 0) ++told_none_;
}

void worker_slice_claims::serve_asks() {
  answer_asks(s_.comm, reduce_claim_tag::ask, [this](int thief, const ask_message& ask) { grant(thief, ask); });
}

job_range worker_slice_claims::await_grant(int owner) {
  unsigned spins = 0;
  for (int done = 0; MPI_Test(&grant_request_, &done, MPI_STATUS_IGNORE), !done;) {
    serve_asks();  // two thieves asking each other must both answer
    pause_in_claims(s_.settings.policy, spins);
  }
  const job_range got{grant_[0], grant_[1]};
  if (is_later(got) || got.empty()) return got;
  const value_span v = values_of(layout_, got.begin, got.end);
  if (v.count > 0)
    MPI_Recv(site_.sliced.data() + v.at, v.count, MPI_DOUBLE, owner, reduce_claim_tag::values, s_.comm,
             MPI_STATUS_IGNORE);
  return got;
}

void worker_slice_claims::run_claimed(job_range got) {
  claimed_batch& b = claimed_.emplace_back();
  b.begin = got.begin;
  b.end = got.end;
  b.blocks.assign(blocks_of(layout_, got.begin, got.end), 0.0);
  job_error error;
  b.failed = run(got.begin, got.end, b.blocks.data(), error);
  failure_.keep(b.failed, error);
}

void worker_slice_claims::claim_and_serve() {
  for (int k = 0; k < s_.size; ++k) {
    // The root first, then the other workers from the next one on.
    const int owner = k == 0 ? 0 : (s_.rank - 1 + k) % (s_.size - 1) + 1;
    if (owner == s_.rank) continue;
    auto want = [&] { return failure_.slice == INT_MAX && site_.runner != nullptr; };
    post_slice_ask(s_.comm, owner, slice_ask(want(), 0, 0), grant_, grant_request_);
    for (job_range got = await_grant(owner); is_later(got) || !got.empty(); got = await_grant(owner)) {
      if (is_later(got)) {  // it came while this rank ran the batch it held: it holds none now
        post_slice_ask(s_.comm, owner, slice_ask(want(), 0, 0), grant_, grant_request_);
        continue;
      }
      // The next ask goes before this batch runs: the owner answers it between its own batches, meanwhile.
      post_slice_ask(s_.comm, owner, slice_ask(want(), got.size(), slice_seconds_), grant_, grant_request_);
      // Run even after a failure: a granted slice nobody runs could hide an earlier failure.
      run_claimed(got);
    }
  }
  unsigned spins = 0;
  while (told_none_ < s_.size - 1) {  // every other rank asks until it hears "none"
    serve_asks();
    if (told_none_ < s_.size - 1) pause_in_claims(s_.settings.policy, spins);
  }
  // Every thief has heard "none", so it has received the values of every batch it was granted.
  for (MPI_Request& r : sent_) MPI_Wait(&r, MPI_STATUS_IGNORE);
  sent_.clear();
}

void worker_slice_claims::answer(double busy) {
  const int own_end = first_ + slices_.end();
  std::vector<double>& a = site_.answer;
  a.resize(wire::status_doubles + blocks_of(layout_, first_, own_end));
  const bool failed = failure_.slice != INT_MAX;
  a[claim_answer::status] = static_cast<int>(failed ? wire::status::failed : wire::status::ok);
  a[claim_answer::failed_slice] = failed ? failure_.slice : -1;
  a[claim_answer::busy] = busy;
  a[claim_answer::own_end] = own_end;
  a[claim_answer::batches] = static_cast<double>(claimed_.size());
  for (const claimed_batch& b : claimed_) {
    a.push_back(b.begin);
    a.push_back(b.end);
    a.push_back(b.failed == INT_MAX ? -1 : b.failed);
    a.insert(a.end(), b.blocks.begin(), b.blocks.end());
  }
  if (failed) s_.worker.last_error = failure_.error;
  MPI_Send(a.data(), static_cast<int>(a.size()), MPI_DOUBLE, 0, reduce_claim_tag::answer, s_.comm);
}

}  // namespace

void serve_reduce_claims(cluster_state& s, reduce_worker_site& site, const double* shared, int first, int last) {
  const auto start = std::chrono::steady_clock::now();
  worker_slice_claims claims(s, site, shared, first, last);
  claims.run_own();
  claims.claim_and_serve();
  const double busy = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MPI_Request done = announce_done(s);
  claims.answer(busy);
  finish_done(s, done);
}

}  // namespace maprect::detail
