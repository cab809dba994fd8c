"""Releases of anonymized sketches (family ``sketch``): :class:`SketchRelease`.

The row blocks are ``(flat, m, columns, starts)``: each row's first m_i values as float32, one
after the other (what a part file stores), int32 numbers of components, row-aligned columns and
where each row's values start in ``flat`` (so that cutting a block into pieces is linear). Compact
blocks keep the keyed shuffle's pieces small (mean m is far below ``m_max``), so several sketch
blocks are shuffled as one and the number of pieces (input blocks × output files) stays small.
The folder is a sketch dataset of format ``ppdm-sketches`` version 2 (:mod:`.sketches`), so
:func:`~.sketches.read_sketches` reads a release like any sketch dataset. Suppressed records
(m = 0) are left out unless the parameter ``keep_suppressed`` is true; record ids are dropped
unless ``keep_record_ids`` is.

What is public: the published rows (in a keyed order), the parameters, the generator's seed
(public by design: sketches are decoded with it; the guarantees hold against an adversary who
knows every random vector) and what the rows show (published records, their mean number of
components). The number of input records and of suppressed ones are the owner's figures
(:meth:`~ppdm_dask.release.Release.summary`, the internal report): an adversary who knows every
record but one would learn from them whether the last was suppressed. With ``keep_suppressed``
the suppressed records are published as empty rows, and counted.

What :meth:`SketchRelease.verify` recounts, from the released rows alone: every published record
has ``1 <= m <= m_max``, its stored sketch has exactly m values, all finite, no suppressed record
is published, and the rows and their mean number of components agree with the manifest. Against
the original transactions: for δ-anonymity the released numbers of components are exactly those
of the δ rule (record by record in memory, as a multiset of the published ones from disk); for
k-variance anonymity, in memory (input order), Definition 3 on every edge of the exact k-NN
graph recomputed from the original; from disk, no more published records than the original has.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar, NamedTuple

import dask
import numpy as np
import pyarrow as pa

from ..data.folder import read_part
from ..data.persons import PERSON_COLUMN
from ..release import Check, Figures, Release
from ..release.base import floor_check
from ..release.order import BlockOps
from . import _kernels as K
from .sketches import (
    FORMAT_NAME,
    SketchArray,
    compact_table,
    compact_values,
    layout_fields,
    part_metadata,
    sketches_from_manifest,
)

__all__ = ["SketchRelease", "SKETCH_OPS", "RECORD_ID_COLUMNS", "sketch_figures"]

#: row-aligned columns that identify records: never published unless asked for
RECORD_ID_COLUMNS = ("record_id",)
#: metadata entries of a SketchArray that describe the input, not the release: never written
OWNER_METADATA = ("n_suppressed", "n_records")
#: in-memory bytes of one part file once read back (readers make it a dense n x m_max float64 block)
_BLOCK_BYTES = 64 * 2**20
#: in-memory bytes of one shuffle input (compact rows, counted at m_max components each)
_SHUFFLE_IN_BYTES = 64 * 2**20
#: checks that need the original: their names in :meth:`original_only_checks` and in the checks
_RECORDS_CHECK = "records match the original"
_DELTA_CHECK = "δ rule"
_KVARIANCE_CHECK = "k-variance (Def. 3)"


# ---------------------------------------------------------------------- row blocks
def _n_rows(block: tuple) -> int:
    return int(block[1].shape[0])


def _starts(m: np.ndarray) -> np.ndarray:
    """Where each row's values start in the block's ``flat``."""
    return np.cumsum(m, dtype=np.int64) - m


def _take(block: tuple, idx: np.ndarray) -> tuple:
    flat, m, cols, starts = block
    idx = np.asarray(idx, dtype=np.int64)
    lens = m[idx].astype(np.int64)
    new_starts = _starts(lens)
    # positions of the chosen rows' values: each row's start, then its next lens - 1 values
    pos = np.repeat(starts[idx] - new_starts, lens) + np.arange(int(lens.sum()), dtype=np.int64)
    return flat[pos], m[idx], {k: np.asarray(v)[idx] for k, v in cols.items()}, new_starts


def _concat(blocks: list[tuple]) -> tuple:
    if len(blocks) == 1:
        return blocks[0]
    flat = np.concatenate([b[0] for b in blocks])
    m = np.concatenate([b[1] for b in blocks])
    cols = {k: np.concatenate([np.asarray(b[2][k]) for b in blocks]) for k in blocks[0][2]}
    return flat, m, cols, _starts(m)


SKETCH_OPS = BlockOps(_n_rows, _take, _concat)


def _consecutive_groups(rows: list[int], limit: int) -> list[tuple[int, int]]:
    """``[a, b)`` ranges of consecutive blocks holding at most ``limit`` rows each (a larger
    block stays alone)."""
    groups, a, n = [], 0, 0
    for i, r in enumerate(rows):
        if i > a and n + r > limit:
            groups.append((a, i))
            a, n = i, 0
        n += r
    if rows:
        groups.append((a, len(rows)))
    return groups


def _block(values: np.ndarray, m: np.ndarray, cols: dict[str, Any]) -> tuple:
    """Kernel: a compact release block from a dense sketch block."""
    m = np.asarray(m, dtype=np.int32)
    return compact_values(values, m), m, {k: np.asarray(v) for k, v in cols.items()}, _starts(m)


def _encode(block: tuple, kv: bytes, keep_suppressed: bool) -> tuple[pa.Table, dict[str, Any]]:
    table, stats = compact_table(block[0], block[1], block[2], kv, keep_suppressed)
    if not keep_suppressed:
        # the suppressed records of a block are not in the file: their number is a figure of the
        # original (with all records but one known, it tells whether the last was suppressed)
        stats.pop("n_suppressed", None)
    return table, stats


# ---------------------------------------------------------------------- recount kernels
def _stats(m: np.ndarray, lengths: np.ndarray, n_nonfinite: int, m_max: int) -> dict[str, Any]:
    m = np.asarray(m, dtype=np.int64)
    return {
        "rows": int(m.size),
        "hist": np.bincount(np.clip(m, 0, m_max + 1), minlength=m_max + 2),  # slot m_max + 1: above m_max
        "negative": int(np.count_nonzero(m < 0)),
        "length_mismatch": int(np.count_nonzero(np.asarray(lengths) != m)),
        "nonfinite": int(n_nonfinite),
    }


def _memory_stats(values: np.ndarray, m: np.ndarray, m_max: int) -> dict[str, Any]:
    """Kernel: recount of one in-memory block; a row with a non-zero beyond its m components
    counts as a length mismatch (the stored sketch would not have m values)."""
    values, m = np.asarray(values), np.asarray(m, dtype=np.int64)
    beyond = (np.arange(values.shape[1])[None, :] >= m[:, None]) & (values != 0)
    lengths = np.where(beyond.any(axis=1), -1, m)
    return _stats(m, lengths, int(np.count_nonzero(~np.isfinite(values))), m_max)


def _part_stats(fs: Any, folder: str, entry: Mapping[str, Any], m_max: int, url: str) -> dict[str, Any]:
    """Kernel: recount of one written part file from its stored lists (not from the manifest)."""
    table = read_part(fs, folder, entry, columns=["sketch", "m"], url=url)
    col = table.column("sketch").combine_chunks()
    lengths = np.diff(col.offsets.to_numpy()) if len(col) else np.zeros(0, np.int64)
    flat = col.values.to_numpy(zero_copy_only=False) if len(col) else np.zeros(0)
    return {
        **_stats(table.column("m").to_numpy(), lengths, int(np.count_nonzero(~np.isfinite(flat))), m_max),
        "file": entry["file"],
    }


def _delta_rule_block(block: Any, weights: Any, delta: float, m_max: int) -> np.ndarray:
    """Kernel: the δ rule per record, written from its definition — ``m = min(floor(V/δ),
    m_max)`` with ``V = |x|^2 - max_t x_t^2`` (0 with at most one non-zero), suppressed below 1."""
    src = weights if weights is not None else block
    data = src.data if weights is not None else np.ones(src.indices.size)
    total, top = K.row_sq_stats(src.indptr, data)  # exact per-row sums; ifloor: docs/sketches.md#clarification-tolerant-floor
    nnz = np.diff(np.asarray(src.indptr, dtype=np.int64))
    v = np.where(nnz > 1, total - top, 0.0)
    m = np.minimum(K.ifloor(v / delta), m_max)
    return np.where(m >= 1, m, 0).astype(np.int64)


# ---------------------------------------------------------------------- helpers
class _OnDisk(NamedTuple):
    """What :meth:`SketchRelease._open_data` hands to :meth:`SketchRelease._reopen`."""

    sketches: SketchArray
    fs: Any
    folder: str
    url: str


def sketch_figures(report: Mapping[str, Any], privacy: Mapping[str, Any]) -> dict[str, Any]:
    """The release figures (records, privacy, utility) of an anonymizer's report."""
    n, supp = int(report["n_records"]), int(report["n_suppressed"])
    return {
        "records": {"input": n, "published": n - supp, "suppressed": supp},
        "privacy": dict(privacy),
        "utility": {"mean_components": float(report["mean_components"]), "m_max": int(report["m_max"])},
    }


def _public_part_metadata(sk: SketchArray) -> bytes:
    """:func:`~.sketches.part_metadata` without the owner's entries (:data:`OWNER_METADATA`)."""
    return part_metadata(sk._replace(metadata={k: v for k, v in sk.metadata.items() if k not in OWNER_METADATA}))


def _first(parts: list[dict[str, Any]], field: str) -> str | None:
    return next((p["file"] for p in parts if p.get(field)), None)


class SketchRelease(Release):
    """A release of anonymized sketches: ``data`` is a :class:`~.sketches.SketchArray` (input
    order in memory; the published rows when read back).

    Parameters are those of :class:`~ppdm_dask.release.Release`; the public ``parameters`` hold
    the method's parameters (``delta`` or ``k`` ..., ``m_max``) and ``keep_suppressed`` /
    ``keep_record_ids``.
    """

    family: ClassVar[str] = "sketch"
    data_format: ClassVar[str] = FORMAT_NAME
    ops: ClassVar[BlockOps] = SKETCH_OPS
    csv_output: ClassVar[bool] = False
    _disk: _OnDisk | None = None

    # ------------------------------------------------------------------ parameters
    @property
    def default_rows_per_file(self) -> int:  # type: ignore[override]
        """Rows per part file so that an output block stays about 64 MiB in memory."""
        return max(1024, _BLOCK_BYTES // (8 * max(1, self.m_max)))

    def row_bytes(self) -> float | None:
        """A compact row at m_max float32 values, its m, plus its sort key and row id."""
        return 4.0 * max(1, self.m_max) + 28

    @property
    def m_max(self) -> int:
        return int(self.parameters.get("m_max", self.data.m_max if self.data is not None else 1))

    @property
    def keep_suppressed(self) -> bool:
        return bool(self.parameters.get("keep_suppressed", False))

    def _columns(self) -> dict[str, Any]:
        keep_ids = bool(self.parameters.get("keep_record_ids", False))
        # the person's pseudonym (baskets grouped from events) is never published, kept or not
        return {k: v for k, v in self.data.columns.items() if k != PERSON_COLUMN and (keep_ids or k not in RECORD_ID_COLUMNS)}

    # ------------------------------------------------------------------ writing hooks
    def _row_blocks(self) -> tuple[list[Any], list[int]]:
        sk = self.data
        values, ms = sk.values.to_delayed().ravel(), sk.m.to_delayed().ravel()
        cols = {k: v.to_delayed().ravel() for k, v in self._columns().items()}
        compact = [dask.delayed(_block, pure=True)(values[i], ms[i], {k: c[i] for k, c in cols.items()}) for i in range(len(ms))]
        # consecutive compact blocks are shuffled together, within _SHUFFLE_IN_BYTES at m_max
        # values per row: fewer, larger pieces (the shuffle's cost grows with inputs x outputs)
        rows = [int(r) for r in sk.partition_rows]
        groups = _consecutive_groups(rows, max(1, int(_SHUFFLE_IN_BYTES // self.row_bytes())))
        blocks = [compact[a] if b - a == 1 else dask.delayed(_concat, pure=True)(compact[a:b]) for a, b in groups]
        return blocks, [sum(rows[a:b]) for a, b in groups]

    def _layout(self, partitions: list[dict[str, Any]]) -> dict[str, Any]:
        """The sketch folder's fields, public ones only: without ``keep_suppressed`` the number
        of input records and of suppressed ones are the owner's (they are not in the files, so
        nobody else can recount them); with it, the empty rows are published and counted."""
        out = layout_fields(self.data, partitions, self.keep_suppressed, self._columns())
        if not self.keep_suppressed:
            out.pop("n_records", None)
            out.pop("n_suppressed", None)
        out["metadata"] = {k: v for k, v in out["metadata"].items() if k not in OWNER_METADATA}
        self._published = (int(out["n_published"]), float(out["mean_components"]))
        return out

    def _encoder(self) -> Callable[[Any], tuple[pa.Table, dict[str, Any]]]:
        return partial(_encode, kv=_public_part_metadata(self.data), keep_suppressed=self.keep_suppressed)

    # ------------------------------------------------------------------ ledger hooks
    #: the input the release was made from (owner only, never written): the ledger's per-record
    #: values are computed from it (:mod:`.composition`)
    _ledger_input: Any = None
    #: a k-variance release's (k-NN graph, threshold): its edges are stored in the ledger
    _ledger_graph: Any = None

    def __init__(self, data: Any, *, ledger_input: Any = None, ledger_graph: Any = None, **kwargs: Any) -> None:
        """As :class:`~ppdm_dask.release.Release`, plus the owner's ``ledger_input`` and
        ``ledger_graph`` (see the attributes ``_ledger_input`` and ``_ledger_graph``)."""
        super().__init__(data, **kwargs)
        self._ledger_input = ledger_input
        self._ledger_graph = ledger_graph
        if self.people is None and ledger_input is not None and data is not None:
            # whose each record is, cut as the ledger's rows (the chunks of the components m)
            from ..data.persons import rechunk_people, transaction_people

            self.people = rechunk_people(
                transaction_people(ledger_input), ledger_input.partition_rows, [int(c) for c in data.m.chunks[0]]
            )

    def ledger_figures(self) -> dict[str, Any]:
        """The parameters a later release composes with: the method, δ or k, and ``m_max``."""
        p = self.parameters
        out: dict[str, Any] = {"method": self.method, "m_max": self.m_max}
        if self.method == "k-variance":
            out.update(k=p.get("k"), threshold=p.get("threshold", "corrected"))
        else:
            out["delta"] = p.get("delta")
        return out

    def ledger_columns(self) -> dict[str, str]:
        """Per person: the most components one of their records got, and the smallest ``V_x``."""
        return {"m": "max", "v": "min"} if self._ledger_input is not None else {}

    def ledger_rows(self, blocks: list[Any]) -> list[Any] | None:
        """Per record, in input order: its components m and ``V_x``, one task per row chunk of
        :attr:`data` built from the input the release was made from
        (docs/sketches.md#repeated-releases); the people are cut the same way (:attr:`people`)."""
        from .composition import row_tasks

        return row_tasks(self)

    def compose(self, earlier: Any, ledger: Any, people: Any = None) -> Any:
        """Every person's components added up over the sketch releases that hold them, checked
        against the δ condition and the k-variance bounds (:func:`.composition.compose_sketches`)."""
        from .composition import compose_sketches

        return compose_sketches(self, earlier, ledger, people)

    # ------------------------------------------------------------------ reading hooks
    @classmethod
    def _open_data(cls, fs: Any, path: str, manifest: Mapping[str, Any], url: str, verify: bool) -> Any:
        return _OnDisk(sketches_from_manifest(fs, path, manifest, url, verify=verify), fs, path, url)

    @classmethod
    def _reopen(cls, data: Any, manifest: Mapping[str, Any]) -> SketchRelease:
        disk = data if isinstance(data, _OnDisk) else None
        rel = super()._reopen(disk.sketches if disk else data, manifest)
        rel._disk = disk
        return rel  # type: ignore[return-value]

    # ------------------------------------------------------------------ report
    #: the release in memory this one was written from (see :meth:`adopt`)
    fitted: SketchRelease | None = None

    def _adopt(self, fitted: Release) -> SketchRelease:
        """Keep the release in memory that was written: its rows are in input order, so the
        report can match each record's sketch to its original values (margins, similarity)."""
        if isinstance(fitted, SketchRelease) and fitted._disk is None:
            self.fitted = fitted
        return self

    def report_figures(self, original: Any = None, **compute_kwargs: Any) -> Figures:
        """Risk figures (components per record, suppression; with ``original`` each record's
        variance margin) and utility figures (with ``original``: similarity errors, kNN
        accuracy); see :mod:`.report_figures`. ``original`` is a TransactionArray or its URL."""
        from .report_figures import sketch_report_figures

        if isinstance(original, str):
            original = type(self).read_original(original)
        return sketch_report_figures(self, original, **compute_kwargs)

    #: (published records, their mean number of components) once known (written or read back)
    _published: tuple[int, float] | None = None

    def published_counts(self, **compute_kwargs: Any) -> tuple[int, float]:
        """Records published and their mean number of components: what anyone recounts from the
        files (the manifest of a written release, else one pass over ``m``)."""
        if self._published is None:
            man = self.manifest or {}
            if "n_published" in man and "mean_components" in man:
                self._published = (int(man["n_published"]), float(man["mean_components"]))
            else:
                from ..progress import compute

                compute_kwargs.setdefault("progress", False)
                m = self.data.m
                kept, total = compute((m > 0).sum(), m.astype(np.int64).sum(), **compute_kwargs)
                published = int(m.shape[0]) if self.keep_suppressed else int(kept)
                self._published = (published, float(total) / int(kept) if int(kept) else 0.0)
        return self._published

    def public_privacy(self) -> dict[str, Any]:
        """Public figures: the guarantee's level (δ, or k with its neighbour search) and the mean
        number of components of the published records (more components, better estimates).
        The records suppressed are the owner's figure unless ``keep_suppressed`` publishes them
        as empty rows. The generator's seed is public by design (the sketches are decoded with
        it); the guarantee holds against an adversary who knows it."""
        p = self.parameters
        if self.method == "k-variance":
            out: dict[str, Any] = {
                "k": p.get("k"),
                "knn_scope": p.get("knn_scope", "global"),
                "approximate": bool(p.get("approximate", False)),
            }
        else:
            out = {"delta": p.get("delta")}
        out["mean_components"] = self.published_counts()[1]
        return out

    # ------------------------------------------------------------------ checks
    @classmethod
    def parameter_floors(cls, method: str, parameters: Mapping[str, Any], overrides: Sequence[str] = ()) -> list[Check]:
        p = parameters
        if method == "k-variance":
            k = p.get("k")
            threshold = p.get("threshold", "corrected")
            return [
                floor_check(
                    "k >= 2",
                    isinstance(k, int) and k >= 2,
                    k,
                    2,
                    "k = 1 only hides each record's similarity to its single nearest neighbour",
                    overrides,
                ),
                floor_check(
                    "threshold = corrected",
                    threshold == "corrected",
                    threshold,
                    "corrected",
                    "the paper's printed threshold is not scale-invariant: rescaling the data changes "
                    "the guarantee (reproduction studies only)",
                    overrides,
                ),
            ]
        delta = p.get("delta")
        ok = isinstance(delta, (int, float)) and not isinstance(delta, bool) and np.isfinite(delta) and delta > 0
        return [floor_check("delta > 0", bool(ok), delta, 0, "δ <= 0 allows exact reconstruction of attributes", overrides)]

    def _recount(self, **ckw: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Totals and per-part stats of the released rows (read from the part files when the
        release was opened from disk)."""
        from ..progress import compute

        m_max = self.m_max
        if self._disk is not None:
            parts = [dict(p) for p in self.manifest["partitions"]]
            tasks = [
                dask.delayed(_part_stats, pure=False)(self._disk.fs, self._disk.folder, e, m_max, self._disk.url) for e in parts
            ]
        else:
            sk = self.data
            tasks = [
                dask.delayed(_memory_stats, pure=True)(v, m, m_max)
                for v, m in zip(sk.values.to_delayed().ravel(), sk.m.to_delayed().ravel())
            ]
        (per_part,) = compute(tasks, **ckw) if tasks else ([],)
        per_part = [dict(s) for s in per_part]
        total: dict[str, Any] = {"hist": np.zeros(m_max + 2, np.int64)}
        for s in per_part:
            for key, v in s.items():
                if key != "file":
                    total[key] = total.get(key, 0) + v
        total.setdefault("rows", 0)
        for key in ("negative", "length_mismatch", "nonfinite"):
            total.setdefault(key, 0)
        return total, per_part

    def guarantee_checks(self, original: Any = None, **compute_kwargs: Any) -> list[Check]:
        total, parts = self._recount(**compute_kwargs)
        hist, m_max, on_disk = total["hist"], self.m_max, self._disk is not None
        where = (lambda field: _first(parts, field)) if on_disk else (lambda field: None)
        for p in parts:
            p["zero"], p["over"] = int(p["hist"][0]), int(p["hist"][m_max + 1])
        checks = [
            Check(
                "components at most m_max",
                int(hist[m_max + 1]) + total["negative"] == 0,
                int(hist[m_max + 1]) + total["negative"],
                0,
                where=where("over") or where("negative"),
                detail=f"records with m outside 0..{m_max}",
            ),
            Check(
                "sketch length equals m",
                total["length_mismatch"] == 0,
                total["length_mismatch"],
                0,
                where=where("length_mismatch"),
                detail="records whose stored sketch does not have m values",
            ),
            Check("sketch values finite", total["nonfinite"] == 0, total["nonfinite"], 0, where=where("nonfinite")),
        ]
        if on_disk:
            checks += self._disk_count_checks(total, where)
        n_input, n_suppressed = self._input_counts(total)
        if original is not None:
            checks += self._original_checks(original, n_input, n_suppressed, int(total["rows"]), **compute_kwargs)
        return checks

    def original_only_checks(self) -> list[tuple[str, str]]:
        out = [(_RECORDS_CHECK, "the original's number of records")]
        if self.method == "delta":
            out.append((_DELTA_CHECK, "the original's records (their variance V gives each record's m)"))
        elif not self.parameters.get("approximate", False):
            out.append((_KVARIANCE_CHECK, "the original's k-NN graph (checked on a release in input order)"))
        return out

    def _input_counts(self, total: Mapping[str, Any]) -> tuple[int | None, int | None]:
        """(input records, suppressed records) of the release, when it shows them: in memory
        (every input record is there, in input order) or with ``keep_suppressed`` (suppressed
        records are empty rows). Otherwise (None, None): they are the owner's figures."""
        if self._disk is None:
            return int(total["rows"]), int(total["hist"][0])
        if self.keep_suppressed:
            return int(total["rows"]), int(total["hist"][0])
        return None, None

    def _disk_count_checks(self, total: Mapping[str, Any], where: Callable[[str], str | None]) -> list[Check]:
        man = self.manifest
        zero, rows = int(total["hist"][0]), int(total["rows"])
        if self.keep_suppressed:
            n_sup = int(man.get("n_suppressed", -1))
            absent = Check(
                "suppressed records absent",
                zero == n_sup,
                zero,
                n_sup,
                where=where("zero"),
                detail="kept on request (keep_suppressed): the empty rows must equal the suppressed count",
            )
        else:
            absent = Check(
                "suppressed records absent", zero == 0, zero, 0, where=where("zero"), detail="published records with m = 0"
            )
        published = int(man.get("n_published", -1))
        hist = np.asarray(total["hist"], dtype=np.int64)
        kept = int(hist[1:].sum())
        mean = float((np.arange(hist.size)[1:] * hist[1:]).sum() / kept) if kept else 0.0
        recorded = float(man.get("mean_components", float("nan")))
        ok = published == rows and math.isclose(mean, recorded, rel_tol=1e-9, abs_tol=1e-12)
        counts = Check(
            "record counts match the manifest",
            ok,
            f"{rows} rows, mean m {mean:.6g}",
            f"{published} rows, mean m {recorded:.6g}",
            detail="released rows and their mean number of components against the manifest",
        )
        return [absent, counts]

    def _original_checks(
        self, original: Any, n_input: int | None, n_suppressed: int | None, published: int, **ckw: Any
    ) -> list[Check]:
        n = int(original.n_transactions)
        if n_input is not None:
            checks = [Check(_RECORDS_CHECK, n == n_input, n_input, n, detail="input records of the release")]
        else:
            checks = [
                Check(
                    _RECORDS_CHECK,
                    published <= n,
                    published,
                    f"<= {n}",
                    detail="published records against the original's (the suppressed ones are not counted in "
                    "any public file" + ("; the δ rule check matches each published m" if self.method == "delta" else "") + ")",
                )
            ]
        if self.method == "delta":
            checks.append(self._delta_check(original, n_suppressed, **ckw))
        elif self._disk is None and not self.parameters.get("approximate", False) and n == n_input:
            checks.append(self._kvariance_check(original, **ckw))
        elif not self.parameters.get("approximate", False):
            checks.append(
                Check(
                    _KVARIANCE_CHECK,
                    True,
                    status="unchecked",
                    detail="not checked: each record's m must be matched to its own k-NN edges, and the written "
                    "rows are in keyed order without the suppressed records (checked on the release in "
                    "memory before the commit)",
                )
            )
        return checks

    def _delta_check(self, original: Any, n_suppressed: int | None, **ckw: Any) -> Check:
        from ..progress import compute

        delta, m_max = float(self.parameters["delta"]), self.m_max
        blocks = original.blocks.to_delayed().ravel()
        weights = original.weights.to_delayed().ravel() if original.weights is not None else [None] * len(blocks)
        rule = [dask.delayed(_delta_rule_block, pure=True)(b, w, delta, m_max) for b, w in zip(blocks, weights)]
        if self._disk is None and self.data.n_records == original.n_transactions:
            (want, got) = compute(rule, self.data.m, **ckw)
            want, got = np.concatenate(want) if want else np.zeros(0, np.int64), np.asarray(got)
            bad = int(np.count_nonzero(want != got))
            first = int(np.flatnonzero(want != got)[0]) if bad else None
            return Check(
                _DELTA_CHECK,
                bad == 0,
                bad,
                0,
                where=f"record {first}" if bad else None,
                detail="records whose m differs from min(floor(V/δ), m_max) of the original",
            )
        total, _ = self._recount(**ckw)
        (want,) = compute(rule, **ckw)
        want = np.concatenate(want) if want else np.zeros(0, np.int64)
        want_hist = np.bincount(want, minlength=m_max + 2)
        got_hist = np.asarray(total["hist"]).copy()
        if n_suppressed is None:  # not published: the published m against the rule's non-zero m
            want_hist[0] = got_hist[0] = 0
        diff = int(np.abs(want_hist - got_hist).sum())
        return Check(
            _DELTA_CHECK,
            diff == 0,
            diff,
            0,
            detail="multiset of published m against min(floor(V/δ), m_max) of the original"
            + (
                " (suppressed records: the empty rows)"
                if n_suppressed is not None
                else " (records the rule suppresses must not be published)"
            ),
        )

    def _kvariance_check(self, original: Any, **ckw: Any) -> Check:
        """Definition 3 on every edge of the k-NN graph recomputed from the original."""
        from ..neighbors import knn
        from ..progress import compute
        from ._kvariance_kernels import edge_bounds

        p = self.parameters
        graph = knn(
            original,
            int(p["k"]),
            metric=p.get("metric", "cosine"),
            scope=p.get("knn_scope", "global"),
            client=ckw.get("client"),
            progress=bool(ckw.get("progress", False)),
        )
        (m,) = compute(self.data.m, **ckw)
        m = np.asarray(m, dtype=np.int64)
        bounds = edge_bounds(
            graph.indices,
            np.asarray(graph.dots, np.float64),
            np.asarray(graph.cross, np.float64),
            np.asarray(graph.sqnorms, np.float64),
            self.m_max,
            p.get("threshold", "corrected"),
        )
        valid = graph.indices >= 0
        lo = np.minimum(m[:, None], m[np.where(valid, graph.indices, 0)])
        bad_edges = valid & (lo > bounds)
        bad = int(bad_edges.sum())
        first = int(np.flatnonzero(bad_edges.any(axis=1))[0]) if bad else None
        return Check(
            _KVARIANCE_CHECK,
            bad == 0,
            bad,
            0,
            where=f"record {first}" if bad else None,
            detail=f"k-NN edges (exact {p.get('knn_scope', 'global')} graph of the original) whose estimate "
            "variance is below the similarity gap",
        )
