// Writes the valid seeds of the stan_csv and checkpoint fuzz targets with maprect's own writers:
//   fuzz_make_seeds test/fuzz/corpus
// writes stan_csv/valid.csv and checkpoint/{body_iteration5.txt, body_iteration35.txt, with_checksum.checkpoint}
// (the bodies without their checksum line: the target adds it). Rerun it when a format changes; the
// near-valid seeds beside them are these files with one line edited.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "maprect/sample/chain.hpp"
#include "src/sampling/checkpoint.hpp"
#include "src/sampling/stan_csv.hpp"

namespace {

/// The checkpoint of `chain` after `iteration` iterations, as write_checkpoint writes it.
std::string checkpoint_text(const maprect::nuts_chain& chain, int iteration, const std::string& path) {
  maprect::chain_checkpoint c;
  c.fingerprint = "model=normal data=none seed=7 chain=1";
  c.output_bytes = 1000 + static_cast<std::uint64_t>(iteration);
  c.warmup_seconds = 0.5;
  c.sampling_seconds = 0.25;
  c.state = chain.state();
  maprect::write_checkpoint(path, c);
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_body(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text.substr(0, text.rfind("checksum "));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_make_seeds CORPUS_DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  maprect::sample_options o;
  o.warmup = 30;
  o.samples = 10;
  o.max_depth = 4;
  o.seed = 7;
  o.chain = 1;
  maprect::nuts_chain chain(
      [](const Eigen::VectorXd& q, Eigen::VectorXd& gradient) {
        gradient = -q;
        return -0.5 * q.squaredNorm();
      },
      2, o);
  chain.initialize();
  std::ofstream csv(dir + "/stan_csv/valid.csv", std::ios::binary);
  maprect::stan_csv_config config;
  config.model = "normal";
  config.options = o;
  config.output_file = "normal-1.csv";
  maprect::write_stan_csv_header(csv, config, {"q.1", "q.2"});
  for (int done = 1; !chain.done(); ++done) {
    const maprect::chain_draw d = chain.step();
    if (d.iteration == o.warmup - 1) maprect::write_stan_csv_adaptation(csv, chain.step_size(), chain.inv_metric(), 6);
    if (!d.warmup) maprect::write_stan_csv_draw(csv, d, d.q, 6);
    const std::string scratch = dir + "/checkpoint/scratch.checkpoint";
    if (done == 5) write_body(dir + "/checkpoint/body_iteration5.txt", checkpoint_text(chain, done, scratch));
    if (done == 35) write_body(dir + "/checkpoint/body_iteration35.txt", checkpoint_text(chain, done, scratch));
    if (done == 20) {
      const std::string text = checkpoint_text(chain, done, scratch);
      std::ofstream(dir + "/checkpoint/with_checksum.checkpoint", std::ios::binary) << text;
    }
    std::remove(scratch.c_str());
  }
  maprect::write_stan_csv_timing(csv, 0.5, 0.25);
  return csv ? 0 : 1;
}
