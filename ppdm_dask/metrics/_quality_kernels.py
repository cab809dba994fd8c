"""Per-partition kernels of the quality report (:mod:`.quality`): pure numpy / pandas.

Two passes, each kernel run on one partition of the original and of the release and the results
added up on the driver:

* :func:`profile` — per numeric column its minimum, maximum and (up to a cap) its distinct
  values; per categorical column its value counts (missing values as their own category);
* :func:`tally` — with the plan made from the profiles: per numeric column the records at each
  point of its grid (for the CDF), per pair of columns the contingency counts of their cells
  (numeric columns binned) and per pair of numeric columns the sums Pearson's r needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["MISSING", "profile", "merge_profiles", "tally", "merge_tallies", "cell_codes"]

#: the category missing values are counted in
MISSING = "<missing>"


def _key(v: Any) -> str:
    """One value as its text key (``39``, ``39.0`` and ``"39"`` agree)."""
    if isinstance(v, str):
        return v
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


def _text_counts(values: pd.Series) -> pd.Series:
    """Value counts keyed by text (missing values as :data:`MISSING`); each distinct value is
    turned into text once."""
    vc = values.value_counts(dropna=False)
    keys = [MISSING if pd.isna(v) else _key(v) for v in vc.index]
    return pd.Series(vc.to_numpy(dtype=np.int64), index=pd.Index(keys, dtype=object)).groupby(level=0).sum()


def _text_codes(values: pd.Series, categories: pd.Index) -> np.ndarray:
    """Position of each value's text key among ``categories`` (-1 when absent)."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    at = categories.get_indexer(pd.Index([_key(v) for v in uniques], dtype=object)) if len(uniques) else np.zeros(0, np.int64)
    missing = categories.get_indexer([MISSING])[0]
    return np.where(codes >= 0, at[np.maximum(codes, 0)] if len(at) else -1, missing)


def profile(part: pd.DataFrame, numeric: Sequence[str], categorical: Sequence[str], cap: int) -> dict[str, Any]:
    """Kernel: ``{"n": rows, "num": {col: (min, max, distinct values or None)}, "cat": {col:
    value counts}}`` of one partition; the distinct values of a numeric column are dropped
    (None) once they exceed ``cap``."""
    num: dict[str, Any] = {}
    for c in numeric:
        v = pd.to_numeric(part[c], errors="coerce").to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        uniq = np.unique(v)
        num[c] = (float(v.min()) if v.size else np.inf, float(v.max()) if v.size else -np.inf, uniq if uniq.size <= cap else None)
    cat = {c: _text_counts(part[c]) for c in categorical}
    return {"n": len(part), "num": num, "cat": cat}


def merge_profiles(parts: Sequence[Mapping[str, Any]], cap: int) -> dict[str, Any]:
    """The profiles of all partitions of one table added up (distinct values None past ``cap``)."""
    out: dict[str, Any] = {"n": 0, "num": {}, "cat": {}}
    for p in parts:
        out["n"] += int(p["n"])
        for c, (lo, hi, u) in p["num"].items():
            if c not in out["num"]:
                out["num"][c] = (lo, hi, u)
                continue
            lo0, hi0, u0 = out["num"][c]
            both = None if u is None or u0 is None else np.union1d(u0, u)
            out["num"][c] = (min(lo0, lo), max(hi0, hi), both if both is not None and both.size <= cap else None)
        for c, vc in p["cat"].items():
            out["cat"][c] = vc if c not in out["cat"] else out["cat"][c].add(vc, fill_value=0)
    return out


def cell_codes(part: pd.DataFrame, column: str, spec: Mapping[str, Any]) -> np.ndarray:
    """The pair-table cell of each row for one column: the category's position (missing values
    last), or for a numeric column its bin among ``spec["bins"]`` interior edges (the lowest and
    highest bins open, missing values in a last bin)."""
    if spec["kind"] == "numeric":
        v = pd.to_numeric(part[column], errors="coerce").to_numpy(dtype=float)
        codes = np.digitize(v, spec["bins"])
        return np.where(np.isfinite(v), codes, len(spec["bins"]) + 1).astype(np.int64)
    cats = pd.Index(spec["categories"], dtype=object)
    at = _text_codes(part[column], cats)
    return np.where(at >= 0, at, len(cats)).astype(np.int64)  # an unseen value (cannot happen) beside missing


def tally(part: pd.DataFrame, plan: Mapping[str, Any]) -> dict[str, Any]:
    """Kernel: the counts of one partition the scores need (see the module docstring).

    ``plan``: ``grids`` ({numeric col: ascending points}), ``cells`` ({col: spec of
    :func:`cell_codes` with ``size``, the number of cells}), ``pairs`` ([(a, b)]), ``shift``
    ({numeric col: a value subtracted before the sums, for precision}).
    """
    out: dict[str, Any] = {"cdf": {}, "pairs": {}, "moments": {}}
    for c, grid in plan["grids"].items():
        v = pd.to_numeric(part[c], errors="coerce").to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        # each value counts at the first grid point >= it: the cumulative counts are P(X <= point)
        out["cdf"][c] = np.bincount(np.searchsorted(grid, v, side="left"), minlength=len(grid) + 1).astype(np.int64)
    codes = {c: cell_codes(part, c, spec) for c, spec in plan["cells"].items()}
    for a, b in plan["pairs"]:
        sa, sb = plan["cells"][a]["size"], plan["cells"][b]["size"]
        out["pairs"][(a, b)] = np.bincount(codes[a] * sb + codes[b], minlength=sa * sb).astype(np.int64)
        if plan["cells"][a]["kind"] == plan["cells"][b]["kind"] == "numeric":
            x = pd.to_numeric(part[a], errors="coerce").to_numpy(dtype=float) - plan["shift"][a]
            y = pd.to_numeric(part[b], errors="coerce").to_numpy(dtype=float) - plan["shift"][b]
            ok = np.isfinite(x) & np.isfinite(y)
            x, y = x[ok], y[ok]
            out["moments"][(a, b)] = np.array([x.size, x.sum(), y.sum(), (x * x).sum(), (y * y).sum(), (x * y).sum()])
    return out


def merge_tallies(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The tallies of all partitions of one table added up."""
    out: dict[str, Any] = {"cdf": {}, "pairs": {}, "moments": {}}
    for p in parts:
        for key in out:
            for k, v in p[key].items():
                out[key][k] = v if k not in out[key] else out[key][k] + v
    return out
