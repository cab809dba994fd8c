"""Generalisation hierarchies of one attribute (docs/anonymity.md#generalisation-hierarchies).

A hierarchy has ``levels`` levels: level 0 is the leaf value itself (identity), the last level is
the root ``'*'`` (full suppression). Two kinds exist:

* categorical (``from_csv``, ``balanced``): a finite tree stored as a table with one row per leaf
  and one column per level; values are matched by their string form (integers ``39`` and
  ``39.0`` both match the leaf ``"39"``);
* interval (``from_intervals``): numeric values are mapped to nested intervals, one set of
  boundaries per level.

The suppressed value ``'*'`` is accepted as input at every level and stays ``'*'``.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataFormatError, InvalidParameter

ROOT = "*"
_SHOW = 10  # how many offending values an error message lists


def _fmt_num(x: float) -> str:
    """Short label of a boundary: ``20`` rather than ``20.0``."""
    if math.isfinite(x) and float(x).is_integer():
        return str(int(x))
    return repr(float(x))


def as_keys(values: Any) -> np.ndarray:
    """String keys of ``values`` (object array); integral numbers lose their ``.0``. Each
    distinct value is converted once (a column has far fewer distinct values than rows)."""
    s = values if isinstance(values, pd.Series) else pd.Series(np.asarray(values, dtype=object) if np.ndim(values) else [values])
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    keys = _distinct_keys(pd.Series(uniques, dtype=s.dtype if len(uniques) else object))
    out = np.empty(len(s), dtype=object)
    present = codes >= 0
    out[present] = keys[codes[present]]
    out[~present] = None
    return out


def key_codes(values: pd.Series, index: pd.Index) -> np.ndarray:
    """Positions in ``index`` (an index of keys) of the keys of ``values`` (-1 where absent),
    as ``index.get_indexer(as_keys(values))``: the distinct values are looked up once, so a
    column of millions of rows costs one factorization."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    keys = _distinct_keys(pd.Series(uniques, dtype=values.dtype if len(uniques) else object))
    at = np.append(index.get_indexer(keys), index.get_indexer(np.array([None], dtype=object)))
    return at[codes]  # code -1 (missing) takes the last entry: the position of None


def _distinct_keys(s: pd.Series) -> np.ndarray:
    """:func:`as_keys` of values without missing ones (a loop: call it on distinct values)."""
    out = np.empty(len(s), dtype=object)
    if pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype):
        arr = s.to_numpy(dtype=float, na_value=np.nan)
        integral = np.isfinite(arr) & (arr == np.round(arr))
        out[integral] = [str(int(v)) for v in arr[integral]]
        out[~integral] = [repr(float(v)) for v in arr[~integral]]
        return out
    for i, v in enumerate(s.to_numpy(dtype=object)):
        if isinstance(v, (float, np.floating)) and float(v).is_integer():
            out[i] = str(int(v))
        elif isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            out[i] = str(int(v))
        else:
            out[i] = str(v)
    return out


def missing_error(name: str | None, bad: Sequence[Any], source: str | None = None) -> DataFormatError:
    """Values absent from a hierarchy, named with the hierarchy and, when read from a file, the file."""
    shown = ", ".join(repr(v) for v in list(bad)[:_SHOW])
    more = f" (and {len(bad) - _SHOW} more)" if len(bad) > _SHOW else ""
    where = f" of hierarchy {name!r}" if name else ""
    where += f" ({source})" if source else ""
    return DataFormatError(f"{len(bad)} value(s) have no path to the root{where}: {shown}{more}")


class Hierarchy:
    """Generalisation hierarchy of one attribute.

    Build instances with :meth:`from_csv`, :meth:`from_intervals` or :meth:`balanced`.

    Attributes
    ----------
    name : str or None
        Attribute name, used in error messages.
    kind : {"categorical", "interval"}
        Finite taxonomy or numeric interval hierarchy.
    levels : int
        Height including the leaf level 0 and the root level ``levels - 1`` (always ``'*'``).
    """

    def __init__(
        self,
        *,
        kind: str,
        levels: int,
        name: str | None = None,
        table: np.ndarray | None = None,
        bounds: list[np.ndarray] | None = None,
        closed: str = "left",
    ) -> None:
        self.kind = kind
        self.levels = int(levels)
        self.name = name
        self._table = table  # categorical: (n_leaves, levels) object array of str
        self._bounds = bounds  # interval: per level 1..levels-2 the sorted boundaries incl. low/high
        self.closed = closed
        self.source: str | None = None  # the file it was read from (named in errors), if any
        if kind == "categorical":
            assert table is not None
            self._index = pd.Index(table[:, 0])
            # node -> number of leaves under it, per level
            self._under = [pd.Series(table[:, j]).value_counts().to_dict() for j in range(self.levels)]
        else:
            assert bounds is not None
            self.low, self.high = float(bounds[0][0]), float(bounds[0][-1])
            self._labels = [self._interval_labels(b) for b in bounds]

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_table(cls, rows: Sequence[Sequence[str]], *, name: str | None = None, source: str = "table") -> Hierarchy:
        """Categorical hierarchy from rows ``[leaf, level1, ..., root]`` (one row per leaf).

        The single root label is replaced by ``'*'``.

        Raises
        ------
        DataFormatError
            Ragged rows, empty cells, several roots, duplicate leaves, or a node with more than
            one parent at the next level.
        """
        rows = [list(r) for r in rows if len(r) and any(c.strip() for c in r)]
        if not rows:
            raise DataFormatError(f"hierarchy {source}: no rows")
        width = len(rows[0])
        for i, r in enumerate(rows):
            if len(r) != width:
                raise DataFormatError(f"hierarchy {source}: row {i + 1} has {len(r)} columns, expected {width} (as row 1)")
            if any(c == "" for c in r):
                raise DataFormatError(f"hierarchy {source}: row {i + 1} has an empty cell")
        if width < 2:
            raise DataFormatError(f"hierarchy {source}: needs at least 2 columns (leaf and root), got {width}")
        table = np.array(rows, dtype=object)
        roots = pd.unique(table[:, -1])
        if len(roots) != 1:
            raise DataFormatError(f"hierarchy {source}: the last column must hold one root value, found {list(roots[:_SHOW])}")
        table[:, -1] = ROOT  # the root is always published as '*'
        leaves = pd.Series(table[:, 0])
        dup = leaves[leaves.duplicated()].unique()
        if len(dup):
            raise DataFormatError(f"hierarchy {source}: duplicate leaf value(s) {list(dup[:_SHOW])}")
        for j in range(width - 1):
            parents = pd.DataFrame({"n": table[:, j], "p": table[:, j + 1]}).drop_duplicates()
            counts = parents["n"].value_counts()
            bad = counts[counts > 1].index
            if len(bad):
                node = bad[0]
                ps = sorted(parents.loc[parents["n"] == node, "p"])
                raise DataFormatError(
                    f"hierarchy {source}: node {node!r} at level {j} has {len(ps)} parents at level {j + 1}: {ps}"
                    + (f" ({len(bad)} such nodes)" if len(bad) > 1 else "")
                )
        return cls(kind="categorical", levels=width, name=name, table=table)

    @classmethod
    def from_csv(
        cls, path_or_url: str, *, sep: str = ";", name: str | None = None, storage_options: dict | None = None
    ) -> Hierarchy:
        """Load a categorical hierarchy in the ARX format.

        Parameters
        ----------
        path_or_url : str
            Local path or fsspec URL of a headerless ``sep``-separated file: one row per leaf
            value, column i = the value at level i, last column the root (any single label,
            e.g. ``*``; it is published as ``'*'``). Blank lines are skipped; cells are stripped.
        sep : str
            Field separator.
        name : str, optional
            Attribute name for error messages (default: the file name).
        storage_options : dict, optional
            Passed to ``fsspec.open``.

        Returns
        -------
        Hierarchy
        """
        from .sidefiles import read_text_file

        text = read_text_file(str(path_or_url), what="hierarchy", parameter="hierarchy", storage_options=storage_options)
        rows = [[c.strip() for c in r] for r in csv.reader(io.StringIO(text), delimiter=sep)]
        src = str(path_or_url)
        if name is None:
            name = src.rsplit("/", 1)[-1]
        h = cls.from_table(rows, name=name, source=src)
        h.source = src
        return h

    @classmethod
    def from_intervals(
        cls,
        cut_points: Sequence[float] | Sequence[Sequence[float]] | None = None,
        *,
        width: float | Sequence[float] | None = None,
        low: float,
        high: float,
        closed: str = "left",
        name: str | None = None,
    ) -> Hierarchy:
        """Numeric interval hierarchy on the domain ``[low, high)`` (or ``(low, high]``).

        Parameters
        ----------
        cut_points : sequence of numbers, or sequence of such sequences, optional
            Inner boundaries of each generalised level, finest first. A flat sequence gives one
            level. Each level's cut points must be a subset of the previous level's (nesting).
        width : number or sequence of numbers, optional
            Instead of ``cut_points``: interval widths per level (boundaries ``low + i*w``),
            each a multiple of the previous. A single width ``w`` gives ``w, 2w, 4w, ...`` up to
            the first level with one interval (that level is then the root ``*``).
        low, high : float
            Finite domain bounds.
        closed : {"left", "right"}
            ``"left"``: intervals ``[a, b)``, domain ``[low, high)``; ``"right"``: ``(a, b]``,
            domain ``(low, high]`` (P2's example ``20 < Age <= 30`` is right-closed).
        name : str, optional
            Attribute name for error messages.

        Returns
        -------
        Hierarchy
            Level 0 = the number itself, levels 1..L = interval labels such as ``"[20, 30)"``,
            level L+1 = ``'*'``.
        """
        if closed not in ("left", "right"):
            raise InvalidParameter(f"closed must be 'left' or 'right', got {closed!r}")
        if (cut_points is None) == (width is None):
            raise InvalidParameter("give exactly one of cut_points and width")
        low, high = float(low), float(high)
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise InvalidParameter(f"need finite low < high, got low={low}, high={high}")
        if width is not None:
            if np.ndim(width) == 0:
                w = float(width)
                if not w > 0:
                    raise InvalidParameter(f"width must be > 0, got {width}")
                widths = []
                while True:
                    widths.append(w)
                    if low + w >= high:
                        break
                    w *= 2
            else:
                widths = [float(x) for x in width]
            if not widths or any(not w > 0 for w in widths):
                raise InvalidParameter(f"widths must be > 0, got {widths}")
            for a, b in zip(widths, widths[1:]):
                if b < a or not math.isclose(b / a, round(b / a)):
                    raise InvalidParameter(f"each width must be a multiple of the previous one, got {widths}")
            levels_cuts = [list(np.arange(1, math.ceil((high - low) / w - 1e-9)) * w + low) for w in widths]
        else:
            cp = list(cut_points)
            levels_cuts = [list(c) for c in cp] if cp and np.ndim(cp[0]) == 1 else [cp]
        bounds: list[np.ndarray] = []
        prev: set[float] | None = None
        for i, cuts in enumerate(levels_cuts):
            c = [float(x) for x in cuts]
            if any(not (low < x < high) for x in c) or c != sorted(set(c)):
                raise InvalidParameter(f"cut points of level {i + 1} must be strictly increasing inside ({low}, {high}): {c}")
            if prev is not None and not set(c) <= prev:
                raise InvalidParameter(f"cut points of level {i + 1} are not a subset of level {i} (intervals must nest)")
            prev = set(c)
            bounds.append(np.array([low, *c, high]))
        # a last level with a single interval is the root itself
        if len(bounds) > 1 and len(bounds[-1]) == 2:
            bounds.pop()
        return cls(kind="interval", levels=len(bounds) + 2, name=name, bounds=bounds, closed=closed)

    @classmethod
    def balanced(cls, n_leaves: int, fan_out: int, *, name: str | None = None, labels: Sequence[Any] | None = None) -> Hierarchy:
        """Balanced hierarchy over item ids ``0..n_leaves-1`` (or over ``labels``).

        Level j groups ``fan_out**j`` consecutive ids; its node label is ``"lo-hi"`` (first and
        last id under it). The first level with a single node is the root ``'*'``.

        Parameters
        ----------
        n_leaves : int
            Domain size (>= 1).
        fan_out : int
            Children per internal node (>= 2).
        labels : sequence, optional
            Leaf labels in leaf order (``n_leaves`` distinct values, e.g. the item labels of a
            transaction database sorted); internal nodes are then labelled ``"first-last"`` by
            the labels of their first and last leaves.

        Returns
        -------
        Hierarchy
        """
        if isinstance(n_leaves, bool) or int(n_leaves) != n_leaves or n_leaves < 1:
            raise InvalidParameter(f"n_leaves must be an integer >= 1, got {n_leaves!r}")
        if isinstance(fan_out, bool) or int(fan_out) != fan_out or fan_out < 2:
            raise InvalidParameter(f"fan_out must be an integer >= 2, got {fan_out!r}")
        n, f = int(n_leaves), int(fan_out)
        ids = np.arange(n)
        names = ids.astype(str).astype(object)
        if labels is not None:
            names = as_keys(list(labels))
            if len(names) != n or len(set(names)) != n:
                raise InvalidParameter(f"labels must be {n} distinct values, got {len(names)} ({len(set(names))} distinct)")
        cols = [names]
        size = f
        while -(-n // size) > 1:  # ceil(n / size) nodes at this level
            lo = (ids // size) * size
            hi = np.minimum(lo + size, n) - 1
            cols.append(np.array([f"{names[a]}-{names[b]}" for a, b in zip(lo, hi)], dtype=object))
            size *= f
        cols.append(np.full(n, ROOT, dtype=object))
        return cls(kind="categorical", levels=len(cols), name=name, table=np.stack(cols, axis=1))

    # ------------------------------------------------------------------ queries
    @property
    def leaves(self) -> np.ndarray | None:
        """Leaf values (strings) of a categorical hierarchy; ``None`` for an interval hierarchy."""
        return None if self._table is None else self._table[:, 0].copy()

    @property
    def n_leaves(self) -> int | None:
        """Number of leaves (``None`` for an interval hierarchy)."""
        return None if self._table is None else len(self._table)

    def nodes(self, level: int) -> np.ndarray:
        """Distinct node labels at ``level`` (level 0 of an interval hierarchy has none)."""
        self._check_level(level)
        if self.kind == "categorical":
            return pd.unique(self._table[:, level])
        if level == 0:
            raise InvalidParameter("level 0 of an interval hierarchy is the numeric value itself")
        return np.array([ROOT], dtype=object) if level == self.levels - 1 else self._labels[level - 1].copy()

    def n_leaves_under(self, node: str, level: int) -> int:
        """Number of leaves under ``node`` at ``level`` (categorical hierarchies; for NCP)."""
        if self.kind != "categorical":
            raise InvalidParameter("n_leaves_under needs a categorical hierarchy; use interval_of for intervals")
        self._check_level(level)
        key = as_keys([node])[0]
        if key == ROOT:
            return len(self._table)
        try:
            return int(self._under[level][key])
        except KeyError:
            raise InvalidParameter(f"{node!r} is not a node at level {level} of hierarchy {self.name!r}") from None

    def interval_of(self, node: str, level: int) -> tuple[float, float]:
        """Bounds ``(a, b)`` of an interval node (``'*'`` -> ``(low, high)``)."""
        if self.kind != "interval":
            raise InvalidParameter("interval_of needs an interval hierarchy")
        self._check_level(level)
        if node == ROOT or level == self.levels - 1:
            return self.low, self.high
        if level == 0:
            x = float(node)
            return x, x
        labels = self._labels[level - 1]
        hit = np.flatnonzero(labels == node)
        if not len(hit):
            raise InvalidParameter(f"{node!r} is not a node at level {level} of hierarchy {self.name!r}")
        b = self._bounds[level - 1]
        return float(b[hit[0]]), float(b[hit[0] + 1])

    def validate(self, values: Any) -> None:
        """Raise ``DataFormatError`` naming the values that have no path to the root.

        ``'*'`` (suppressed) is accepted. The message lists the first 10 offending distinct
        values and their count.
        """
        self._positions(values)

    def generalize(self, values: Any, level: int) -> np.ndarray | pd.Series:
        """Map leaf values to their ancestor at ``level`` (vectorised).

        Parameters
        ----------
        values : array-like or pandas.Series
            Leaf values (or ``'*'``).
        level : int
            0 = identity, ``levels - 1`` = ``'*'``.

        Returns
        -------
        numpy.ndarray (object) or pandas.Series
            A Series (same index and name) when ``values`` is a Series, else an array.

        Raises
        ------
        DataFormatError
            A value has no path to the root.
        """
        self._check_level(level)
        pos, star = self._positions(values)
        if level == 0:
            out = (
                np.asarray(values, dtype=object).copy()
                if not isinstance(values, pd.Series)
                else values.to_numpy(dtype=object).copy()
            )
        elif level == self.levels - 1:
            out = np.full(len(star), ROOT, dtype=object)
        elif self.kind == "categorical":
            out = self._table[np.where(star, 0, pos), level]
        else:
            out = self._labels[level - 1][np.where(star, 0, pos[level - 1])]
        out = np.asarray(out, dtype=object)
        out[star] = ROOT
        if isinstance(values, pd.Series):
            return pd.Series(out, index=values.index, name=values.name, dtype=object)
        return out

    # ------------------------------------------------------------------ internals
    def _check_level(self, level: int) -> None:
        if isinstance(level, bool) or int(level) != level or not 0 <= level < self.levels:
            raise InvalidParameter(f"level must be an integer in [0, {self.levels - 1}], got {level!r}")

    def _interval_labels(self, b: np.ndarray) -> np.ndarray:
        lb, rb = ("[", ")") if self.closed == "left" else ("(", "]")
        return np.array([f"{lb}{_fmt_num(a)}, {_fmt_num(c)}{rb}" for a, c in zip(b[:-1], b[1:])], dtype=object)

    def _positions(self, values: Any):
        """Leaf positions (categorical) or per-level interval positions, plus the '*' mask."""
        if self.kind == "categorical":
            keys = as_keys(values)
            star = keys == ROOT
            pos = self._index.get_indexer(keys)
            bad_mask = (pos < 0) & ~star
            if bad_mask.any():
                bad = pd.unique(np.where(pd.isna(keys[bad_mask]), "<missing>", keys[bad_mask]).astype(object))
                raise missing_error(self.name, list(bad), self.source)
            return pos, star
        s = (
            values
            if isinstance(values, pd.Series)
            else pd.Series(np.asarray(values, dtype=object) if np.ndim(values) else [values])
        )
        obj = s.to_numpy(dtype=object)
        star = np.array([isinstance(v, str) and v == ROOT for v in obj], dtype=bool)
        x = pd.to_numeric(pd.Series(np.where(star, self.low + (self.high - self.low) / 2, obj)), errors="coerce").to_numpy(
            dtype=float
        )
        inside = (x >= self.low) & (x < self.high) if self.closed == "left" else (x > self.low) & (x <= self.high)
        bad_mask = ~inside & ~star
        if bad_mask.any():
            bad = pd.unique(pd.Series(obj[bad_mask]).astype(str))
            where = "[low, high)" if self.closed == "left" else "(low, high]"
            err = missing_error(self.name, list(bad), self.source)
            raise DataFormatError(f"{err} (domain {where} = {_fmt_num(self.low)}, {_fmt_num(self.high)}; numbers only)")
        side = "right" if self.closed == "left" else "left"
        pos = [np.searchsorted(b, x, side=side) - 1 for b in self._bounds]
        return pos, star

    def __repr__(self) -> str:
        extra = f"n_leaves={self.n_leaves}" if self.kind == "categorical" else f"[{self.low}, {self.high}] closed={self.closed!r}"
        return f"Hierarchy(name={self.name!r}, kind={self.kind!r}, levels={self.levels}, {extra})"
