"""Releases of condensed data (family ``condensation``): :class:`CondensedRelease`.

Layout of a condensed release at ``URL`` (format ``ppdm-condensed``, manifest version 2)::

    URL/part-NNNNN.parquet   pseudo-data: one float64 column per attribute (the input's names),
                             rows in a keyed random order
    URL/_groups.parquet      the published group statistics, one row per group in a keyed random
                             order: n, Ps (sum of privacy levels), Fs (d sums), Sc (d*d sums,
                             row-major) and p_max, the largest privacy level among the members —
                             public, so that anyone can check n >= p_max
    URL/_SUCCESS             the manifest (attribute names, counts, parameters, checksums)

What :meth:`CondensedRelease.verify` recounts from the release alone: every group has
``n >= p_max`` and ``n <= Ps <= n * p_max``; the group sizes add up to the pseudo-data rows; the
statistics are finite, Sc symmetric and ``Sc - Fs Fsᵀ/n`` positive semi-definite; the
pseudo-data finite. Against the original (a numeric table, with the privacy levels when the
release names its privacy column or a constant level): ``Σ n = N``, ``Σ Fs`` and ``Σ Sc`` equal
the column sums and ``Σ x xᵀ`` of the original (relative tolerance 1e-6), ``Σ Ps`` equals the sum
of the levels and every level is covered (the records of level >= t fit in the groups of
``p_max >= t``).
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
from .groups import GroupTable

__all__ = ["CondensedRelease", "condensed_release", "read_groups", "groups_table", "published_of", "FORMAT_NAME", "GROUPS_FILE",
           "LEVEL_FLOOR", "SIZE_CHECK"]

FORMAT_NAME = "ppdm-condensed"
GROUPS_FILE = "_groups.parquet"  # leading underscore: dataset readers skip it
#: the privacy floor: with every level 1 each record is its own group, published as is
LEVEL_FLOOR = "largest privacy level >= 2"
#: the guarantee check every group must pass
SIZE_CHECK = "group size >= largest privacy level"
_RTOL = 1e-6


# ---------------------------------------------------------------------- group statistics
def published_of(groups: GroupTable) -> dict[str, np.ndarray]:
    """The published arrays of ``groups``: n, Ps, Fs, Sc and p_max (the members' largest level)."""
    pub = groups.published()
    return {"n": pub["n"].astype(np.int64), "Ps": pub["Ps"].astype(np.float64), "Fs": np.asarray(pub["Fs"], np.float64),
            "Sc": np.asarray(pub["Sc"], np.float64), "p_max": groups.req.astype(np.int64)}


def groups_table(pub: Mapping[str, np.ndarray], order: np.ndarray | None = None) -> pa.Table:
    """The ``_groups.parquet`` table of the published arrays, rows in ``order``."""
    n = np.asarray(pub["n"])
    G, d = n.shape[0], np.asarray(pub["Fs"]).reshape(n.shape[0], -1).shape[1]
    idx = np.arange(G) if order is None else np.asarray(order)
    Fs = np.asarray(pub["Fs"], np.float64).reshape(G, d)[idx]
    Sc = np.asarray(pub["Sc"], np.float64).reshape(G, d * d)[idx]
    return pa.table({
        "n": pa.array(n[idx].astype(np.int64)),
        "Ps": pa.array(np.asarray(pub["Ps"], np.float64)[idx]),
        "Fs": pa.FixedSizeListArray.from_arrays(pa.array(Fs.reshape(-1)), d),
        "Sc": pa.FixedSizeListArray.from_arrays(pa.array(Sc.reshape(-1)), d * d),
        "p_max": pa.array(np.asarray(pub["p_max"], np.int64)[idx]),
    })


def _table_arrays(t: pa.Table, d: int) -> dict[str, np.ndarray]:
    G = t.num_rows

    def flat(name: str, width: int) -> np.ndarray:
        col = t.column(name).combine_chunks()
        values = np.asarray(col.flatten() if G else np.zeros(0), dtype=np.float64)
        if values.size != G * width:
            raise DataFormatError(f"{GROUPS_FILE}: column {name} does not hold {width} values per group")
        return values.reshape(G, width)

    p_max = t.column("p_max").to_numpy() if "p_max" in t.column_names else np.ones(G, np.int64)  # version 1: not published
    return {"n": t.column("n").to_numpy().astype(np.int64), "Ps": t.column("Ps").to_numpy().astype(np.float64),
            "Fs": flat("Fs", d), "Sc": flat("Sc", d * d).reshape(G, d, d), "p_max": np.asarray(p_max, np.int64)}


def _group_table(pub: Mapping[str, np.ndarray]) -> GroupTable:
    table = GroupTable.from_published(pub["n"], pub["Fs"], pub["Sc"], pub["Ps"])
    return GroupTable(table.n, table.mean, table.m2, table.ps, np.maximum(pub["p_max"], 1))


def _read_groups_file(fs: Any, folder: str, manifest: Mapping[str, Any], url: str, verify: bool) -> dict[str, np.ndarray]:
    name = manifest.get("groups", GROUPS_FILE)
    # version 2 lists the file with its rows and checksum; version 1 only counted the groups
    entry = next((e for e in manifest.get("files", []) if e.get("file") == name), {"file": name, "rows": manifest.get("n_groups")})
    table = read_part(fs, folder, entry, verify=verify, url=url)
    return _table_arrays(table, len(manifest["columns"]))


def read_groups(url: str, *, storage_options: Mapping[str, Any] | None = None,
                verify: bool = False) -> tuple[GroupTable, list[str]]:
    """The published group statistics of a condensed release (or of a folder written by an
    older version) and its attribute names; the table's ``req`` holds the published ``p_max``.

    Parameters
    ----------
    verify : bool
        Check the file's SHA-256 against the manifest.
    """
    fs, path = open_fs(url, storage_options)
    manifest = read_manifest(fs, posixpath.join(path, MANIFEST), url, FORMAT_NAME, 2)
    return _group_table(_read_groups_file(fs, path, manifest, url, verify)), list(manifest["columns"])


# ---------------------------------------------------------------------- checks
def _frame_stats(df: Any) -> tuple[int, int]:
    """Kernel: rows and non-finite values of one pseudo-data partition."""
    values = df.to_numpy(dtype=np.float64, na_value=np.nan) if len(df.columns) else np.zeros((len(df), 0))
    return int(len(df)), int(np.count_nonzero(~np.isfinite(values)))


def level_floor(max_level: int, overrides: tuple[str, ...] = ()) -> Check:
    """The privacy floor of a condensation whose largest privacy level is ``max_level``."""
    ok = int(max_level) >= 2
    return Check(LEVEL_FLOOR, ok, int(max_level), 2, detail="with every level 1 each record is published as is",
                 overridden=(not ok and LEVEL_FLOOR in overrides))


def statistics_checks(pub: Mapping[str, np.ndarray], where: str | None) -> list[Check]:
    """The checks of the published group statistics alone."""
    n, Ps, Fs, Sc, p_max = (np.asarray(pub[k]) for k in ("n", "Ps", "Fs", "Sc", "p_max"))
    G = n.shape[0]
    nf = np.maximum(n, 1).astype(np.float64)
    bounds = (Ps >= n - 1e-9 * nf) & (Ps <= n * p_max * (1 + 1e-9))
    out_of = np.flatnonzero(~bounds)
    finite = np.isfinite(Fs).all(axis=1) & np.isfinite(Sc).reshape(G, -1).all(axis=1) & np.isfinite(Ps)
    ok_sym = np.ones(G, bool)
    ok_psd = np.ones(G, bool)
    if G and finite.all():
        scale = np.maximum(1.0, np.abs(Sc).reshape(G, -1).max(axis=1))
        ok_sym = np.abs(Sc - Sc.transpose(0, 2, 1)).reshape(G, -1).max(axis=1) <= 1e-9 * scale
        scatter = Sc - Fs[:, :, None] * Fs[:, None, :] / nf[:, None, None]
        lam = np.linalg.eigvalsh(0.5 * (scatter + scatter.transpose(0, 2, 1)))
        ok_psd = lam[:, 0] >= -1e-8 * scale * max(1, Fs.shape[1])
    bad_stats = np.flatnonzero(~(finite & ok_sym & ok_psd))

    def at(idx: np.ndarray) -> str | None:
        return f"{where or 'groups'} row {int(idx[0])}" if idx.size else where

    return [
        Check("privacy level sums within bounds", out_of.size == 0, int(out_of.size), 0, where=at(out_of),
              detail="groups without n <= Ps <= n * p_max"),
        Check("group statistics consistent", bad_stats.size == 0, int(bad_stats.size), 0, where=at(bad_stats),
              detail="groups whose Fs / Sc are not finite, Sc not symmetric or Sc - Fs Fsᵀ/n not positive semi-definite"),
    ]


class _Opened(NamedTuple):
    """What :meth:`CondensedRelease._open_data` hands to :meth:`CondensedRelease._reopen`."""

    frame: Any
    published: dict[str, np.ndarray]


class CondensedRelease(TableRelease):
    """Pseudo-data and the group statistics it was generated from.

    ``data`` is the pseudo-data (a dask DataFrame, one float64 column per attribute, in group
    order in memory); :attr:`groups` the published statistics (a
    :class:`~.groups.GroupTable` whose ``req`` is the published ``p_max``). Build it with
    :meth:`Condenser.transform <ppdm_dask.condensation.Condenser.transform>` or
    :meth:`StreamingCondenser.transform <ppdm_dask.condensation.StreamingCondenser.transform>`.

    Parameters
    ----------
    data : dask.dataframe.DataFrame
    published : mapping
        ``n``, ``Ps``, ``Fs``, ``Sc``, ``p_max`` (see :func:`published_of`).
    **kwargs
        As :class:`~ppdm_dask.release.Release`.
    """

    family: ClassVar[str] = "condensation"
    data_format: ClassVar[str] = FORMAT_NAME
    csv_output: ClassVar[bool] = False  # the group statistics are a second file

    def __init__(self, data: Any, *, published: Mapping[str, np.ndarray] | None = None, **kwargs: Any) -> None:
        super().__init__(data, **kwargs)
        self.published = {k: np.asarray(v) for k, v in (published or {}).items()}

    @property
    def groups(self) -> GroupTable:
        """The published group statistics as a GroupTable (``req`` = ``p_max``)."""
        return _group_table(self.published)

    @property
    def columns(self) -> list[str]:
        """The attribute names."""
        return list(self.parameters.get("columns", []))

    # ------------------------------------------------------------------ writing hooks
    def _group_order(self) -> np.ndarray:
        """The keyed random order of the groups (a stream independent of the row order)."""
        key = self._key if self._key is not None else Key.generate()
        return Key(int(key.digest("condensed-group-order")[:32], 16)).generator(Tag.ROW_ORDER, 0).permutation(len(self.published["n"]))

    def _extra_tables(self) -> dict[str, pa.Table]:
        return {GROUPS_FILE: groups_table(self.published, self._group_order())}

    def _layout(self, partitions: list[dict[str, Any]]) -> dict[str, Any]:
        return {"columns": self.columns, "n_records": int(sum(p["rows"] for p in partitions)),
                "n_groups": int(len(self.published["n"])), "groups": GROUPS_FILE}

    # ------------------------------------------------------------------ reading hooks
    @classmethod
    def _open_data(cls, fs: Any, path: str, manifest: Mapping[str, Any], url: str, verify: bool) -> Any:
        from ..data.tables import table_from_manifest

        return _Opened(table_from_manifest(fs, path, manifest, url, verify=verify),
                       _read_groups_file(fs, path, manifest, url, verify))

    @classmethod
    def _reopen(cls, data: Any, manifest: Mapping[str, Any]) -> "CondensedRelease":
        opened = data if isinstance(data, _Opened) else _Opened(data, {})
        rel = super()._reopen(opened.frame, manifest)
        rel.published = opened.published
        return rel  # type: ignore[return-value]

    # ------------------------------------------------------------------ report
    def report_figures(self, original: Any = None, **compute_kwargs: Any) -> Figures:
        """Risk figures of the published groups (size against the largest privacy level) and,
        with ``original`` (a table, an array, ``(X, levels)`` or a URL), utility figures
        (covariance compatibility, 1-NN accuracy); see :mod:`.report_figures`."""
        from .report_figures import condensed_report_figures

        if isinstance(original, str):
            original = type(self).read_original(original)
        return condensed_report_figures(self, original, **compute_kwargs)

    # ------------------------------------------------------------------ checks
    def floor_checks(self) -> list[Check]:
        p_max = self.published.get("p_max")
        top = int(p_max.max()) if p_max is not None and p_max.size else 0
        return [level_floor(top, self.overrides)]

    def guarantee_checks(self, original: Any = None, **compute_kwargs: Any) -> list[Check]:
        from ..progress import compute

        pub = self.published
        where = GROUPS_FILE if self.manifest is not None else None
        n, p_max = pub["n"], pub["p_max"]
        small = np.flatnonzero(n < p_max)
        first = f" (first: row {int(small[0])}, n={int(n[small[0]])} < p_max={int(p_max[small[0]])})" if small.size else ""
        checks = [Check(SIZE_CHECK, small.size == 0, int(small.size), 0, where=where,
                        detail="groups with fewer records than their largest privacy level" + first,
                        overridden=bool(small.size) and SIZE_CHECK in self.overrides)]
        checks += statistics_checks(pub, where)
        tasks = [dask.delayed(_frame_stats, pure=True)(p) for p in self.data.to_delayed()]
        (stats,) = compute(tasks, **compute_kwargs) if tasks else ([],)
        rows = int(sum(s[0] for s in stats))
        nonfinite = int(sum(s[1] for s in stats))
        total = int(n.sum())
        checks.append(Check("group sizes add up to the pseudo-data rows", total == rows, total, rows,
                            detail="sum of n against the rows of the part files"))
        checks.append(Check("pseudo-data finite", nonfinite == 0, nonfinite, 0))
        if self.manifest is not None:
            man = self.manifest
            ok = int(man.get("n_groups", -1)) == len(n) and int(man.get("n_records", -1)) == rows
            checks.append(Check("counts match the manifest", ok, f"{len(n)} groups, {rows} rows",
                                f"{man.get('n_groups')} groups, {man.get('n_records')} rows"))
        if original is not None:
            checks += self._original_checks(original, **compute_kwargs)
        return checks

    def _original_arrays(self, original: Any) -> tuple[Any, Any]:
        """``(X, levels or None)`` of the original: a table (columns by name), an array, or a
        tuple ``(X, levels)``."""
        import dask.array as da

        from .io import table_to_array

        levels = None
        if isinstance(original, tuple) and len(original) == 2:
            X, levels = original
        elif hasattr(original, "columns") and hasattr(original, "dtypes"):  # pandas or dask DataFrame
            import dask.dataframe as dd

            df = original if isinstance(original, dd.DataFrame) else dd.from_pandas(original, npartitions=1)
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

    def _original_checks(self, original: Any, **ckw: Any) -> list[Check]:
        from ..progress import compute

        X, levels = self._original_arrays(original)
        pub = self.published
        if X.shape[1] != pub["Fs"].shape[1]:
            return [Check("attributes match the original", False, int(X.shape[1]), int(pub["Fs"].shape[1]))]
        fs, sc = compute(X.sum(axis=0), X.T @ X, **ckw)
        N = int(X.shape[0])
        e1 = float(np.abs(pub["Fs"].sum(axis=0) - fs).max(initial=0.0)) / max(1.0, float(np.abs(fs).max(initial=0.0)))
        e2 = float(np.abs(pub["Sc"].sum(axis=0) - sc).max(initial=0.0)) / max(1.0, float(np.abs(sc).max(initial=0.0)))
        checks = [
            Check("records match the original", int(pub["n"].sum()) == N, int(pub["n"].sum()), N, detail="sum of n"),
            Check("first-order sums match the original", e1 <= _RTOL, e1, _RTOL, detail="relative error of sum of Fs"),
            Check("second-order sums match the original", e2 <= _RTOL, e2, _RTOL, detail="relative error of sum of Sc"),
        ]
        if levels is not None:
            (p,) = compute(levels, **ckw)
            p = np.asarray(p, dtype=np.int64)
            ps = float(pub["Ps"].sum())
            checks.append(Check("privacy level sum matches the original", abs(ps - p.sum()) <= _RTOL * max(1.0, float(p.sum())),
                                ps, int(p.sum()), detail="sum of Ps against the sum of the levels"))
            # a record of level >= t sits in a group whose p_max >= t: those groups hold at least as many records
            levels_u = np.unique(p)
            need = np.array([np.count_nonzero(p >= t) for t in levels_u])
            have = np.array([int(pub["n"][pub["p_max"] >= t].sum()) for t in levels_u])
            short = np.flatnonzero(have < need)
            checks.append(Check("privacy levels covered", short.size == 0, int(short.size), 0,
                                where=f"level {int(levels_u[short[0]])}" if short.size else None,
                                detail="levels t whose records outnumber the records of the groups with p_max >= t"))
        return checks


def condensed_release(groups: GroupTable, *, method: str, parameters: Mapping[str, Any], key: Key, source: Any = None,
                      overrides: tuple[str, ...] = (), figures: Mapping[str, Any] | None = None,
                      rows_per_block: int = 100_000) -> CondensedRelease:
    """The release of ``groups``: pseudo-data drawn with ``key`` (lazy, group order) and the
    published statistics; ``parameters["columns"]`` names the attributes."""
    import dask.dataframe as dd

    from .pseudo import generate_dask

    names = list(parameters["columns"])
    pseudo = generate_dask(groups, key=key, rows_per_block=rows_per_block)
    frame = dd.from_dask_array(pseudo, columns=names)
    N, G = int(groups.n.sum()), len(groups)
    base = {"records": {"input": N, "pseudo_records": N, "groups": G},
            "privacy": {"max_privacy_level": int(groups.req.max()) if G else 0, "min_group_size": int(groups.n.min()) if G else 0,
                        "mean_group_size": float(groups.n.mean()) if G else 0.0},
            "utility": {"ssq": float(groups.total_ssq)}}
    for section, values in (figures or {}).items():
        base.setdefault(section, {}).update(values)
    rel = CondensedRelease(frame, published=published_of(groups), method=method, parameters=parameters, figures=base,
                           key=key, source=source, input_info={"rows": N}, overrides=overrides)
    rel.partition_rows = [int(c) for c in pseudo.chunks[0]]
    return rel
