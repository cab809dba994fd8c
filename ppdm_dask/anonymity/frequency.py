"""The frequency set of a relational table: distinct quasi-identifier tuples with their counts.

Every full-domain and partitioning anonymiser here needs only the *frequency set* of the table —
the distinct (QI tuple, sensitive value) combinations and how many records carry each — because
records with the same QI tuple are never separated (full-domain recoding maps them to the same
class; strict Mondrian cuts by value). It is computed once with a distributed group-by
(``groupby(...).size()`` with ``split_every``: per-partition counts merged by a tree reduction),
so the search itself touches a table of distinct tuples, not of records: Adult replicated 100 times
(3M rows) has the same 25,000-odd distinct tuples as Adult. Counts are exact integer sums, so the
frequency set (and everything derived from it) does not depend on the partitioning.

The leaf values are then encoded on the driver: column j gets int32 leaf codes and, per hierarchy
level, a lookup array ``maps[j][level][leaf_code] -> node code`` with node labels, so a lattice node
is rolled up with q gathers and one ``np.unique``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd

from ..data.hierarchy import ROOT, Hierarchy, as_keys
from ..errors import DataFormatError, InvalidParameter
from .checks import qi_columns

COUNT = "__count"


@dataclass
class QIDomain:
    """One quasi-identifier: its observed leaf values and hierarchy level lookups.

    Attributes
    ----------
    name : str
    hierarchy : Hierarchy or None
    values : ndarray
        Observed leaf values in code order: hierarchy leaf order for categorical hierarchies
        (so sibling leaves get neighbouring codes), ascending numbers for numeric columns,
        sorted strings otherwise.
    numeric : bool
        True when the column is numeric (Mondrian cuts it by value).
    maps : list of ndarray
        ``maps[level][leaf_code]`` = node code at ``level`` (only with a hierarchy; level 0 is the
        identity).
    labels : list of ndarray
        ``labels[level][node_code]`` = published label.
    """

    name: str
    hierarchy: Hierarchy | None
    values: np.ndarray
    numeric: bool
    maps: list[np.ndarray] = field(default_factory=list)
    labels: list[np.ndarray] = field(default_factory=list)

    @property
    def height(self) -> int:
        """Number of hierarchy levels (1 without a hierarchy)."""
        return len(self.maps) if self.maps else 1

    @property
    def keys(self) -> np.ndarray:
        """String keys of the leaf values (as matched against hierarchies)."""
        return as_keys(pd.Series(self.values))


@dataclass
class FrequencySet:
    """Distinct (QI tuple, sensitive value) rows of a table with their record counts.

    Attributes
    ----------
    qi : list of str
    domains : list of QIDomain
    codes : ndarray, shape (n_rows, q), int32
        Leaf codes of the QI tuple of each row.
    sensitive : str or None
    sensitive_values : ndarray
        Distinct sensitive values (sorted); empty without a sensitive attribute.
    sensitive_codes : ndarray, shape (n_rows,), int32
        Code of the sensitive value of each row (zeros without a sensitive attribute).
    counts : ndarray, shape (n_rows,), int64
        Records per row.
    """

    qi: list[str]
    domains: list[QIDomain]
    codes: np.ndarray
    sensitive: str | None
    sensitive_values: np.ndarray
    sensitive_codes: np.ndarray
    counts: np.ndarray
    #: rows of each partition of the table (counted in the same pass), when known
    partition_rows: list[int] | None = None

    @property
    def n_records(self) -> int:
        return int(self.counts.sum())

    @property
    def n_sensitive(self) -> int:
        return max(1, len(self.sensitive_values))

    def tuples(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Distinct QI tuples only: ``(codes, weights, sensitive_counts, row_to_tuple)``.

        ``sensitive_counts`` is (n_tuples, n_sensitive) int64; ``row_to_tuple`` maps each row of
        the frequency set to its tuple.
        """
        uniq, inv = np.unique(self.codes, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        w = np.bincount(inv, weights=self.counts, minlength=len(uniq)).astype(np.int64)
        s = np.zeros((len(uniq), self.n_sensitive), dtype=np.int64)
        np.add.at(s, (inv, self.sensitive_codes), self.counts)
        return uniq.astype(np.int32), w, s, inv

    def numeric_matrix(self, codes: np.ndarray | None = None) -> np.ndarray:
        """QI tuples as float64: numeric columns by value, others by their leaf code."""
        codes = self.codes if codes is None else codes
        out = np.empty(codes.shape, dtype=np.float64)
        for j, d in enumerate(self.domains):
            out[:, j] = d.values[codes[:, j]].astype(np.float64) if d.numeric else codes[:, j]
        return out


def _is_numeric(dtype: Any) -> bool:
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def as_dask(df: Any) -> dd.DataFrame:
    """A pandas or dask DataFrame as a dask DataFrame (pandas: one partition)."""
    if isinstance(df, pd.DataFrame):
        from ..data.tables import from_pandas

        return from_pandas(df, npartitions=1)
    if not isinstance(df, dd.DataFrame):
        raise InvalidParameter(f"expected a pandas or dask DataFrame, got {type(df).__name__}")
    return df


def check_hierarchies(
    qi: Sequence[str], hierarchies: Mapping[str, Hierarchy] | None, *, required: bool, columns: Sequence[str] | None = None
) -> dict[str, Hierarchy]:
    """Hierarchies of the QIs; with ``required`` every QI must have one (clear error naming them).

    Hierarchies of other columns of the table (e.g. the sensitive attribute) are not used;
    a hierarchy named after no column at all is an error (a typo would otherwise go unnoticed).
    """
    hierarchies = dict(hierarchies or {})
    known = set(qi) | set(columns or ())
    unknown = [a for a in hierarchies if a not in known]
    if unknown:
        raise InvalidParameter(
            f"hierarchies given for {unknown}, which are not columns of the table (quasi-identifiers {list(qi)})"
        )
    hierarchies = {a: h for a, h in hierarchies.items() if a in qi}
    for a, h in hierarchies.items():
        if not isinstance(h, Hierarchy):
            raise InvalidParameter(f"hierarchy for {a!r} must be a Hierarchy, got {type(h).__name__}")
    if required:
        missing = [a for a in qi if a not in hierarchies]
        if missing:
            raise InvalidParameter(
                f"quasi-identifier(s) {missing} have no generalisation hierarchy "
                "(pass hierarchies={attr: Hierarchy}; CLI: --hierarchy attr=FILE)"
            )
    return hierarchies


def _domain(name: str, raw: pd.Series, hierarchy: Hierarchy | None, numeric: bool) -> tuple[QIDomain, np.ndarray]:
    """Encode the distinct raw values of one column; returns the domain and each value's code."""
    values = raw.to_numpy(dtype=object)
    if hierarchy is not None and hierarchy.kind == "categorical":
        keys = as_keys(raw)
        hierarchy.validate(keys)  # names values without a path to the root
        leaves = hierarchy.leaves
        pos = pd.Index(leaves).get_indexer(keys)
        if (keys == ROOT).any():
            raise DataFormatError(f"column {name!r} already holds suppressed values '*'; anonymise the original table")
        order = np.argsort(pos, kind="stable")  # hierarchy leaf order
    else:
        if hierarchy is not None:
            hierarchy.validate(raw)
        if numeric:
            order = np.argsort(raw.to_numpy(dtype=float), kind="stable")
        else:
            order = np.argsort(as_keys(raw).astype(str), kind="stable")
    codes = np.empty(len(values), dtype=np.int32)
    codes[order] = np.arange(len(values), dtype=np.int32)
    sorted_values = values[order]
    dom = QIDomain(name=name, hierarchy=hierarchy, values=sorted_values, numeric=numeric)
    if hierarchy is not None:
        for level in range(hierarchy.levels):
            gen = np.asarray(hierarchy.generalize(pd.Series(sorted_values), level), dtype=object)
            if level == 0:
                gen = as_keys(pd.Series(sorted_values))
            lab, node = np.unique(gen.astype(str), return_inverse=True)
            # keep node codes in leaf order (first appearance) so codes of siblings stay adjacent
            first = np.full(len(lab), len(gen), dtype=np.int64)
            np.minimum.at(first, node.reshape(-1), np.arange(len(gen)))
            rank = np.empty(len(lab), dtype=np.int32)
            rank[np.argsort(first, kind="stable")] = np.arange(len(lab), dtype=np.int32)
            dom.maps.append(rank[node.reshape(-1)])
            labels = np.empty(len(lab), dtype=object)
            labels[rank] = lab
            dom.labels.append(labels)
    return dom, codes


def frequency_set(
    df: Any,
    qi: str | Sequence[str],
    *,
    sensitive: str | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    require_hierarchies: bool = False,
    split_every: int = 8,
    client: Any = None,
    progress: bool = False,
) -> FrequencySet:
    """Distinct (QI, sensitive) combinations of ``df`` with their record counts.

    Parameters
    ----------
    df : pandas.DataFrame or dask.dataframe.DataFrame
        The original table.
    qi : str or sequence of str
        Quasi-identifiers.
    sensitive : str, optional
        Sensitive attribute (counted per tuple for l-diversity).
    hierarchies : mapping attr -> Hierarchy, optional
        Generalisation hierarchies; every value of a QI with a hierarchy must have a path to
        its root.
    require_hierarchies : bool
        Raise when a QI has no hierarchy (full-domain methods need one for every QI).
    split_every : int
        Fan-in of the group-by tree reduction.
    client : distributed.Client, optional
        Compute on this client (default: the current dask scheduler).
    progress : bool
        Show a progress bar.

    Returns
    -------
    FrequencySet

    Raises
    ------
    InvalidParameter
        Unknown columns, sensitive attribute among the QIs, missing hierarchies.
    DataFormatError
        Missing values in a QI or the sensitive column, values outside a hierarchy.
    """
    from ..progress import compute

    ddf = as_dask(df)
    if sensitive is not None and sensitive not in ddf.columns:
        raise InvalidParameter(f"unknown sensitive attribute {sensitive!r}; the table has {list(ddf.columns)}")
    qi = qi_columns(ddf, qi, extra=[sensitive] if sensitive else [])
    hier = check_hierarchies(qi, hierarchies, required=require_hierarchies, columns=list(ddf.columns))
    cols = [*qi, *([sensitive] if sensitive else [])]
    sizes = ddf.groupby(cols, dropna=False, observed=True).size(split_every=split_every, split_out=1)
    na = ddf[cols].isna().sum()
    # rows per partition ride along with the group-by (same read of the data): a release of the
    # table then needs no extra pass to know them
    sizes, na, lengths = compute(sizes, na, ddf.map_partitions(len), client=client, progress=progress)
    bad = [c for c in cols if int(na[c]) > 0]
    if bad:
        raise DataFormatError(
            f"missing values (NaN/None) in column(s) {bad} ({[int(na[c]) for c in bad]} rows); "
            "impute or drop them before anonymising"
        )
    freq = sizes.rename(COUNT).reset_index()
    freq = freq[freq[COUNT] > 0].reset_index(drop=True)
    n = len(freq)
    domains, codes = [], np.empty((n, len(qi)), dtype=np.int32)
    for j, a in enumerate(qi):
        inv, uniq = pd.factorize(freq[a], sort=False)
        dom, ucodes = _domain(a, pd.Series(np.asarray(uniq, dtype=object)), hier.get(a), _is_numeric(ddf[a].dtype))
        domains.append(dom)
        codes[:, j] = ucodes[inv]
    if sensitive:
        s_inv, s_uniq = pd.factorize(freq[sensitive], sort=True)
        svals, scodes = np.asarray(s_uniq, dtype=object), s_inv.astype(np.int32)
    else:
        svals, scodes = np.empty(0, dtype=object), np.zeros(n, dtype=np.int32)
    counts = freq[COUNT].to_numpy(dtype=np.int64)
    # canonical row order: independent of the group-by's partition-dependent output order
    order = np.lexsort((scodes, *codes.T[::-1]))
    return FrequencySet(
        qi=list(qi),
        domains=domains,
        codes=codes[order],
        sensitive=sensitive,
        sensitive_values=svals,
        sensitive_codes=scodes[order],
        counts=counts[order],
        partition_rows=[int(r) for r in np.asarray(lengths).ravel()],
    )
