#!/usr/bin/python3
"""Reference numbers for test_summary.cpp, computed independently of the C++ code.

Follows the definitions of Vehtari, Gelman, Simpson, Carpenter and Buerkner (2021), "Rank-normalization,
folding, and localization: an improved R-hat", as the R package posterior implements them: autocovariances by
FFT (the C++ code sums products directly), normal scores from Python's statistics.NormalDist (the C++ code has
its own inverse CDF), ranks with ties averaged, quantiles of type 7 (numpy's default 'linear').

usage: /usr/bin/python3 reference_summary.py   (prints each data set's summary at full precision)
"""
import statistics

import numpy as np


def split(x):
    """x: draws x chains. Halves of each chain; an odd chain's middle draw is dropped."""
    n = x.shape[0]
    h = n // 2
    return np.hstack([x[:h], x[n - h:]])


def constant(x):
    return not np.all(np.isfinite(x)) or abs(x.max() - x.min()) < np.finfo(float).eps


def z_scale(x):
    flat = x.ravel()
    order = np.argsort(flat, kind="stable")
    ranks = np.empty(flat.size)
    sorted_vals = flat[order]
    i = 0
    while i < flat.size:
        j = i
        while j + 1 < flat.size and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    c = 3 / 8
    u = (ranks - c) / (flat.size - 2 * c + 1)
    nd = statistics.NormalDist()
    return np.array([nd.inv_cdf(p) for p in u]).reshape(x.shape)


def rhat_basic(x):
    if constant(x):
        return float("nan")
    n = x.shape[0]
    means = x.mean(axis=0)
    b = n * means.var(ddof=1)
    w = x.var(axis=0, ddof=1).mean()
    return np.sqrt((b / w + n - 1) / n)


def autocov_fft(y):
    n = y.size
    yc = y - y.mean()
    f = np.fft.fft(yc, 2 * n)
    return np.fft.ifft(f * np.conj(f)).real[:n] / n


def ess_basic(x):
    n, m = x.shape
    if n < 3 or constant(x):
        return float("nan")
    acov = np.column_stack([autocov_fft(x[:, c]) for c in range(m)]).mean(axis=1)
    mean_var = acov[0] * n / (n - 1)
    var_plus = mean_var * (n - 1) / n + (x.mean(axis=0).var(ddof=1) if m > 1 else 0.0)
    rho = np.zeros(n)
    rho[0] = 1.0
    even, odd = 1.0, 1 - (mean_var - acov[1]) / var_plus
    rho[1] = odd
    t = 0
    while t < n - 5 and even + odd > 0:
        t += 2
        even = 1 - (mean_var - acov[t]) / var_plus
        odd = 1 - (mean_var - acov[t + 1]) / var_plus
        if even + odd >= 0:
            rho[t], rho[t + 1] = even, odd
    max_t = t
    if even > 0:
        rho[max_t] = even
    for t in range(2, max_t - 1, 2):
        if rho[t] + rho[t + 1] > rho[t - 2] + rho[t - 1]:
            rho[t] = rho[t + 1] = (rho[t - 2] + rho[t - 1]) / 2
    s = n * m
    tau = max(-1 + 2 * rho[:max_t].sum() + rho[max_t], 1 / np.log10(s))
    return s / tau


def summary(x):
    nan = float("nan")
    if constant(x):
        bulk = tail = rhat = nan
    else:
        bulk = ess_basic(z_scale(split(x)))
        tails = [ess_basic(split((x <= np.quantile(x, p)).astype(float))) for p in (0.05, 0.95)]
        tail = min(tails)
        folded = np.abs(x - np.median(x))
        rhat = max(rhat_basic(z_scale(split(x))), rhat_basic(z_scale(split(folded))))
    sd = x.std(ddof=1)
    return dict(mean=x.mean(), mcse=sd / np.sqrt(ess_basic(split(x))), sd=sd,
                q5=np.quantile(x, 0.05), q50=np.quantile(x, 0.5), q95=np.quantile(x, 0.95),
                ess_bulk=bulk, ess_tail=tail, rhat=rhat)


# The fixed data sets of test_summary.cpp (draws x chains), repeated there literally.
SMALL = np.array([[0.3, 1.2, -0.4], [1.1, 0.9, 0.2], [0.8, 1.2, -1.0], [-0.5, 2.0, 0.1], [0.0, 1.5, 0.6],
                  [1.7, 0.4, 0.6], [0.9, 1.1, -0.2], [0.2, 2.3, 0.4], [1.4, 0.7, -0.7], [0.6, 1.2, 0.0]])
ODD = np.array([[2.0, 1.0], [3.5, 0.5], [1.0, 2.5], [4.0, 3.0], [2.5, 2.0], [0.5, 1.5], [3.0, 4.5]])


def sine_chains():
    """4 chains x 40 draws of a smooth deterministic walk, autocorrelated enough for several Geyer lags."""
    i = np.arange(40)[:, None]
    c = np.arange(4)[None, :]
    return np.sin(0.3 * i + 1.7 * c) + 0.05 * i * (c - 1.5) / 4 + 0.3 * np.cos(2.1 * i * (c + 1))


if __name__ == "__main__":
    for label, x in (("SMALL", SMALL), ("ODD", ODD), ("SINE", sine_chains())):
        print(label, {k: repr(float(v)) for k, v in summary(x).items()})
