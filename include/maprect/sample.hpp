#pragma once
/// \file Posterior sampling: NUTS with Stan's warm-up, Stan CSV, checkpoints, and chains on sub-communicators.

#include "ad.hpp"
#include "sample/adaptation.hpp"
#include "sample/chain.hpp"
#include "sample/chains.hpp"
#include "sample/checkpoint.hpp"
#include "sample/hamiltonian.hpp"
#include "sample/nuts.hpp"
#include "sample/rng.hpp"
#include "sample/stan_csv.hpp"
#include "sample/summary.hpp"

namespace maprect {

/// A log_density_function from f(vector_v) -> var (a model written against maprect::var, which may call
/// map_rect): each evaluation is one reverse sweep on a nested region of the caller's tape.
template <class F>
log_density_function var_log_density(F f) {
  return [f = std::move(f)](const Eigen::VectorXd& q, Eigen::VectorXd& g) {
    double lp = 0;
    gradient(f, q, lp, g);
    return lp;
  };
}

}  // namespace maprect
