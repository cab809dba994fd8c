"""The KRIMP generator release: generated categorical rows, the public patterns they are made
of, and the checks that re-verify them from the written files.

Besides the rows (ppdm transaction layout, readable by :func:`ppdm_dask.read`) the folder holds
``_patterns.parquet``: every non-singleton code-table element the generator may draw (weight
``usage·lp_factor + laplace > 0``) with its support and usage in the fitted data. These are
aggregates over at least ``min_support`` records each; publishing them lets anyone check the
release's guarantee: no pattern rarer than ``min_support`` was used.

The privacy floor (``"min-support"``) is ``min_support >= 2``: a pattern seen in one record
only can be that whole record, which the generator would then reproduce (P4 used 1; as with
k-anonymity, 1 protects no one). It is overridable with ``allow_weak`` and then recorded.

Checks from the release alone: recorded pattern supports >= min_support; patterns within the
length bound and free of excluded combinations; every pattern and every row with at most / exactly
one item per attribute domain; the number of rows as recorded. Against the original: every
pattern's support recounted on the original (exact counting engine) >= min_support, and the
normalized anonymity score NAS (0 = no original row reproduced) reported as a figure.

Report figures (:meth:`GeneratedRelease.report_figures`): from the release alone, the k^m audit
curve and unique-basket share of the generated rows and the pattern comparison (each public
pattern's support in the generated rows against its recorded support in the fitted data); with
the original, NAS, the share of original records reproduced exactly, the original's audit curve
and share, the dissimilarity DS (bounded in size) and the frequent itemsets of the generated rows
against the original's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

import numpy as np
import pyarrow as pa

from ..errors import CorruptDatasetError
from ..release import Check, Figures, Plot, Series, TransactionRelease, Value

__all__ = ["GeneratedRelease", "PATTERNS_FILE", "FLOORS", "MIN_SUPPORT_FLOOR", "patterns_table"]

PATTERNS_FILE = "_patterns.parquet"
#: The privacy floors of a KRIMP release (names accepted by ``allow_weak``).
FLOORS = ("min-support",)
MIN_SUPPORT_FLOOR = 2


# ---------------------------------------------------------------------- patterns
def patterns_table(itemsets: Sequence[Any], supports: Sequence[int], usages: Sequence[int]) -> pa.Table:
    """``_patterns.parquet``: ``items`` (list of labels), ``support``, ``usage``."""
    lists = [np.asarray(x).tolist() for x in itemsets]
    return pa.table({"items": pa.array(lists), "support": pa.array(np.asarray(supports, np.int64)),
                     "usage": pa.array(np.asarray(usages, np.int64))}) if lists else \
        pa.table({"items": pa.array([], pa.list_(pa.int64())), "support": pa.array([], pa.int64()), "usage": pa.array([], pa.int64())})


def _plain(values: Any) -> list:
    return np.asarray(values).tolist()


# ---------------------------------------------------------------------- kernels
def _domain_rows_kernel(block: Any, item_domain: np.ndarray, n_dom: int) -> np.ndarray:
    """Rows of a CSR block not holding exactly one item of every domain (items outside every
    domain, ``item_domain < 0``, count as faults)."""
    n = block.shape[0]
    if n == 0:
        return np.zeros(1, np.int64)
    dom = item_domain[block.indices]
    row = np.repeat(np.arange(n, dtype=np.int64), np.diff(block.indptr))
    ok = dom >= 0
    counts = np.bincount(row[ok] * n_dom + dom[ok], minlength=n * n_dom).reshape(n, n_dom)
    bad = np.any(counts != 1, axis=1)
    bad[row[~ok]] = True
    return np.array([int(np.count_nonzero(bad))], np.int64)


@dataclass(frozen=True)
class _Opened:
    """What ``_open_data`` hands to ``_reopen``: the rows and the patterns table."""

    data: Any
    patterns: pa.Table


# ---------------------------------------------------------------------- the release
class GeneratedRelease(TransactionRelease):
    """A KRIMP generator release: ``data`` is the generated TransactionArray (column
    ``n_patterns``: code-table elements per row), ``patterns`` the public patterns table."""

    family: ClassVar[str] = "krimp"
    #: the k^m audit of the report: k and the largest m
    report_audit_k: ClassVar[int] = 5
    report_audit_m: ClassVar[int] = 2
    #: relative mining threshold (at least; see ``utility_threshold``) and longest itemsets of the utility figures
    report_min_support: ClassVar[float] = 0.01
    report_max_length: ClassVar[int] = 3
    #: a pattern's generated support is "close" within this relative difference of its recorded one
    report_pattern_tolerance: ClassVar[float] = 0.25
    #: DS runs KRIMP on the generated rows in memory: only up to this many item occurrences per side
    report_ds_max_nnz: ClassVar[int] = 2_000_000

    def __init__(self, data: Any, *, patterns: pa.Table, **kwargs: Any) -> None:
        super().__init__(data, **kwargs)
        self.patterns = patterns

    # ------------------------------------------------------------------ files
    def _extra_tables(self) -> dict[str, pa.Table]:
        return {**super()._extra_tables(), PATTERNS_FILE: self.patterns}

    @classmethod
    def _open_data(cls, fs: Any, path: str, manifest: Mapping[str, Any], url: str, verify: bool) -> Any:
        from ..data.folder import read_part

        data = super()._open_data(fs, path, manifest, url, verify)
        entry = next((e for e in manifest.get("files", []) if e.get("file") == PATTERNS_FILE), None)
        if entry is None:
            raise CorruptDatasetError(f"{url}: the manifest lists no {PATTERNS_FILE}")
        return _Opened(data, read_part(fs, path, entry, verify=verify, url=url))

    def _csv_write(self, fh: Any, blocks: list[Any], compute: Callable) -> dict[str, Any]:
        # a CSV release is one file: its patterns go into the sidecar manifest
        layout = super()._csv_write(fh, blocks, compute)
        return {**layout, "patterns": self.patterns.to_pydict()}

    @classmethod
    def _open_csv(cls, fs: Any, path: str, manifest: Mapping[str, Any], url: str) -> Any:
        data = super()._open_csv(fs, path, manifest, url)
        return _Opened(data, pa.table(manifest.get("patterns") or {"items": [], "support": [], "usage": []}))

    @classmethod
    def _reopen(cls, data: Any, manifest: Mapping[str, Any]) -> "GeneratedRelease":
        opened = data if isinstance(data, _Opened) else _Opened(data, patterns_table([], [], []))
        obj = super()._reopen(opened.data, manifest)
        obj.patterns = opened.patterns
        return obj

    # ------------------------------------------------------------------ checks
    def floor_checks(self) -> list[Check]:
        ms = self.parameters.get("min_support")
        if isinstance(ms, bool) or not isinstance(ms, int):
            return [Check("min-support", False, figure=ms, threshold=MIN_SUPPORT_FLOOR, detail="not an integer count")]
        return [self.floor("min-support", ms >= MIN_SUPPORT_FLOOR, ms, MIN_SUPPORT_FLOOR,
                           detail="a pattern seen in fewer records can copy one record")]

    def _patterns(self) -> tuple[list[list[Any]], np.ndarray]:
        return self.patterns.column("items").to_pylist(), self.patterns.column("support").to_numpy().astype(np.int64)

    def _domains(self) -> list[list[Any]]:
        return [list(d) for d in (self.parameters.get("domains") or [])]

    def guarantee_checks(self, original: Any = None, **compute_kwargs: Any) -> list[Check]:
        items, support = self._patterns()
        ms = self.parameters.get("min_support")
        checks = [self._support_check(support, ms), *self._pattern_checks(items)]
        checks += self._row_checks(**compute_kwargs)
        if original is not None:
            checks += self._original_checks(original, items, ms, **compute_kwargs)
        return checks

    def _support_check(self, support: np.ndarray, ms: Any) -> Check:
        low = int(support.min()) if support.size else None
        ok = isinstance(ms, int) and (low is None or low >= ms)
        bad = int(np.count_nonzero(support < ms)) if isinstance(ms, int) else support.size
        return Check("pattern support", ok, figure=low, threshold=ms, where=PATTERNS_FILE if not ok else None,
                     detail=f"{support.size} patterns" + (f", {bad} below min-support" if not ok else ""))

    def _pattern_checks(self, items: list[list[Any]]) -> list[Check]:
        checks = []
        max_len = self.parameters.get("max_len")
        if max_len is not None:
            longest = max((len(x) for x in items), default=0)
            ok = longest <= int(max_len)
            checks.append(Check("pattern length", ok, figure=longest, threshold=f"<= {max_len}", where=None if ok else PATTERNS_FILE))
        exclude = [set(x) for x in (self.parameters.get("exclude") or [])]
        if exclude:
            hits = sum(1 for x in items if any(e <= set(x) for e in exclude))
            checks.append(Check("excluded combinations", hits == 0, figure=hits, threshold=0, where=None if hits == 0 else PATTERNS_FILE,
                                detail="patterns holding every item of an excluded combination"))
        doms = self._domains()
        if doms:
            dom_of = {i: d for d, values in enumerate(doms) for i in values}
            bad = sum(1 for x in items if any(i not in dom_of for i in x) or len({dom_of.get(i) for i in x}) != len(x))
            checks.append(Check("patterns fit the domains", bad == 0, figure=bad, threshold=0, where=None if bad == 0 else PATTERNS_FILE,
                                detail="patterns with an item outside the domains or two items of one domain"))
        return checks

    def _row_checks(self, **compute_kwargs: Any) -> list[Check]:
        from ..graph import block_partials
        from ..progress import compute

        tx = self.data
        n_rows = self.parameters.get("n_rows")
        checks = [Check("rows as recorded", tx.n_transactions == n_rows, figure=tx.n_transactions, threshold=n_rows)]
        doms = self._domains()
        if not doms or tx.n_transactions == 0:
            return checks
        labels = tx.vocabulary.labels
        item_domain = np.full(labels.size, -1, np.int32)
        index = {v: j for j, v in enumerate(labels.tolist())}
        for d, values in enumerate(doms):
            for v in values:
                if v in index:
                    item_domain[index[v]] = d
        (per_block,) = compute(block_partials(tx.blocks, _domain_rows_kernel, (1,), np.int64, item_domain, len(doms)), **compute_kwargs)
        per_block = np.asarray(per_block).ravel()
        bad = int(per_block.sum())
        where = None
        if bad:
            first = int(np.flatnonzero(per_block)[0])
            parts = (self.manifest or {}).get("partitions") or []
            where = parts[first]["file"] if first < len(parts) else f"partition {first}"
        checks.append(Check("one item per domain", bad == 0, figure=bad, threshold=0, where=where,
                            detail=f"rows without exactly one item of each of the {len(doms)} domains"))
        return checks

    def _original_checks(self, original: Any, items: list[list[Any]], ms: Any, **compute_kwargs: Any) -> list[Check]:
        from ..mining.counting import SupportCounter
        from .scores import normalized_anonymity_score

        counts = np.zeros(len(items), np.int64)
        labels = original.vocabulary.labels
        index = {v: j for j, v in enumerate(labels.tolist())}
        known = [k for k, x in enumerate(items) if all(i in index for i in x)]  # unknown items: support 0
        by_len: dict[int, list[int]] = {}
        for k in known:
            by_len.setdefault(len(items[k]), []).append(k)
        if by_len:
            counter = SupportCounter(original, progress=bool(compute_kwargs.get("progress", False)), client=compute_kwargs.get("client"))
            for length, ks in sorted(by_len.items()):
                ids = np.array([[index[i] for i in items[k]] for k in ks], np.int64).reshape(len(ks), length)
                counts[ks] = counter.itemset_counts(ids)
            counter.release()
        low = int(counts.min()) if counts.size else None
        ok = isinstance(ms, int) and (low is None or low >= ms)
        _, recorded = self._patterns()
        differ = int(np.count_nonzero(counts != recorded))
        checks = [Check("pattern support in the original", ok, figure=low, threshold=ms, where=PATTERNS_FILE if not ok else None,
                        detail=f"recounted on the original; {differ} of {len(items)} differ from the recorded supports")]
        nas = float(normalized_anonymity_score(self.data, original, **compute_kwargs))
        checks.append(Check("normalized anonymity score", True, figure=nas,
                            detail="informational: 0 = no original row reproduced at its support level, 1 = every one"))
        return checks


    # ------------------------------------------------------------------ report
    def _fitted_rows(self, original: Any = None) -> int | None:
        rows = self.input_info.get("rows")
        if rows is None and self.manifest is not None:
            rows = (self.manifest.get("input") or {}).get("rows")
        if rows is None and original is not None:
            rows = original.n_transactions
        return int(rows) if rows is not None else None

    def report_figures(self, original: Any = None, **compute_kwargs: Any) -> Figures:
        """The risk and utility figures of the report.

        Ids. Risk: ``km_audit_release``, ``km_rare_itemsets_release``,
        ``unique_baskets_release``; with the original ``nas`` (normalized anonymity score),
        ``rows_reproduced`` (percent of original records whose exact item set is a generated
        row), ``km_audit_original``, ``km_rare_itemsets_original``, ``unique_baskets_original``.
        Utility: ``patterns_close`` (percent of the public patterns whose relative support in the
        generated rows is within :attr:`report_pattern_tolerance` of the recorded one) and
        ``pattern_supports`` (scatter), both computable from the release alone; with the original
        ``ds`` (dissimilarity; the original coded by the generator's own patterns, the generated
        rows by a KRIMP run on them, only up to :attr:`report_ds_max_nnz` item occurrences) and
        ``itemsets_sigma_plus``, ``itemsets_sigma_minus``, ``itemsets_rho``,
        ``itemsets_support_scatter``.
        """
        from ..metrics.report_figures import (audit_figures, compute_options, unique_basket_figures, utility_figures,
                                              utility_threshold)

        if isinstance(original, str):
            original = type(self).read_original(original)
        ckw = compute_options(compute_kwargs)
        figs = audit_figures(self.data, original, self.report_audit_k, self.report_audit_m, **ckw)
        figs += unique_basket_figures(self.data, original, **ckw)
        figs += self._pattern_figures(original, ckw)
        if original is None:
            figs.notes.append("NAS, the reproduced records, DS and the itemset comparison need the original data")
            return figs
        figs += self._reproduction_figures(original, ckw)
        figs += self._ds_figures(original, ckw)
        ms = self.parameters.get("min_support")
        threshold = utility_threshold(original.n_transactions, ms if isinstance(ms, int) else None, self.report_min_support)
        figs += utility_figures(original, self.data, threshold, max_length=self.report_max_length, **ckw)
        return figs

    def _pattern_figures(self, original: Any, ckw: dict[str, Any]) -> Figures:
        from ..metrics.release_utility import exact_supports

        items, recorded = self._patterns()
        n_fit, n_gen = self._fitted_rows(original), self.data.n_transactions
        if not items:
            return Figures(notes=["no pattern of more than one item was released: no pattern comparison"])
        if not n_fit or not n_gen:
            return Figures(notes=["pattern comparison skipped: the number of fitted rows is not recorded"])
        counts = exact_supports(self.data, [frozenset(str(i) for i in x) for x in items], ckw)
        orig, gen = recorded / n_fit, counts / n_gen
        tol = self.report_pattern_tolerance
        close = np.abs(gen - orig) <= tol * orig
        note = f"{len(items):,} patterns; recorded support over {n_fit:,} fitted rows, generated support over {n_gen:,} rows"
        keep = np.unique(np.linspace(0, len(items) - 1, min(len(items), 2000)).round().astype(np.int64))
        return Figures(utility=[
            Value("patterns_close", f"patterns with a generated support within {100 * tol:g}% of their recorded support",
                  100.0 * float(close.mean()), unit="%", note=note),
            Plot("pattern_supports", "Public patterns: recorded support against generated support", "scatter",
                 [Series("patterns", orig[keep].tolist(), gen[keep].tolist())], x_label="support in the fitted data (recorded)",
                 y_label="support in the generated rows", note=note + (f"; {keep.size:,} shown" if keep.size < len(items) else "")),
        ])

    def _reproduction_figures(self, original: Any, ckw: dict[str, Any]) -> Figures:
        from .scores import _level_table

        levels, n_level, n_present = _level_table(self.data, original, **ckw)
        s = levels.astype(np.float64)
        nas = float(np.sum(n_present / (n_level * s)) / np.sum(1.0 / s))
        rows = float(np.sum(s * n_level))
        reproduced = float(np.sum(s * n_present))
        return Figures(risk=[
            Value("nas", "normalized anonymity score NAS", nas, about="comparison",
                  note="0: no original record reappears; 1: every distinct record at every support level does"),
            Value("rows_reproduced", "original records reproduced exactly in the generated rows", 100.0 * reproduced / rows,
                  about="comparison", unit="%", note=f"{int(reproduced):,} of {int(rows):,} records; "
                  f"{int(n_present.sum()):,} of {int(n_level.sum()):,} distinct records"),
        ])

    def _ds_figures(self, original: Any, ckw: dict[str, Any]) -> Figures:
        from ..errors import PPDMError
        from ..progress import compute
        from .codetable import CodeTable
        from .scores import ds_from_tables
        from .search import krimp

        items, _ = self._patterns()
        ms = self.parameters.get("min_support")
        if not isinstance(ms, int):
            return Figures(notes=["DS skipped: the release records no integer min_support"])
        nnz_o, nnz_g = compute(original.row_lengths().sum(), self.data.row_lengths().sum(), **ckw)
        bound = self.report_ds_max_nnz
        if max(int(nnz_o), int(nnz_g)) > bound:
            return Figures(notes=[f"DS skipped: more than {bound:,} item occurrences (KRIMP on the generated rows runs in memory)"])
        try:
            ct_o = CodeTable.from_itemsets(original, [np.asarray(x, np.int64) for x in items])
            ct_g = krimp(self.data, min_support=ms, closed=bool(self.parameters.get("closed") or False),
                         max_len=self.parameters.get("max_len"), prune=bool(self.parameters.get("prune") or False),
                         max_candidates=1_000_000).code_table
            ds = ds_from_tables(original, self.data, ct_o, ct_g, 1.0, **ckw)
        except PPDMError as exc:
            return Figures(notes=[f"DS skipped: {exc}"])
        return Figures(utility=[Value("ds", "dissimilarity DS of the generated rows and the original", float(ds), about="comparison",
                                      note=f"the original coded by the generator's {len(items):,} patterns, the generated rows by "
                                           f"KRIMP at min_support {ms}; 0 = indistinguishable by compression")])
