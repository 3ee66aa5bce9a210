#pragma once
/// \file Posterior summary of MCMC draws: mean, MCSE, sd, quantiles, bulk/tail ESS and rank-normalised split
/// R-hat as defined by Vehtari, Gelman, Simpson, Carpenter and Bürkner (2021), "Rank-normalization, folding,
/// and localization: an improved R-hat for assessing convergence of MCMC", Bayesian Analysis 16(2).

#include <Eigen/Dense>

#include <limits>
#include <ostream>
#include <string>
#include <vector>

namespace maprect {

/// One column's summary over all chains.
struct parameter_summary {
  std::string name;  ///< the column's name
  double mean;       ///< mean of the draws of all chains
  double mcse;       ///< Monte Carlo standard error of the mean
  double sd;         ///< standard deviation of the draws
  double q5;         ///< 5% quantile
  double q50;        ///< median
  double q95;        ///< 95% quantile
  double ess_bulk;   ///< bulk effective sample size
  double ess_tail;   ///< tail effective sample size: the smaller of those at the 5% and 95% quantiles
  double rhat;       ///< rank-normalised split R-hat: the larger of its bulk and folded forms
  double mcse_sd = std::numeric_limits<double>::quiet_NaN();  ///< Monte Carlo standard error of sd (posterior's)
  double mad = std::numeric_limits<double>::quiet_NaN();      ///< median absolute deviation, scaled by 1.4826
  std::vector<double> quantiles{};  ///< at the probabilities asked of summarize (empty if none were)
};

/// The summary's steps, public to the tests (which check them one by one) and to `maprect summary`.
namespace detail {

/// Draws of one column, one matrix column per (possibly split) chain.
using chain_draws = Eigen::MatrixXd;

/// Column `column` of every chain side by side: draws x chains.
chain_draws gather_column(const std::vector<Eigen::MatrixXd>& chains, Eigen::Index column);

/// Each chain cut into its first and second half; the middle draw of an odd-length chain is dropped.
chain_draws split_chains(const chain_draws& x);

/// Inverse of the standard normal CDF: Acklam's rational approximation, refined by one Halley step.
double inverse_normal_cdf(double p);

/// Pooled ranks (ties get their average rank) mapped to normal scores Phi^-1((r - 3/8) / (S + 1/4)).
chain_draws rank_normalize(const chain_draws& x);

/// Classic potential scale reduction of the given chains (split them first for split R-hat).
double basic_rhat(const chain_draws& x);

/// Effective sample size of the given chains with Geyer's initial positive and monotone sequences.
double basic_ess(const chain_draws& x);

/// Warnings for R-hat above 1.01 and for bulk or tail ESS below 100 per chain (NaN, undefined, warns of neither).
void print_convergence_warnings(std::ostream& os, const std::vector<parameter_summary>& rows, std::size_t chains);

}  // namespace detail

/// chains[c] is draws x columns for chain c (all chains the same shape); each row also holds the quantiles at
/// `probabilities` (each in [0, 1]; std::invalid_argument names one outside).
std::vector<parameter_summary> summarize(const std::vector<Eigen::MatrixXd>& chains,
                                         const std::vector<std::string>& names,
                                         const std::vector<double>& probabilities = {});

/// Prints the table like CmdStan's stansummary, divergences per chain, and warnings (R-hat > 1.01, ESS < 100 per
/// chain).
void print_summary(std::ostream& os, const std::vector<parameter_summary>& rows,
                   const std::vector<int>& divergences_per_chain, int draws_per_chain);

}  // namespace maprect
