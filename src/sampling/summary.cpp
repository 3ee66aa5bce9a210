// The posterior summary of MCMC draws (summary.hpp): the statistics, the table and its CSV, and the warnings.
#include "src/sampling/summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

namespace maprect {
namespace detail {
namespace {

/// Throws std::invalid_argument naming the first inconsistency of the summary's input.
void check_summary_input(const std::vector<Eigen::MatrixXd>& chains, const std::vector<std::string>& names) {
  if (chains.empty()) throw std::invalid_argument("summarize: no chains given");
  const Eigen::Index draws = chains[0].rows(), columns = chains[0].cols();
  for (std::size_t c = 1; c < chains.size(); ++c)
    if (chains[c].rows() != draws || chains[c].cols() != columns)
      throw std::invalid_argument("summarize: chain " + std::to_string(c + 1) + " has " +
                                  std::to_string(chains[c].rows()) + " draws x " + std::to_string(chains[c].cols()) +
                                  " columns, but chain 1 has " + std::to_string(draws) + " x " +
                                  std::to_string(columns));
  if (draws < 4)
    throw std::invalid_argument("summarize: " + std::to_string(draws) +
                                " draws per chain, at least 4 are needed to split chains");
  if (static_cast<Eigen::Index>(names.size()) != columns)
    throw std::invalid_argument("summarize: " + std::to_string(names.size()) + " names for " +
                                std::to_string(columns) + " columns");
}

/// True where no diagnostic is defined (posterior's rule): a non-finite draw, or all draws within machine
/// epsilon of each other.
bool summary_undefined(const chain_draws& x) {
  if (!x.allFinite()) return true;
  return x.maxCoeff() - x.minCoeff() < std::numeric_limits<double>::epsilon();
}

/// Quantile of already sorted values by linear interpolation between order statistics (R's and Stan's type 7).
double sorted_quantile(const std::vector<double>& sorted, double p) {
  const double h = (static_cast<double>(sorted.size()) - 1.0) * p;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - std::floor(h)) * (sorted[hi] - sorted[lo]);
}

/// All draws in increasing order; empty if any draw is NaN (which has no place in an order).
std::vector<double> sorted_draws(const chain_draws& x) {
  if (x.hasNaN()) return {};
  std::vector<double> v(x.data(), x.data() + x.size());
  std::sort(v.begin(), v.end());
  return v;
}

/// Absolute deviations from the pooled median, whose R-hat sees chains that differ in scale (tails).
chain_draws fold(const chain_draws& x, double median) { return (x.array() - median).abs().matrix(); }

/// Autocovariance of one chain at `lag`, normalised by the chain length (Geyer's biased estimate).
double autocovariance(const Eigen::Ref<const Eigen::VectorXd>& centred, Eigen::Index lag) {
  const Eigen::Index n = centred.size();
  return centred.head(n - lag).dot(centred.tail(n - lag)) / static_cast<double>(n);
}

/// Autocorrelation estimate at `lag` combining all chains, as in Vehtari et al. (2021), eq. (10).
struct pooled_autocorrelation {
  Eigen::MatrixXd centred;
  double mean_var, var_plus;

  explicit pooled_autocorrelation(const chain_draws& x) : centred(x.rowwise() - x.colwise().mean()) {
    const double n = static_cast<double>(x.rows());
    mean_var = 0;
    for (Eigen::Index c = 0; c < x.cols(); ++c) mean_var += autocovariance(centred.col(c), 0);
    mean_var = mean_var / static_cast<double>(x.cols()) * n / (n - 1);
    var_plus = mean_var * (n - 1) / n;
    if (x.cols() > 1) {
      const Eigen::VectorXd means = x.colwise().mean().transpose();
      var_plus += (means.array() - means.mean()).square().sum() / static_cast<double>(x.cols() - 1);
    }
  }
  double operator()(Eigen::Index lag) const {
    double acov = 0;
    for (Eigen::Index c = 0; c < centred.cols(); ++c) acov += autocovariance(centred.col(c), lag);
    return 1 - (mean_var - acov / static_cast<double>(centred.cols())) / var_plus;
  }
};

/// The smaller of two diagnostics, NaN if either is undefined (as R's min with NA).
double min_defined(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::min(a, b);
}

/// The larger of two diagnostics, NaN if either is undefined (as R's max with NA).
double max_defined(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, b);
}

/// ESS of the indicator draws x <= q over split chains: the ESS of the quantile q estimates.
double indicator_ess(const chain_draws& x, double q) {
  return basic_ess(split_chains((x.array() <= q).cast<double>().matrix()));
}

/// Monte Carlo standard error of the standard deviation by the delta method, as posterior 1.4's mcse_sd: the ESS
/// of the squared centred draws, and their variance, over the variance estimate.
double sd_mcse(const chain_draws& x, double mean) {
  const Eigen::ArrayXXd centred_squared = (x.array() - mean).square();
  const double expected_var = centred_squared.mean();
  const double var_var =
      (centred_squared.square().mean() - expected_var * expected_var) / basic_ess(split_chains(centred_squared.matrix()));
  return std::sqrt(var_var / expected_var / 4);
}

/// Median absolute deviation from the median, scaled by 1.4826 to estimate a normal's sd (R's mad).
double scaled_mad(const std::vector<double>& sorted, double median) {
  std::vector<double> deviations(sorted.size());
  for (std::size_t i = 0; i < sorted.size(); ++i) deviations[i] = std::fabs(sorted[i] - median);
  std::sort(deviations.begin(), deviations.end());
  return 1.4826 * sorted_quantile(deviations, 0.5);
}

/// Summary of one column's draws (draws x chains), with quantiles at `probabilities` too. Bulk ESS and bulk R-hat
/// share the rank-normalised split chains; tail ESS uses the 5% and 95% quantiles, and the folded R-hat the
/// median, that the row reports.
parameter_summary summarize_column(const std::string& name, const chain_draws& x,
                                   const std::vector<double>& probabilities = {}) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  parameter_summary s{name, x.mean(), nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, {}};
  s.sd = std::sqrt((x.array() - s.mean).square().sum() / static_cast<double>(x.size() - 1));
  s.mcse = s.sd / std::sqrt(basic_ess(split_chains(x)));
  s.mcse_sd = sd_mcse(x, s.mean);
  s.quantiles.assign(probabilities.size(), nan);
  const std::vector<double> sorted = sorted_draws(x);
  if (sorted.empty()) return s;  // a NaN draw: no order, no quantiles
  for (std::size_t k = 0; k < probabilities.size(); ++k) s.quantiles[k] = sorted_quantile(sorted, probabilities[k]);
  s.q5 = sorted_quantile(sorted, 0.05);
  s.q50 = sorted_quantile(sorted, 0.5);
  s.q95 = sorted_quantile(sorted, 0.95);
  s.mad = scaled_mad(sorted, s.q50);
  if (summary_undefined(x)) return s;
  const chain_draws z = rank_normalize(split_chains(x));
  s.ess_bulk = basic_ess(z);
  s.ess_tail = min_defined(indicator_ess(x, s.q5), indicator_ess(x, s.q95));
  s.rhat = max_defined(basic_rhat(z), basic_rhat(rank_normalize(split_chains(fold(x, s.q50)))));
  return s;
}

/// The cell text of a number, with NaN (an undefined diagnostic) spelled as such.
std::string format_cell(const char* format, double value) {
  if (std::isnan(value)) return "NaN";
  char cell[64];
  std::snprintf(cell, sizeof cell, format, value);
  return cell;
}

/// Throws std::invalid_argument when print_summary's chain description is inconsistent.
void check_print_input(const std::vector<int>& divergences_per_chain, int draws_per_chain) {
  if (divergences_per_chain.empty())
    throw std::invalid_argument("print_summary: divergences_per_chain is empty, expected one entry per chain");
  for (std::size_t c = 0; c < divergences_per_chain.size(); ++c)
    if (divergences_per_chain[c] < 0)
      throw std::invalid_argument("print_summary: chain " + std::to_string(c + 1) + " has " +
                                  std::to_string(divergences_per_chain[c]) + " divergences, expected >= 0");
  if (draws_per_chain < 1)
    throw std::invalid_argument("print_summary: draws_per_chain is " + std::to_string(draws_per_chain) +
                                ", expected >= 1");
}

/// The header and one row per column, names left-aligned in a column as wide as the longest name. R-hat keeps
/// three decimals, which show the 1.01 threshold, unless it is far off (chains stuck apart give 1e14).
void print_table(std::ostream& os, const std::vector<parameter_summary>& rows) {
  std::size_t width = 8;
  for (const auto& r : rows) width = std::max(width, r.name.size());
  const char* headers[] = {"Mean", "MCSE", "StdDev", "5%", "50%", "95%", "ESS_bulk", "ESS_tail", "R_hat"};
  os << std::string(width, ' ');
  for (const char* h : headers) os << ' ' << std::string(9 - std::char_traits<char>::length(h), ' ') << h;
  os << '\n';
  for (const auto& r : rows) {
    const std::string cells[] = {format_cell("%.3g", r.mean),     format_cell("%.2g", r.mcse),
                                 format_cell("%.3g", r.sd),       format_cell("%.3g", r.q5),
                                 format_cell("%.3g", r.q50),      format_cell("%.3g", r.q95),
                                 format_cell("%.0f", r.ess_bulk), format_cell("%.0f", r.ess_tail),
                                 format_cell(r.rhat < 10 ? "%.3f" : "%.3g", r.rhat)};
    os << r.name << std::string(width - r.name.size(), ' ');
    for (const auto& cell : cells) os << ' ' << std::string(cell.size() < 9 ? 9 - cell.size() : 0, ' ') << cell;
    os << '\n';
  }
}

/// Divergent transitions of each chain, and a warning when there are any.
void print_divergences(std::ostream& os, const std::vector<int>& divergences_per_chain) {
  long long total = 0;
  os << "Divergent transitions per chain:";
  for (std::size_t c = 0; c < divergences_per_chain.size(); ++c) {
    os << (c == 0 ? " " : ", ") << c + 1 << ": " << divergences_per_chain[c];
    total += divergences_per_chain[c];
  }
  os << " (" << total << " in all)\n";
  if (total > 0)
    os << "Warning: " << total << " divergent transitions after warm-up: the draws may be biased.\n";
}

/// Whether a column takes part in the convergence warnings: the model's parameters and lp__, not the sampler's
/// own diagnostics (accept_stat__, treedepth__, ...), which need not mix.
bool warned_column(const std::string& name) {
  const bool sampler_column = name.size() > 2 && name.compare(name.size() - 2, 2, "__") == 0;
  return !sampler_column || name == "lp__";
}

/// One warning line listing `names`, if any.
void print_warning(std::ostream& os, const std::vector<std::string>& names, const std::string& what) {
  if (names.empty()) return;
  os << "Warning: " << what << " for " << names.size() << (names.size() == 1 ? " column: " : " columns: ");
  for (std::size_t i = 0; i < names.size(); ++i) os << (i == 0 ? "" : ", ") << names[i];
  os << '\n';
}

}  // namespace

chain_draws gather_column(const std::vector<Eigen::MatrixXd>& chains, Eigen::Index column) {
  chain_draws x(chains[0].rows(), static_cast<Eigen::Index>(chains.size()));
  for (std::size_t c = 0; c < chains.size(); ++c) x.col(static_cast<Eigen::Index>(c)) = chains[c].col(column);
  return x;
}

chain_draws split_chains(const chain_draws& x) {
  const Eigen::Index n = x.rows(), half = n / 2, chains = x.cols();
  chain_draws split(half, 2 * chains);
  for (Eigen::Index c = 0; c < chains; ++c) {
    split.col(2 * c) = x.col(c).head(half);
    split.col(2 * c + 1) = x.col(c).tail(half);
  }
  return split;
}

double inverse_normal_cdf(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01,  -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double p_low = 0.02425;
  double z;
  if (p < p_low || p > 1 - p_low) {
    const double q = std::sqrt(-2 * std::log(p < p_low ? p : 1 - p));
    z = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    if (p > 1 - p_low) z = -z;
  } else {
    const double q = p - 0.5, r = q * q;
    z = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  // One Halley step on Phi(z) - p brings the approximation (relative error ~1e-9) to full double precision.
  const double e = 0.5 * std::erfc(-z / std::sqrt(2.0)) - p;
  const double sqrt_two_pi = 2.5066282746310002;
  const double u = e * sqrt_two_pi * std::exp(z * z / 2);
  return z - u / (1 + z * u / 2);
}

chain_draws rank_normalize(const chain_draws& x) {
  const Eigen::Index S = x.size();
  Eigen::Matrix<Eigen::Index, Eigen::Dynamic, 1> order(S);
  std::iota(order.data(), order.data() + S, Eigen::Index{0});
  std::stable_sort(order.data(), order.data() + S, [&](Eigen::Index i, Eigen::Index j) { return x(i) < x(j); });
  chain_draws z(x.rows(), x.cols());
  for (Eigen::Index first = 0; first < S;) {
    Eigen::Index last = first;
    while (last + 1 < S && x(order[last + 1]) == x(order[first])) ++last;
    const double rank = 0.5 * static_cast<double>(first + last) + 1.0;
    const double score = inverse_normal_cdf((rank - 0.375) / (static_cast<double>(S) + 0.25));
    for (Eigen::Index k = first; k <= last; ++k) z(order[k]) = score;
    first = last + 1;
  }
  return z;
}

double basic_rhat(const chain_draws& x) {
  if (summary_undefined(x)) return std::numeric_limits<double>::quiet_NaN();
  const double n = static_cast<double>(x.rows());
  const Eigen::VectorXd means = x.colwise().mean().transpose();
  double within = 0;
  for (Eigen::Index c = 0; c < x.cols(); ++c) within += (x.col(c).array() - means(c)).square().sum() / (n - 1);
  within /= static_cast<double>(x.cols());
  const double between_over_n =
      x.cols() > 1 ? (means.array() - means.mean()).square().sum() / static_cast<double>(x.cols() - 1) : 0.0;
  return std::sqrt((n * between_over_n / within + n - 1) / n);
}

double basic_ess(const chain_draws& x) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Eigen::Index n = x.rows();
  if (n < 3 || summary_undefined(x)) return nan;
  const pooled_autocorrelation rho(x);
  Eigen::VectorXd rho_hat = Eigen::VectorXd::Zero(n);
  double even = 1, odd = rho(1);
  rho_hat(0) = even;
  rho_hat(1) = odd;
  Eigen::Index t = 0;
  while (t < n - 5 && !std::isnan(even + odd) && even + odd > 0) {
    t += 2;
    even = rho(t);
    odd = rho(t + 1);
    if (even + odd >= 0) {
      rho_hat(t) = even;
      rho_hat(t + 1) = odd;
    }
  }
  const Eigen::Index max_t = t;
  if (even > 0) rho_hat(max_t) = even;
  for (t = 2; t <= max_t - 2; t += 2)
    if (rho_hat(t) + rho_hat(t + 1) > rho_hat(t - 2) + rho_hat(t - 1))
      rho_hat(t) = rho_hat(t + 1) = (rho_hat(t - 2) + rho_hat(t - 1)) / 2;
  const double total = static_cast<double>(x.size());
  double tau = -1 + rho_hat(max_t);
  for (Eigen::Index k = 0; k < max_t; ++k) tau += 2 * rho_hat(k);
  tau = std::max(tau, 1 / std::log10(total));
  return total / tau;
}

void print_convergence_warnings(std::ostream& os, const std::vector<parameter_summary>& rows, std::size_t chains) {
  const double ess_floor = 100.0 * static_cast<double>(chains);
  std::vector<std::string> high_rhat, low_ess;
  for (const auto& r : rows) {
    if (!warned_column(r.name)) continue;
    if (r.rhat > 1.01) high_rhat.push_back(r.name);
    if (r.ess_bulk < ess_floor || r.ess_tail < ess_floor) low_ess.push_back(r.name);
  }
  print_warning(os, high_rhat, "R_hat > 1.01 (chains have not mixed; run longer or reparameterise)");
  print_warning(os, low_ess,
                "ESS_bulk or ESS_tail < " + format_cell("%.0f", ess_floor) + " (100 per chain; run longer)");
}

}  // namespace detail

std::vector<parameter_summary> summarize(const std::vector<Eigen::MatrixXd>& chains,
                                         const std::vector<std::string>& names,
                                         const std::vector<double>& probabilities) {
  detail::check_summary_input(chains, names);
  for (double p : probabilities)
    if (!(p >= 0 && p <= 1))
      throw std::invalid_argument("summarize: quantile probability " + std::to_string(p) + " is outside [0, 1]");
  std::vector<parameter_summary> rows;
  rows.reserve(names.size());
  for (Eigen::Index j = 0; j < chains[0].cols(); ++j)
    rows.push_back(detail::summarize_column(names[static_cast<std::size_t>(j)], detail::gather_column(chains, j),
                                            probabilities));
  return rows;
}

void print_summary(std::ostream& os, const std::vector<parameter_summary>& rows,
                   const std::vector<int>& divergences_per_chain, int draws_per_chain) {
  detail::check_print_input(divergences_per_chain, draws_per_chain);
  const std::size_t chains = divergences_per_chain.size();
  os << "Inference for " << chains << (chains == 1 ? " chain" : " chains") << ": each with " << draws_per_chain
     << " draws (" << static_cast<long long>(chains) * draws_per_chain << " in all).\n\n";
  detail::print_table(os, rows);
  os << '\n';
  detail::print_divergences(os, divergences_per_chain);
  detail::print_convergence_warnings(os, rows, chains);
  os << "\nESS_bulk and ESS_tail are effective sample sizes for the bulk and for the 5% and 95% tails; R_hat is the\n"
        "rank-normalised split R-hat, the larger of its bulk and folded (tail) forms (Vehtari et al. 2021).\n"
        "At convergence R_hat is close to 1, and ESS above 100 per chain makes MCSE and quantiles reliable.\n";
}

}  // namespace maprect
