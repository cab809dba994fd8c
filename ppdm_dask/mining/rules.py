"""Association rules from frequent itemsets (ap-genrules of Agrawal & Srikant 1994)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidParameter
from .results import FrequentItemsets, write_table

__all__ = ["AssociationRules", "association_rules", "rule_measures", "METRICS"]

METRICS = ("confidence", "lift", "leverage", "conviction")


@dataclass
class AssociationRules:
    """Rules ``antecedent -> consequent`` (tuples of original labels) with their measures.

    ``count`` is the support count of antecedent ∪ consequent; ``support`` its fraction.
    """

    antecedents: list[tuple]
    consequents: list[tuple]
    counts: np.ndarray
    measures: dict[str, np.ndarray]
    n_transactions: int
    min_confidence: float
    #: support counts of each antecedent and consequent alone (what the mlxtend layout needs);
    #: ``None`` when the rules were built without them (then derived from confidence and lift)
    antecedent_counts: np.ndarray | None = None
    consequent_counts: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.antecedents)

    def to_pandas(self) -> Any:
        """DataFrame: antecedent, consequent, count, support and the requested measures."""
        import pandas as pd

        df = pd.DataFrame(
            {
                "antecedent": pd.Series(self.antecedents, dtype=object),
                "consequent": pd.Series(self.consequents, dtype=object),
                "count": self.counts,
                "support": self.counts / max(self.n_transactions, 1),
            }
        )
        for name, values in self.measures.items():
            df[name] = values
        return df

    def to_parquet(self, url: str, *, storage_options: Mapping[str, Any] | None = None, overwrite: bool = False) -> None:
        """Write one Parquet file atomically."""
        import pyarrow as pa

        table = pa.Table.from_pandas(
            self.to_pandas().assign(
                antecedent=[list(a) for a in self.antecedents], consequent=[list(c) for c in self.consequents]
            ),
            preserve_index=False,
        )
        write_table(
            table, url, {"n_transactions": self.n_transactions, "min_confidence": self.min_confidence}, storage_options, overwrite
        )

    def to_mlxtend(self) -> Any:
        """The rules as ``mlxtend.frequent_patterns.association_rules`` returns them.

        Columns ``antecedents`` and ``consequents`` (frozensets of labels) and every metric
        column of mlxtend >= 0.23.2 (:data:`~ppdm_dask.mining.export.MLXTEND_RULE_COLUMNS`),
        computed from the support counts; see :func:`ppdm_dask.mining.export.rules_to_mlxtend`.
        """
        from .export import rules_to_mlxtend

        return rules_to_mlxtend(self)

    def __repr__(self) -> str:
        return f"AssociationRules({len(self)} rules, min_confidence={self.min_confidence})"


def association_rules(
    itemsets: FrequentItemsets,
    min_confidence: float,
    *,
    metrics: Sequence[str] = METRICS,
    max_rules: int = 10_000_000,
) -> AssociationRules:
    """All rules A -> C with A ∪ C frequent, A, C non-empty and disjoint, confidence >= min_confidence.

    Parameters
    ----------
    itemsets : FrequentItemsets
        Must be downward closed (as :func:`apriori` returns: every subset is present).
    min_confidence : float in [0, 1]
    metrics : subset of ("confidence", "lift", "leverage", "conviction")
        confidence = s(A∪C)/s(A); lift = confidence/s(C); leverage = s(A∪C) − s(A)s(C);
        conviction = (1 − s(C))/(1 − confidence) (``inf`` when confidence = 1).
    max_rules : int
        Guard: raise :class:`~ppdm_dask.mining.apriori.ResultTooLargeError` past this many rules.

    Notes
    -----
    Consequents grow level-wise per itemset and stop growing once confidence falls below the
    threshold (confidence is anti-monotone in the consequent for a fixed itemset), so work is
    proportional to the rules found, not to all 2^k splits.
    """
    from .apriori import ResultTooLargeError

    if not (0.0 <= float(min_confidence) <= 1.0):
        raise InvalidParameter(f"min_confidence must be in [0, 1], got {min_confidence}")
    unknown = set(metrics) - set(METRICS)
    if unknown:
        raise InvalidParameter(f"unknown metrics {sorted(unknown)}; choose from {METRICS}")
    lookup: dict[tuple, int] = {}
    for ids, counts in itemsets.levels.values():
        for row, c in zip(ids.tolist(), counts.tolist()):
            lookup[tuple(row)] = c
    ante: list[tuple] = []
    cons: list[tuple] = []
    rule_counts: list[int] = []
    ante_counts: list[int] = []
    cons_counts: list[int] = []
    for k in sorted(itemsets.levels):
        if k < 2:
            continue
        ids, counts = itemsets.levels[k]
        for row, c_all in zip(ids.tolist(), counts.tolist()):
            full = tuple(row)
            consequents = [(x,) for x in full]
            while consequents:
                survivors = []
                for cq in consequents:
                    a = tuple(x for x in full if x not in cq)
                    if not a:
                        continue
                    c_a = lookup[a]
                    if c_all >= min_confidence * c_a - 1e-12 * c_a:
                        ante.append(a)
                        cons.append(cq)
                        rule_counts.append(c_all)
                        ante_counts.append(c_a)
                        cons_counts.append(lookup[cq])
                        survivors.append(cq)
                if len(ante) > max_rules:
                    raise ResultTooLargeError(
                        f"more than {max_rules:,} rules",
                        python="raise min_confidence or min_support, or max_rules",
                        fix="raise `min_confidence` or `min_support`",
                    )
                consequents = _grow(survivors, len(full))
    rc = np.asarray(rule_counts, np.int64)
    ac = np.asarray(ante_counts, np.float64)
    cc = np.asarray(cons_counts, np.float64)
    measures = rule_measures(rc, ac, cc, itemsets.n_transactions, metrics)
    labels = itemsets.vocabulary.labels
    to_labels = lambda t: tuple(labels[list(t)].tolist())  # noqa: E731
    return AssociationRules(
        [to_labels(a) for a in ante],
        [to_labels(c) for c in cons],
        rc,
        measures,
        itemsets.n_transactions,
        float(min_confidence),
        antecedent_counts=ac,
        consequent_counts=cc,
    )


def rule_measures(
    counts: np.ndarray, antecedent_counts: np.ndarray, consequent_counts: np.ndarray, n_transactions: int, metrics: Sequence[str]
) -> dict[str, np.ndarray]:
    """The ``metrics`` of rules from the support counts of A ∪ C, A and C (formulas in
    :func:`association_rules`); the readers of exported rules call it too, so a round trip
    gives the same floats."""
    n = max(n_transactions, 1)
    s_all = np.asarray(counts) / n
    s_a = np.asarray(antecedent_counts, np.float64) / n
    s_c = np.asarray(consequent_counts, np.float64) / n
    conf = s_all / s_a if s_all.size else np.zeros(0)
    measures: dict[str, np.ndarray] = {}
    for m in metrics:
        if m == "confidence":
            measures[m] = conf
        elif m == "lift":
            measures[m] = conf / s_c
        elif m == "leverage":
            measures[m] = s_all - s_a * s_c
        elif m == "conviction":
            with np.errstate(divide="ignore"):
                measures[m] = np.where(conf >= 1.0, math.inf, (1.0 - s_c) / np.maximum(1.0 - conf, 1e-300))
    return measures


def _grow(consequents: list[tuple], k: int) -> list[tuple]:
    """Next-size consequents: joins of surviving ones sharing all but the last item."""
    if not consequents or len(consequents[0]) + 1 >= k:
        return []
    consequents = sorted(consequents)
    present = set(consequents)
    out = []
    for i in range(len(consequents)):
        for j in range(i + 1, len(consequents)):
            a, b = consequents[i], consequents[j]
            if a[:-1] != b[:-1]:
                break
            cand = a + (b[-1],)
            if all(cand[:d] + cand[d + 1 :] in present for d in range(len(cand))):
                out.append(cand)
    return out
