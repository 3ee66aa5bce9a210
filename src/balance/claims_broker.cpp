// The root's side of the claims by message (src/balance/claims_broker.hpp).
#include "src/balance/claims_broker.hpp"

#include <algorithm>

namespace maprect::detail {

claims_broker::claims_broker(const claims_rank& s, root_claimed_work& work)
    : self_(s), work_(work), own_start_(clock::now()), victims_(static_cast<std::size_t>(s.size)),
      told_(static_cast<std::size_t>(s.size), 0), wants_(static_cast<std::size_t>(s.size), 0),
      own_in_(static_cast<std::size_t>(s.size), 0), batches_out_(static_cast<std::size_t>(s.size), 0),
      taken_in_host_(static_cast<std::size_t>(s.size), 0), held_until_(static_cast<std::size_t>(s.size)),
      thief_seconds_(static_cast<std::size_t>(s.size), 0.0), taken_pace_(static_cast<std::size_t>(s.size)) {
  for (int v = 1; v < s.size; ++v) {
    victims_[v].left = work.jobs_of(v);
    victims_[v].known_at = own_start_;
  }
}

void claims_broker::reset(int n, bool claimable) {
  own_.reset(n);
  own_jobs_ = n;
  claimable_ = claimable;
}

void claims_broker::serve_asks() {
  answer_asks(self_.comm, [this](int thief, const ask_message& ask) { on_ask(thief, ask); });
}

void claims_broker::on_ask(int thief, const ask_message& ask) {
  note_control(sizeof(ask_message));
  // A worker asks once all its own jobs are started: nobody can take any of them any more.
  victims_[thief].exhausted = true;
  victims_[thief].left = 0;
  wants_[thief] = ask.wants() ? 1 : 0;
  // Its pace on its own jobs, for the asks the root sends other owners on its behalf.
  if (!ask.on_owner_jobs()) thief_seconds_[thief] = ask.thief_seconds;
  ask_message seen = ask;
  seen.set_idle_ranks(idle_ranks());
  seen.least_seconds = static_cast<float>(self_.round_trip(thief));
  const double held_seconds = ask.held_time(job_seconds_, pace_.per_job());
  thieves_.note(seen, held_seconds);
  held_until_[thief] = clock::now() + steady_seconds(held_seconds);
  const bool pinned_to_host = self_.held_rank == 0 && host_range_;
  if (wants_[thief] && !stopping_ && claimable_ && !pinned_to_host && own_.left() > 0) {
    // A held root (a test's pin) grants whatever is worth it, as a held worker does (serve_asks).
    const int least = self_.held_rank == 0 ? 1 : jobs_worth(self_.round_trip(thief), job_seconds_);
    const job_range g = grant_for(own_, ask, job_seconds_, pace_.per_job(), least, self_.size);
    refused_ = refused_ || (!is_later(g) && g.empty());
    if (is_later(g) || !g.empty()) {  // "later": the thief holds enough, and asks again once it ran it
      send_grant_to(thief, 0, g);
      if (!is_later(g)) {
        work_.send_batch(thief, 0, g);
        ++batches_out_[thief];
      }
      return;
    }
  }
  waiting_.push_back(thief);  // dispatch() answers: a batch of another worker's, or "none"
}

void claims_broker::broker_between_own() {
  std::vector<int> late;  // run() finds a late owner on its own poll
  poll_answers(late);
  if (!stopping_) forward_waiting(true);
}

void claims_broker::after_batch(int done, int left) {
  // A few jobs ahead: a dear job may delay the answer.
  if (root_asking_ || stopping_ || !next_.empty() || left > 9) return;
  // The root's own jobs still to run, at their mean time so far. After a "later" it asks again once it holds
  // half as much: a few asks a call keep what the owners have left known.
  const double held_seconds = left * seconds_since(own_start_) / std::max(1, done);
  if (held_seconds > later_held_seconds_ / 2) return;
  const int v = richest_free(0);
  if (v >= 0) ask_victim(v, 0, 0, held_seconds);
}

int claims_broker::least_own_batch() const {
  double shortest = 0;
  for (int r = 1; r < self_.size; ++r)
    shortest = r == 1 ? self_.round_trip(r) : std::min(shortest, self_.round_trip(r));
  return jobs_worth(shortest, job_seconds_);
}

void claims_broker::release_held() {
  const int held = self_.held_rank;
  if (held <= 0 || held >= self_.size || victims_[held].exhausted || !victims_[held].asks.empty()) return;
  ask_victim(held, 0, 0, 0, false);
}

void claims_broker::ask_victim(int v, int thief, int held, double held_seconds, bool want) {
  ask_out& ask = victims_[v].asks.emplace_back();
  ask.thief = thief;
  ask.held_seconds = held_seconds;
  // A batch for the root is worth the ask's own round trip to the owner; one for a worker, its round trip
  // from the root as well (the rows go out, the blocks come back).
  const double least = self_.round_trip(thief > 0 ? thief : v);
  // The root's own asks carry its time on the owner's jobs once it ran some in this call.
  const bool on_owner = thief == 0 && taken_pace_[v].jobs > 0;
  const double thief_seconds =
      thief > 0 ? thief_seconds_[thief] : on_owner ? taken_pace_[v].per_job() : pace_.per_job();
  const ask_message m = ask_message::of(want, held, held_seconds, least, thief_seconds, idle_ranks(), on_owner);
  post_ask(self_.comm, v, m, ask.answer, ask.reply);
  note_control(sizeof(ask_message));
  if (thief == 0) root_asking_ = true;
  if (self_.timeout > 0) ask.sent = clock::now();
}

void claims_broker::send_grant_to(int thief, int owner, job_range g) {
  send_grant(self_.comm, thief, owner, g);
  note_control(sizeof(grant_message));
}

int claims_broker::richest_free(int thief) const {
  // An owner's count ages as it runs its jobs. Without the aging, a fast owner that the root never heard from
  // kept its whole chunk in the root's eyes, and thieves waited for its "none" before asking a slow owner. Its
  // speed is unknown until it answers, so its jobs age at the root's pace.
  const clock::time_point now = clock::now();
  int best = -1;
  double most = 0;
  for (int v = 1; v < self_.size; ++v) {
    const victim& w = victims_[v];
    if (v == thief || w.exhausted || w.left_after_asks() <= 0) continue;
    const double left = w.left_by(now, job_seconds_);
    if (best < 0 || left > most) {
      best = v;
      most = left;
    }
  }
  return best;
}

int claims_broker::idle_ranks() const {
  int idle = own_.left() == 0 ? 1 : 0;
  for (int r = 1; r < self_.size; ++r) idle += wants_[r] && !told_[r] ? 1 : 0;
  return idle;
}

bool claims_broker::all_exhausted() const {
  for (int v = 1; v < self_.size; ++v)
    if (!victims_[v].exhausted) return false;
  return true;
}

void claims_broker::tell_none(int thief) {
  send_grant_to(thief, 0, {});
  told_[thief] = 1;
  ++told_none_;
}

int claims_broker::poll_answers(std::vector<int>& late) {
  int answered = 0;
  const auto now = self_.timeout > 0 ? clock::now() : clock::time_point{};
  for (int v = 1; v < self_.size; ++v) {
    victim& w = victims_[v];
    int done = 1;
    while (!w.asks.empty() && (MPI_Test(&w.asks.front().reply, &done, MPI_STATUS_IGNORE), done)) {
      const ask_out ask = w.asks.front();
      w.asks.pop_front();
      on_answer(v, ask);
      ++answered;
    }
    if (!w.asks.empty() && self_.timeout > 0 && now > claims_deadline(self_, w.asks.front().sent)) late = {v};
  }
  return answered;
}

void claims_broker::on_answer(int v, const ask_out& ask) {
  note_control(sizeof(grant_message));
  victim& w = victims_[v];
  const int thief = ask.thief;
  const job_range g = ask.answer.range();
  if (thief == 0) root_asking_ = false;
  if (!is_later(g) && g.empty()) {
    w.exhausted = true;
    w.left = 0;
  } else {  // "later" too: a slow owner that keeps most of its jobs shows as the richest
    w.left = ask.answer.left;
    w.known_at = clock::now();
  }
  if (thief == 0 && is_later(g)) later_held_seconds_ = ask.held_seconds;
  const bool dropped = dropping_ || (stopping_ && work_.global_job(v, g.begin) > lowest_failure_);
  if (is_later(g) && thief > 0 && !dropped) return send_grant_to(thief, 0, g);  // it asks again once free
  if (is_later(g) || g.empty() || dropped) {
    // Nobody runs a batch behind a known failure, or on stale data: the call fails, or is planned anew.
    if (thief > 0) waiting_.push_front(thief);
    return;
  }
  if (thief == 0) {
    next_.push_back({v, g});
    return;
  }
  send_grant_to(thief, v, g);
  work_.send_batch(thief, v, g);
  ++batches_out_[thief];
}

void claims_broker::dispatch() {
  const bool none_left = stopping_ || all_exhausted();
  // "None" to each waiting worker once nothing is left to get, or it wants nothing, and no ask of the root's
  // to it is out (it answers that one first).
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if ((none_left || !wants_[*it]) && victims_[*it].asks.empty()) {
      tell_none(*it);
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  if (none_left) {
    release_held();
    return;
  }
  forward_waiting(false);
  // While a batch runs aside the root asks for one more, not for a queue of them.
  if (root_asking_ || (!running_.jobs.empty() && !next_.empty())) return;
  const int v = richest_free(0);
  // The root's next ask goes before the batch it holds runs: the owner answers it between its own batches.
  // What it holds counts in the owner's jobs where they are the owner's, else in seconds at the root's pace.
  int held = 0;
  double held_seconds = 0;
  const auto hold = [&](const root_batch& b) {
    if (b.owner == v) held += b.jobs.size();
    else held_seconds += b.jobs.size() * job_seconds_;
  };
  hold(running_);
  for (const root_batch& b : next_) hold(b);
  if (v >= 0) ask_victim(v, 0, held, held_seconds);
}

void claims_broker::forward_waiting(bool rich_only) {
  const clock::time_point now = clock::now();
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    int v = wants_[*it] ? richest_free(*it) : -1;
    // Between the root's own batches, only to an owner it knows has jobs to spare: asks passed on to owners
    // running their last jobs made calls of ranks alike 4% longer at 16 ranks (on 2 vCPUs).
    if (rich_only && v >= 0 && victims_[v].left_by(now, job_seconds_) < 2) v = -1;
    if (v < 0) {
      ++it;
      continue;
    }
    // What the thief still holds goes with its ask: the owner grants it none it would start later than the
    // owner itself (or "later", which the thief gets). Passed on while the root's own jobs ran, asks that
    // said none made owners give their last jobs to ranks still busy, 5% over the bound at 16 ranks alike.
    ask_victim(v, *it, 0, std::max(0.0, seconds_between(now, held_until_[*it])));
    it = waiting_.erase(it);
  }
}

bool claims_broker::finished() const {
  if (told_none_ < self_.size - 1 || root_asking_ || !next_.empty()) return false;
  if (own_results_ < self_.size - 1) return false;
  for (int r = 1; r < self_.size; ++r)
    if (batches_out_[r] > 0) return false;
  for (int v = 1; v < self_.size; ++v)
    if (!victims_[v].asks.empty()) return false;
  return true;
}

void claims_broker::note_failure(int job) {
  lowest_failure_ = std::min(lowest_failure_, job);
  stopping_ = true;
}

wire::status claims_broker::run_own(own_batch_runner& batches, int& failed_job) {
  struct root_owner {
    claims_broker& b;
    own_batch_runner& batches;
    int least_batch() const { return b.least_own_batch(); }
    void starting(job_range) {}
    wire::status run(job_range got, int& failed) { return batches.run(got, failed); }
    bool runs_aside() const { return batches.runs_aside(); }
    void serve_asks() {
      b.serve_asks();
      b.broker_between_own();
    }
    void ran(job_range got, double seconds) {
      batches.ran_for(seconds);
      if (got.begin == 0) b.hold_for_claims();
      b.after_batch(got.end, b.own_.left());
    }
  } owner{*this, batches};
  const wire::status code = run_own_batches(self_, own_, thieves_, job_seconds_, pace_, owner, failed_job);
  if (code == wire::status::failed) note_failure(failed_job);
  return code;
}

void claims_broker::hold_for_claims() {
  if (self_.held_rank != 0 || !claimable_) return;
  auto nobody_wants = [this] {
    for (int r = 1; r < self_.size; ++r)
      if (!victims_[r].exhausted || wants_[r]) return false;
    return true;
  };
  hold_until_claimed(self_.policy, own_, own_jobs_, [this] { serve_asks(); },
                     [&] { return refused_ || nobody_wants(); });
}

int claims_broker::run(bool want, std::vector<int>& late) {
  stopping_ = stopping_ || !want;
  dropping_ = dropping_ || !want;
  if (dropping_) next_.clear();  // granted for the root while its own jobs ran, on data now stale
  const auto since = clock::now();
  int taken = 0;
  unsigned spins = 0;
  // While a long batch runs aside, the root goes on brokering; a late rank shows at the loop's next turn.
  std::vector<int> late_meanwhile;
  const auto broker = [&] {
    serve_asks();
    poll_answers(late_meanwhile);
    poll_results();
    dispatch();
  };
  while (true) {
    serve_asks();
    const int answered = poll_answers(late) + poll_results();
    if (!late.empty()) return -1;
    dispatch();
    if (!next_.empty()) {
      running_ = next_.front();
      next_.pop_front();
      int failed_job = -1;
      const job_range g = running_.jobs;
      const auto start = clock::now();
      const wire::status code = run_answering(self_, work_.runs_aside(), job_seconds_ * g.size(),
                                              [&] { return work_.run_on_root(running_.owner, g, failed_job); }, broker);
      taken_pace_[running_.owner].add(seconds_since(start), g.size());
      running_ = {};
      taken += g.size();
      if (code == wire::status::failed) note_failure(failed_job);
      else if (code != wire::status::ok) stopping_ = dropping_ = true;
      continue;
    }
    if (finished()) break;
    if (self_.timeout > 0 && clock::now() > claims_deadline(self_, since)) {
      for (int r = 1; r < self_.size; ++r)
        if (!told_[r] || !own_in_[r] || batches_out_[r] > 0) late.push_back(r);
      return -1;
    }
    if (answered == 0) pause_in_claims(self_.policy, spins);
  }
  work_.finish_sends();
  return taken;
}

int claims_broker::poll_results() {
  int results = 0, pending = 0;
  MPI_Status st;
  while (MPI_Iprobe(MPI_ANY_SOURCE, claims_tag::result, self_.comm, &pending, &st), pending) {
    result_head head;
    int bytes = 0;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    MPI_Recv(&head, sizeof head, MPI_BYTE, st.MPI_SOURCE, claims_tag::result, self_.comm, MPI_STATUS_IGNORE);
    note_control(static_cast<std::size_t>(bytes));
    receive_result(st.MPI_SOURCE, head);
    ++results;
  }
  return results;
}

void claims_broker::receive_result(int from, result_head head) {
  // A batch claimed in host memory comes ahead of its thief's own result, which the call waits for.
  const bool in_host = head.code >= result_head::claimed_in_host;
  if (in_host) head.code -= result_head::claimed_in_host;
  int n = 0;
  double* blocks = work_.place_result(from, head, n);
  if (head.owner == from) {  // its own jobs: the status rides in the head
    own_in_[from] = 1;
    ++own_results_;
    traffic_.received_doubles += wire::status_doubles;
  } else {
    stolen_.keep(static_cast<wire::status>(head.code), from, head.job);
    if (!in_host) --batches_out_[from];
    else taken_in_host_[from] += head.end - head.begin;
  }
  if (n > 0) MPI_Recv(blocks, n, MPI_DOUBLE, from, claims_tag::blocks, self_.comm, MPI_STATUS_IGNORE);
  traffic_.received_doubles += n;
}

}  // namespace maprect::detail
