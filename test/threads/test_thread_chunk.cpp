// team_chunks, which runs a cluster rank's chunk of jobs on its team: the blocks, output counts, failing job
// and exception are those of the chunk runner run serially, for every team size, chunk size and double/var
// kind (no MPI: the ThreadSanitizer stage runs this too).
#include <catch2/catch.hpp>

#include <maprect/detail/thread_chunk.hpp>
#include <maprect/maprect.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "map_rect/functors.hpp"

using namespace maprect;
using detail::block_buffer;
using detail::chunk_input;
using detail::chunk_runner;
using detail::param_kinds;

namespace {

/// A chunk of J jobs of ragged_outputs_job (job j returns j % 4 outputs, every fourth none), packed as ranks
/// exchange it; job `failing` and those after it in `more_failing` throw through throwing_job.
struct packed_chunk {
  std::vector<double> shared{0.3, -1.25};
  std::vector<double> own;
  std::vector<std::vector<double>> x_r;
  std::vector<std::vector<int>> x_i;
  explicit packed_chunk(int J) {
    for (int j = 0; j < J; ++j) {
      own.push_back(0.01 * j + 0.5);
      own.push_back(1.0 / (j + 1.0));
      x_r.push_back({0.5 * j, -0.25 * j, 1.0 + j});
      x_i.push_back({j % 4, j});
    }
  }
  chunk_input input() const {
    return {shared.data(), 2, own.data(), 2, x_r.data(), x_i.data(), static_cast<int>(x_r.size()), nullptr};
  }
};

struct chunk_run {
  std::vector<double> blocks;
  std::vector<int> counts;
  int cursor = -1;
  std::string error = "none";
};

/// Runs the chunk with `runner`, on `team` (null: serially, as a rank without a team does).
chunk_run run(chunk_runner runner, const packed_chunk& c, thread_team* team, detail::team_chunks& chunks) {
  chunk_run r;
  block_buffer out;
  out.assign(3, 7.0);  // a rank's status doubles come first and must stay
  r.counts.assign(c.x_r.size(), -1);
  try {
    if (team == nullptr) runner(c.input(), out, r.counts.data(), r.cursor);
    else chunks.run(team, runner, c.input(), out, r.counts.data(), r.cursor);
  } catch (const std::domain_error& e) {
    r.error = std::string("domain_error: ") + e.what();
  } catch (const std::invalid_argument& e) {
    r.error = std::string("invalid_argument: ") + e.what();
  }
  r.blocks.assign(out.data(), out.data() + out.size());
  return r;
}

template <param_kinds Kinds>
void check_kind(thread_team& team, detail::team_chunks& chunks) {
  const chunk_runner runner = &detail::run_chunk<test::ragged_outputs_job, Kinds>;
  for (int J : {0, 1, team.size() - 1, team.size() + 1, 64, 513}) {
    const packed_chunk c(J);
    const chunk_run serial = run(runner, c, nullptr, chunks), on_team = run(runner, c, &team, chunks);
    INFO("T = " << team.size() << ", J = " << J << ", kinds " << static_cast<int>(Kinds));
    REQUIRE(on_team.blocks.size() == serial.blocks.size());
    CHECK(std::memcmp(on_team.blocks.data(), serial.blocks.data(), serial.blocks.size() * sizeof(double)) == 0);
    CHECK(on_team.counts == serial.counts);
    CHECK(on_team.cursor == serial.cursor);
    CHECK(on_team.error == "none");
  }
}

}  // namespace

TEST_CASE("a chunk on a team gives the serial chunk's blocks and counts") {
  for (int T : {1, 2, 3, 4, 7}) {
    thread_team team(T);
    detail::team_chunks chunks;
    check_kind<param_kinds::dd>(team, chunks);
    check_kind<param_kinds::vd>(team, chunks);
    check_kind<param_kinds::dv>(team, chunks);
    check_kind<param_kinds::vv>(team, chunks);
    CHECK(chunks.busy().slowest_seconds >= chunks.busy().fastest_seconds);
  }
}

TEST_CASE("several failing jobs in a chunk on a team: the lowest one's exception and cursor, then a good chunk") {
  const chunk_runner failing = &detail::run_chunk<test::throwing_job, param_kinds::vv>;
  const chunk_runner good = &detail::run_chunk<test::ragged_outputs_job, param_kinds::vv>;
  for (int T : {1, 2, 3, 4, 7}) {
    thread_team team(T);
    detail::team_chunks chunks;
    for (const std::vector<int>& bad : {std::vector<int>{3, 40, 60}, std::vector<int>{61, 62, 63},
                                        std::vector<int>{17, 18, 19, 20, 21, 22}, std::vector<int>{0, 1}}) {
      packed_chunk c(64);
      for (std::vector<int>& x : c.x_i) x[0] = 0;  // throwing_job: 0 returns one output
      for (std::size_t f = 0; f < bad.size(); ++f) c.x_i[bad[f]] = {f % 2 == 0 ? 1 : 2, bad[f]};
      const chunk_run serial = run(failing, c, nullptr, chunks), on_team = run(failing, c, &team, chunks);
      INFO("T = " << T << ", first failing job " << bad[0]);
      CHECK(serial.error == "domain_error: bad job " + std::to_string(bad[0]));
      CHECK(on_team.error == serial.error);
      CHECK(on_team.cursor == bad[0]);
      const packed_chunk fine(64);
      const chunk_run after = run(good, fine, &team, chunks), reference = run(good, fine, nullptr, chunks);
      CHECK(after.error == "none");
      CHECK(after.blocks == reference.blocks);
    }
  }
}
