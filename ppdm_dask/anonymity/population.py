"""Population-based re-identification risk: which of a sample's records are unique in the population.

A released table is usually a *sample* of a population (a survey, one hospital's patients of a
region). A record alone in its class in the sample (a sample unique) need not be alone in the
population; an attacker who links the release to a population register re-identifies only the
records that are unique in the population. These estimators guess how many population uniques
there are from the sample's class-size frequencies alone (how many classes of size 1, 2, ...)
and the sampling fraction ``pi = n / N`` (``n`` sample records, ``N`` population records), as
ARX's population uniqueness risk model does:

* **Zayatz** (1991): the population's class-size distribution is taken to be the sample's; the
  share of sample uniques that come from a population class of size 1 follows from the
  hypergeometric chance of drawing exactly one record of a class of size j. No fit, never fails;
  it overstates uniqueness for small sampling fractions (it ignores classes the sample missed).
* **Pitman** (Hoshino 2001): the class sizes follow Pitman's two-parameter sampling formula
  (theta, alpha); both are fitted by maximum likelihood on the sample partition, and the number
  of population uniques is ``Gamma(theta + 1) / Gamma(theta + alpha) * N ** alpha`` (the
  expected number of singletons in a partition of N records). Suits small sampling fractions.
* **SNB**, slide negative binomial (Chen & Keller-McNulty 1998): the population class sizes are
  ``1 + NegativeBinomial(alpha, beta)`` over K non-empty classes (K estimated with Shlosser's
  estimator, Haas et al. 1995); records are sampled independently with probability pi; alpha
  and beta are solved so the expected numbers of sample classes of sizes 1 and 2 match the
  observed ones; the population uniques are ``K * beta ** alpha``.
* **Dankar's decision rule** (Dankar, El Emam et al. 2012), as ARX applies it: Pitman when
  ``pi <= 0.1`` (Zayatz when Pitman gives no valid estimate), otherwise the smaller of Zayatz
  and SNB (Zayatz when SNB gives none).

An estimate is *valid* when it is a finite number in ``(0, N]`` (ARX also treats 0 as "no
estimate"). Without sample uniques every model gives 0. With ``pi = 1`` the sample is the
population: every model gives the sample uniques (Zayatz and SNB do so by their formulas;
Pitman's asymptotic formula does not, so it is not evaluated there).

Where this module departs from ARX's code (each a place where ARX's code does not match the
published formula it cites): Shlosser's estimator uses ``sum_i (1-q)^i ((1+q)^i - 1) c_i`` in
its second ratio (ARX subtracts 1 once per distinct class size instead of weighting it), and the
SNB equation for the classes of size 2 divides by ``(1 - d) ** (alpha + 2)`` (ARX multiplies):
both follow from the model's generating function, see :func:`snb_class_probabilities`.

Besides, :func:`individual_risk` is sdcMicro's individual risk with sampling weights (Benedetti
& Franconi 1998; Franconi & Polettini 2004): a record of a class with sample frequency ``f`` and
estimated population frequency ``F`` (the sum of the class's sampling weights) is re-identified
with probability ``E[1 / F_pop | f]`` under a negative binomial posterior of the population
frequency, in sdcMicro's closed forms (``p = f / F``):

* ``f = 1``: ``p / (1 - p) * log(1 / p)``;
* ``f = 2``: ``p / (1 - p) - (p / (1 - p))**2 * log(1 / p)``;
* ``f >= 3``: ``p / (f - (1 - p))`` (the approximation sdcMicro uses by default);
* ``p = 1`` (the class is its whole population): ``1 / f``, the limit of the forms above.

The global risk is the sum of the individual risks (the expected number of re-identifications)
and its share of the records.

Pure numpy / scipy on the driver: the inputs are the small size-frequency table
(:func:`ppdm_dask.anonymity.risk.size_frequencies`) or one row per class.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from ..errors import InvalidParameter

__all__ = [
    "MODELS",
    "DANKAR_PITMAN_MAX_FRACTION",
    "size_counts",
    "sampling_fraction",
    "zayatz_uniques",
    "PitmanFit",
    "pitman_fit",
    "pitman_scores",
    "pitman_uniques",
    "shlosser_classes",
    "snb_class_probabilities",
    "SNBFit",
    "snb_fit",
    "snb_uniques",
    "PopulationUniqueness",
    "population_uniqueness",
    "individual_risk",
    "WeightedRisk",
    "weighted_risk",
]

#: the population models, in the order the report lists them
MODELS = ("pitman", "zayatz", "snb")
#: Dankar's rule uses Pitman's model up to this sampling fraction
DANKAR_PITMAN_MAX_FRACTION = 0.1
#: tolerance on the estimating equations (scaled by the size of their terms) for a fit to count
_TOL = 1e-7


def size_counts(freq: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(sizes, counts)``: the distinct sample class sizes (ascending) and how many classes have
    each.

    Parameters
    ----------
    freq : DataFrame, Series or mapping
        :func:`ppdm_dask.anonymity.risk.size_frequencies` (columns ``f`` and ``classes``; ``F``
        is ignored), a Series indexed by class size whose values are class counts (what
        ``sizes.value_counts()`` gives), or a ``{size: classes}`` mapping.
    """
    if isinstance(freq, pd.DataFrame):
        s = freq.groupby("f")["classes"].sum()
    elif isinstance(freq, pd.Series):
        s = freq.groupby(level=0).sum()
    elif isinstance(freq, Mapping):
        s = pd.Series(dict(freq), dtype=np.int64)
    else:
        raise TypeError(f"class-size frequencies must be a DataFrame, Series or mapping, not {type(freq).__name__}")
    s = s[(s.index.to_numpy() > 0) & (s.to_numpy() > 0)].sort_index()
    return s.index.to_numpy(dtype=np.int64), s.to_numpy(dtype=np.int64)


def sampling_fraction(n: int, fraction: float | None = None, population_size: float | None = None) -> tuple[float, float]:
    """``(pi, N)`` from a sampling fraction or a population size (exactly one of them).

    Raises :class:`~ppdm_dask.errors.InvalidParameter` (naming the option and the flag) when
    both or neither are given, when the fraction is not in (0, 1] or the population is smaller
    than the ``n`` sample records.
    """
    if (fraction is None) == (population_size is None):
        raise InvalidParameter(
            "give a sampling fraction or a population size, not both"
            if fraction is not None
            else "the population risk needs a sampling fraction or a population size",
            python="sampling_fraction= or population_size=",
            fix="`sampling_fraction` or `population_size`",
        )
    if fraction is not None:
        pi = float(fraction)
        if not 0.0 < pi <= 1.0:  # also NaN
            raise InvalidParameter(
                f"sampling fraction {pi:g} is not in (0, 1]",
                python="sampling_fraction= in (0, 1]",
                fix="`sampling_fraction` takes the share of the population in the table, in (0, 1]",
            )
        return pi, n / pi
    N = float(population_size)
    if not (math.isfinite(N) and N > 0):
        raise InvalidParameter(
            f"population size {N:g} is not a positive number of records",
            python="population_size= > 0",
            fix="`population_size` takes the population's number of records",
        )
    if N < n:
        raise InvalidParameter(
            f"population size {N:g} is smaller than the table's {n:,} records",
            python=f"population_size= >= {n}",
            fix=f"`population_size` takes at least the table's {n:,} records",
        )
    return n / N, N


def _n_u(sizes: np.ndarray, counts: np.ndarray) -> tuple[int, int, int, int]:
    """``(n, u, c1, c2)``: records, classes, classes of size 1 and 2."""
    c = dict(zip(sizes.tolist(), counts.tolist()))
    return int((sizes * counts).sum()), int(counts.sum()), int(c.get(1, 0)), int(c.get(2, 0))


def _valid(x: float, N: float) -> bool:
    return bool(np.isfinite(x) and 0.0 < x <= N * (1 + 1e-12))


# ---------------------------------------------------------------------------------- Zayatz
def zayatz_uniques(freq: Any, pi: float) -> float:
    """Zayatz's estimate of the number of population uniques.

    With ``c_j`` classes of sample size j and ``P_j`` the hypergeometric probability that a
    sample of n out of N records holds exactly one record of a class of j records, the chance
    that a sample unique is a population unique is ``c_1 P_1 / sum_j c_j P_j`` (the sample's
    class-size distribution standing in for the population's); the estimate is the sample
    uniques times that chance, divided by pi (``N`` rounded to a whole number of records).
    """
    sizes, counts = size_counts(freq)
    n, _, c1, _ = _n_u(sizes, counts)
    if c1 == 0:
        return 0.0
    N = max(n, int(round(n / pi)))
    p = stats.hypergeom.pmf(1, N, sizes, n)  # scipy: (k, population, successes, draws)
    cond = c1 * p[0] / float((counts * p).sum()) if sizes[0] == 1 else 0.0
    return float(c1 * cond / pi)


# ---------------------------------------------------------------------------------- Pitman
@dataclass(frozen=True)
class PitmanFit:
    """The fitted parameters of Pitman's sampling formula (NaN when the fit failed)."""

    theta: float
    alpha: float
    converged: bool
    #: the largest absolute value of the two estimating equations at the solution
    residual: float


def pitman_scores(theta: float, alpha: float, freq: Any) -> tuple[float, float]:
    """The two estimating equations of Pitman's model (the derivatives of the log-likelihood
    in theta and alpha), zero at the maximum-likelihood estimate:

    * ``sum_{i<u} 1/(theta + i alpha) - sum_{i<n} 1/(theta + i)``;
    * ``sum_{i<u} i/(theta + i alpha) - sum_{j>=2} c_j sum_{k<j} 1/(k - alpha)``;

    evaluated with digamma functions (the sums telescope).
    """
    sizes, counts = size_counts(freq)
    n, u, _, _ = _n_u(sizes, counts)
    return _pitman_scores(theta, alpha, sizes, counts, n, u)


def _pitman_scores(t: float, a: float, sizes: np.ndarray, counts: np.ndarray, n: int, u: int) -> tuple[float, float]:
    psi = special.digamma
    s_theta = (psi(t / a + u) - psi(t / a + 1)) / a  # sum_{i=1}^{u-1} 1 / (t + i a)
    s_n = psi(t + n) - psi(t + 1)  # sum_{i=1}^{n-1} 1 / (t + i)
    s_i = (u - 1) / a - t / a * s_theta  # sum_{i=1}^{u-1} i / (t + i a)
    big = sizes >= 2
    s_k = float((counts[big] * (psi(sizes[big] - a) - psi(1 - a))).sum())  # sum_j c_j sum_{k<j} 1/(k - a)
    return float(s_theta - s_n), float(s_i - s_k)


def pitman_fit(freq: Any) -> PitmanFit:
    """Maximum-likelihood estimates of Pitman's (theta, alpha) from the sample partition.

    The two estimating equations (:func:`pitman_scores`) are solved over ``0 < alpha < 1``,
    ``theta > -alpha`` by profiling: for a fixed alpha the first equation falls from +inf (theta
    near -alpha) to below 0 (large theta, as u < n), so :func:`scipy.optimize.brentq` finds its
    theta(alpha); the second equation along theta(alpha) is scanned on a grid of alpha for a
    change of sign and solved there with brentq again. When it does not change sign (the
    likelihood is largest at alpha <= 0 or alpha -> 1, e.g. when every record is unique) or a
    root is not bracketed, the fit reports ``converged=False`` with NaN parameters: ARX then
    returns NaN for the estimate and Dankar's rule falls back to Zayatz, and so does
    :func:`population_uniqueness`. Among several roots the one of the largest log-likelihood
    is kept.
    """
    sizes, counts = size_counts(freq)
    n, u, _, _ = _n_u(sizes, counts)
    nan = PitmanFit(math.nan, math.nan, False, math.nan)
    if u < 2 or n <= u:
        return nan

    def theta_of(a: float) -> float:
        g = lambda t: _pitman_scores(t, a, sizes, counts, n, u)[0]  # noqa: E731
        lo = -a + 1e-12 * max(1.0, a)
        hi = max(1.0, float(n))
        for _ in range(60):  # g(hi) < 0 for hi large enough (u < n)
            if g(hi) < 0:
                break
            hi *= 4.0
        else:
            return math.nan
        if not g(lo) > 0:
            return math.nan
        return optimize.brentq(g, lo, hi, xtol=1e-12, rtol=1e-13, maxiter=500)

    def h(a: float) -> float:
        t = theta_of(a)
        return _pitman_scores(t, a, sizes, counts, n, u)[1] if np.isfinite(t) else math.nan

    grid = np.concatenate([np.geomspace(1e-6, 0.05, 12), np.linspace(0.06, 0.99, 32), [0.999, 0.99999]])
    with np.errstate(all="ignore"):
        vals = np.array([h(a) for a in grid])
        fits = []
        for i in range(len(grid) - 1):
            if np.isfinite(vals[i]) and np.isfinite(vals[i + 1]) and vals[i] * vals[i + 1] < 0:
                a = optimize.brentq(h, grid[i], grid[i + 1], xtol=1e-14, rtol=1e-14, maxiter=500)
                t = theta_of(a)
                g = _pitman_scores(t, a, sizes, counts, n, u)
                scale = max(1.0, abs(u - 1) / a)  # the size of the terms of the second equation
                res = max(abs(g[0]) * (abs(t) + 1.0), abs(g[1]) / scale)
                if np.isfinite(res) and res < _TOL:
                    fits.append((_pitman_loglik(t, a, sizes, counts, n, u), PitmanFit(t, a, True, res)))
    return max(fits, key=lambda x: x[0])[1] if fits else nan


def _pitman_loglik(t: float, a: float, sizes: np.ndarray, counts: np.ndarray, n: int, u: int) -> float:
    """Log-likelihood of Pitman's formula up to a constant: ``sum_{i<u} log(t + i a)
    - sum_{i<n} log(t + i) + sum_j c_j sum_{k<j} log(k - a)``, with log-gamma functions."""
    lg = special.gammaln
    first = (u - 1) * math.log(a) + lg(t / a + u) - lg(t / a + 1)
    second = lg(t + n) - lg(t + 1)
    third = float((counts * (lg(sizes - a) - lg(1 - a))).sum())
    return float(first - second + third)


def pitman_uniques(freq: Any, pi: float, fit: PitmanFit | None = None) -> float:
    """Pitman's estimate of the number of population uniques:
    ``Gamma(theta + 1) / Gamma(theta + alpha) * N ** alpha`` with the fitted parameters
    (:func:`pitman_fit`); NaN when the fit failed or the estimate is not in ``[0, N]`` (as ARX).
    Not the sample uniques at ``pi = 1`` (an asymptotic formula; see
    :func:`population_uniqueness`)."""
    sizes, counts = size_counts(freq)
    n, _, c1, _ = _n_u(sizes, counts)
    if c1 == 0:
        return 0.0
    fit = fit if fit is not None else pitman_fit(pd.Series(counts, index=sizes))
    if not fit.converged or not fit.alpha > 0:
        return math.nan
    N = n / pi
    with np.errstate(all="ignore"):
        u = math.exp(special.gammaln(fit.theta + 1) - special.gammaln(fit.theta + fit.alpha) + fit.alpha * math.log(N))
    return u if 0.0 <= u <= N else math.nan


# ---------------------------------------------------------------------------------- SNB
def shlosser_classes(freq: Any, pi: float, arx: bool = False) -> float:
    """Shlosser's estimate of the number of non-empty population classes (the third variant of
    Haas et al. 1995), with ``q = pi`` and ``c_i`` classes of sample size i::

        u + c_1 * [sum_i i q^2 (1-q^2)^(i-1) c_i / sum_i (1-q)^i ((1+q)^i - 1) c_i]
                * [sum_i (1-q)^i c_i / sum_i i q (1-q)^(i-1) c_i]^2

    ``u`` (the sample's classes) at ``q = 1``, when the ratios vanish. ``arx=True``: ARX's
    code, whose second denominator is ``sum_i (1-q)^i (1+q)^i c_i`` less 1 per distinct size.
    """
    sizes, counts = size_counts(freq)
    _, u, c1, _ = _n_u(sizes, counts)
    q = float(pi)
    if q >= 1.0 or c1 == 0:
        return float(u)
    i = sizes.astype(float)
    m = counts.astype(float)
    den = ((1 - q) ** i * (1 + q) ** i * m - 1).sum() if arx else ((1 - q) ** i * ((1 + q) ** i - 1) * m).sum()
    r1 = (i * q**2 * (1 - q**2) ** (i - 1) * m).sum() / den
    r2 = ((1 - q) ** i * m).sum() / (i * q * (1 - q) ** (i - 1) * m).sum()
    return float(u + c1 * r1 * r2**2)


def snb_class_probabilities(alpha: float, beta: float, pi: float, arx: bool = False) -> tuple[float, float]:
    """The probabilities that a population class of the SNB model shows up in the sample with
    exactly 1 and exactly 2 records.

    A population class has ``F = 1 + Y`` records, ``Y ~ NegativeBinomial(alpha, beta)``
    (``P(Y = y) = C(y + alpha - 1, y) beta^alpha (1 - beta)^y``, generating function
    ``G(s) = (beta / (1 - (1 - beta) s))^alpha``), and each record is sampled with probability
    pi. With ``s = 1 - pi`` and ``d = (1 - beta) s``:

    * ``P(f = 1) = pi E[F s^(F-1)] = pi (beta / (1 - d))^alpha (1 + alpha d / (1 - d))``;
    * ``P(f = 2) = pi^2 / 2 E[F (F - 1) s^(F-2)]
      = pi^2 / 2 alpha beta^alpha (1 - beta) (2 - (1 - alpha) d) / (1 - d)^(alpha + 2)``.

    ``arx=True``: ARX's code, which multiplies by ``(1 - d)^(alpha + 2)`` in the second.
    """
    alpha, beta, pi = np.float64(alpha), np.float64(beta), np.float64(pi)  # inf / nan, not errors, at the edges
    d = (1 - beta) * (1 - pi)
    p1 = pi * (beta / (1 - d)) ** alpha * (1 + alpha * d / (1 - d))
    p2 = pi**2 / 2 * alpha * beta**alpha * (1 - beta) * (2 - (1 - alpha) * d) * (1 - d) ** (alpha + 2 if arx else -(alpha + 2))
    return float(p1), float(p2)


@dataclass(frozen=True)
class SNBFit:
    """The SNB model's parameters: ``K`` population classes (Shlosser), ``alpha`` and ``beta``
    (NaN when the equations have no solution the solver finds)."""

    K: float
    alpha: float
    beta: float
    converged: bool
    residual: float


def snb_fit(freq: Any, pi: float, arx: bool = False) -> SNBFit:
    """Solve ``K P(f=1) = c_1`` and ``K P(f=2) = c_2`` (:func:`snb_class_probabilities`) for
    ``alpha > 0`` and ``0 < beta < 1`` with :func:`scipy.optimize.root` from a few starts
    (reparametrised to stay in that region). No solution within 1e-7 (relative): NaN parameters
    and ``converged=False`` (ARX's Newton solver gives NaN there too; Dankar's rule then uses
    Zayatz). Without classes of size 2 there is none. ``arx=True``: ARX's code's formulas
    (:func:`shlosser_classes`, :func:`snb_class_probabilities`)."""
    sizes, counts = size_counts(freq)
    _, _, c1, c2 = _n_u(sizes, counts)
    K = shlosser_classes(pd.Series(counts, index=sizes), pi, arx)
    nan = SNBFit(K, math.nan, math.nan, False, math.nan)
    if c1 == 0 or c2 == 0 or not np.isfinite(K) or K <= 0:
        return nan

    def params(z: np.ndarray) -> tuple[float, float]:
        return math.exp(min(z[0], 700.0)), float(special.expit(z[1]))

    def equations(z: np.ndarray) -> np.ndarray:
        a, b = params(z)
        p1, p2 = snb_class_probabilities(a, b, pi, arx)
        return np.array([K * p1 / c1 - 1, K * p2 / c2 - 1])

    best: SNBFit | None = None
    for a0, b0 in [(1.0, 0.5), (0.1, 0.1), (0.5, 0.05), (5.0, 0.5), (0.05, 0.5), (2.0, 0.9), (0.01, 0.01)]:
        with np.errstate(all="ignore"):
            sol = optimize.root(equations, np.array([math.log(a0), special.logit(b0)]), method="hybr")
            if not np.all(np.isfinite(sol.x)):
                continue
            res = float(np.max(np.abs(equations(sol.x))))
        a, b = params(sol.x)
        if np.isfinite(res) and res < _TOL and 0 < b < 1 and (best is None or res < best.residual):
            best = SNBFit(K, a, b, True, res)
    return best if best is not None else nan


def snb_uniques(freq: Any, pi: float, fit: SNBFit | None = None) -> float:
    """The SNB estimate of the number of population uniques, ``K beta^alpha``; NaN when the
    equations have no solution (:func:`snb_fit`)."""
    sizes, counts = size_counts(freq)
    _, _, c1, _ = _n_u(sizes, counts)
    if c1 == 0:
        return 0.0
    fit = fit if fit is not None else snb_fit(pd.Series(counts, index=sizes), pi)
    return fit.K * fit.beta**fit.alpha if fit.converged else math.nan


# ---------------------------------------------------------------------------------- together
@dataclass(frozen=True)
class PopulationUniqueness:
    """The population uniqueness estimates of one table.

    ``estimates`` maps each of :data:`MODELS` to its estimated number of population uniques
    (NaN: no valid estimate); ``dankar`` is the estimate Dankar's rule picks, from the model
    ``dankar_model`` (None without sample uniques, when every model gives 0).
    """

    n: int
    population: float
    pi: float
    sample_uniques: int
    estimates: dict[str, float]
    dankar: float
    dankar_model: str | None
    pitman: PitmanFit | None = None
    snb: SNBFit | None = None
    notes: list[str] = field(default_factory=list)

    def share(self, model: str) -> float:
        """The estimated share of the population that is unique (NaN: no estimate) — also the
        expected share of the sample's records that are population uniques (each population
        unique is in the sample with probability pi)."""
        x = self.dankar if model == "dankar" else self.estimates[model]
        return x / self.population if self.population else math.nan

    def in_sample(self, model: str) -> float:
        """The expected number of the sample's records that are population uniques (count x pi)."""
        x = self.dankar if model == "dankar" else self.estimates[model]
        return x * self.pi


def population_uniqueness(
    freq: Any, pi: float | None = None, population_size: float | None = None, *, arx_snb: bool = False
) -> PopulationUniqueness:
    """Every model's estimate of the population uniques and Dankar's choice (module docstring).

    Parameters
    ----------
    freq
        The sample's class-size frequencies (see :func:`size_counts`).
    pi, population_size : float
        The sampling fraction in (0, 1], or the population's size (>= the sample's records).
    arx_snb : bool
        The SNB model with ARX's code's formulas instead of the published ones (to compare with
        ARX: on the full Adult table they have no solution, so ARX's rule falls back to Zayatz
        where the published ones give an SNB estimate).
    """
    sizes, counts = size_counts(freq)
    n, _, c1, _ = _n_u(sizes, counts)
    pi, N = sampling_fraction(n, pi, population_size)
    series = pd.Series(counts, index=sizes)
    if c1 == 0:
        return PopulationUniqueness(
            n, N, pi, 0, {m: 0.0 for m in MODELS}, 0.0, None, notes=["no sample uniques: no population uniques either"]
        )
    if pi >= 1.0:  # the sample is the population
        est = {m: float(c1) for m in MODELS}
        return PopulationUniqueness(
            n,
            N,
            pi,
            c1,
            est,
            float(c1),
            "sample",
            notes=["sampling fraction 1: the table is the population, its uniques are the population uniques"],
        )
    pf = pitman_fit(series)
    sf = snb_fit(series, pi, arx_snb)
    est = {"pitman": pitman_uniques(series, pi, pf), "zayatz": zayatz_uniques(series, pi), "snb": snb_uniques(series, pi, sf)}
    est = {m: (v if _valid(v, N) else math.nan) for m, v in est.items()}
    notes = []
    if not pf.converged:
        notes.append("Pitman: the maximum-likelihood equations have no solution with 0 < alpha < 1 the solver finds")
    if not sf.converged:
        notes.append("SNB: the equations for the classes of sizes 1 and 2 have no solution the solver finds")
    if pi <= DANKAR_PITMAN_MAX_FRACTION:
        model = "pitman" if not math.isnan(est["pitman"]) else "zayatz"
    elif not math.isnan(est["snb"]):
        model = "zayatz" if est["zayatz"] < est["snb"] else "snb"
    else:
        model = "zayatz"
    value = est[model]
    return PopulationUniqueness(n, N, pi, c1, est, value if not math.isnan(value) else 0.0, model, pf, sf, notes)


# ---------------------------------------------------------------------------------- sdcMicro
def individual_risk(f: Any, F: Any) -> np.ndarray:
    """sdcMicro's individual risk of a record of each class (module docstring), from the
    class's sample frequency ``f`` and estimated population frequency ``F`` (sum of its
    weights; ``F < f`` is taken as ``F = f``: weights below 1 cannot shrink a class)."""
    f = np.asarray(f, dtype=float)
    F = np.maximum(np.asarray(F, dtype=float), f)
    p = f / F
    whole = p >= 1.0 - 1e-12
    q = np.where(whole, 0.5, p)  # placeholder where the closed forms divide by zero
    odds = q / (1 - q)
    log_inv = -np.log(q)
    out = np.where(f == 1, odds * log_inv, np.where(f == 2, odds - odds**2 * log_inv, q / (f - (1 - q))))
    return np.where(whole, 1.0 / f, out)


@dataclass(frozen=True)
class WeightedRisk:
    """sdcMicro-style risk of a weighted table: ``expected`` re-identifications (sum of the
    individual risks), ``share`` of the records, the ``highest`` individual risk and the records
    (``above``) whose risk exceeds ``threshold``, out of ``n`` records."""

    n: int
    expected: float
    share: float
    highest: float
    above: int
    threshold: float
    population: float


def weighted_risk(classes: pd.DataFrame, threshold: float) -> WeightedRisk:
    """The risk of a table from one row per class with its record count ``f`` and weight sum
    ``F``: every record of a class carries the class's :func:`individual_risk`."""
    f = classes["f"].to_numpy(dtype=float)
    r = individual_risk(f, classes["F"].to_numpy(dtype=float))
    n = int(f.sum())
    expected = float((r * f).sum())
    return WeightedRisk(
        n,
        expected,
        expected / n if n else 0.0,
        float(r.max()) if len(r) else 0.0,
        int(f[r > threshold + 1e-12].sum()),
        float(threshold),
        float(classes["F"].sum()),
    )
