"""Static condensation on Dask: partition-then-merge (docs/condensation.md#static-construction,
docs/condensation.md#partition-then-merge-on-dask).

1. PARTITION: a k-d tree cut on a keyed sample routes every row to a cell of about
   ``rows_per_partition`` rows (all-to-all graph, :mod:`.partition`), so neighbours are
   co-located;
2. MAP: :func:`~.static.construct_groups` per cell without the final Repair (stream
   ``(Tag.CONDENSE_STATIC, cell)``), returning the cell's group statistics;
3. SEQ on the driver: Repair over the union of all cells' groups using statistics only — a group
   smaller than the largest privacy level of its members merges into the group with the nearest
   centroid, in any cell.

Groups never span cells, so the grouping differs from the single-machine algorithm (it is not
exact, see docs/condensation.md#partition-then-merge-on-dask), but every published group is feasible; the benchmark reports SSQ against the
single-machine run. With ``rows_per_partition=None`` the whole data is one cell and the result is
exactly the sequential algorithm.
"""

from __future__ import annotations

import math
from typing import Any

import dask
import dask.array as da
import numpy as np

from ..base import Estimator, check_is_fitted
from ..constraints import Interval
from ..data.digest import content_digest_lazy
from ..data.sources import source_of
from ..errors import DataFormatError, InfeasiblePrivacyError, InvalidParameter, PrivacyViolation
from ..progress import compute, compute_each, ship, step_reporter
from ..random import Key, KeyLike, Tag
from ..release import Check, Verdict
from ..release.base import overrides_for, refuse_weak
from .groups import GroupTable
from .inputs import privacy_levels, records_of
from .partition import bucket_block, gather_cell, kd_cells
from .release import FLOORS, CondensedRelease, condensed_release, level_floor
from .static import construct_groups

__all__ = ["Condenser", "privacy_levels", "repair_groups", "check_condensation"]

#: Rows per cell of the spatial partitioning. Cost per cell grows about quadratically with its size
#: (200K x 10: ~7 s on one core), while every cut separates near neighbours: SSQ vs one cell
#: measured 1.025-1.06 with 2 cells, 1.14-1.2 with 4 small ones (see the benchmark).
DEFAULT_ROWS_PER_PARTITION = 200_000
#: Share of the workers' memory the rows of the cells condensed at once may take.
CELL_MEMORY_SHARE = 0.15
#: The same budget on the local schedulers.
LOCAL_CELL_BYTES = 2 * 2**30

#: Sample rows per cell used to cut the k-d tree.
SAMPLE_PER_CELL = 200


def repair_groups(table: GroupTable) -> tuple[GroupTable, np.ndarray]:
    """The final Repair (docs/condensation.md#addition-the-final-repair) on statistics only: merge each infeasible group (earliest first) into the
    group with the nearest centroid (ties: earliest) until every group is feasible.

    Returns the repaired table and ``new_id[old_group]``.
    """
    n = table.n.copy()
    mean = table.mean.copy()
    alive = np.ones(len(table), dtype=bool)
    target = np.arange(len(table))
    groups = [table[g] for g in range(len(table))]
    bad = {g for g in range(len(table)) if n[g] < table.req[g]}
    while bad:
        # the earliest infeasible group; a merge can make its target infeasible (the target's
        # requirement grows to the larger of the two), so the target is checked again
        g = min(bad)
        bad.discard(g)
        if not alive[g] or groups[g].n >= groups[g].req:  # merged away, or grown feasible by a merge into it
            continue
        if alive.sum() == 1:
            raise InfeasiblePrivacyError(
                f"all {groups[g].n} records form one group but a record asks for privacy level {groups[g].req}"
            )
        d2 = ((mean - mean[g]) ** 2).sum(axis=1)
        d2[~alive] = np.inf
        d2[g] = np.inf
        h = int(np.argmin(d2))
        groups[h] = groups[h].merge(groups[g])
        mean[h] = groups[h].mean
        alive[g] = False
        target[g] = h
        if groups[h].n < groups[h].req:
            bad.add(h)
    # resolve chains: g merged into h, h later merged into k (h had become infeasible)
    for g in range(len(target)):
        h = g
        while target[h] != h:
            h = target[h]
        target[g] = h
    keep = np.flatnonzero(alive)
    new_id = np.full(len(table), -1, dtype=np.int64)
    new_id[keep] = np.arange(keep.size)
    return GroupTable.from_groups([groups[g] for g in keep]) if keep.size else GroupTable.empty(table.d), new_id[target]


def check_condensation(
    X: np.ndarray, privacy: np.ndarray, labels: np.ndarray, groups: GroupTable, *, rtol: float = 1e-6
) -> Verdict:
    """Independent check of a condensation from the input and the private membership.

    Recounts every group's size and the largest privacy level of its members from ``labels``,
    and recomputes the published first- and second-order sums from the records.

    Returns
    -------
    Verdict
        ``"group size >= members' levels"`` (figure: groups smaller than a member's level),
        ``"group sizes match"`` (recounted sizes against the published n) and
        ``"statistics match the records"`` (figure: the relative error of Fs and Sc, threshold
        ``rtol``); the counts in ``stats`` of the first check (``n_groups``, ``min_group_size``).
    """
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    G = len(groups)
    if labels.shape != (X.shape[0],) or (labels.size and (labels.min() < 0 or labels.max() >= G)):
        raise InvalidParameter("labels must give every record a group in 0..G-1")
    size = np.bincount(labels, minlength=G)
    need = np.zeros(G, dtype=np.int64)
    np.maximum.at(need, labels, np.asarray(privacy, dtype=np.int64))
    fs = np.zeros((G, X.shape[1]))
    np.add.at(fs, labels, X)
    sc = np.zeros((G, X.shape[1], X.shape[1]))
    np.add.at(sc, labels, X[:, :, None] * X[:, None, :])
    scale = max(1.0, float(np.abs(sc).max(initial=0.0)))
    err = max(
        float(np.abs(fs - groups.Fs).max(initial=0.0)) / max(1.0, float(np.abs(fs).max(initial=0.0))),
        float(np.abs(sc - groups.Sc).max(initial=0.0)) / scale,
    )
    infeasible = int(np.sum(size < need))
    worst = int(np.argmax(need - size)) if G else None
    stats = {"n_groups": G, "min_group_size": int(size.min()) if G else 0, "infeasible": infeasible}
    mismatched = int(np.sum(size != groups.n)) if size.shape == groups.n.shape else G
    return Verdict(
        [
            Check(
                "group size >= members' levels",
                infeasible == 0,
                infeasible,
                0,
                where=f"group {worst} ({int(size[worst])} records, a member at level {int(need[worst])})" if infeasible else None,
                detail="groups with fewer records than the largest privacy level of a member",
                stats=stats,
            ),
            Check(
                "group sizes match",
                mismatched == 0,
                mismatched,
                0,
                detail="groups whose recounted size differs from the published n",
            ),
            Check("statistics match the records", err <= rtol, err, rtol, detail="relative error of the published Fs and Sc"),
        ]
    )


def _condense_cell(
    cell: tuple[np.ndarray, np.ndarray, np.ndarray], key: Key, unit: int
) -> tuple[GroupTable, np.ndarray, np.ndarray]:
    X, p, rows = cell
    if X.shape[0] == 0:
        return GroupTable.empty(X.shape[1]), rows, np.empty(0, np.int64)
    labels = construct_groups(X, p, key.generator(Tag.CONDENSE_STATIC, unit), repair=False)
    return GroupTable.from_points(X, p, labels), rows, labels


def _checked_block(X: np.ndarray, block_info: dict | None = None) -> np.ndarray:
    # runs inside the condensation graph itself, so the input is read once, not once more to check
    bad = ~np.isfinite(X).all(axis=1)
    if bad.any():
        offset = block_info[0]["array-location"][0][0] if block_info else 0
        rows = (offset + np.flatnonzero(bad)[:10]).tolist()
        raise DataFormatError(f"records {rows} have NaN or infinite attributes")
    return X


class Condenser(Estimator):
    """Static condensation with per-record privacy levels (docs/condensation.md#static-construction) on Dask.

    Parameters
    ----------
    privacy_levels : int, (low, high), array or None
        Default privacy levels when :meth:`fit` gets none: one level for every record, levels
        drawn uniformly from ``{low..high}`` with the key, or one level per record.
    rows_per_partition : int or None, default 200,000
        Target rows per spatial cell; ``None`` = one cell (the exact sequential algorithm).
    standardize : bool, default False
        Z-score the attributes before grouping (distances then weigh attributes equally); the
        published statistics and pseudo-data are in the original units either way.
    key : Key, int or bytes, optional
        Secret key: every random step draws from the release's stream key, derived from it and
        the release's identity (Segment's samples, the partitioning sample, drawn privacy
        levels, the pseudo-data and the files' orders); a fresh one drawn at :meth:`fit` when
        omitted (``key_``).
    privacy_column : str, optional
        With a table ``X``: the column holding each record's privacy level (not an attribute).
    columns : list of str, optional
        With a table ``X``: the attributes to condense (default: every numeric column but the
        privacy column); with an array, their names.
    allow_weak : bool or sequence of str
        Privacy floors explicitly overridden (``"largest privacy level >= 2"``, ``"no group of a
        single record"``), recorded in the manifest.
    publish_statistics : bool, default False
        Also publish ``n``, ``Fs`` and ``Sc`` of the groups of more than d + 1 records (a
        public parameter; the smaller groups' statistics would give their members away and are
        never published).
    ledger : Ledger, str or None, default "default"
        Where :meth:`~ppdm_dask.release.Release.write` records the release (docs/ledger.md): the
        user's ledger (``"default"``), a :class:`~ppdm_dask.ledger.Ledger` or its location, or
        None to opt out (said in the manifest). Repeated releases of one input are counted there
        and their union measured in the owner's report (docs/condensation.md#repeated-releases).

    Attributes
    ----------
    groups_ : GroupTable
        The condensed statistics (``req``: the largest privacy level of each group's members).
    feature_names_in_ : list of str
        The attribute names.
    key_ : Key
        The key of the release of this fit (resolved at :meth:`fit`).
    report_ : dict
        Number of groups, SSQ, group sizes, cells, repairs, the largest privacy level.
    """

    def __init__(
        self,
        privacy_levels: Any = None,
        *,
        rows_per_partition: int | None = DEFAULT_ROWS_PER_PARTITION,
        standardize: bool = False,
        key: KeyLike = None,
        privacy_column: str | None = None,
        columns: Any = None,
        allow_weak: Any = False,
        publish_statistics: bool = False,
        ledger: Any = "default",
    ) -> None:
        self.privacy_levels = privacy_levels
        self.rows_per_partition = rows_per_partition
        self.standardize = standardize
        self.key = key
        self.privacy_column = privacy_column
        self.columns = columns
        self.allow_weak = allow_weak
        self.publish_statistics = publish_statistics
        self.ledger = ledger

    def _waves(self, n_cells: int, n: int, d: int, client: Any) -> list[tuple[int, int]]:
        """Ranges of cells condensed together. The all-to-all holds every row of a wave's cells
        at once (``8 d + 16`` bytes per row); when the data do not fit in
        :data:`CELL_MEMORY_SHARE` of the workers' memory the cells go in waves that do, each
        wave reading the input again instead of leaving the rows to the workers to spill."""
        from ..cluster import memory_plan

        nbytes = float(n) * (8 * d + 16)  # the routed rows; each cell's groups leave at once
        plan, why, budget = memory_plan(nbytes, CELL_MEMORY_SHARE, client, local=LOCAL_CELL_BYTES, what="rows in flight")
        n_waves = 1 if plan == "persist" else min(n_cells, math.ceil(nbytes / max(budget, 1.0)))
        size = math.ceil(n_cells / n_waves)
        waves = [(lo, min(n_cells, lo + size)) for lo in range(0, n_cells, size)]
        if plan == "persist":
            self._memory = ("one wave", f"{why.replace(': persist (', ': all cells at once (')}")
        else:
            self._memory = (
                "waves",
                f"{why.split(': stream')[0]}: {len(waves)} waves of <= {size} cells "
                f"(over {CELL_MEMORY_SHARE:.0%} of the workers' memory, {budget / 2**20:,.0f} MiB; "
                "the input is read once per wave)",
            )
        return waves

    _parameter_constraints = {"rows_per_partition": [None, Interval(int, 1, None)]}

    def fit(self, X: Any, privacy: Any = None, *, client: Any = None, progress: bool = False) -> Condenser:
        """Condense ``X`` — a numpy / dask array (N, d) or a table (pandas / dask DataFrame,
        attributes by name); ``privacy`` as ``privacy_levels`` (default: the estimator's).

        Every random step (drawn privacy levels, the cells' sample, Segment's samples, and in
        the release the pseudo-data and the files' orders) draws from the release's stream key
        (:meth:`CondensedRelease.streams_for`): the key and the release's identity — method,
        public parameters and the content digest of the input (the records, and the levels when
        they are given), computed in the first pass over the data.

        Raises
        ------
        WeakParameterError
            Every level is 1 and the floor was not overridden (before any work when the level
            is one constant).
        """
        rpp = self.validate_params()["rows_per_partition"]
        self._resolve_key()
        self._source = source_of(X)
        rec = records_of(X, privacy, spec=self.privacy_levels, privacy_column=self.privacy_column, columns=self.columns)
        self._overrides = overrides_for(self.allow_weak, list(FLOORS))
        if rec.known_max_level() is not None:
            _check_level_floor(rec.known_max_level(), self._overrides)
        N, d = rec.n, int(rec.X.shape[1])
        self.feature_names_in_ = rec.names
        self._parameters = {
            **rec.parameters,
            "rows_per_partition": rpp,
            "standardize": bool(self.standardize),
            "publish_statistics": bool(self.publish_statistics),
        }
        offsets = np.concatenate([[0], np.cumsum(rec.X.chunks[0])])
        X = rec.X.map_blocks(_checked_block, dtype=np.float64)
        # the first pass: the input's digest, with the given levels and the moments to standardize
        lazy: list[Any] = [content_digest_lazy(*rec.digest_pieces()), rec.given]
        if self.standardize:
            lazy += [X.mean(axis=0), X.var(axis=0)]
        digest, given, *moments = compute(*lazy, progress=progress, client=client)
        self._input_digest = digest
        skey = CondensedRelease.streams_for(self.key_, "static", self._parameters, digest)
        p = rec.levels(given, skey)
        _check_level_floor(int(p.max()), self._overrides)
        self._records = rec.X  # the input (lazy), for the copy rule of the release
        mu = sd = None
        if self.standardize:
            mu, var = moments
            sd = np.where(var > 0, np.sqrt(var), 1.0)
            X = (X - mu) / sd
        n_cells = 1 if self.rows_per_partition is None else max(1, math.ceil(N / self.rows_per_partition))
        if n_cells == 1:
            self._memory = ("one cell", "one cell: the whole data in one task (rows_per_partition=None or N small)")
            cell = dask.delayed(lambda x, q: (x, q, np.arange(x.shape[0])))(X, p)
            results = compute(dask.delayed(_condense_cell, pure=True)(cell, skey, 0), progress=progress, client=client)
        else:
            rng = skey.generator(Tag.CONDENSE_CELLS, 0)
            idx = np.sort(rng.choice(N, size=min(N, SAMPLE_PER_CELL * n_cells), replace=False))
            (sample,) = compute(X[idx], progress=False, client=client)
            tree = kd_cells(sample, n_cells)
            done: dict[int, Any] = {}
            report = step_reporter("condensation cells") if progress else None

            def keep(i: int, result: tuple) -> None:
                done[lo + i] = result
                if report is not None:
                    report(len(done), tree.n_cells)

            # the levels travel to the workers once (chunk by chunk), not in every wave's graph
            p_parts = ship([p[a:b] for a, b in zip(offsets[:-1], offsets[1:])], client)
            for lo, hi in self._waves(tree.n_cells, N, d, client):
                # one output per cell, so that each cell's task fetches its own pieces only
                bucket = dask.delayed(bucket_block, pure=True, nout=hi - lo)
                buckets = [
                    bucket(xb, pb, int(o), tree, lo, hi) for xb, pb, o in zip(X.to_delayed().ravel(), p_parts, offsets[:-1])
                ]
                cells = [dask.delayed(gather_cell, pure=True)([b[c] for b in buckets], d) for c in range(hi - lo)]
                parts = [dask.delayed(_condense_cell, pure=True)(c, skey, lo + i) for i, c in enumerate(cells)]
                # each cell's groups leave the workers as soon as they are ready (not at the wave's end)
                compute_each(parts, keep, client=client)
            results = [done[c] for c in sorted(done)]
        tables = [r[0] for r in results]
        table = GroupTable.concat(tables) if tables else GroupTable.empty(d)
        first = np.concatenate([[0], np.cumsum([len(t) for t in tables])])
        labels = np.empty(N, dtype=np.int64)
        for (_t, rows, lab), f in zip(results, first[:-1]):
            labels[rows] = lab + f
        n_infeasible = int(np.sum(~table.feasible))
        table, new_id = repair_groups(table)
        labels = new_id[labels]
        if self.standardize:
            table = _unstandardize(table, mu, sd)
        self.groups_ = table
        self._labels = labels  # private membership: for checks only, never published
        self._privacy = p
        self.report_ = {
            "n_records": N,
            "n_groups": len(table),
            "n_cells": len(results),
            "memory_plan": self._memory[0],
            "memory": self._memory[1],
            "repaired_groups": n_infeasible,
            "ssq": float(table.total_ssq),
            "min_group_size": int(table.n.min()),
            "mean_group_size": float(table.n.mean()),
            "max_privacy_level": int(p.max()),
        }
        return self

    def release(self, *, client: Any = None, progress: bool = False) -> CondensedRelease:
        """The release of the fitted groups: pseudo-data (one row per record, drawn from the
        release's stream key; none equal to a record that is unique in the input, see
        docs/condensation.md#synthetic-data-rules), the group sizes and, with
        ``publish_statistics``, the statistics of the groups of more than d + 1 records. The
        release is of the data given to :meth:`fit`.

        Raises
        ------
        WeakParameterError
            A privacy floor fails and was not overridden (e.g. a group of a single record).
        """
        check_is_fitted(self, "groups_")
        return condensed_release(
            self.groups_,
            method="static",
            parameters=self._parameters,
            key=self.key_,
            input_digest=self._input_digest,
            originals=self._records,
            source=self._source,
            overrides=self._overrides,
            ledger=self.ledger,
            client=client,
            progress=progress,
        )

    def check(self, X: Any) -> Verdict:
        """:func:`check_condensation` of this fit against the original records ``X`` (raises
        :class:`PrivacyViolation` naming the failed check)."""
        X = X.compute() if isinstance(X, da.Array) else np.asarray(X)
        out = check_condensation(X, self._privacy, self._labels, self.groups_)
        if not out.ok:
            raise PrivacyViolation("condensation check failed: " + "; ".join(out.lines(failed_only=True)))
        return out

    def generate(self, *, key: KeyLike = None, rows_per_block: int = 100_000) -> da.Array:
        """Pseudo-data (docs/condensation.md#pseudo-data) as a dask array, one row per original record, in group order."""
        from .pseudo import generate_dask

        return generate_dask(self.groups_, key=key, rows_per_block=rows_per_block)


def _check_level_floor(max_level: int, overrides: tuple[str, ...]) -> None:
    """Raise :class:`WeakParameterError` when every level is 1 and that was not overridden."""
    refuse_weak([level_floor(int(max_level), overrides)])


def _unstandardize(table: GroupTable, mu: np.ndarray, sd: np.ndarray) -> GroupTable:
    mean = table.mean * sd + mu
    m2 = table.m2 * sd[None, :, None] * sd[None, None, :]
    return GroupTable(table.n, mean, m2, table.ps, table.req)
