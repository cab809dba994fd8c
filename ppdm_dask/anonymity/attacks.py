"""Attacks on relational k-anonymous (l-diverse) releases, as an adversary runs them.

The adversary (docs/threat-model.md) holds the public files of two releases of one table —
say Mondrian with k = 5 and with k = 8 — and knows the quasi-identifiers of the people they
target (and that those people are in the table). Nothing here uses a key or the original beyond
the targets' quasi-identifiers; the targets' true sensitive values only score the attack.

* :func:`same_position_equality` — do the rows at the same position of the two releases hold
  the same person? The share of positions whose values published as is (sensitive and
  insensitive columns) are equal, against the share at other positions
  (:func:`ppdm_dask.release.attacks.position_linkage`): a ratio well above 1 means one key put
  every record at the same position in both releases.
* :func:`intersection_attack` — the candidates of a target are the records of the classes of
  release A whose labels cover the target's quasi-identifiers, intersected with those of
  release B. When positions line up, a candidate is a position (the same record in both);
  otherwise the adversary can only match records by their values published as is, so a
  candidate is such a value tuple, counted ``min(count in A, count in B)`` times (the
  composition attack of Ganta, Kasiviswanathan and Smith, KDD 2008). A target is *unique* when
  one candidate record is left, and its sensitive value *disclosed* when every candidate has the
  same one.

The value-based intersection remains possible for any two releases of one table: each bounds
the target's sensitive value to the values of its class, and two classes' value sets can meet
in one value. Only a budget over the releases of a table prevents it; this module measures it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..data.hierarchy import as_keys
from ..release.attacks import position_linkage
from .utility import domain_of, label_table

__all__ = ["released_rows", "same_position_equality", "class_matches", "intersection_attack", "LINED_UP_RATIO"]

#: same-position against other-position equality above which positions are taken to line up
#: (with every position equal as well)
LINED_UP_RATIO = 1.1
#: targets scored per block (bounds the targets x cells matrix in memory)
_BLOCK = 1024


def released_rows(url: str, *, storage_options: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """The rows of the release at ``url`` in the order its files publish them (what an
    adversary reads)."""
    from .km_release import KmRelease  # noqa: F401
    from .release import AnonymizedRelease  # registers the relational family (km_release the k^m one)

    return AnonymizedRelease.open(url, storage_options=storage_options).data.compute().reset_index(drop=True)


def _codes(frames: Sequence[pd.DataFrame], columns: Sequence[str]) -> tuple[list[np.ndarray], pd.DataFrame]:
    """One integer code per row of each frame for its values in ``columns`` (compared as
    strings), the same code for the same values across the frames; and the distinct value
    tuples (one row per code, as string keys)."""
    keys = pd.concat([pd.DataFrame({c: as_keys(f[c]) for c in columns}) for f in frames], ignore_index=True)
    if not len(columns):
        keys = pd.DataFrame(index=keys.index)
    code = keys.groupby(list(columns), sort=True, dropna=False).ngroup().to_numpy() if len(columns) else np.zeros(len(keys), int)
    distinct = keys.assign(_code=code).drop_duplicates("_code").sort_values("_code").drop(columns="_code").reset_index(drop=True)
    out, start = [], 0
    for f in frames:
        out.append(code[start : start + len(f)])
        start += len(f)
    return out, distinct


def same_position_equality(a: pd.DataFrame, b: pd.DataFrame, columns: Sequence[str]) -> dict[str, float]:
    """How often the rows at the same position of releases ``a`` and ``b`` agree on
    ``columns`` (the columns published as is), against rows at other positions.

    Returns :func:`~ppdm_dask.release.attacks.position_linkage`'s ``same``, ``random`` and
    ``ratio`` (1.0: positions carry no link) over the first ``min(len(a), len(b))`` rows."""
    (ca, cb), _ = _codes([a, b], list(columns))
    return position_linkage(ca, cb, lambda x, y: 1.0 if x == y else 0.0)


def class_matches(
    release: pd.DataFrame, targets: pd.DataFrame, qi: Sequence[str], hierarchies: Mapping[str, Any] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Which classes of ``release`` could hold each target.

    Returns ``(match, row_class)``: ``match[t, c]`` is true when every quasi-identifier label of
    class ``c`` covers target ``t``'s value (:func:`~.utility.coverage`: ``'*'``, the value
    itself, ``a|b`` sets, numeric ranges, hierarchy nodes when ``hierarchies`` are known; a
    label that cannot be read covers everything), and ``row_class[i]`` is the class of row
    ``i``.
    """
    qi = list(qi)
    hierarchies = dict(hierarchies or {})
    (row_class,), classes = _codes([release], qi)
    match = np.ones((len(targets), len(classes)), dtype=bool)
    for a in qi:
        values = targets[a]
        numeric = pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype)
        dom = domain_of(a, values.value_counts(dropna=True), numeric)
        distinct = pd.unique(classes[a].to_numpy(dtype=object))
        table = label_table(distinct, dom, hierarchies.get(a))
        label_at = pd.Index(distinct).get_indexer(classes[a].to_numpy(dtype=object))
        target_at = pd.Index(dom.keys).get_indexer(as_keys(values))
        ok = target_at >= 0
        cover = table.cover[label_at]  # classes x domain values
        match[ok] &= cover[:, target_at[ok]].T
        match[~ok] = False  # a missing quasi-identifier: the adversary does not know the target
    return match, row_class


def _per_cell(cells: np.ndarray, values: np.ndarray, n_cells: int, n_values: int) -> np.ndarray:
    """Records per (cell, value code)."""
    out = np.zeros((n_cells, n_values), dtype=np.int64)
    np.add.at(out, (cells, values), 1)
    return out


def _one_value(cand: np.ndarray, sens_of: np.ndarray, n_sens: int) -> tuple[np.ndarray, np.ndarray]:
    """Per target (rows of ``cand``, candidates per value tuple): whether its candidates hold
    exactly one sensitive value, and that value's code."""
    per = np.zeros((cand.shape[0], n_sens), dtype=np.int64)
    for j in range(n_sens):
        per[:, j] = cand[:, sens_of == j].sum(axis=1)
    return (per > 0).sum(axis=1) == 1, per.argmax(axis=1) if n_sens else np.zeros(cand.shape[0], int)


def intersection_attack(
    a: pd.DataFrame,
    b: pd.DataFrame,
    targets: pd.DataFrame,
    qi: Sequence[str],
    sensitive: str,
    *,
    as_is: Sequence[str] | None = None,
    by: str = "auto",
    truth: Sequence[Any] | None = None,
    hierarchies: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Intersect the classes that could hold each target in releases ``a`` and ``b``.

    Parameters
    ----------
    a, b : pandas.DataFrame
        The released rows, in published order (:func:`released_rows`).
    targets : pandas.DataFrame
        The targets' quasi-identifiers (the adversary's knowledge), original values.
    qi : sequence of str
    sensitive : str
    as_is : sequence of str, optional
        The columns published as is that records are matched by (default: every column of both
        releases that is not a quasi-identifier; the sensitive one among them).
    by : {"auto", "position", "value"}
        ``position``: a candidate is a position whose class matches in both releases;
        ``value``: a candidate is a tuple of ``as_is`` values, ``min(count in a, count in b)``
        times; ``auto``: by position when the releases line up (equally long, every position
        equal on ``as_is`` and :func:`same_position_equality` ratio above
        :data:`LINED_UP_RATIO`), else by value.
    truth : sequence, optional
        The targets' true sensitive values: scores the disclosures (``disclosed_correct``).
    hierarchies : mapping, optional
        attr -> Hierarchy, to read released hierarchy nodes (the adversary may know them).

    Returns
    -------
    dict
        ``by`` (the mode used), ``targets``, ``unique`` (share of targets left with one
        candidate record), ``disclosed`` (share whose candidates all hold one sensitive value),
        ``disclosed_correct`` (share of targets disclosed with their true value; with
        ``truth``), ``mean_candidates``, ``alone_a`` / ``alone_b`` (the disclosed share from
        one release alone, for comparison) and ``linkage`` (:func:`same_position_equality`);
        with ``truth`` also ``best_guess`` (share of targets whose most frequent candidate value
        is theirs), ``best_guess_a`` / ``best_guess_b`` (the same from one release alone) and
        ``base_rate`` (the share of the most frequent true value: a guess without any release).
    """
    qi = list(qi)
    if as_is is None:
        as_is = [c for c in a.columns if c not in qi and c in b.columns]
    as_is = [sensitive, *[c for c in as_is if c != sensitive]]
    (va, vb), values = _codes([a, b], as_is)  # once: the linkage and the candidates both read them
    link = position_linkage(va, vb, lambda x, y: 1.0 if x == y else 0.0)
    lined_up = len(a) == len(b) and link["same"] >= 1.0 and link["ratio"] > LINED_UP_RATIO
    if by == "auto":
        by = "position" if lined_up else "value"
    if by not in ("position", "value"):
        raise ValueError(f"by must be 'auto', 'position' or 'value', got {by!r}")
    if by == "position" and len(a) != len(b):
        raise ValueError("by='position' needs two releases of the same length")

    ma, ca = class_matches(a, targets, qi, hierarchies)
    mb, cb = class_matches(b, targets, qi, hierarchies)
    (sens_of,), sens_values = _codes([values], [sensitive])
    n_val, n_sens = len(values), len(sens_values)
    if by == "position":  # cells: the (class in a, class in b) pairs of the positions
        pair, pair_of = np.unique(np.stack([ca, cb], axis=1), axis=0, return_inverse=True)
        counts = _per_cell(pair_of.ravel(), va, len(pair), n_val)

        def candidates(lo: int, hi: int) -> np.ndarray:
            hit = ma[lo:hi][:, pair[:, 0]] & mb[lo:hi][:, pair[:, 1]]
            return hit.astype(np.int64) @ counts
    else:
        counts_a, counts_b = _per_cell(ca, va, ma.shape[1], n_val), _per_cell(cb, vb, mb.shape[1], n_val)

        def candidates(lo: int, hi: int) -> np.ndarray:
            return np.minimum(ma[lo:hi].astype(np.int64) @ counts_a, mb[lo:hi].astype(np.int64) @ counts_b)

    n_t = len(targets)
    truth_keys = np.asarray(as_keys(pd.Series(list(truth), dtype=object)), dtype=object) if truth is not None else None
    sens_keys = sens_values[sensitive].to_numpy(dtype=object)
    unique = disclosed = correct = 0
    total = 0.0
    alone = {"a": 0, "b": 0}
    guessed = {"both": 0, "a": 0, "b": 0}
    sens_a, sens_b = sens_of[va], sens_of[vb]
    per_class = {"a": _per_cell(ca, sens_a, ma.shape[1], n_sens), "b": _per_cell(cb, sens_b, mb.shape[1], n_sens)}
    for lo in range(0, n_t, _BLOCK):
        hi = min(n_t, lo + _BLOCK)
        cand = candidates(lo, hi)
        n_cand = cand.sum(axis=1)
        single, code = _one_value(cand, sens_of, n_sens)
        unique += int((n_cand == 1).sum())
        disclosed += int(single.sum())
        total += float(n_cand.sum())
        if truth_keys is not None:
            correct += int((single & (sens_keys[code] == truth_keys[lo:hi])).sum())
            guessed["both"] += int((sens_keys[_best(cand, sens_of, n_sens)] == truth_keys[lo:hi]).sum())
        for side, m in (("a", ma), ("b", mb)):
            per = m[lo:hi].astype(np.int64) @ per_class[side]
            alone[side] += int(((per > 0).sum(axis=1) == 1).sum())
            if truth_keys is not None and n_sens:
                guessed[side] += int((sens_keys[per.argmax(axis=1)] == truth_keys[lo:hi]).sum())

    share = (lambda x: x / n_t) if n_t else (lambda x: 0.0)
    out = {
        "by": by,
        "targets": n_t,
        "unique": share(unique),
        "disclosed": share(disclosed),
        "mean_candidates": share(total),
        "alone_a": share(alone["a"]),
        "alone_b": share(alone["b"]),
        "linkage": link,
    }
    if truth_keys is not None:
        out["disclosed_correct"] = share(correct)
        # the best guess of each target's value: the most frequent one among the candidates of
        # both releases, of one release alone, and the base rate (the most frequent value of all)
        out["best_guess"] = share(guessed["both"])
        out["best_guess_a"] = share(guessed["a"])
        out["best_guess_b"] = share(guessed["b"])
        out["base_rate"] = float(pd.Series(truth_keys).value_counts(normalize=True).iloc[0]) if n_t else 0.0
    return out


def _best(cand: np.ndarray, sens_of: np.ndarray, n_sens: int) -> np.ndarray:
    """Per target, the code of the sensitive value with the most candidate records."""
    per = np.zeros((cand.shape[0], max(1, n_sens)), dtype=np.int64)
    for j in range(n_sens):
        per[:, j] = cand[:, sens_of == j].sum(axis=1)
    return per.argmax(axis=1)
