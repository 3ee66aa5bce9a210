// Chunk plans: who runs which jobs of a call, and where their rows and blocks go.
#include <catch2/catch.hpp>

#include "src/protocol/chunk_plan.hpp"

using maprect::detail::chunk_plan;
using maprect::detail::rank_layout;

TEST_CASE("a plan gives the root its share and splits the rest evenly, in rank order") {
  const chunk_plan even = chunk_plan::even(10, 3);
  CHECK(even.root_jobs == 3);
  CHECK(even.first(0) == 0);
  CHECK(even.first(1) == 3);
  CHECK(even.first(2) == 6);
  CHECK(even.first(3) == 10);
  CHECK(even.jobs(2) == 4);

  const chunk_plan lean{10, 3, 1};  // the root keeps one job; 9 go to two workers
  CHECK(lean.jobs(0) == 1);
  CHECK(lean.jobs(1) == 4);
  CHECK(lean.jobs(2) == 5);
  const chunk_plan all{5, 4, 5};  // the root runs everything
  for (int r = 1; r < 4; ++r) CHECK(all.jobs(r) == 0);
  const chunk_plan none{5, 2, 0};
  CHECK(none.jobs(1) == 5);
  const chunk_plan fewer_jobs_than_ranks = chunk_plan::even(2, 4);
  int total = 0;
  for (int r = 0; r < 4; ++r) total += fewer_jobs_than_ranks.jobs(r);
  CHECK(total == 2);
}

TEST_CASE("a layout for the workers' rows starts at the first worker job") {
  rank_layout l;
  l.assign_workers(chunk_plan{10, 3, 2}, 4);  // 4 values per job; jobs 2..5 and 6..9 on the workers
  CHECK(l.counts == std::vector<int>{0, 16, 16});
  CHECK(l.displs == std::vector<int>{0, 0, 16});
}

TEST_CASE("block offsets and a worker's answer size follow the jobs' output counts") {
  const std::vector<int> counts{2, 0, 1, 3};  // outputs per job; 5 rows per output
  std::vector<int> at(counts.size());
  maprect::detail::block_offsets(counts.data(), 4, 5, at.data());
  CHECK(at == std::vector<int>{0, 10, 10, 15});
  const int status = maprect::detail::wire::status_doubles, planned = status + 30;
  CHECK(maprect::detail::answer_doubles(planned, at.data(), 4, 4) == planned);  // nothing taken over
  CHECK(maprect::detail::answer_doubles(planned, at.data(), 4, 3) == status + 15);
  CHECK(maprect::detail::answer_doubles(planned, at.data(), 4, 1) == status + 10);
  CHECK(maprect::detail::answer_doubles(planned, at.data(), 4, 0) == status);  // all taken over
}
