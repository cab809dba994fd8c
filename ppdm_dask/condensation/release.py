"""Releases of condensed data (family ``condensation``): :class:`CondensedRelease`.

Layout of a condensed release at ``URL`` (format ``ppdm-condensed``, manifest version 2)::

    URL/part-NNNNN.parquet    pseudo-data: one float64 column per attribute (the input's names),
                              rows in a keyed random order
    URL/_groups.parquet       one row per group, in its own keyed order: n (records) and p_max
                              (the largest privacy level among the members) — what anyone needs
                              to check n >= p_max, and nothing that determines a record
    URL/_statistics.parquet   only with publish_statistics: n, Fs (d sums) and Sc (d*d sums,
                              row-major) of the groups of more than d + 1 records, in a third
                              keyed order (not linked to the rows of _groups.parquet)
    URL/_SUCCESS              the manifest (attribute names, counts, parameters, checksums)

Why not the statistics of every group (docs/condensation.md#what-is-published): a group of
two records gives both back from (n, Fs, Sc) — mean ± the principal deviation — and a group
of at most d + 1 records shows the exact subspace its members lie in (see :mod:`.attacks`).

What :meth:`CondensedRelease.verify` recounts from the release alone: every group has
``n >= p_max``; no group of a single record (a floor: its pseudo-record is the record); the
group sizes add up to the pseudo-data rows; the pseudo-data finite; published statistics only
of groups of more than d + 1 records, finite, ``Sc`` symmetric, ``Sc - Fs Fsᵀ/n`` positive
semi-definite, each of a published group size. Against the original (a numeric table, with its
privacy levels when the release names its privacy column or a constant level): ``Σ n = N``,
every level is covered (the records of level >= t fit in the groups of ``p_max >= t``), and no
pseudo-record copies an original record (:data:`COPY_CHECK`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple

import dask
import numpy as np
import pyarrow as pa

from ..data.folder import MANIFEST, open_fs, read_manifest, read_part
from ..errors import DataFormatError
from ..random import Key, Tag
from ..release import Check, Figures, TableRelease
from ..release.base import refuse_weak
from ..release.manifest import public_parameters
from .groups import GroupTable

__all__ = [
    "CondensedRelease",
    "condensed_release",
    "read_groups",
    "read_statistics",
    "groups_table",
    "statistics_table",
    "group_sizes",
    "statistics_of",
    "statistics_min_size",
    "FORMAT_NAME",
    "GROUPS_FILE",
    "STATISTICS_FILE",
    "LEVEL_FLOOR",
    "SINGLE_FLOOR",
    "SIZE_CHECK",
    "COPY_CHECK",
    "STATISTICS_CHECK",
    "FLOORS",
]

FORMAT_NAME = "ppdm-condensed"
GROUPS_FILE = "_groups.parquet"  # leading underscore: dataset readers skip it
STATISTICS_FILE = "_statistics.parquet"
#: the privacy floor: with every level 1 each record is its own group, published as is
LEVEL_FLOOR = "largest privacy level >= 2"
#: a group of one record publishes that record as its pseudo-record
SINGLE_FLOOR = "no group of a single record"
FLOORS = (LEVEL_FLOOR, SINGLE_FLOOR)
#: the guarantee check every group must pass
SIZE_CHECK = "group size >= largest privacy level"
#: the check of the published rows against the original
COPY_CHECK = "pseudo-data copies original records"
#: published statistics never determine their members
STATISTICS_CHECK = "statistics only of groups of more than d + 1 records"
#: redraws of a pseudo-record copying a unique original, at most
MAX_REDRAWS = 8
#: checks that need the original: their names in :meth:`original_only_checks` and in the checks
_RECORDS_CHECK = "records match the original"
_LEVELS_CHECK = "privacy levels covered"


def statistics_min_size(d: int) -> int:
    """The smallest group whose statistics may be published: ``d + 2`` records. A group of at
    most ``d + 1`` records spans an affine subspace of dimension ``n - 1 <= d`` that its
    scatter matrix gives away exactly (of rank ``n - 1``), and a group of two is determined."""
    return int(d) + 2


# ---------------------------------------------------------------------- published arrays
def group_sizes(groups: GroupTable) -> dict[str, np.ndarray]:
    """The published group arrays: ``n`` and ``p_max`` (the members' largest level)."""
    return {"n": groups.n.astype(np.int64).copy(), "p_max": groups.req.astype(np.int64).copy()}


def statistics_of(groups: GroupTable) -> dict[str, np.ndarray]:
    """The publishable statistics (``n``, ``Fs``, ``Sc``) of the groups of at least
    :func:`statistics_min_size` records, in group order."""
    keep = groups.n >= statistics_min_size(groups.d)
    sel = groups.take(keep)
    return {"n": sel.n.astype(np.int64), "Fs": np.asarray(sel.Fs, np.float64), "Sc": np.asarray(sel.Sc, np.float64)}


def groups_table(pub: Mapping[str, np.ndarray], order: np.ndarray | None = None) -> pa.Table:
    """The ``_groups.parquet`` table (``n``, ``p_max``), rows in ``order``."""
    n = np.asarray(pub["n"], np.int64)
    idx = np.arange(n.shape[0]) if order is None else np.asarray(order)
    return pa.table({"n": pa.array(n[idx]), "p_max": pa.array(np.asarray(pub["p_max"], np.int64)[idx])})


def statistics_table(stats: Mapping[str, np.ndarray], order: np.ndarray | None = None) -> pa.Table:
    """The ``_statistics.parquet`` table (``n``, ``Fs``, ``Sc``), rows in ``order``."""
    n = np.asarray(stats["n"], np.int64)
    G = n.shape[0]
    d = np.asarray(stats["Fs"]).reshape(G, -1).shape[1] if G else int(np.asarray(stats["Fs"]).shape[-1])
    idx = np.arange(G) if order is None else np.asarray(order)
    Fs = np.asarray(stats["Fs"], np.float64).reshape(G, d)[idx]
    Sc = np.asarray(stats["Sc"], np.float64).reshape(G, d * d)[idx]
    return pa.table(
        {
            "n": pa.array(n[idx]),
            "Fs": pa.FixedSizeListArray.from_arrays(pa.array(Fs.reshape(-1), pa.float64()), d),
            "Sc": pa.FixedSizeListArray.from_arrays(pa.array(Sc.reshape(-1), pa.float64()), d * d),
        }
    )


def _flat(t: pa.Table, name: str, width: int, file: str) -> np.ndarray:
    G = t.num_rows
    col = t.column(name).combine_chunks()
    values = np.asarray(col.flatten() if G else np.zeros(0), dtype=np.float64)
    if values.size != G * width:
        raise DataFormatError(f"{file}: column {name} does not hold {width} values per group")
    return values.reshape(G, width)


def _read_table(
    fs: Any, folder: str, manifest: Mapping[str, Any], name: str, url: str, verify: bool, rows: Any = None
) -> pa.Table:
    entry = next((e for e in manifest.get("files", []) if e.get("file") == name), {"file": name, "rows": rows})
    return read_part(fs, folder, entry, verify=verify, url=url)


def _read_published(
    fs: Any, folder: str, manifest: Mapping[str, Any], url: str, verify: bool
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None, str | None]:
    """``(n and p_max of every group, the published statistics or None, the file holding them)``.

    Releases written before statistics were withheld hold ``n, Ps, Fs, Sc, p_max`` of every group
    in ``_groups.parquet``: read as statistics of every group (and their check then names the
    groups too small to publish)."""
    d = len(manifest["columns"])
    name = manifest.get("groups", GROUPS_FILE)
    t = _read_table(fs, folder, manifest, name, url, verify, manifest.get("n_groups"))
    G = t.num_rows
    missing = [c for c in ("n", "p_max") if c not in t.column_names]
    if missing:
        raise DataFormatError(f"{url}: {name} has no column {missing[0]} (not a condensed release of this version)")
    pub = {"n": t.column("n").to_numpy().astype(np.int64), "p_max": t.column("p_max").to_numpy().astype(np.int64)}
    if "Fs" in t.column_names:  # the earlier layout
        return pub, {"n": pub["n"], "Fs": _flat(t, "Fs", d, name), "Sc": _flat(t, "Sc", d * d, name).reshape(G, d, d)}, name
    sname = manifest.get("statistics")
    if not sname:
        return pub, None, None
    s = _read_table(fs, folder, manifest, sname, url, verify)
    S = s.num_rows
    return (
        pub,
        {
            "n": s.column("n").to_numpy().astype(np.int64),
            "Fs": _flat(s, "Fs", d, sname),
            "Sc": _flat(s, "Sc", d * d, sname).reshape(S, d, d),
        },
        sname,
    )


def _open_manifest(url: str, storage_options: Mapping[str, Any] | None) -> tuple[Any, str, dict[str, Any]]:
    fs, path = open_fs(url, storage_options)
    return fs, path, read_manifest(fs, posixpath.join(path, MANIFEST), url, FORMAT_NAME, 2)


def read_groups(
    url: str, *, storage_options: Mapping[str, Any] | None = None, verify: bool = False
) -> tuple[dict[str, np.ndarray], list[str]]:
    """The published group sizes of a condensed release — ``{"n", "p_max"}``, one entry per
    group in the file's keyed order — and its attribute names.

    Parameters
    ----------
    verify : bool
        Check the file's SHA-256 against the manifest.
    """
    fs, path, manifest = _open_manifest(url, storage_options)
    pub, _, _ = _read_published(fs, path, manifest, url, verify)
    return pub, list(manifest["columns"])


def read_statistics(url: str, *, storage_options: Mapping[str, Any] | None = None, verify: bool = False) -> GroupTable | None:
    """The group statistics a condensed release publishes (``publish_statistics``, or every
    group in the layout written before statistics were withheld) as a :class:`GroupTable`
    (``req`` and ``ps`` unknown: 1 and n), or ``None`` when it publishes none."""
    fs, path, manifest = _open_manifest(url, storage_options)
    _, stats, _ = _read_published(fs, path, manifest, url, verify)
    if stats is None:
        return None
    return GroupTable.from_published(stats["n"], stats["Fs"], stats["Sc"], stats["n"].astype(np.float64))


# ---------------------------------------------------------------------- checks
def _frame_stats(df: Any) -> tuple[int, int]:
    """Kernel: rows and non-finite values of one pseudo-data partition."""
    values = df.to_numpy(dtype=np.float64, na_value=np.nan) if len(df.columns) else np.zeros((len(df), 0))
    return int(len(df)), int(np.count_nonzero(~np.isfinite(values)))


def level_floor(max_level: int, overrides: tuple[str, ...] = ()) -> Check:
    """The privacy floor of a condensation whose largest privacy level is ``max_level``."""
    ok = int(max_level) >= 2
    return Check(
        LEVEL_FLOOR,
        ok,
        int(max_level),
        2,
        detail="with every level 1 each record is published as is",
        overridden=(not ok and LEVEL_FLOOR in overrides),
    )


def single_floor(n: np.ndarray, overrides: tuple[str, ...] = ()) -> Check:
    """The floor on groups of one record (their pseudo-record is the record itself)."""
    ones = int(np.count_nonzero(np.asarray(n) == 1))
    return Check(
        SINGLE_FLOOR,
        ones == 0,
        ones,
        0,
        where=GROUPS_FILE if ones else None,
        detail="groups of one record (privacy level 1 alone): their pseudo-record is the record itself",
        overridden=bool(ones) and SINGLE_FLOOR in overrides,
    )


def statistics_checks(stats: Mapping[str, np.ndarray], n_groups: np.ndarray, d: int, where: str | None) -> list[Check]:
    """The checks of the published statistics alone (and against the published group sizes)."""
    n, Fs, Sc = (np.asarray(stats[k]) for k in ("n", "Fs", "Sc"))
    G = n.shape[0]
    Sc = Sc.reshape(G, d, d)
    small = np.flatnonzero(n < statistics_min_size(d))
    nf = np.maximum(n, 1).astype(np.float64)
    finite = np.isfinite(Fs).all(axis=1) & np.isfinite(Sc).reshape(G, -1).all(axis=1)
    ok_sym = np.ones(G, bool)
    ok_psd = np.ones(G, bool)
    if G and finite.all():
        scale = np.maximum(1.0, np.abs(Sc).reshape(G, -1).max(axis=1))
        ok_sym = np.abs(Sc - Sc.transpose(0, 2, 1)).reshape(G, -1).max(axis=1) <= 1e-9 * scale
        scatter = Sc - Fs[:, :, None] * Fs[:, None, :] / nf[:, None, None]
        lam = np.linalg.eigvalsh(0.5 * (scatter + scatter.transpose(0, 2, 1)))
        ok_psd = lam[:, 0] >= -1e-8 * scale * max(1, d)
    bad = np.flatnonzero(~(finite & ok_sym & ok_psd))
    # every statistics row is a published group: per size, no more rows than groups of that size
    sizes, have = np.unique(n, return_counts=True)
    groups_of = np.array([np.count_nonzero(np.asarray(n_groups) == s) for s in sizes], np.int64)
    extra = int(np.maximum(have - groups_of, 0).sum())

    def at(idx: np.ndarray) -> str | None:
        return f"{where or 'statistics'} row {int(idx[0])}" if idx.size else where

    return [
        Check(
            STATISTICS_CHECK,
            small.size == 0,
            int(small.size),
            0,
            where=at(small),
            detail=f"groups of at most d + 1 = {d + 1} records whose statistics are published (they give their members "
            "away: a group of two is mean ± its principal deviation)",
        ),
        Check(
            "group statistics consistent",
            bad.size == 0,
            int(bad.size),
            0,
            where=at(bad),
            detail="groups whose Fs / Sc are not finite, Sc not symmetric or Sc - Fs Fsᵀ/n not positive semi-definite",
        ),
        Check(
            "statistics of published groups",
            extra == 0,
            extra,
            0,
            where=where if extra else None,
            detail="statistics rows beyond the groups of their size in " + GROUPS_FILE,
        ),
    ]


class _Opened(NamedTuple):
    """What :meth:`CondensedRelease._open_data` hands to :meth:`CondensedRelease._reopen`."""

    frame: Any
    published: dict[str, np.ndarray]
    statistics: dict[str, np.ndarray] | None
    statistics_file: str | None


class CondensedRelease(TableRelease):
    """Pseudo-data, the published group sizes and, on request, statistics of large groups.

    ``data`` is the pseudo-data (a dask DataFrame, one float64 column per attribute, in group
    order in memory); :attr:`published` the group sizes ``{"n", "p_max"}``; :attr:`statistics`
    the published statistics ``{"n", "Fs", "Sc"}`` of the groups of more than d + 1 records
    (``publish_statistics``) or ``None``. A release in memory also holds :attr:`groups`, every
    group's statistics (owner side, never written). Build it with :meth:`Condenser.release
    <ppdm_dask.condensation.Condenser.release>` or :meth:`StreamingCondenser.release
    <ppdm_dask.condensation.StreamingCondenser.release>`.

    Parameters
    ----------
    data : dask.dataframe.DataFrame
    groups : GroupTable, optional
        Every group (``req``: the members' largest level); the published arrays derive from it.
    published, statistics : mapping, optional
        The published arrays, when there is no ``groups`` (a release read back).
    **kwargs
        As :class:`~ppdm_dask.release.Release`.
    """

    family: ClassVar[str] = "condensation"
    data_format: ClassVar[str] = FORMAT_NAME
    csv_output: ClassVar[bool] = False  # the group sizes are a second file

    def __init__(
        self,
        data: Any,
        *,
        groups: GroupTable | None = None,
        published: Mapping[str, np.ndarray] | None = None,
        statistics: Mapping[str, np.ndarray] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(data, **kwargs)
        self._groups = groups
        if groups is not None:
            published = group_sizes(groups)
            statistics = statistics_of(groups) if self.parameters.get("publish_statistics") else None
        self.published = {k: np.asarray(v) for k, v in (published or {}).items()}
        self.statistics = {k: np.asarray(v) for k, v in statistics.items()} if statistics is not None else None
        self._statistics_file = STATISTICS_FILE

    @property
    def groups(self) -> GroupTable | None:
        """Every group's statistics (``req`` = the members' largest level): owner side, only in
        the release in memory (``None`` for a release read back)."""
        return self._groups

    @property
    def columns(self) -> list[str]:
        """The attribute names."""
        return list(self.parameters.get("columns", []))

    @property
    def d(self) -> int:
        return len(self.columns)

    # ------------------------------------------------------------------ writing hooks
    def _order(self, purpose: str, size: int) -> np.ndarray:
        """A keyed permutation of ``size`` rows for ``purpose``: from the release's stream key,
        independent of the row order and of the other files' orders."""
        key = self.stream_key
        if key is None:  # only a release read back has no key, and write() refuses those first
            raise RuntimeError("a condensed release without a key cannot order its files")
        return key.derive(purpose).generator(Tag.ROW_ORDER, 0).permutation(size)

    def _group_order(self) -> np.ndarray:
        """The keyed random order of the rows of ``_groups.parquet``."""
        return self._order("condensed-group-order", len(self.published["n"]))

    def _extra_tables(self) -> dict[str, pa.Table]:
        out = {GROUPS_FILE: groups_table(self.published, self._group_order())}
        if self.statistics is not None:
            out[STATISTICS_FILE] = statistics_table(
                self.statistics, self._order("condensed-statistics-order", len(self.statistics["n"]))
            )
        return out

    def _layout(self, partitions: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "columns": self.columns,
            "n_records": int(sum(p["rows"] for p in partitions)),
            "n_groups": int(len(self.published["n"])),
            "groups": GROUPS_FILE,
            "statistics": STATISTICS_FILE if self.statistics is not None else None,
        }

    # ------------------------------------------------------------------ reading hooks
    @classmethod
    def _open_data(cls, fs: Any, path: str, manifest: Mapping[str, Any], url: str, verify: bool) -> Any:
        from ..data.tables import table_from_manifest

        return _Opened(
            table_from_manifest(fs, path, manifest, url, verify=verify), *_read_published(fs, path, manifest, url, verify)
        )

    @classmethod
    def _reopen(cls, data: Any, manifest: Mapping[str, Any]) -> CondensedRelease:
        opened = data if isinstance(data, _Opened) else _Opened(data, {}, None, None)
        rel = super()._reopen(opened.frame, manifest)
        rel._groups = None
        rel.published = opened.published
        rel.statistics = opened.statistics
        rel._statistics_file = opened.statistics_file or STATISTICS_FILE
        return rel  # type: ignore[return-value]

    def _adopt(self, fitted: Any) -> CondensedRelease:
        """The owner-side figures (input counts, SSQ, redrawn copies) and every group's
        statistics of the release in memory that was written."""
        if isinstance(fitted, CondensedRelease) and fitted is not self:
            self.figures = {**self.figures, **{k: dict(v) for k, v in fitted.figures.items()}}
            self._groups = fitted._groups
        return self

    # ------------------------------------------------------------------ report
    def public_privacy(self) -> dict[str, Any]:
        """Figures anyone recounts from ``_groups.parquet`` (and ``_statistics.parquet``)."""
        n, p_max = np.asarray(self.published.get("n", [])), np.asarray(self.published.get("p_max", []))
        out: dict[str, Any] = {"groups": int(n.size)}
        if n.size:
            out.update(
                smallest_group=int(n.min()),
                largest_privacy_level=int(p_max.max()),
                min_size_margin=int((n - p_max).min()),
                groups_of_one_record=int(np.count_nonzero(n == 1)),
            )
        if self.statistics is not None:
            rows = int(len(self.statistics["n"]))
            out.update(
                statistics_published=rows, statistics_withheld=int(n.size) - rows, statistics_min_size=statistics_min_size(self.d)
            )
        return out

    def report_figures(self, original: Any = None, **compute_kwargs: Any) -> Figures:
        """Risk figures of the published groups (size against the largest privacy level, the
        statistics withheld) and, with ``original`` (a table, an array, ``(X, levels)`` or a
        URL), how close the pseudo-records come to the originals, the membership-inference
        advantage and the utility figures (covariance compatibility, 1-NN accuracy); see
        :mod:`.report_figures`. A release of an input with earlier releases in the ledger also
        gets the copies and distances of their union (:mod:`.composition`). The summary's
        guarantee, what an attacker can still learn and the threat model's attacks come from
        :mod:`.threat`."""
        from .composition import union_figures
        from .report_figures import condensed_report_figures
        from .threat import with_summary

        if isinstance(original, str):
            original = type(self).read_original(original)
        fig = condensed_report_figures(self, original, **compute_kwargs)
        fig += union_figures(self, original, **compute_kwargs)
        return with_summary(self, fig, original, **compute_kwargs)

    # ------------------------------------------------------------------ ledger
    def ledger_figures(self) -> dict[str, Any]:
        """The pseudo-records released and the public figures of the groups (:mod:`.composition`)."""
        from .composition import ledger_figures

        return ledger_figures(self)

    def compose(self, earlier: Any, ledger: Any, people: Any = None) -> Any:
        """The number of releases of the input and which earlier ones are still readable; the
        figures of their union are the report's (:func:`.composition.union_figures`)."""
        from .composition import compose

        return compose(self, earlier, ledger, people)

    # ------------------------------------------------------------------ checks
    def floor_checks(self) -> list[Check]:
        p_max = self.published.get("p_max")
        top = int(p_max.max()) if p_max is not None and p_max.size else 0
        return [level_floor(top, self.overrides), single_floor(self.published.get("n", np.zeros(0)), self.overrides)]

    def original_only_checks(self) -> list[tuple[str, str]]:
        return [
            (_RECORDS_CHECK, "the original's number of records"),
            (_LEVELS_CHECK, "the original's privacy levels"),
            (COPY_CHECK, "the original records, to compare the pseudo-records with"),
        ]

    def guarantee_checks(self, original: Any = None, **compute_kwargs: Any) -> list[Check]:
        from ..progress import compute

        pub = self.published
        where = GROUPS_FILE if self.manifest is not None else None
        n, p_max = pub["n"], pub["p_max"]
        small = np.flatnonzero(n < p_max)
        first = f" (first: row {int(small[0])}, n={int(n[small[0]])} < p_max={int(p_max[small[0]])})" if small.size else ""
        checks = [
            Check(
                SIZE_CHECK,
                small.size == 0,
                int(small.size),
                0,
                where=where,
                detail="groups with fewer records than their largest privacy level" + first,
                overridden=bool(small.size) and SIZE_CHECK in self.overrides,
            )
        ]
        if self.statistics is not None:
            checks += statistics_checks(
                self.statistics,
                n,
                self.d or self.statistics["Fs"].shape[-1],
                self._statistics_file if self.manifest is not None else None,
            )
        tasks = [dask.delayed(_frame_stats, pure=True)(p) for p in self.data.to_delayed()]
        (stats,) = compute(tasks, **compute_kwargs) if tasks else ([],)
        rows = int(sum(s[0] for s in stats))
        nonfinite = int(sum(s[1] for s in stats))
        total = int(n.sum())
        checks.append(
            Check(
                "group sizes add up to the pseudo-data rows",
                total == rows,
                total,
                rows,
                detail="sum of n against the rows of the part files",
            )
        )
        checks.append(Check("pseudo-data finite", nonfinite == 0, nonfinite, 0))
        if self.manifest is not None:
            man = self.manifest
            ok = int(man.get("n_groups", -1)) == len(n) and int(man.get("n_records", -1)) == rows
            checks.append(
                Check(
                    "counts match the manifest",
                    ok,
                    f"{len(n)} groups, {rows} rows",
                    f"{man.get('n_groups')} groups, {man.get('n_records')} rows",
                )
            )
        if original is not None:
            checks += self._original_checks(original, **compute_kwargs)
        return checks

    def _original_arrays(self, original: Any) -> tuple[Any, Any]:
        """``(X, levels or None)`` of the original: a table (columns by name), an array, or a
        tuple ``(X, levels)``; a constant level gives levels too."""
        import dask.array as da

        from .io import table_to_array

        levels = None
        if isinstance(original, tuple) and len(original) == 2:
            X, levels = original
        elif hasattr(original, "columns") and hasattr(original, "dtypes"):  # pandas or dask DataFrame
            import dask.dataframe as dd

            df = original if isinstance(original, dd.DataFrame) else _from_pandas(original)
            X, _ = table_to_array(df, columns=self.columns)
            col = self.parameters.get("privacy_column")
            if col is not None:
                if col not in df.columns:
                    raise DataFormatError(f"the original has no privacy column {col!r}; its columns are {list(df.columns)}")
                levels = table_to_array(df, columns=[col])[0][:, 0]
        else:
            X = original
        X = X if isinstance(X, da.Array) else da.from_array(np.asarray(X, dtype=np.float64))
        if levels is None and self.parameters.get("privacy_level") is not None:
            levels = da.full(X.shape[0], int(self.parameters["privacy_level"]), dtype=np.int64, chunks=X.chunks[0])
        return X.astype(np.float64), levels

    def digest_inputs(self, original: Any) -> tuple[Any, ...]:
        """``(X, given levels or None)`` of the original as the condenser saw it: the levels are
        input when they came from a column or one per record, not when they were one constant
        (a parameter) or drawn from a range (drawn from the release's own stream)."""
        X, levels = self._original_arrays(original)
        given = "privacy_column" in self.parameters or "privacy_levels" in self.parameters
        return X, (levels if given else None)

    def _original_checks(self, original: Any, **ckw: Any) -> list[Check]:
        from ..progress import compute

        X, levels = self._original_arrays(original)
        pub = self.published
        d = self.d
        if int(X.shape[1]) != d:
            return [Check("attributes match the original", False, int(X.shape[1]), d)]
        N = int(X.shape[0])
        checks = [Check(_RECORDS_CHECK, int(pub["n"].sum()) == N, int(pub["n"].sum()), N, detail="sum of n")]
        if levels is not None:
            (p,) = compute(levels, **ckw)
            p = np.asarray(p, dtype=np.int64)
            # a record of level >= t sits in a group whose p_max >= t: those groups hold at least as many records
            levels_u = np.unique(p)
            need = np.array([np.count_nonzero(p >= t) for t in levels_u])
            have = np.array([int(pub["n"][pub["p_max"] >= t].sum()) for t in levels_u])
            short = np.flatnonzero(have < need)
            checks.append(
                Check(
                    _LEVELS_CHECK,
                    short.size == 0,
                    int(short.size),
                    0,
                    where=f"level {int(levels_u[short[0]])}" if short.size else None,
                    detail="levels t whose records outnumber the records of the groups with p_max >= t",
                )
            )
        else:
            checks.append(
                Check(
                    _LEVELS_CHECK,
                    True,
                    status="unchecked",
                    detail="not checked: the levels were "
                    + (
                        "drawn from the release's stream key (only the key holder can draw them again)"
                        if "privacy_range" in self.parameters
                        else "given per record: give the original as (records, levels)"
                    ),
                )
            )
        checks.append(self.copy_check(X, **ckw))
        return checks

    def copy_check(self, X: Any, **ckw: Any) -> Check:
        """:data:`COPY_CHECK`: the pseudo-records equal to an original record that no other
        original shares — exactly, on every row (:func:`.copies.exact_copies`), or within float
        tolerance, on the rows measured by :func:`.closest.closeness` (every row up to its
        limit). Bound 0; a release that overrides :data:`SINGLE_FLOOR` may have one per group of
        one record (that record)."""
        from .closest import closeness
        from .copies import exact_copies

        X = X.rechunk({1: -1}) if len(X.chunks[1]) > 1 else X
        parts = list(self.data.to_delayed())
        exact = exact_copies(parts, list(X.to_delayed().ravel()), **ckw)
        near = closeness(parts, int(np.asarray(self.published["n"]).sum()), X, **ckw)
        close_only = int(np.count_nonzero(near.unique_copies & (near.dcr > 0)))
        figure = exact.n_unique + close_only
        allowed = int(np.count_nonzero(np.asarray(self.published["n"]) == 1)) if SINGLE_FLOOR in self.overrides else 0
        rows = int(np.asarray(self.published["n"]).sum())
        return Check(
            COPY_CHECK,
            figure == 0,
            figure,
            0,
            overridden=bool(figure) and figure <= allowed,
            detail=f"pseudo-records equal to an original record that no other original shares: {exact.n_unique} "
            f"exactly (all {rows:,} rows), {close_only} more within float tolerance ({near.measured:,} rows "
            f"measured); {int(np.count_nonzero(~exact.unique))} equal to a record shared by several originals"
            + (f"; {allowed} allowed: groups of one record ({SINGLE_FLOOR!r} overridden)" if allowed else ""),
        )


def _zero_spread(groups: GroupTable) -> np.ndarray:
    """Groups whose pseudo-points are all their centroid (no spread: every member the same)."""
    return np.einsum("gii->g", groups.m2) <= 0.0


def redraw_copies(
    groups: GroupTable, key: Key, originals: Any, *, rows_per_block: int = 100_000, **compute_kwargs: Any
) -> tuple[dict[int, int], dict[str, int]]:
    """The redraws that leave no pseudo-record equal to a unique original record
    (docs/condensation.md#synthetic-data-rules).

    Generates the pseudo-data with ``key``, finds the rows copying a unique record of
    ``originals`` (a dask array, or a list of blocks or :class:`.copies.RowKeys`;
    :func:`.copies.exact_copies`, every row), and draws those rows
    again (attempt 1, 2, ... up to :data:`MAX_REDRAWS`) until none is left. A row of a group
    without spread (a group of one record, or of identical records) is its centroid whatever
    the draw: it stays, counted.

    Returns
    -------
    (redraw, counts)
        ``{global row: attempt}`` for :func:`~.pseudo.generate_dask`, and ``copies_found``,
        ``pseudo_records_redrawn``, ``unique_copies_left``.
    """
    from .copies import exact_copies
    from .pseudo import generate_dask

    if isinstance(originals, (list, tuple)):  # blocks (or the row keys of a stream)
        orig_blocks = list(originals)
    else:
        X = originals.rechunk({1: -1}) if len(originals.chunks[1]) > 1 else originals
        orig_blocks = list(X.to_delayed().ravel())
    first = np.concatenate([[0], np.cumsum(groups.n)])
    fixed = _zero_spread(groups)
    redraw: dict[int, int] = {}
    found = left = 0
    for attempt in range(1, MAX_REDRAWS + 2):
        pseudo = generate_dask(groups, key=key, rows_per_block=rows_per_block, redraw=redraw)
        offsets = np.concatenate([[0], np.cumsum(pseudo.chunks[0])]).astype(np.int64)
        m = exact_copies(list(pseudo.to_delayed().ravel()), orig_blocks, **compute_kwargs)
        rows = offsets[m.pseudo[m.unique, 0]] + m.pseudo[m.unique, 1] if m.n_unique else np.zeros(0, np.int64)
        if attempt == 1:
            found = int(rows.size)
        movable = [int(r) for r in rows if not fixed[int(np.searchsorted(first, r, side="right")) - 1]]
        if not movable or attempt > MAX_REDRAWS:
            left = int(rows.size)
            break
        for r in movable:
            redraw[r] = attempt
    return redraw, {"copies_found": found, "pseudo_records_redrawn": len(redraw), "unique_copies_left": left}


def condensed_release(
    groups: GroupTable,
    *,
    method: str,
    parameters: Mapping[str, Any],
    key: Key,
    input_digest: bytes | None = None,
    originals: Any = None,
    source: Any = None,
    overrides: tuple[str, ...] = (),
    figures: Mapping[str, Any] | None = None,
    rows_per_block: int = 100_000,
    ledger: Any = "default",
    **compute_kwargs: Any,
) -> CondensedRelease:
    """The release of ``groups``: pseudo-data drawn from the release's stream key (lazy, group
    order), the group sizes and, with ``parameters["publish_statistics"]``, the statistics of
    the large groups; ``parameters["columns"]`` names the attributes.

    ``key`` is the owner's key and ``input_digest`` the content digest of the input: the
    pseudo-data draw from ``CondensedRelease.streams_for(key, method, parameters,
    input_digest)``. With ``originals`` (the input records, a dask array) no pseudo-record
    equals a unique original record (:func:`redraw_copies`, counted in the figures). The
    privacy floors are checked first (:class:`~ppdm_dask.errors.WeakParameterError`).
    ``ledger`` as :class:`~ppdm_dask.release.Release`.
    """
    import dask.dataframe as dd

    from .pseudo import generate_dask

    names = list(parameters["columns"])
    N, G = int(groups.n.sum()), len(groups)
    base = {
        "records": {"input": N, "pseudo_records": N, "groups": G},
        "privacy": {
            "max_privacy_level": int(groups.req.max()) if G else 0,
            "min_group_size": int(groups.n.min()) if G else 0,
            "mean_group_size": float(groups.n.mean()) if G else 0.0,
        },
        "utility": {"ssq": float(groups.total_ssq)},
    }
    # the floors and the stream key need no release built: the release is built last, whole
    published = group_sizes(groups)
    top = int(published["p_max"].max()) if published["p_max"].size else 0
    refuse_weak([level_floor(top, overrides), single_floor(published["n"], overrides)])
    if public_parameters(parameters).get("publish_statistics"):
        shown = int(np.count_nonzero(groups.n >= statistics_min_size(groups.d)))  # the groups statistics_of keeps
        base["privacy"].update(statistics_published=shown, statistics_withheld=G - shown)
    skey = CondensedRelease.streams_for(key, method, parameters, input_digest)
    redraw: dict[int, int] = {}
    if originals is not None and G:
        compute_kwargs.setdefault("progress", False)
        redraw, counts = redraw_copies(groups, skey, originals, rows_per_block=rows_per_block, **compute_kwargs)
        base["privacy"].update(counts)
    for section, values in (figures or {}).items():
        base.setdefault(section, {}).update(values)
    pseudo = generate_dask(groups, key=skey, rows_per_block=rows_per_block, redraw=redraw)
    return CondensedRelease(
        dd.from_dask_array(pseudo, columns=names),
        groups=groups,
        method=method,
        parameters=parameters,
        figures=base,
        key=key,
        source=source,
        input_info={"rows": N},
        overrides=overrides,
        input_digest=input_digest,
        partition_rows=[int(c) for c in pseudo.chunks[0]],
        ledger=ledger,
        # whose the input's records are: each its own person (the ledger finds earlier releases
        # of any input that hold the same records, docs/ledger.md#the-person)
        people=_people_of(originals),
    )


def _people_of(originals: Any) -> Any:
    """The persons of the input records (each its own), None when the release does not hold them
    as an array (a stream kept as row fingerprints only: composed by its input, not by person)."""
    import dask.array as da

    from ..data.persons import array_people

    if isinstance(originals, (np.ndarray, da.Array)) and originals.ndim in (1, 2):
        return array_people(originals)
    return None


def _from_pandas(df: Any) -> Any:
    """A pandas frame as one dask partition (arrow slices copied: :func:`ppdm_dask.data.tables.from_pandas`)."""
    from ..data.tables import from_pandas

    return from_pandas(df, npartitions=1)
