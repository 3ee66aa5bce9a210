#pragma once
/// \file Posterior sampling: NUTS with Stan's warm-up, one chain that its caller drives iteration by iteration. The
/// maprect program's Stan CSV, checkpoints, chains on sub-communicators and summary are built on it (src/sampling/).

#include "ad.hpp"
#include "sample/adaptation.hpp"
#include "sample/chain.hpp"
#include "sample/hamiltonian.hpp"
#include "sample/nuts.hpp"
#include "sample/rng.hpp"

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
