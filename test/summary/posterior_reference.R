# posterior_reference.R TABLE FILE...: compares `maprect summary --sig-figs 17 --csv TABLE FILE...` with R's
# posterior package reading the same Stan CSV files (one per chain): mean, sd, mad, R-hat, ESS bulk and tail, MCSE of
# the mean and of the sd, and the 5/50/95% quantiles of every column, within 1e-8 relative. Undefined values
# (NA in posterior, nan in maprect) must be undefined in both; an R-hat above 1e10 in both (chains each constant,
# at different values) counts as agreement.
suppressPackageStartupMessages(library(posterior))
args <- commandArgs(trailingOnly = TRUE)
ours <- read.csv(args[1], check.names = FALSE, stringsAsFactors = FALSE, na.strings = c("nan", "NaN", "NA"))
chains <- lapply(args[-1], function(f) as.matrix(read.csv(f, comment.char = "#", check.names = FALSE)))
draws <- array(NA_real_, c(nrow(chains[[1]]), length(chains), ncol(chains[[1]])),
               dimnames = list(NULL, NULL, colnames(chains[[1]])))
for (c in seq_along(chains)) draws[, c, ] <- chains[[c]]
reference <- summarise_draws(as_draws_array(draws), mean, sd, mad, rhat, ess_bulk, ess_tail, mcse_mean, mcse_sd,
                             ~quantile2(.x, probs = c(0.05, 0.5, 0.95)))
pairs <- c(mean = "Mean", sd = "StdDev", mad = "MAD", rhat = "R_hat", ess_bulk = "ESS_bulk", ess_tail = "ESS_tail",
           mcse_mean = "MCSE", mcse_sd = "MCSE_SD", q5 = "5%", q50 = "50%", q95 = "95%")
if (!identical(ours$name, reference$variable)) stop("the columns differ: ", paste(ours$name, collapse = ","))
failures <- 0
compared <- 0
worst <- 0
for (theirs in names(pairs)) {
  a <- ours[[pairs[[theirs]]]]
  b <- reference[[theirs]]
  for (i in seq_along(a)) {
    # Chains each constant but at different values (stepsize__) have an R-hat over a within-chain variance of
    # rounding noise: both far beyond any threshold is agreement, their digits are noise.
    both_undefined <- (is.na(a[i]) && is.na(b[i])) || (theirs == "rhat" && !is.na(a[i]) && !is.na(b[i]) &&
                                                        a[i] > 1e10 && b[i] > 1e10)
    relative <- if (is.na(a[i]) || is.na(b[i])) Inf else if (a[i] == b[i]) 0 else abs(a[i] - b[i]) / max(abs(a[i]), abs(b[i]))
    if (!both_undefined) {
      compared <- compared + 1
      worst <- max(worst, relative)
    }
    if (!both_undefined && relative > 1e-8) {
      failures <- failures + 1
      cat(sprintf("FAIL: %s %s: maprect %.17g, posterior %.17g (relative %.3g)\n", reference$variable[i], theirs,
                  a[i], b[i], relative))
    }
  }
}
cat(sprintf("posterior %s: %d values of %d columns compared, largest relative difference %.3g; %d undefined (or R-hat > 1e10) in both\n",
            packageVersion("posterior"), compared, nrow(reference), worst, length(pairs) * nrow(reference) - compared))
if (failures > 0) quit(status = 1)
