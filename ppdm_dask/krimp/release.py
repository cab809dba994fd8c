"""The KRIMP generator release: generated categorical rows, the public patterns they are made
of, and the checks that re-verify them from the written files.

Besides the rows (ppdm transaction layout, readable by :func:`ppdm_dask.read`) the folder holds
``_patterns.parquet``: the items of every non-singleton code-table element the generator may draw
(weight ``usage·lp_factor + laplace > 0``) that is supported by at least ``max(min_support, 2)``
records of the fitted data. Only the items: the supports and usages are exact counts of the
original and stay with the owner (console summary, internal report); a pattern seen in fewer
records is never published, even when the floor is overridden (a pattern of one record may be
that whole record).

Two protections, each overridable only explicitly and then recorded in the manifest:

* the **min-support floor** (``"min-support"``): ``min_support >= 2`` — a pattern seen in one
  record can be that whole record (P4 used 1; as with k-anonymity, 1 protects no one);
  ``allow_weak=True`` / ``--allow-weak`` overrides it;
* the **unique-copy rule** (``"unique copies"``, public parameter ``unique_copies``:
  ``"redrawn"`` or ``"allowed"``): a generated row equal to a record that is unique in the
  original is redrawn, so no released row copies one (as synthpop removes replicated uniques).
  Only ``allow_weak=["unique copies"]`` / ``--allow-unique-copies`` turns it off — a blanket
  ``allow_weak=True`` does not.

Checks from the release alone: patterns within the length bound and free of excluded
combinations; every pattern and every row with at most / exactly one item per attribute domain;
the number of rows as recorded; the floors of the parameters. Against the original (listed as
NOT CHECKED without it): every published pattern's support recounted on the original (exact
counting engine) >= ``max(min_support, 2)``; no released row equals a record unique in the
original (0 unless the rule was overridden); NAS reported as a figure.

Report figures (:meth:`GeneratedRelease.report_figures`): from the release alone, the k^m audit
curve and unique-basket share of the generated rows; with the original, NAS, the records
reproduced, the released rows that copy a unique original record, the rows redrawn during
generation, the membership-inference advantage, the pattern comparison (each public pattern's
support in the generated rows against its support in the original), DS and the frequent
itemsets of the generated rows against the original's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from ..errors import CorruptDatasetError
from ..release import Check, Figures, Plot, Series, TransactionRelease, Value

__all__ = [
    "GeneratedRelease",
    "PATTERNS_FILE",
    "MIN_SUPPORT",
    "FLOORS",
    "MIN_SUPPORT_FLOOR",
    "UNIQUE_COPIES",
    "OVERRIDABLE",
    "METHOD",
    "UNIQUE_COPIES_CHECK",
    "patterns_table",
    "allowed_overrides",
    "unique_copies_parameter",
    "row_comparison",
    "compare_counts",
    "as_list",
]

PATTERNS_FILE = "_patterns.parquet"
METHOD = "krimp-generator"
#: The privacy floors of the parameters of a KRIMP release (``allow_weak=True`` overrides them).
#: The min-support floor (its check's name, and the name ``allow_weak`` accepts).
MIN_SUPPORT = "min-support"
FLOORS = (MIN_SUPPORT,)
MIN_SUPPORT_FLOOR = 2
#: The unique-copy rule: overridden only when named (``allow_weak=["unique copies"]``).
UNIQUE_COPIES = "unique copies"
#: Every name ``allow_weak`` accepts for a KRIMP release.
OVERRIDABLE = (*FLOORS, UNIQUE_COPIES)
#: The check of ``verify --original`` that counts released rows equal to a unique original record.
UNIQUE_COPIES_CHECK = "released rows copying unique original records"
_PATTERN_SUPPORT_CHECK = "pattern support in the original"


def allowed_overrides(allow_weak: Any) -> tuple[str, ...]:
    """The protections ``allow_weak`` lifts: ``True`` the parameter floors (``"min-support"``)
    but never the unique-copy rule, which must be named (``["unique copies"]``); a name or a
    sequence of names those (each one of :data:`OVERRIDABLE`)."""
    from ..release.base import overrides_for

    return overrides_for(allow_weak, OVERRIDABLE, named_only=(UNIQUE_COPIES,))


def unique_copies_parameter(allowed: bool) -> str:
    """The public parameter ``unique_copies``: ``"allowed"`` or ``"redrawn"``."""
    return "allowed" if allowed else "redrawn"


# ---------------------------------------------------------------------- patterns
def patterns_table(itemsets: Sequence[Any]) -> pa.Table:
    """``_patterns.parquet``: one column ``items`` (list of labels), one row per public pattern."""
    lists = [np.asarray(x).tolist() for x in itemsets]
    return pa.table({"items": pa.array(lists)}) if lists else pa.table({"items": pa.array([], pa.list_(pa.int64()))})


def as_list(values: Any) -> list:
    """``values`` (array-like) as a list of Python values, for a manifest."""
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
    ``n_patterns``: code-table elements per row), ``patterns`` the public patterns table;
    ``redraws`` (in memory only, owner side) the delayed statistics of the rows redrawn because
    their first draw copied a unique original record."""

    family: ClassVar[str] = "krimp"
    NAMED_ONLY_FLOORS: ClassVar[tuple[str, ...]] = (UNIQUE_COPIES,)
    #: the k^m audit of the report: k and the largest m
    report_audit_k: ClassVar[int] = 5
    report_audit_m: ClassVar[int] = 2
    #: relative mining threshold (at least; see ``utility_threshold``) and longest itemsets of the utility figures
    report_min_support: ClassVar[float] = 0.01
    report_max_length: ClassVar[int] = 3
    #: a pattern's generated support is "close" within this relative difference of its original one
    report_pattern_tolerance: ClassVar[float] = 0.25
    #: DS and the membership-inference experiment run KRIMP in memory: only up to this many item
    #: occurrences per side
    report_ds_max_nnz: ClassVar[int] = 2_000_000
    #: membership inference: members and as many hold-out records scored; the hold-out share
    report_mia_candidates: ClassVar[int] = 1000
    report_mia_holdout: ClassVar[float] = 0.5

    def __init__(self, data: Any, *, patterns: pa.Table, redraws: Any = None, **kwargs: Any) -> None:
        super().__init__(data, **kwargs)
        self.patterns = patterns
        # shared with the written release that adopts this one: computed once, by whichever asks first
        self._redraws = {"lazy": redraws, "value": None}

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
        return _Opened(data, pa.table(manifest.get("patterns") or {"items": pa.array([], pa.list_(pa.int64()))}))

    @classmethod
    def _reopen(cls, data: Any, manifest: Mapping[str, Any]) -> GeneratedRelease:
        opened = data if isinstance(data, _Opened) else _Opened(data, patterns_table([]))
        obj = super()._reopen(opened.data, manifest)
        obj.patterns = opened.patterns
        obj._redraws = {"lazy": None, "value": None}
        return obj

    def _adopt(self, fitted: Any) -> GeneratedRelease:
        if isinstance(fitted, GeneratedRelease) and fitted is not self:
            self._redraws = fitted._redraws
        return self

    # ------------------------------------------------------------------ ledger
    def ledger_figures(self) -> dict[str, Any]:
        """The rows generated and the public figures (:mod:`.composition`)."""
        from .composition import ledger_figures

        return ledger_figures(self)

    def compose(self, earlier: Any, ledger: Any, people: Any = None) -> Any:
        """The number of releases of the input and which earlier ones are still readable; the
        copies of their union are the report's (:func:`.composition.union_figures`)."""
        from .composition import compose

        return compose(self, earlier, ledger, people)

    # ------------------------------------------------------------------ public and owner figures
    def public_privacy(self) -> dict[str, Any]:
        """What the public summary may show: the min-support, the rule on unique records and
        the number of public patterns — recountable from the release and its parameters."""
        return {
            "min_support": self.parameters.get("min_support"),
            "unique_copies": self.parameters.get("unique_copies"),
            "patterns_published": int(self.patterns.num_rows),
        }

    def redraw_counts(self, **compute_kwargs: Any) -> dict[str, int] | None:
        """``rows_redrawn`` (rows whose first draw copied a record unique in the original) and
        ``redraws`` (draws it took to replace them) of this release's generation; owner side
        (known to the process that generated the rows; None for a release read from disk).
        Generates the rows again the first time it is asked (cached)."""
        if self._redraws["value"] is None and self._redraws["lazy"] is not None:
            from ..progress import compute

            compute_kwargs.setdefault("progress", False)
            (self._redraws["value"],) = compute(self._redraws["lazy"], **compute_kwargs)
        return self._redraws["value"]

    def summary(self) -> dict[str, Any]:
        """The owner's summary (figures of the original included); the redraw counts once known."""
        out = super().summary()
        counts = self._redraws["value"]
        if counts is not None:
            out["privacy"] = {**out.get("privacy", {}), **counts}
        return out

    # ------------------------------------------------------------------ checks
    def floor_checks(self) -> list[Check]:
        ms = self.parameters.get("min_support")
        if isinstance(ms, bool) or not isinstance(ms, int):
            checks = [Check(MIN_SUPPORT, False, figure=ms, threshold=MIN_SUPPORT_FLOOR, detail="not an integer count")]
        else:
            checks = [
                self.floor(
                    MIN_SUPPORT,
                    ms >= MIN_SUPPORT_FLOOR,
                    ms,
                    MIN_SUPPORT_FLOOR,
                    detail="a pattern seen in fewer records can copy one record; such patterns were drawn but are not published"
                    if ms < MIN_SUPPORT_FLOOR
                    else "",
                )
            ]
        rule = self.parameters.get("unique_copies")
        checks.append(
            self.floor(
                UNIQUE_COPIES,
                rule == "redrawn",
                rule,
                "redrawn",
                detail="" if rule == "redrawn" else "rows equal to a record unique in the original may be released",
            )
        )
        return checks

    def original_only_checks(self) -> list[tuple[str, str]]:
        return [
            (_PATTERN_SUPPORT_CHECK, "the original, to recount the support of every published pattern"),
            (UNIQUE_COPIES_CHECK, "the original's unique records, to find them among the released rows"),
        ]

    def _patterns(self) -> list[list[Any]]:
        return self.patterns.column("items").to_pylist()

    def _domains(self) -> list[list[Any]]:
        return [list(d) for d in (self.parameters.get("domains") or [])]

    def _pattern_floor(self) -> Any:
        """The smallest support a published pattern may have: ``max(min_support, 2)``."""
        ms = self.parameters.get("min_support")
        return max(ms, MIN_SUPPORT_FLOOR) if isinstance(ms, int) and not isinstance(ms, bool) else ms

    def guarantee_checks(self, original: Any = None, **compute_kwargs: Any) -> list[Check]:
        items = self._patterns()
        checks = [*self._pattern_checks(items), *self._row_checks(**compute_kwargs)]
        if original is not None:
            checks += self._original_checks(original, items, **compute_kwargs)
        return checks

    def _pattern_checks(self, items: list[list[Any]]) -> list[Check]:
        checks = []
        max_len = self.parameters.get("max_len")
        if max_len is not None:
            longest = max((len(x) for x in items), default=0)
            ok = longest <= int(max_len)
            checks.append(
                Check("pattern length", ok, figure=longest, threshold=f"<= {max_len}", where=None if ok else PATTERNS_FILE)
            )
        exclude = [set(x) for x in (self.parameters.get("exclude") or [])]
        if exclude:
            hits = sum(1 for x in items if any(e <= set(x) for e in exclude))
            checks.append(
                Check(
                    "excluded combinations",
                    hits == 0,
                    figure=hits,
                    threshold=0,
                    where=None if hits == 0 else PATTERNS_FILE,
                    detail="patterns holding every item of an excluded combination",
                )
            )
        doms = self._domains()
        if doms:
            dom_of = {i: d for d, values in enumerate(doms) for i in values}
            bad = sum(1 for x in items if any(i not in dom_of for i in x) or len({dom_of.get(i) for i in x}) != len(x))
            checks.append(
                Check(
                    "patterns fit the domains",
                    bad == 0,
                    figure=bad,
                    threshold=0,
                    where=None if bad == 0 else PATTERNS_FILE,
                    detail="patterns with an item outside the domains or two items of one domain",
                )
            )
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
        (per_block,) = compute(
            block_partials(tx.blocks, _domain_rows_kernel, (1,), np.int64, item_domain, len(doms)), **compute_kwargs
        )
        per_block = np.asarray(per_block).ravel()
        bad = int(per_block.sum())
        where = None
        if bad:
            first = int(np.flatnonzero(per_block)[0])
            parts = (self.manifest or {}).get("partitions") or []
            where = parts[first]["file"] if first < len(parts) else f"partition {first}"
        checks.append(
            Check(
                "one item per domain",
                bad == 0,
                figure=bad,
                threshold=0,
                where=where,
                detail=f"rows without exactly one item of each of the {len(doms)} domains",
            )
        )
        return checks

    def _original_supports(self, original: Any, items: list[list[Any]], **compute_kwargs: Any) -> np.ndarray:
        """Exact support of every public pattern in the original (0 for unknown items)."""
        from ..metrics.release_utility import exact_supports

        ckw = {"client": compute_kwargs.get("client"), "progress": bool(compute_kwargs.get("progress", False))}
        return exact_supports(original, [frozenset(str(i) for i in x) for x in items], ckw).astype(np.int64)

    def _original_checks(self, original: Any, items: list[list[Any]], **compute_kwargs: Any) -> list[Check]:
        floor = self._pattern_floor()
        counts = self._original_supports(original, items, **compute_kwargs)
        low = int(counts.min()) if counts.size else None
        ok = isinstance(floor, int) and (low is None or low >= floor)
        below = int(np.count_nonzero(counts < floor)) if isinstance(floor, int) else len(items)
        checks = [
            Check(
                _PATTERN_SUPPORT_CHECK,
                ok,
                figure=low,
                threshold=floor,
                where=PATTERNS_FILE if not ok else None,
                detail=f"{len(items)} published patterns recounted on the original" + (f", {below} below" if not ok else ""),
            )
        ]
        rows = row_comparison(self.data, original, **compute_kwargs)
        n_copy = rows["unique_copy_rows"]
        allowed = self.parameters.get("unique_copies") == "allowed" and UNIQUE_COPIES in self.overrides
        checks.append(
            Check(
                UNIQUE_COPIES_CHECK,
                n_copy == 0,
                figure=n_copy,
                threshold=0,
                where=None,
                overridden=n_copy > 0 and allowed,
                detail=f"released rows equal to a record unique in the original ({rows['unique_copied']:,} of its "
                f"{rows['unique_records']:,} unique records)" + (": copies allowed by the owner (recorded)" if allowed else ""),
            )
        )
        checks.append(
            Check(
                "normalized anonymity score",
                True,
                figure=rows["nas"],
                detail="informational: 0 = no original row reproduced at its support level, 1 = every one",
            )
        )
        return checks

    # ------------------------------------------------------------------ report
    def report_figures(self, original: Any = None, **compute_kwargs: Any) -> Figures:
        """The risk and utility figures of the report.

        Ids. Risk: ``km_audit_release``, ``km_rare_itemsets_release``,
        ``unique_baskets_release``; with the original ``nas`` (normalized anonymity score),
        ``rows_reproduced`` (percent of original records whose exact item set is a generated
        row), ``unique_copies`` (released rows equal to a record unique in the original),
        ``rows_redrawn`` (rows redrawn during generation because their first draw copied one;
        known to the process that generated the release), ``membership_advantage`` (the
        membership-inference experiment of :mod:`.attacks`, refitted on a keyed half of the
        original), ``km_audit_original``, ``km_rare_itemsets_original``,
        ``unique_baskets_original``. Utility, with the original: ``patterns_close`` (percent of
        the public patterns whose relative support in the generated rows is within
        :attr:`report_pattern_tolerance` of the original's) and ``pattern_supports`` (scatter),
        ``ds`` (dissimilarity; the original coded by the generator's own patterns, the
        generated rows by a KRIMP run on them, only up to :attr:`report_ds_max_nnz` item
        occurrences) and ``itemsets_sigma_plus``, ``itemsets_sigma_minus``, ``itemsets_rho``,
        ``itemsets_support_scatter``; the quality score ``utility_quality_score`` (item supports
        as column shapes, pairs of the 50 items most frequent in the original as pair trends:
        :func:`~ppdm_dask.metrics.quality.basket_quality`). Every figure that needs the original is about
        ``comparison`` or ``original``: only the internal report shows it. With the original also
        ``unique_records_copied``, ``rows_copying_records``, ``records_shared`` and
        ``membership_chance``, which the summary's attacks read (:mod:`.threat`: guarantee,
        what an attacker can still learn, attacks, headline). A release of an input with
        earlier releases in the ledger also gets the copies of their union (``union_*``,
        :mod:`.composition`).
        """
        from ..metrics.report_figures import (
            audit_figures,
            compute_options,
            unique_basket_figures,
            utility_figures,
            utility_threshold,
        )
        from .composition import union_figures
        from .threat import with_summary

        if isinstance(original, str):
            original = type(self).read_original(original)
        ckw = compute_options(compute_kwargs)
        figs = audit_figures(self.data, original, self.report_audit_k, self.report_audit_m, **ckw)
        figs += unique_basket_figures(self.data, original, **ckw)
        if original is None:
            figs.needs_original.append(
                "NAS, the unique copies, membership inference, the pattern comparison, DS and the itemset "
                "comparison need the original data"
            )
            figs += union_figures(self, None)
            return with_summary(self, figs, None)
        figs += self._reproduction_figures(original, ckw)
        fits = self._fits_in_memory(original, ckw)  # one count for both in-memory experiments
        figs += self._mia_figures(original, ckw, fits)
        figs += self._pattern_figures(original, ckw)
        figs += self._ds_figures(original, ckw, fits)
        ms = self.parameters.get("min_support")
        threshold = utility_threshold(original.n_transactions, ms if isinstance(ms, int) else None, self.report_min_support)
        figs += utility_figures(original, self.data, threshold, max_length=self.report_max_length, **ckw)
        figs += self._quality_figures(original, ckw)
        figs += union_figures(self, original, **ckw)
        return with_summary(self, figs, original, **ckw)

    def _quality_figures(self, original: Any, ckw: dict[str, Any]) -> Figures:
        """The quality score of the generated rows (:func:`ppdm_dask.metrics.quality.basket_quality`):
        every item a 0/1 column, pairs of the items most frequent in the original."""
        from ..metrics.quality import basket_quality, quality_figures

        q = basket_quality(original, self.data, **ckw)
        return Figures(
            utility=quality_figures(q, "the generated rows", column_kind="item"), notes=[f"quality: {n}" for n in q.notes]
        )

    def _pattern_figures(self, original: Any, ckw: dict[str, Any]) -> Figures:
        from ..metrics.release_utility import exact_supports

        items = self._patterns()
        n_fit, n_gen = original.n_transactions, self.data.n_transactions
        if not items:
            return Figures(notes=["no pattern of more than one item was published: no pattern comparison"])
        if not n_fit or not n_gen:
            return Figures(notes=["pattern comparison skipped: no rows"])
        keys = [frozenset(str(i) for i in x) for x in items]
        orig = exact_supports(original, keys, ckw) / n_fit
        gen = exact_supports(self.data, keys, ckw) / n_gen
        tol = self.report_pattern_tolerance
        close = np.abs(gen - orig) <= tol * orig
        note = f"{len(items):,} public patterns; support over {n_fit:,} original rows against {n_gen:,} generated rows"
        keep = np.unique(np.linspace(0, len(items) - 1, min(len(items), 2000)).round().astype(np.int64))
        return Figures(
            utility=[
                Value(
                    "patterns_close",
                    f"public patterns with a generated support within {100 * tol:g}% of their original support",
                    100.0 * float(close.mean()),
                    unit="%",
                    about="comparison",
                    note=note,
                ),
                Plot(
                    "pattern_supports",
                    "Public patterns: support in the original against support in the generated rows",
                    "scatter",
                    [Series("patterns", orig[keep].tolist(), gen[keep].tolist())],
                    x_label="support in the original",
                    y_label="support in the generated rows",
                    about="comparison",
                    note=note + (f"; {keep.size:,} shown" if keep.size < len(items) else ""),
                ),
            ]
        )

    def _reproduction_figures(self, original: Any, ckw: dict[str, Any]) -> Figures:
        rows = row_comparison(self.data, original, **ckw)
        risk = [
            Value(
                "nas",
                "normalized anonymity score NAS",
                rows["nas"],
                about="comparison",
                note="0: no original record reappears; 1: every distinct record at every support level does",
            ),
            Value(
                "rows_reproduced",
                "original records reproduced exactly in the generated rows",
                100.0 * rows["records_reproduced"] / rows["records"],
                about="comparison",
                unit="%",
                note=f"{rows['records_reproduced']:,} of {rows['records']:,} records; "
                f"{rows['distinct_reproduced']:,} of {rows['distinct']:,} distinct records",
            ),
            Value(
                "unique_copies",
                "released rows equal to a record unique in the original",
                rows["unique_copy_rows"],
                about="comparison",
                unit="rows",
                note=f"{rows['unique_copied']:,} of the original's {rows['unique_records']:,} unique records appear verbatim; "
                f"rule: {self.parameters.get('unique_copies')}",
            ),
            Value(
                "unique_records_copied",
                "unique original records that appear verbatim among the generated rows",
                100.0 * rows["unique_copied"] / max(1, rows["unique_records"]),
                about="comparison",
                unit="%",
                note=f"{rows['unique_copied']:,} of {rows['unique_records']:,}",
            ),
            Value(
                "rows_copying_records",
                "generated rows equal to an original record",
                100.0 * rows["rows_copying"] / max(1, rows["rows"]),
                about="comparison",
                unit="%",
                note=f"{rows['rows_copying']:,} of {rows['rows']:,} rows",
            ),
            # what a record of the population outside the original does: equal another record as often as
            # the original's records equal one another
            Value(
                "records_shared",
                "original records equal to another original record",
                100.0 * (rows["records"] - rows["unique_records"]) / max(1, rows["records"]),
                about="original",
                unit="%",
                note=f"{rows['records'] - rows['unique_records']:,} of {rows['records']:,} records",
            ),
        ]
        counts = self.redraw_counts(**ckw)
        if counts is not None:
            n = max(1, self.data.n_transactions)
            risk.append(
                Value(
                    "rows_redrawn",
                    "generated rows redrawn because their first draw copied a unique original record",
                    counts["rows_redrawn"],
                    about="comparison",
                    unit="rows",
                    note=f"{100.0 * counts['rows_redrawn'] / n:.2f}% of the rows; {counts['redraws']:,} redraws",
                )
            )
        return Figures(risk=risk)

    def _fits_in_memory(self, original: Any, ckw: dict[str, Any]) -> bool:
        from ..progress import compute

        nnz_o, nnz_g = compute(original.row_lengths().sum(), self.data.row_lengths().sum(), **ckw)
        return max(int(nnz_o), int(nnz_g)) <= self.report_ds_max_nnz

    def _experiment_key(self) -> Any:
        """The key of the report's experiments: the release's stream key (owner), else one
        derived from the public release id (the split need not be secret, only reproducible)."""
        from ..random import Key

        if self.stream_key is not None:
            return self.stream_key
        rid = ((self.manifest or {}).get("release") or {}).get("id")
        return Key(int(rid, 16)) if rid else Key.generate()

    def _mia_figures(self, original: Any, ckw: dict[str, Any], fits: bool) -> Figures:
        from ..errors import PPDMError
        from .attacks import membership_inference
        from .generator import KrimpGenerator

        ms = self.parameters.get("min_support")
        if not isinstance(ms, int) or not self._domains():
            return Figures(notes=["membership inference skipped: the release records no integer min_support or no domains"])
        if not fits:
            return Figures(
                notes=[
                    f"membership inference skipped: more than {self.report_ds_max_nnz:,} item occurrences "
                    "(it fits KRIMP again in memory)"
                ]
            )
        p = self.parameters
        key = self._experiment_key()

        def fit_generate(members: Any) -> Any:
            gen = KrimpGenerator(
                ms,
                float(p.get("laplace", 0.001)),
                closed=bool(p.get("closed") or False),
                prune=bool(p.get("prune") or False),
                max_len=p.get("max_len"),
                exclude=p.get("exclude") or (),
                domains=self._domains(),
                domain_order=p.get("domain_order", "random"),
                lp_factor=float(p.get("lp_factor", 1.0)),
                allow_weak=list(self.overrides),
                max_candidates=1_000_000,
            ).fit(members, **ckw)
            return gen.sample(key=key.derive("krimp-membership-generate"))

        try:
            res = membership_inference(
                original, fit_generate, key, candidates=self.report_mia_candidates, holdout_share=self.report_mia_holdout, **ckw
            )
        except (PPDMError, ValueError) as exc:
            return Figures(notes=[f"membership inference skipped: {exc}"])
        rule = "none" if res["rule"] is None else res["rule"].replace(" t", f" {res['threshold']:g}")
        chance = Value(
            "membership_chance",
            "membership-inference advantage by chance (labels shuffled)",
            res["chance_advantage"],
            about="comparison",
            note=f"{res['members']:,} members and {res['holdout']:,} hold-out records, 20 shuffles",
        )
        return Figures(
            risk=[
                Value(
                    "membership_advantage",
                    "membership-inference advantage |TPR - FPR| (distance to the closest generated row)",
                    res["advantage"],
                    about="comparison",
                    note=f"by chance (labels shuffled): {res['chance_advantage']:.3f}; generator refitted with these parameters on a "
                    f"keyed {100 * (1 - self.report_mia_holdout):g}% of the original ({res['train_rows']:,} rows); "
                    f"{res['members']:,} members against {res['holdout']:,} hold-out records, scored by the Hamming distance to the "
                    f"closest generated row; best rule: {rule} (TPR {res['tpr']:.3f}, FPR {res['fpr']:.3f}); exact match alone: "
                    f"{res['exact_match_advantage']:+.3f} ({res['member_copies']} member copies, {res['holdout_copies']} hold-out "
                    "copies); 0 = no better than chance",
                ),
                chance,
            ]
        )

    def _ds_figures(self, original: Any, ckw: dict[str, Any], fits: bool) -> Figures:
        from ..errors import PPDMError
        from .codetable import CodeTable
        from .scores import ds_from_tables
        from .search import krimp

        items = self._patterns()
        ms = self.parameters.get("min_support")
        if not isinstance(ms, int):
            return Figures(notes=["DS skipped: the release records no integer min_support"])
        if not fits:
            return Figures(
                notes=[
                    f"DS skipped: more than {self.report_ds_max_nnz:,} item occurrences (KRIMP on the generated rows "
                    "runs in memory)"
                ]
            )
        try:
            ct_o = CodeTable.from_itemsets(original, [np.asarray(x, np.int64) for x in items])
            ct_g = krimp(
                self.data,
                min_support=ms,
                closed=bool(self.parameters.get("closed") or False),
                max_len=self.parameters.get("max_len"),
                prune=bool(self.parameters.get("prune") or False),
                max_candidates=1_000_000,
            ).code_table
            ds = ds_from_tables(original, self.data, ct_o, ct_g, 1.0, **ckw)
        except PPDMError as exc:
            return Figures(notes=[f"DS skipped: {exc}"])
        return Figures(
            utility=[
                Value(
                    "ds",
                    "dissimilarity DS of the generated rows and the original",
                    float(ds),
                    about="comparison",
                    note=f"the original coded by the generator's {len(items):,} public patterns, the generated "
                    f"rows by KRIMP at min_support {ms}; 0 = indistinguishable by compression",
                )
            ]
        )


def row_comparison(released: Any, original: Any, **compute_kwargs: Any) -> dict[str, Any]:
    """The released rows against the original's records, from one pass over each (row
    fingerprints counted, :mod:`.uniques`): NAS, records and distinct records reproduced, and
    the released rows equal to a record unique in the original (``unique_copy_rows``), the
    unique records they copy (``unique_copied``) of ``unique_records``, and the released
    rows (``rows``) and those equal to any original record (``rows_copying``)."""
    from ..progress import compute
    from .scores import fingerprint_counts_lazy

    ckw: dict[str, Any] = {"client": compute_kwargs.get("client"), "progress": bool(compute_kwargs.get("progress", False))}
    (fo, co), (fp, cp) = compute(fingerprint_counts_lazy(original), fingerprint_counts_lazy(released), **ckw)
    return compare_counts(fo, co, fp, cp)


def compare_counts(fo: np.ndarray, co: np.ndarray, fp: np.ndarray, cp: np.ndarray) -> dict[str, Any]:
    """:func:`row_comparison` from the distinct-row fingerprints and counts of the original
    (``fo``, ``co``) and of the released rows (``fp``, ``cp``; any rows, e.g. the union of
    several releases), each sorted and unique as :mod:`.scores` counts them."""
    from .uniques import in_sorted

    present = in_sorted(fp, fo)  # distinct original records that are released rows
    levels, inv = np.unique(co, return_inverse=True)
    n_level = np.bincount(inv, minlength=levels.size)
    n_present = np.bincount(inv, weights=present.astype(np.int64), minlength=levels.size)
    s = levels.astype(np.float64)
    uniques = np.ascontiguousarray(fo[co == 1])
    copying = in_sorted(uniques, fp)  # distinct released rows that copy a unique record
    return {
        "nas": float(np.sum(n_present / (n_level * s)) / np.sum(1.0 / s)) if levels.size else 0.0,
        "records": int(co.sum()),
        "records_reproduced": int(np.sum(co[present])),
        "distinct": int(fo.shape[0]),
        "distinct_reproduced": int(present.sum()),
        "unique_records": int(uniques.shape[0]),
        "unique_copied": int(copying.sum()),
        "unique_copy_rows": int(np.sum(cp[copying])),
        "rows": int(cp.sum()),
        "rows_copying": int(np.sum(cp[in_sorted(fo, fp)])),
    }
