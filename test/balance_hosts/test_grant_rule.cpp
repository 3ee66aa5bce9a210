// The owner's rule for what a thief gets (src/balance/steal.hpp: unstarted_jobs): from the back, half of what is
// left beyond the jobs the thief still holds, at least one to a thief that holds none, "later" to a thief
// that holds enough, "none" once nothing is left; the owner runs batches of a sixteenth from the front.
#include <catch2/catch.hpp>

#include "src/balance/steal.hpp"

using maprect::detail::is_later;
using maprect::detail::job_range;
using maprect::detail::unstarted_jobs;

namespace {
bool same(job_range a, job_range b) { return a.begin == b.begin && a.end == b.end; }
}  // namespace

TEST_CASE("grants: half of what is left beyond the thief's held jobs, from the back") {
  unstarted_jobs jobs;
  jobs.reset(64);
  CHECK(same(jobs.take_front(), {0, 4}));       // a sixteenth of 64
  CHECK(same(jobs.grant_back(0), {34, 64}));    // half of the 60 left, to a thief holding none
  CHECK(same(jobs.grant_back(10), {24, 34}));   // (30 - 10) / 2 = 10 more to a thief holding 10
  CHECK(same(jobs.take_front(), {4, 5}));       // a sixteenth of 20, at least one
  CHECK(is_later(jobs.grant_back(19)));         // (19 - 19) / 2 = 0: later, and nothing moves
  CHECK(same(jobs.grant_back(17), {23, 24}));   // (19 - 17) / 2 = 1
  CHECK(jobs.end() == 5);
}

TEST_CASE("grants: one job to an idle thief, none once nothing is left") {
  unstarted_jobs jobs;
  jobs.reset(2);
  CHECK(same(jobs.grant_back(0), {1, 2}));  // half of 2
  CHECK(same(jobs.grant_back(0), {0, 1}));  // at least one to a thief that holds none
  const job_range none = jobs.grant_back(0);
  CHECK(none.empty());
  CHECK_FALSE(is_later(none));
  CHECK(jobs.take_front().empty());
  CHECK(jobs.end() == 0);
}

TEST_CASE("grants: an owner that dropped its jobs (a failure) grants none, never later") {
  unstarted_jobs jobs;
  jobs.reset(10);
  jobs.drop_rest();
  for (int held : {0, 3, 20}) {
    const job_range g = jobs.grant_back(held);
    CHECK(g.empty());
    CHECK_FALSE(is_later(g));
  }
}
