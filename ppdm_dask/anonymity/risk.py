"""Re-identification risk of a table from its equivalence-class sizes (ARX's risk models).

Pure pandas / numpy kernels: the caller brings the class sizes to the driver (one distributed
group-by of the released table, or a size-frequency table of the original) and these functions
turn them into figures. A class is the set of records sharing one quasi-identifier tuple;
records whose every quasi-identifier is ``'*'`` (suppressed) link to nobody and are left out.

With ``f_j`` the size of class j in the sample (the table), ``F_j`` the size of the matching
class in a population table (``F_j = f_j`` without one) and ``n = sum f_j``:

* prosecutor risk (the attacker knows the target is in the table): a record of class j is
  re-identified with probability ``1 / f_j``; the highest risk is ``1 / min f_j``, the average
  risk ``sum_j f_j * (1 / f_j) / n = (#classes) / n``;
* journalist risk (the attacker only knows the target is in the population): ``1 / F_j``;
  highest ``1 / min F_j``, average ``sum_j f_j / F_j / n``. Without a population table ARX
  takes the sample as the population, so journalist risk equals prosecutor risk;
* marketer risk (expected share of records re-identified when every record is attacked):
  ``sum_j f_j / F_j / n``; without a population ``(#classes) / n``;
* sample uniques: records alone in their class (``f_j = 1``);
* records at risk above a threshold t: the share of records with ``1 / f_j > t``.

Given the share of the population the table holds, :func:`population_figures` adds the risk
against the population (:mod:`.population`: Pitman, Zayatz, SNB and Dankar's rule; sdcMicro's
individual risk with sampling weights) and the riskiest quasi-identifier combinations
(:mod:`.combinations`), all from the small class tables the report already has.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from ..release.figures import About

__all__ = [
    "THRESHOLD",
    "THRESHOLDS",
    "size_frequencies",
    "risk_summary",
    "size_histogram",
    "PopulationPlan",
    "population_figures",
]

#: the default risk threshold (records with 1/|class| > 0.2, i.e. classes smaller than 5)
THRESHOLD = 0.2
#: thresholds of the records-at-risk table
THRESHOLDS = (0.5, 1 / 3, 0.2, 0.1, 0.05)


def size_frequencies(sizes: Any, population: Any = None) -> pd.DataFrame:
    """The classes grouped by their (sample size, population size): columns ``f``, ``F``,
    ``classes`` (how many classes have that pair), sorted by ``f`` then ``F``.

    Parameters
    ----------
    sizes : array-like of int
        One sample class size per class (or a :class:`pandas.Series` indexed by size whose
        values are class counts, when ``population`` is None — what a distributed
        ``groupby(...).size().value_counts()`` returns).
    population : array-like of int, optional
        The population class size of each sample class (same order as ``sizes``). A
        population class smaller than its sample class cannot be (the sample is part of the
        population), so ``F = max(F, f)``.
    """
    if isinstance(sizes, pd.Series) and population is None and sizes.index.dtype.kind in "iuf":
        f = sizes.index.to_numpy(dtype=np.int64)
        frame = pd.DataFrame({"f": f, "F": f, "classes": sizes.to_numpy(dtype=np.int64)})
    else:
        f = np.asarray(sizes, dtype=np.int64)
        F = f if population is None else np.maximum(np.asarray(population, dtype=np.int64), f)
        frame = pd.DataFrame({"f": f, "F": F, "classes": np.ones(len(f), dtype=np.int64)})
    frame = frame[frame["f"] > 0]
    out = frame.groupby(["f", "F"], sort=True)["classes"].sum().reset_index()
    return out.astype(np.int64)


def risk_summary(freq: pd.DataFrame, threshold: float = THRESHOLD, thresholds: Sequence[float] = THRESHOLDS) -> dict[str, Any]:
    """The risk figures of a table from :func:`size_frequencies`.

    Returns
    -------
    dict
        ``n_records``, ``n_classes``, ``min_class_size``, ``prosecutor_max``,
        ``prosecutor_average``, ``journalist_max``, ``journalist_average``, ``marketer``,
        ``sample_uniques`` (share of records), ``n_sample_uniques``, ``records_at_risk``
        (share with 1/f > ``threshold``) and ``at_risk`` (``[(t, share)]`` for ``thresholds``).
        Shares are 0.0 for a table without classes.
    """
    f = freq["f"].to_numpy(dtype=np.int64)
    F = freq["F"].to_numpy(dtype=np.int64)
    m = freq["classes"].to_numpy(dtype=np.int64)
    records = f * m  # records in the classes of each row
    n = int(records.sum())
    n_classes = int(m.sum())
    if n == 0:
        zero = {
            "prosecutor_max": 0.0,
            "prosecutor_average": 0.0,
            "journalist_max": 0.0,
            "journalist_average": 0.0,
            "marketer": 0.0,
            "sample_uniques": 0.0,
            "records_at_risk": 0.0,
        }
        return {
            "n_records": 0,
            "n_classes": 0,
            "min_class_size": 0,
            "n_sample_uniques": 0,
            **zero,
            "at_risk": [(float(t), 0.0) for t in thresholds],
        }

    def at_risk(t: float) -> float:
        # strictly above t, as ARX counts "records at risk"; the tolerance keeps 1/5 > 0.2 false
        return float(records[1.0 / f > t + 1e-12].sum()) / n

    expected = float((records / F).sum())  # sum over records of 1/F, i.e. sum_j f_j / F_j
    uniques = int(records[f == 1].sum())
    return {
        "n_records": n,
        "n_classes": n_classes,
        "min_class_size": int(f.min()),
        "prosecutor_max": 1.0 / float(f.min()),
        "prosecutor_average": n_classes / n,
        "journalist_max": 1.0 / float(F.min()),
        "journalist_average": expected / n,
        "marketer": expected / n,
        "sample_uniques": uniques / n,
        "n_sample_uniques": uniques,
        "records_at_risk": at_risk(float(threshold)),
        "at_risk": [(float(t), at_risk(float(t))) for t in thresholds],
    }


def size_histogram(freq: pd.DataFrame) -> tuple[list[float], list[int]]:
    """``(edges, counts)`` of the class sizes, one value per class: one bin per integer size
    up to 50 distinct sizes, else integer-aligned bins (the rule of
    :func:`ppdm_dask.release.figures.histogram`), counted from the size frequencies so the
    classes never need to be listed one by one."""
    if not len(freq):
        return [0.0, 1.0], [0]
    f = freq["f"].to_numpy(dtype=float)
    m = freq["classes"].to_numpy(dtype=float)
    lo, hi = math.floor(f.min()), math.ceil(f.max())
    width = max(1, math.ceil((hi - lo + 1) / 50))
    edges = np.arange(lo, hi + width + 1, width, dtype=float) - 0.5
    counts, edges = np.histogram(f, bins=edges, weights=m)
    return [float(e) for e in edges], [int(round(c)) for c in counts]


# ---------------------------------------------------------------------------------- population risk
#: what each population model assumes, for the report's notes
MODEL_NOTES = {
    "pitman": "Pitman: class sizes follow Pitman's two-parameter sampling formula, fitted by maximum likelihood; "
    "suited to small sampling fractions",
    "zayatz": "Zayatz: the population's class sizes are distributed as the sample's; overstates uniqueness when the "
    "sampling fraction is small",
    "snb": "SNB: population class sizes are 1 + a negative binomial over the classes Shlosser's estimator counts, "
    "records sampled independently",
}
#: rows of the riskiest-combinations table
TOP_COMBINATIONS = 15


def _classes_lazy(df: Any, qi: Sequence[str], weights: str | None) -> Any:
    """Lazy: one row per distinct QI tuple of ``df`` with its ``size`` (and the ``sum`` of
    ``weights``)."""
    if weights is None:
        return df.groupby(list(qi), dropna=False, observed=True).size(split_out=1)
    import dask.dataframe as dd

    # a written release may hold the weights as text; what does not read as a number becomes NaN
    # and is refused once counted (:func:`_classes_of`)
    w = dd.to_numeric(df[weights], errors="coerce") if hasattr(df, "dask") else pd.to_numeric(df[weights], errors="coerce")
    frame = df[list(qi)].assign(**{weights: w})
    return frame.groupby(list(qi), dropna=False, observed=True)[weights].agg(["size", "sum", "count"], split_out=1)


def _classes_of(got: Any, qi: Sequence[str]) -> pd.DataFrame:
    """A computed :func:`_classes_lazy` as a class table: ``qi``, ``count`` (and ``F``)."""
    if isinstance(got, pd.DataFrame):
        missing = int((got["size"] - got["count"]).sum())
        if missing:
            from ..errors import InvalidParameter

            raise InvalidParameter(
                f"the weight column has {missing:,} missing or non-numeric values",
                python="weights= a column of numeric sampling weights",
                fix="`weights` takes a column of numeric sampling weights",
            )
        return got.drop(columns="count").rename(columns={"size": "count", "sum": "F"}).reset_index()
    return got.rename("count").reset_index()


class PopulationPlan:
    """The population figures of a release's report (:func:`population_figures`), planned so
    their passes join the report's first pass over the data.

    Parameters
    ----------
    data : dask DataFrame
        The released table.
    original : dask DataFrame or None
    qi : sequence of str
    fs : FrequencySet, optional
        The anonymizer's frequency set of ``original`` (its QI tuples: no pass over it).
    sampling_fraction, population_size : float, optional
        The share of the population the table holds, or the population's size (one of them);
        checked here, before any pass (:func:`.population.sampling_fraction` checks the size
        against each table's records).
    weights : str, optional
        A sampling-weight column: the release's individual risk when the release publishes it,
        the original's when the original has it (one of them must).
    """

    def __init__(
        self,
        data: Any,
        original: Any,
        qi: Sequence[str],
        *,
        fs: Any = None,
        sampling_fraction: float | None = None,
        population_size: float | None = None,
        weights: str | None = None,
    ) -> None:
        from ..errors import InvalidParameter
        from .population import sampling_fraction as check

        if sampling_fraction is not None or population_size is not None:
            check(0, sampling_fraction, population_size)  # the range (and not both); the records later
        self.qi = list(qi)
        self.options = {"sampling_fraction": sampling_fraction, "population_size": population_size}
        self.weights = weights
        self.fs = fs
        self.has_original = original is not None
        self.release_weights = weights if weights is not None and weights in data.columns else None
        self.original_weights = weights if original is not None and weights is not None and weights in original.columns else None
        if weights is not None and self.release_weights is None and self.original_weights is None:
            where = "the release nor the original" if original is not None else "the release (give the original)"
            raise InvalidParameter(
                f"weight column {weights!r} is neither in {where}",
                python="weights= a column of the original",
                fix="`weights` COL of `original`",
            )
        self.lazy = [_classes_lazy(data, qi, self.release_weights)] if self.release_weights else []
        if original is not None and (self.original_weights is not None or fs is None):
            self.lazy.append(_classes_lazy(original, qi, self.original_weights))

    def split(self, got: Sequence[Any]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """``(the caller's results, this plan's)`` from one compute of ``*theirs, *self.lazy``."""
        cut = len(got) - len(self.lazy)
        return tuple(got[:cut]), tuple(got[cut:])

    def figures(self, got: Sequence[Any], kept: pd.DataFrame, k: int, threshold: float) -> Any:
        """The release's population figures (from ``kept``, its class table without suppressed
        rows, or its weighted class table) and, with the original, the original's."""
        from .checks import SUPPRESSED

        got = list(got)
        if self.release_weights:
            rel = _classes_of(got.pop(0), self.qi)
            star = np.ones(len(rel), dtype=bool)
            for a in self.qi:
                star &= rel[a].astype(str).to_numpy() == SUPPRESSED
            rel = rel[~star]
        else:
            rel = kept
        figs = population_figures(rel, self.qi, k, threshold, "release", weights=self.weights, **self.options)
        if self.has_original:
            if got:
                orig = _classes_of(got.pop(0), self.qi)
            else:  # the frequency set's QI codes stand for the values (only counts matter here)
                cols = [self.fs.qi.index(a) for a in self.qi]
                orig = pd.DataFrame(np.asarray(self.fs.codes)[:, cols], columns=self.qi)
                orig["count"] = np.asarray(self.fs.counts, dtype=np.int64)
            figs = figs + population_figures(
                orig, self.qi, k, threshold, "original", weights=self.original_weights, **self.options
            )
        return figs


def population_figures(
    classes: pd.DataFrame,
    qi: Sequence[str],
    k: int,
    threshold: float,
    about: About,
    *,
    sampling_fraction: float | None = None,
    population_size: float | None = None,
    weights: str | None = None,
) -> Any:
    """The population figures of one table (``about`` ``"release"`` or ``"original"``) from its
    class table (columns ``qi``, ``count`` and, with sampling weights, their sum ``F``; fully
    suppressed rows already left out): the population uniques of each model and Dankar's choice
    (:mod:`.population`), sdcMicro's individual risk with the weights, and the riskiest
    quasi-identifier combinations (:mod:`.combinations`). Returns a
    :class:`~ppdm_dask.release.figures.Figures`."""
    from ..release.figures import Figures, Table, Value
    from . import combinations as C
    from . import population as P

    pre, whose = ("risk_", "the release") if about == "release" else ("risk_original_", "the original")
    figs = Figures()
    sizes = classes.groupby(list(qi), sort=False, dropna=False)["count"].sum().to_numpy() if len(classes) else np.zeros(0)
    freq = size_frequencies(sizes)
    n = int(freq["f"].mul(freq["classes"]).sum()) if len(freq) else 0
    if sampling_fraction is None and population_size is None:
        if about == "release":
            figs.notes.append(
                "the population risk (Pitman, Zayatz, SNB) needs the share of the population the table "
                "holds: --sampling-fraction F or --population-size N (sampling_fraction= / population_size=)"
            )
    elif n:
        r = P.population_uniqueness(freq, sampling_fraction, population_size)
        given = (
            "population of " + f"{r.population:,.0f} records given"
            if population_size is not None
            else f"sampling fraction {r.pi:g} given"
        )
        figs.risk.append(
            Value(
                f"{pre}sampling_fraction",
                "Sampling fraction",
                r.pi,
                about,
                note=f"{n:,} records of {whose} in a population of {r.population:,.0f} ({given})",
            )
        )
        for m in P.MODELS:
            est = r.estimates[m]
            note = (
                f"{est:,.0f} population uniques in {r.population:,.0f} records; {r.in_sample(m):,.1f} of the "
                f"{n:,} records of {whose} expected among them"
                if not math.isnan(est)
                else "no valid estimate (the model's equations have no solution for this table)"
            )
            figs.risk.append(
                Value(
                    f"{pre}population_uniques_{m}",
                    f"Population uniques ({m.upper() if m == 'snb' else m.title()})",
                    r.share(m),
                    about,
                    "fraction of records",
                    note=f"{note}. {MODEL_NOTES[m]}",
                )
            )
        rule = (
            f"Dankar's rule with sampling fraction {r.pi:g} <= {P.DANKAR_PITMAN_MAX_FRACTION:g}: Pitman, Zayatz "
            "when Pitman has no estimate"
            if r.pi <= P.DANKAR_PITMAN_MAX_FRACTION
            else f"Dankar's rule with sampling fraction {r.pi:g} > {P.DANKAR_PITMAN_MAX_FRACTION:g}: the smaller of "
            "Zayatz and SNB (Zayatz when SNB has no estimate)"
        )
        picked = {
            None: "no sample uniques, so none in the population",
            "sample": "sampling fraction 1: the table is the population",
        }.get(r.dankar_model, f"picks {r.dankar_model}")
        figs.risk.append(
            Value(
                f"{pre}population_uniques",
                "Population uniques (Dankar's rule)",
                r.share("dankar"),
                about,
                "fraction of records",
                note=f"{rule}; {picked}: {r.dankar:,.0f} population uniques, {r.in_sample('dankar'):,.1f} "
                f"records of {whose} expected among them",
            )
        )
        if about == "release" and r.dankar > 0:
            figs.warnings.append(
                f"an estimated {r.in_sample('dankar'):,.1f} records of the release are unique in the "
                f"population (Dankar's rule, {r.dankar_model}; sampling fraction {r.pi:g})"
            )
    if weights is not None and "F" not in classes.columns and about == "release":
        figs.notes.append(
            f"the release's individual risk needs its sampling weights: {weights!r} is not published, "
            "the original's individual risk is shown"
        )
    if weights is not None and "F" in classes.columns and n:
        cl = classes.groupby(list(qi), sort=False, dropna=False)[["count", "F"]].sum().rename(columns={"count": "f"})
        w = P.weighted_risk(cl, threshold)
        src = f"sampling weights {weights!r}: population class size = sum of the class's weights ({w.population:,.0f} in all)"
        figs.risk += [
            Value(
                f"{pre}weighted_expected",
                "Expected re-identifications (individual risk)",
                w.expected,
                about,
                "records",
                note=f"sum over the {n:,} records of {whose} of sdcMicro's individual risk; {src}",
            ),
            Value(
                f"{pre}weighted_global",
                "Global risk (individual risk)",
                w.share,
                about,
                "fraction of records",
                note="expected re-identifications / records",
            ),
            Value(f"{pre}weighted_max", "Highest individual risk", w.highest, about, note=src),
            Value(f"{pre}weighted_above", f"Records with individual risk > {threshold:g}", w.above, about, "records", note=src),
        ]
        if about == "release" and w.above:
            figs.warnings.append(
                f"{w.above:,} released records have an individual re-identification risk above "
                f"{threshold:g} (sampling weights {weights!r})"
            )
    if n and len(qi):
        table, cut = C.combination_risk(classes, qi, "count", k)
        total = 2 ** len(qi) - 1
        counted = (
            f"all {total:,} subsets"
            if not cut
            else f"{len(table):,} of {total:,} subsets (the smallest first, and all of them together; at most {C.MAX_SUBSETS:,})"
        )
        rows = [
            [
                r["quasi-identifiers"],
                int(r["size"]),
                int(r["classes"]),
                r["distinction"],
                r["separation"],
                r["uniques"],
                r["below_k"],
            ]
            for _, r in table.head(TOP_COMBINATIONS).iterrows()
        ]
        figs.risk.append(
            Table(
                f"{pre}qi_combinations",
                "Riskiest quasi-identifier combinations",
                [
                    "quasi-identifiers",
                    "QIs",
                    "classes",
                    "distinction",
                    "separation",
                    "unique records",
                    f"records in classes < {k}",
                ],
                rows,
                about,
                note=f"{whose} grouped on each combination of its quasi-identifiers ({counted}; the "
                f"{min(TOP_COMBINATIONS, len(table))} riskiest shown); distinction = classes / records, "
                "separation = share of record pairs that differ, unique records and records in small "
                "classes as fractions of the records",
            )
        )
    return figs
