// run_chains, the library entry point for chains on sub-communicators: the split, draws equal to a chain run
// in process, one chain's failure stopping the others on every rank, and too many chains refused. Every rank
// runs the Catch2 session: each test case is collective.
#include <catch2/catch.hpp>
#include <maprect/sample.hpp>
#include <mpi.h>

#include <chrono>

#include "eight_schools.hpp"
#include "src/sampling/chains.hpp"
#include "support/catch_session.hpp"

namespace {

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

maprect::sample_options small_options(int chain) {
  maprect::sample_options o;
  o.warmup = 100;
  o.samples = 50;
  o.seed = 31;
  o.chain = chain;
  return o;
}

}  // namespace

TEST_CASE("chain_of_rank: contiguous groups whose sizes differ by at most one") {
  for (int size = 1; size <= 9; ++size)
    for (int chains = 1; chains <= size; ++chains) {
      std::vector<int> count(chains, 0);
      int last = 0;
      for (int r = 0; r < size; ++r) {
        const int c = maprect::chain_of_rank(r, size, chains);
        REQUIRE(c >= last);
        REQUIRE(c < chains);
        last = c;
        ++count[c];
      }
      const auto [lo, hi] = std::minmax_element(count.begin(), count.end());
      CHECK(*hi - *lo <= 1);
      CHECK(*lo >= 1);
    }
}

TEST_CASE("each chain on its group draws the same bits as in process") {
  const maprect::models::eight_schools_model model;
  const auto f = maprect::var_log_density([&](const maprect::vector_v& q) { return model.log_density(q); });
  const int chains = std::min(2, world_size());
  std::vector<maprect::sample_result> in_process;
  for (int c = 1; c <= chains; ++c) in_process.push_back(maprect::sample_chain(f, model.size(), small_options(c)));
  int compared = 0;
  const auto outcomes =
      maprect::run_chains(MPI_COMM_WORLD, chains, [&](const maprect::chain_group& g, const std::function<void()>&) {
        const auto r = maprect::sample_chain(f, model.size(), small_options(g.chain));
        CHECK(r.draws == in_process[g.chain - 1].draws);
        CHECK(g.group->size() == g.ranks);
        ++compared;
      });
  for (const auto& o : outcomes) CHECK_FALSE(o.failed);
  int total = 0;
  MPI_Allreduce(&compared, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(total == chains);
}

TEST_CASE("a failing chain stops the others; every rank learns which chain failed and why") {
  const int chains = std::min(3, world_size());
  const auto start = std::chrono::steady_clock::now();
  const auto outcomes = maprect::run_chains(
      MPI_COMM_WORLD, chains, [&](const maprect::chain_group& g, const std::function<void()>& stop_check) {
        for (long i = 0;; ++i) {
          stop_check();
          if (g.chain == chains && i == 1000) throw std::domain_error("boom in chain " + std::to_string(g.chain));
          if (std::chrono::steady_clock::now() - start > std::chrono::seconds(20))
            throw std::runtime_error("not stopped after 20 s");
        }
      });
  REQUIRE(static_cast<int>(outcomes.size()) == chains);
  for (int c = 1; c <= chains; ++c) {
    const auto& o = outcomes[c - 1];
    CHECK(o.chain == c);
    if (c == chains) {
      CHECK(o.failed);
      CHECK(o.message == "boom in chain " + std::to_string(chains));
    } else {
      CHECK_FALSE(o.failed);
      CHECK(o.stopped);
      CHECK(o.message == "stopped because chain " + std::to_string(chains) + " failed");
    }
  }
}

TEST_CASE("more chains than ranks is refused on every rank before any split") {
  const int size = world_size();
  CHECK_THROWS_WITH(maprect::run_chains(MPI_COMM_WORLD, size + 1, [](const maprect::chain_group&,
                                                                     const std::function<void()>&) {}),
                    "--chains " + std::to_string(size + 1) + " needs between 1 and " + std::to_string(size) +
                        " chains: each chain needs at least one of the " + std::to_string(size) + " MPI rank" +
                        (size == 1 ? "" : "s"));
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  const int failed = run_catch_session(argc, argv);
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any == 0 ? 0 : 1;
}
