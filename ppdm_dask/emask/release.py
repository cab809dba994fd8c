"""The EMASK release: distorted transactions with the public distortion parameters, and the
checks that re-verify them from the written files.

What is public
    The parameters p, q, the privacy floor and the number of items; the distorted rows in a
    keyed order, their item list and their number of ones; and what follows from these alone
    (:meth:`DistortedRelease.public_privacy`): the local-DP ε of an item bit and the basic
    privacy at the average item support estimated from the release. No exact figure of the
    original: its average item support s0 (which gives its exact number of ones) and the basic
    privacy at it are the owner's (:meth:`~ppdm_dask.release.Release.summary`, the internal
    report, the console).

What can be checked without the original
    A distortion leaves one statistical fingerprint that anybody can recount: the density of
    ones. With ``s0`` the average item support of the original, a (p, q) distortion has
    ``E[density] = s0 p + (1 - s0)(1 - q)``, so ``s0 = (density - (1 - q)) / (p + q - 1)`` is
    estimated from the release alone. It must be a support in [0, 1] (within 6 standard errors of
    the binomial noise); rows that were never distorted usually give an estimate far outside
    (e.g. 0.01 dense data released as is under q = 0.98 estimate s0 < 0). The basic privacy at
    the most favourable s0 consistent with the release must meet the floor.

What is checked against the original
    Same number of rows and the same items; the original's exact s0 inside the interval the
    release gives, and the basic privacy at the exact s0; the number of ones in the release
    against its binomial law given the original; and whether the published rows are a (p, q)
    distortion with the declared p and q (:mod:`.flip_rates`): without the key from the item
    counts (rows are in a keyed random order, so only aggregates line up), with the owner's key
    row by row after putting the rows back in the original's order.

Report figures (:meth:`DistortedRelease.report_figures`)
    Risk from the public parameters alone: the local-DP ε of one item bit and of a record as a
    function of the number of items in which two records differ, and the basic privacy at the
    s0 estimated from the release; from the release, its k^m audit curve and unique-basket
    share; with the original, the basic privacy at its exact s0 and item-weighted, the
    re-interrogated privacy (when the rows can be aligned with the original: an unwritten
    release, or the owner's key) and the original's curve and share. Utility with the original:
    the frequent itemsets mined from the release with reconstructed supports against the
    original's.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, ClassVar

import numpy as np

from ..constraints import check
from ..errors import InvalidParameter, PPDMError
from ..release import Check, Figures, Plot, Release, Series, TransactionRelease, Value
from .distortion import DISTORTION_CONSTRAINTS, check_pq
from .flip_rates import Z_MAX
from .privacy import basic_privacy, ldp_epsilon

__all__ = ["DistortedRelease", "BASIC_PRIVACY", "FLOORS", "Z_MAX", "nnz_lazy", "pq_from_manifest", "reconstructed_supports"]

#: The basic-privacy floor (its check's name, and the name ``allow_weak`` accepts).
BASIC_PRIVACY = "basic privacy"
#: The privacy floors of an EMASK release (names accepted by ``allow_weak``).
FLOORS = (BASIC_PRIVACY,)
#: checks that need the original: their names in :meth:`original_only_checks` and in the checks
_SHAPE_CHECK = "same rows and items as the original"
_S0_CHECK = "s0 of the original"
_BP_ORIGINAL_CHECK = "basic privacy (original)"
_ONES_CHECK = "ones consistent with a (p, q) distortion of the original"
_FLIP_RATES_CHECK = "flip rates as declared"
_ROW_FLIPS_CHECK = "flip rates per row"


def _nnz_kernel(block: Any) -> np.ndarray:
    return np.array([block.indices.size], dtype=np.int64)


def nnz_lazy(tx: Any) -> Any:
    """Lazy number of ones of ``tx`` (one MAP + tree sum), a length-1 array."""
    from ..graph import tree_sum

    return tree_sum(tx.blocks, _nnz_kernel, (1,), np.int64)


def pq_from_manifest(url: str, *, storage_options: Any = None) -> tuple[float, float] | None:
    """``(p, q)`` recorded in the manifest of an EMASK release at ``url`` (None when ``url`` is
    not an EMASK release, e.g. a dataset distorted by the library and written with ``write``)."""
    from ..errors import PPDMError
    from ..release import Release

    try:
        _, _, manifest = Release.load_manifest(url, storage_options=storage_options)
    except PPDMError:
        return None
    rel = manifest.get("release", {})
    params = rel.get("parameters", {})
    if rel.get("family") != "emask" or "p" not in params or "q" not in params:
        return None
    return float(params["p"]), float(params["q"])


def _bp_interval(p: float, q: float, lo: float, hi: float, copies: int = 1) -> float:
    """Largest basic privacy over supports in ``[lo, hi]`` (inside (0, 1)): the most favourable
    reading of a statistical estimate of s0; of a bit seen ``copies`` times (a person's item in
    each of their baskets) when ``copies > 1``."""
    from .composition import person_basic_privacy

    eps = 1e-12
    lo, hi = max(lo, eps), min(hi, 1.0 - eps)
    grid = np.unique(np.r_[np.linspace(lo, hi, 33), lo, hi])
    if copies > 1:
        return max(person_basic_privacy(p, q, float(s), copies) for s in grid)
    return max(basic_privacy(p, q, s0=float(s)) for s in grid)


def _emask_miner(tx: Any, min_support: float | int, *, p: float, q: float, **kwargs: Any) -> Any:
    from .mining import mine

    return mine(tx, p, q, min_support, **kwargs)


def reconstructed_supports(
    tx: Any, itemsets: list[frozenset], *, p: float, q: float, client: Any = None, progress: bool = False
) -> np.ndarray:
    """EMASK estimates of the true support counts of ``itemsets`` (frozensets of label strings)
    from the distorted ``tx``: every subset of every itemset is counted exactly, then the closed
    form (docs/emask.md#the-closed-form) combines the sums of the subset counts by size.
    Itemsets with a label ``tx`` does not have get 0."""
    from itertools import combinations

    from ..metrics.release_utility import exact_supports
    from ._kernels import closed_form_estimate

    labels = tx.vocabulary.labels
    index = {str(v): j for j, v in enumerate(labels.tolist())}
    out = np.zeros(len(itemsets), np.float64)
    known = [(i, sorted(index[x] for x in s)) for i, s in enumerate(itemsets) if all(x in index for x in s)]
    if not known:
        return out
    subsets = sorted(
        {c for _, ids in known for j in range(1, len(ids) + 1) for c in combinations(ids, j)}, key=lambda c: (len(c), c)
    )
    counts = exact_supports(tx, [frozenset(str(labels[i]) for i in c) for c in subsets], {"client": client, "progress": progress})
    count_of = dict(zip(subsets, counts.tolist()))
    for i, ids in known:
        sigma = [np.array([float(tx.n_transactions)])] + [
            np.array([sum(count_of[c] for c in combinations(ids, size))]) for size in range(1, len(ids) + 1)
        ]
        out[i] = float(closed_form_estimate(sigma, len(ids), p, q)[0])
    return out


class DistortedRelease(TransactionRelease):
    """An EMASK/MASK release: ``data`` is the distorted TransactionArray.

    Public parameters (in the manifest): ``p``, ``q``, ``privacy_floor`` (percent) and
    ``n_items``. The average item support s0 of the original is not one of them: it is a figure
    of the original (with N and n_items it gives its exact number of ones). The owner's figures
    (exact s0, the basic privacy at it) live in :attr:`figures` of the release the
    :class:`~.distorter.Distorter` made — the console summary and the internal report — and
    anybody can estimate s0 from the release's own density (:meth:`public_privacy`).
    """

    family: ClassVar[str] = "emask"
    #: the k^m audit of the report: k and the largest m
    report_audit_k: ClassVar[int] = 5
    report_audit_m: ClassVar[int] = 2
    #: relative mining threshold and longest itemsets of the utility figures
    report_min_support: ClassVar[float] = 0.01
    report_max_length: ClassVar[int] = 3
    #: most points of the record-ε line
    report_epsilon_points: ClassVar[int] = 1000
    #: ones of the released rows once counted (written or read back); see :meth:`released_ones`
    _released_nnz: int | None = None
    #: the owner's budget of local-DP ε per item over every release of the input
    #: (:class:`~.distorter.Distorter` ``epsilon_budget``; docs/emask.md#repeated-releases). Not a
    #: public parameter: it limits what the ledger admits, not what this release is, so it stays
    #: out of the release's identity (and its noise); the ledger's record and the manifest's
    #: composition show it.
    epsilon_budget: float | None = None

    def __init__(self, data: Any, *, epsilon_budget: float | None = None, **kwargs: Any) -> None:
        """As :class:`~ppdm_dask.release.Release`, plus ``epsilon_budget`` (see the attribute)."""
        super().__init__(data, **kwargs)
        self.epsilon_budget = epsilon_budget

    # ------------------------------------------------------------------ parameters
    def owner_s0(self) -> float | None:
        """The exact average item support of the original, when this release knows it (made by
        the Distorter, or adopted from it): the owner's figure, never written."""
        s0 = (self.figures.get("privacy") or {}).get("s0")
        return float(s0) if isinstance(s0, (int, float)) and not isinstance(s0, bool) else None

    def mean_row_length(self) -> float | None:
        """Expected length of a distorted row: p·s0·n + (1 - q)·(1 - s0)·n over n items (at the
        owner's s0; a release read back knows its rows' length from its manifest)."""
        s0 = self.owner_s0()
        if s0 is None:
            return super().mean_row_length()
        try:
            p, q = self._pq()
        except (TypeError, ValueError, PPDMError):
            return None
        n = float(self.data.n_items)
        return p * s0 * n + (1.0 - q) * (1.0 - s0) * n

    def _pq(self) -> tuple[float, float]:
        return check_pq(self.parameters.get("p"), self.parameters.get("q"))

    def _floor_value(self) -> float:
        # a release read back holds whatever its manifest says: the Distorter's own declaration
        return check("privacy_floor", self.parameters.get("privacy_floor"), DISTORTION_CONSTRAINTS["privacy_floor"])

    def _overridden(self, ok: bool) -> bool:
        return not ok and BASIC_PRIVACY in self.overrides

    def floor_checks(self) -> list[Check]:
        """``basic privacy``: BP(p, q) at the original's exact s0 >= ``privacy_floor``, on the
        owner's side (the release the Distorter made knows s0). A release read back does not:
        its floor is checked at the s0 estimated from its rows (:meth:`guarantee_checks`), and
        at the exact s0 against the original."""
        try:
            p, q = self._pq()
            floor = self._floor_value()
        except (InvalidParameter, TypeError, ValueError) as exc:
            return [Check("distortion parameters", False, detail=str(exc))]
        s0 = self.owner_s0()
        if s0 is None or not 0.0 < s0 < 1.0:
            return []
        copies = int(((self.figures.get("privacy") or {}).get("baskets_per_person") or {}).get("max") or 1)
        if copies > 1:  # the floor holds for the person: an item in every basket of the most active one
            from .composition import person_basic_privacy

            bp = person_basic_privacy(p, q, s0, copies)
            detail = f"of a person's item over their {copies} baskets, at s0 = {s0:.4g}, the average item support of the input"
            return [self.floor(BASIC_PRIVACY, bp >= floor, bp, floor, detail=detail)]
        bp = basic_privacy(p, q, s0=s0)
        return [
            self.floor(BASIC_PRIVACY, bp >= floor, bp, floor, detail=f"at s0 = {s0:.4g}, the average item support of the input")
        ]

    # ------------------------------------------------------------------ ledger
    def ledger_figures(self) -> dict[str, Any]:
        """p, q, n_items, the floor, the budget, ε per item and per record; and the owner's s0 and
        basic privacy at it (the ledger is the owner's: no public file shows them); who the
        person is (``person_kind``)."""
        from .composition import Terms

        out = Terms.of_release(self).figures()
        if self.people is not None:
            out["person_kind"] = self.people.kind
        return out

    def compose(self, earlier: Any, ledger: Any, people: Any = None) -> Any:
        """Sequential composition with the earlier EMASK releases of the input, and once written
        with every earlier EMASK release that shares people with it: ε per item and per record
        add up, and per person over all their baskets; the basic privacy of a bit seen in every
        release (in every basket of the most exposed person), and the limits
        (:func:`.composition.compose_release`). The ledger keeps each person's number of
        baskets, nothing else."""
        from .composition import compose_release

        return compose_release(self, earlier, people)

    # ------------------------------------------------------------------ writing
    def _layout(self, partitions: list[dict[str, Any]]) -> dict[str, Any]:
        layout = super()._layout(partitions)
        self._released_nnz = int(layout["nnz"])
        return layout

    def _csv_write(self, fh: Any, blocks: list[Any], compute: Any) -> dict[str, Any]:
        layout = super()._csv_write(fh, blocks, compute)
        self._released_nnz = int(layout["nnz"])
        return layout

    def _adopt(self, fitted: Release) -> DistortedRelease:
        """Keep the owner's figures (exact s0, basic privacy at it) of the release that was
        written, for the internal report; the public ones stay in the manifest."""
        if isinstance(fitted, DistortedRelease) and fitted.owner_s0() is not None:
            self.figures = {**self.figures, **{k: dict(v) for k, v in fitted.figures.items()}}
        return self

    def released_ones(self, **compute_kwargs: Any) -> int:
        """Ones of the released rows: from the manifest of a written release, else counted
        (one pass) and kept."""
        if self._released_nnz is None:
            nnz = (self.manifest or {}).get("nnz")
            if isinstance(nnz, int) and not isinstance(nnz, bool):
                self._released_nnz = int(nnz)
            else:
                from ..progress import compute

                compute_kwargs.setdefault("progress", False)
                (counts,) = compute(nnz_lazy(self.data), **compute_kwargs)
                self._released_nnz = int(counts[0])
        return self._released_nnz

    def s0_from_release(self, nnz: int | None = None) -> tuple[float, float] | None:
        """``(ŝ0, tolerance)``: the average item support estimated from the release's density,
        ``(nnz / (N·n_items) - (1 - q)) / (p + q - 1)``, and :data:`Z_MAX` standard errors of
        it; None without rows."""
        p, q = self._pq()
        n_items = self.parameters.get("n_items")
        n_items = int(n_items) if isinstance(n_items, int) and not isinstance(n_items, bool) else self.data.n_items
        n_bits = self.data.n_transactions * n_items
        if n_bits == 0:
            return None
        nnz = self.released_ones() if nnz is None else nnz
        delta = p + q - 1.0
        s_hat = (nnz / n_bits - (1.0 - q)) / delta
        s = min(max(s_hat, 0.0), 1.0)
        sd = math.sqrt((s * p * (1 - p) + (1 - s) * q * (1 - q)) / n_bits) / abs(delta)
        return s_hat, Z_MAX * sd + 1e-12

    # ------------------------------------------------------------------ guarantee
    def original_only_checks(self) -> list[tuple[str, str]]:
        return [
            (_SHAPE_CHECK, "the original's rows and items"),
            (_S0_CHECK, "the original's number of ones"),
            (_BP_ORIGINAL_CHECK, "the original's average item support"),
            (_ONES_CHECK, "the original's number of ones"),
            (_FLIP_RATES_CHECK, "the original's item counts"),
            (_ROW_FLIPS_CHECK, "the original and the owner's key (the rows are in keyed order)"),
        ]

    def verify(self, original: Any = None, *, storage_options: Any = None, **compute_kwargs: Any) -> Any:
        """:meth:`Release.verify`, plus, with the original, the flip rates measured row by row
        (rows of a written release put back in the original's order with the owner's
        ``key=``; without it the check is listed as not checked)."""
        if isinstance(original, str):
            original = type(self).read_original(original, storage_options=storage_options)
        verdict = super().verify(original, storage_options=storage_options, **compute_kwargs)
        if original is None:
            return verdict
        compute_kwargs.setdefault("progress", False)
        key = compute_kwargs.pop("key", None)
        if key is None:  # the owner's release (made here, or adopted from the one written) knows its key
            key = self.key
        return verdict + [self._row_flip_check(original, key, **compute_kwargs)]

    def guarantee_checks(self, original: Any = None, **compute_kwargs: Any) -> list[Check]:
        from ..progress import compute

        try:
            p, q = self._pq()
            floor = self._floor_value()
        except (InvalidParameter, TypeError, ValueError) as exc:
            return [Check("distortion parameters", False, detail=str(exc))]
        tx = self.data
        recorded = self.parameters.get("n_items")
        # a basket CSV release cannot name items no row holds: its vocabulary may be smaller
        items_ok = recorded == tx.n_items or (self._is_csv() and isinstance(recorded, int) and tx.n_items <= recorded)
        checks = [
            Check(
                "distortion parameters",
                items_ok,
                figure=f"p={p}, q={q}, {recorded} items",
                detail="" if items_ok else f"the data have {tx.n_items} items",
            )
        ]
        if not items_ok:
            return checks
        # the ones are recounted from the rows (never taken from the manifest), and with the
        # original both sides' item counts in the same pass
        lazy = [tx.item_supports_lazy()] + ([original.item_supports_lazy()] if original is not None else [])
        counts = compute(*lazy, **compute_kwargs)
        nnz = int(np.asarray(counts[0]).sum())
        checks += self._density_checks(p, q, floor, nnz, recorded)
        if original is not None:
            checks += self._original_checks(p, q, floor, np.asarray(counts[0]), original, np.asarray(counts[1]), recorded)
        return checks

    def _is_csv(self) -> bool:
        return (self.manifest or {}).get("release", {}).get("output") == "csv"

    def _density_checks(self, p: float, q: float, floor: float, nnz: int, n_items: int) -> list[Check]:
        est = self.s0_from_release(nnz)
        if est is None:
            return [Check("s0 from the release density", True, detail="no rows: nothing to estimate")]
        s_hat, tol = est
        ok = -tol <= s_hat <= 1.0 + tol
        checks = [
            Check(
                "s0 from the release density",
                ok,
                figure=s_hat,
                threshold="[0, 1]",
                detail=f"(density - (1 - q)) / (p + q - 1), ± {tol:.3g} ({Z_MAX:g} standard errors)"
                + ("" if ok else "; the rows are not a (p, q) distortion of any data"),
            )
        ]
        if ok:
            bp = _bp_interval(p, q, s_hat - tol, s_hat + tol)
            checks.append(
                Check(
                    "basic privacy (estimated from the release)",
                    bp >= floor,
                    figure=bp,
                    threshold=floor,
                    detail=f"at the most favourable s0 in [{max(s_hat - tol, 0):.4g}, {min(s_hat + tol, 1):.4g}]",
                    overridden=self._overridden(bp >= floor),
                )
            )
            bound = self.parameters.get("max_baskets_per_person")
            if isinstance(bound, int) and not isinstance(bound, bool) and bound > 1:
                # the bound is public: the floor for the person is recounted from the files too
                bp = _bp_interval(p, q, s_hat - tol, s_hat + tol, bound)
                checks.append(
                    Check(
                        "basic privacy per person (estimated from the release)",
                        bp >= floor,
                        figure=bp,
                        threshold=floor,
                        detail=f"of an item in each of a person's {bound} baskets (at most), at the most favourable s0",
                        overridden=self._overridden(bp >= floor),
                    )
                )
        return checks

    def _same_items(self, original: Any) -> bool:
        """Whether the release's items fit the original's: the same list, or with a public
        catalogue every item of the original in the release's; a basket CSV release names only
        the items its rows hold (within the original's, or the catalogue's)."""
        tx = self.data
        rel, orig = tx.vocabulary.labels, original.vocabulary.labels
        if rel.dtype.kind != orig.dtype.kind:
            return False
        catalogue = "item_catalogue" in self.parameters
        if self._is_csv():
            return catalogue or bool(np.isin(rel, orig).all())
        if catalogue:
            from .items import catalogue_digest

            return catalogue_digest(tx.vocabulary) == self.parameters["item_catalogue"] and bool(np.isin(orig, rel).all())
        return tx.vocabulary == original.vocabulary

    def _universe_labels(self, original: Any) -> np.ndarray:
        """The labels both sides' items are compared on: the union of the release's and the
        original's (the original's, or the catalogue's)."""
        return np.union1d(self.data.vocabulary.labels, original.vocabulary.labels)

    def _original_checks(
        self, p: float, q: float, floor: float, released: np.ndarray, original: Any, orig_counts: np.ndarray, n_items: int
    ) -> list[Check]:
        tx = self.data
        n, d = original.n_transactions, original.n_items
        catalogue = "item_catalogue" in self.parameters
        same = tx.n_transactions == n and (n_items == d or catalogue) and self._same_items(original)
        checks = [
            Check(
                _SHAPE_CHECK,
                same,
                figure=f"{tx.n_transactions} x {n_items}",
                threshold=f"{n} x {d}" + (" (items within the catalogue)" if catalogue else ""),
                detail="" if same else "the release is not a distortion of this original",
            )
        ]
        if not same or n * d == 0:
            return checks
        d = n_items  # the item universe: the original's items, or the catalogue
        nnz, nnz_t = int(released.sum()), int(orig_counts.sum())
        s0 = nnz_t / (n * d)
        s_hat, tol = self.s0_from_release(nnz)  # type: ignore[misc]
        inside = s_hat - tol <= s0 <= s_hat + tol
        checks.append(
            Check(
                _S0_CHECK,
                inside,
                figure=s0,
                threshold=f"[{s_hat - tol:.6g}, {s_hat + tol:.6g}]",
                detail="nnz / (N d) of the original inside the interval the release's density gives",
            )
        )
        if 0.0 < s0 < 1.0:
            bp = basic_privacy(p, q, s0=s0)
            checks.append(
                Check(
                    _BP_ORIGINAL_CHECK,
                    bp >= floor,
                    figure=bp,
                    threshold=floor,
                    detail=f"at the exact s0 = {s0:.4g}",
                    overridden=self._overridden(bp >= floor),
                )
            )
        mean = p * nnz_t + (1.0 - q) * (n * d - nnz_t)
        var = p * (1 - p) * nnz_t + q * (1 - q) * (n * d - nnz_t)
        z = abs(nnz - mean) / math.sqrt(var) if var > 0 else (0.0 if nnz == mean else math.inf)
        checks.append(
            Check(
                _ONES_CHECK,
                z < Z_MAX,
                figure=z,
                threshold=f"< {Z_MAX:g}",
                detail=f"|z| of {nnz:,} ones against the binomial mean {mean:,.1f}",
            )
        )
        checks.append(self._item_flip_check(p, q, released, original, orig_counts))
        return checks

    def _item_flip_check(self, p: float, q: float, released: np.ndarray, original: Any, orig_counts: np.ndarray) -> Check:
        """(p, q) estimated from the item counts of release and original (:func:`.flip_rates.item_flip_test`)."""
        from .flip_rates import counts_on, item_flip_test

        universe = self._universe_labels(original)
        k = counts_on(released, self.data.vocabulary.labels, universe)
        c = counts_on(orig_counts, original.vocabulary.labels, universe)
        t = item_flip_test(k, c, original.n_transactions, p, q)
        if t["p_hat"] is not None:
            est = (
                f"p̂ = {t['p_hat']:.4g} ± {Z_MAX * t['se_p']:.2g}, q̂ = {t['q_hat']:.4g} ± {Z_MAX * t['se_q']:.2g} "
                f"({Z_MAX:g} standard errors)"
            )
        else:
            est = "(p, q) not identifiable from the item counts (every item has the same support); declared pair tested"
        detail = (
            f"{est}; declared p = {p:g}, q = {q:g} "
            + ("inside" if t["ok"] else "OUTSIDE")
            + f" the joint confidence region (χ²({t['dof']}) score {t['statistic']:.4g}, limit {t['threshold']:.3g})"
        )
        if t["exact_mismatches"]:
            detail += f"; {t['exact_mismatches']} item(s) whose count (p, q) fixes exactly differ"
        if not t["ok"]:
            detail += ": the published rows are not a distortion with the declared flip rates"
        stats = {k: t[k] for k in ("p_hat", "q_hat", "se_p", "se_q", "statistic", "dof", "threshold", "exact_mismatches")}
        return Check(
            _FLIP_RATES_CHECK, t["ok"], figure=t["statistic"], threshold=f"<= {t['threshold']:.4g}", detail=detail, stats=stats
        )

    def _row_flip_check(self, original: Any, key: Any, **compute_kwargs: Any) -> Check:
        """The flip rates counted row by row (:func:`.flip_rates.row_flip_test`) once the rows are
        in the original's order; not checked without the key of a written release."""
        import dask

        from ..progress import compute
        from ._flip_kernels import row_flip_sums
        from .audit import aligned_distortion
        from .flip_rates import label_map, row_flip_test

        name = _ROW_FLIPS_CHECK
        p, q = self._pq()
        tx = self.data
        if tx.n_transactions != original.n_transactions or not self._same_items(original):
            return Check(name, False, detail="not attempted: the release does not have the original's rows and items")
        try:
            aligned = aligned_distortion(original, self, key)
        except InvalidParameter as exc:
            return Check(name, False, detail=f"not attempted: {exc}")
        if aligned is None:
            return Check(
                name,
                True,
                detail="not checked: the rows are in keyed order; the owner puts them back with the key "
                "(ppdm --key-file KEY verify RELEASE --original SRC)",
                status="unchecked",
            )
        if tuple(aligned.partition_rows) != tuple(original.partition_rows):
            aligned = aligned._rechunk(tuple(original.partition_rows))
        universe = self._universe_labels(original)
        t_map = None if np.array_equal(original.vocabulary.labels, universe) else label_map(original.vocabulary.labels, universe)
        d_map = None if np.array_equal(aligned.vocabulary.labels, universe) else label_map(aligned.vocabulary.labels, universe)
        n_items = max(int(self.parameters.get("n_items") or 0), universe.size)
        task = dask.delayed(row_flip_sums, pure=True)
        parts = [
            task(t, r, t_map, d_map, n_items, p, q)
            for t, r in zip(original.blocks.to_delayed().ravel(), aligned.blocks.to_delayed().ravel())
        ]
        (sums,) = compute(parts, **compute_kwargs)
        t = row_flip_test(np.sum(sums, axis=0), p, q)
        z = t["z"]
        detail = (
            f"kept {t['sums']['kept']:,.0f} of {t['sums']['ones']:,.0f} ones (p̂ = {t['p_hat']:.4g}), added "
            f"{t['sums']['added']:,.0f} in {t['sums']['zeros']:,.0f} zeros (q̂ = {t['q_hat']:.4g}); |z| of the totals "
            f"{abs(z['kept']):.3g}, {abs(z['added']):.3g}, of the rows' dispersion {abs(z['kept_dispersion']):.3g}, "
            f"{abs(z['added_dispersion']):.3g}"
            if t["p_hat"] is not None and t["q_hat"] is not None
            else "no ones or no zeros"
        )
        if not t["ok"]:
            detail += ": the published rows are not a distortion with the declared flip rates"
        return Check(
            name,
            t["ok"],
            figure=t["max_abs_z"],
            threshold=f"<= {Z_MAX:g}",
            detail=detail,
            stats={"p_hat": t["p_hat"], "q_hat": t["q_hat"], **{f"z_{k}": v for k, v in z.items()}},
        )

    # ------------------------------------------------------------------ report
    def public_privacy(self) -> dict[str, Any]:
        """Public figures, recountable from the release and its parameters: the local-DP ε of an
        item bit (p and q alone), the average item support estimated from the release's density
        and the basic privacy at it. The exact s0 and the basic privacy at it are the owner's."""
        p, q = self._pq()
        eps = ldp_epsilon(p, q)
        out: dict[str, Any] = {"ldp_epsilon_per_item": eps if math.isfinite(eps) else "inf"}
        est = self.s0_from_release()
        if est is not None:
            out["s0_estimated_from_release"] = est[0]
            if 0.0 < est[0] < 1.0:
                out["basic_privacy_at_estimated_s0"] = basic_privacy(p, q, s0=est[0])
        out.update(self._person_epsilon(eps))
        return out

    def _person_epsilon(self, eps: float) -> dict[str, Any]:
        """What the release promises a person, from public parameters only: ε per item of a
        person over their baskets, ``max_baskets_per_person`` × ε when the baskets per person were
        bounded; ``"unbounded"`` when a person is known and nothing bounds their baskets
        (docs/emask.md#the-person). Nothing when each record is its own person."""
        bound = self.parameters.get("max_baskets_per_person")
        if isinstance(bound, int) and not isinstance(bound, bool) and bound > 0:
            total = bound * eps
            return {"epsilon_per_person": total if math.isfinite(total) else "inf", "max_baskets_per_person": bound}
        if self.manifest is not None:  # read back: what its manifest said
            said = ((self.manifest.get("summary") or {}).get("privacy") or {}).get("epsilon_per_person")
            return {"epsilon_per_person": said} if said is not None else {}
        if self.people is not None and self.people.known:
            return {"epsilon_per_person": "unbounded (a person's baskets are not bounded: ppdm ingest --max-baskets-per-user)"}
        return {}

    def report_figures(self, original: Any = None, **compute_kwargs: Any) -> Figures:
        """The risk and utility figures of the report.

        Local differential privacy of the distortion (public: depends on p and q only). With
        ``p = P(a 1 stays 1)`` and ``q = P(a 0 stays 0)`` (docs/emask.md#distortion), one
        output bit y of an input bit x has ``P(y=1|x=1) = p``, ``P(y=1|x=0) = 1 − q``,
        ``P(y=0|x=1) = 1 − p``, ``P(y=0|x=0) = q``. The mechanism is ε-LDP for the smallest ε
        with ``P(y|x) <= e^ε P(y|x')`` for every y and every pair x, x', so

            ε_item = ln max( p/(1−q), (1−q)/p, (1−p)/q, q/(1−p) )

        (infinite when one of the four probabilities is 0: that output reveals the bit). Bits are
        distorted independently, so the likelihood ratio of a whole record is the product of the
        ratios of its bits; bits where two records agree contribute 1, and two records differing
        in n items are distinguished with at most ``ε(n) = n · ε_item`` (sequential composition,
        attained when all n differences go the same way). E.g. (p, q) = (0.4, 0.98): the ratios
        are 20, 0.05, 0.612, 1.633, so ε_item = ln 20 ≈ 2.996.

        Ids. Risk: ``ldp_epsilon_item``, ``ldp_epsilon_record`` (line over n),
        ``ldp_epsilon_all_items`` (n = number of items), ``basic_privacy`` (at the s0
        estimated from the release), ``km_audit_release``, ``km_rare_itemsets_release``,
        ``unique_baskets_release``; with the original (or the owner's s0)
        ``basic_privacy_original`` (at the exact s0), ``basic_privacy_items`` (item-weighted over
        the original's supports),
        ``reinterrogated_privacy`` (when the rows can be aligned), ``km_audit_original``,
        ``km_rare_itemsets_original``, ``unique_baskets_original``. Utility (with the original):
        ``itemsets_sigma_plus``, ``itemsets_sigma_minus``, ``itemsets_rho``,
        ``itemsets_support_scatter``, the release side mined with EMASK-Apriori (reconstructed
        supports) at :attr:`report_min_support`.

        The officer's summary (:mod:`.threat`): ``guarantee``, ``protects``, ``learn`` (ε per
        item and per record in words, unique distorted baskets explained), ``attacks`` (item
        inference; with the original, measured item inference and row linkage), ``headline``
        and ``warnings``.
        """
        from ..metrics.report_figures import audit_figures, compute_options, unique_basket_figures, utility_figures
        from .threat import emask_threat

        if isinstance(original, str):
            original = type(self).read_original(original)
        ckw = compute_options(compute_kwargs)
        p, q = self._pq()
        figs = Figures(risk=self._epsilon_figures(p, q))
        est = self.s0_from_release(self.released_ones(**ckw))
        if est is not None and 0.0 < est[0] < 1.0:
            figs.risk.append(
                Value(
                    "basic_privacy",
                    "basic privacy BP (at the average item support estimated from the release)",
                    basic_privacy(p, q, s0=est[0]),
                    unit="%",
                    note=f"probability that a 1 of the original is not reconstructed, at ŝ0 = {est[0]:.4g} "
                    "= (density − (1 − q)) / (p + q − 1) of the release",
                )
            )
        figs += audit_figures(self.data, original, self.report_audit_k, self.report_audit_m, **ckw)
        figs += unique_basket_figures(self.data, original, **ckw)
        if original is None:
            s0 = self.owner_s0()
            if s0 is not None and 0.0 < s0 < 1.0:
                figs.risk.append(self._exact_bp(p, q, s0))
            figs.needs_original.append(
                "the utility figures, the item-weighted and the re-interrogated privacy need the original data"
            )
            return emask_threat(self, figs, None, ckw)
        figs.risk += self._original_privacy(p, q, original, ckw)
        mined: dict[str, Any] = {}
        figs += utility_figures(
            original,
            self.data,
            self.report_min_support,
            max_length=self.report_max_length,
            miner=partial(_emask_miner, p=p, q=q),
            recount=partial(reconstructed_supports, p=p, q=q),
            how="reconstructed supports (EMASK-Apriori)",
            result=mined,
            **ckw,
        )
        figs += self._reinterrogated(p, q, original, mined.get("release_itemsets"), ckw)
        return emask_threat(self, figs, original, ckw)

    def _epsilon_figures(self, p: float, q: float) -> list[Any]:
        eps = ldp_epsilon(p, q)
        d = int(self.parameters.get("n_items") or self.data.n_items)
        out: list[Any] = [
            Value(
                "ldp_epsilon_item",
                "local-DP ε of one item",
                eps,
                note="ln max(p/(1−q), (1−q)/p, (1−p)/q, q/(1−p)); public (p and q only)",
            )
        ]
        if not math.isfinite(eps):
            out.append(
                Value(
                    "ldp_epsilon_all_items",
                    "local-DP ε of a whole record",
                    eps,
                    note="an output bit reveals its input bit with certainty (p or q is 0 or 1)",
                )
            )
            return out
        n = np.unique(np.linspace(1, max(d, 1), min(max(d, 1), self.report_epsilon_points)).round().astype(np.int64))
        out.append(
            Plot(
                "ldp_epsilon_record",
                "Local-DP ε of a record against the number of items it differs in",
                "line",
                [Series("ε(n) = n·ε_item", n.tolist(), (n * eps).tolist())],
                x_label="n (items in which two records differ)",
                y_label="ε",
                note=f"sequential composition over the {d:,} independently distorted item bits",
            )
        )
        out.append(
            Value(
                "ldp_epsilon_all_items",
                "local-DP ε of a whole record (all items)",
                d * eps,
                note=f"{d:,} items × ε_item: the worst case over any two records",
            )
        )
        return out

    def _original_privacy(self, p: float, q: float, original: Any, ckw: dict[str, Any]) -> list[Any]:
        from ..progress import compute

        (sup,) = compute(original.item_supports_lazy(), **ckw)
        s = np.asarray(sup, np.float64) / max(original.n_transactions, 1)
        if s.sum() <= 0:
            return []
        universe = int(self.parameters.get("n_items") or s.size)
        if universe > s.size:  # a catalogue: its items no basket holds have support 0
            s = np.r_[s, np.zeros(universe - s.size)]
        out = [self._exact_bp(p, q, float(s.mean()))] if 0.0 < s.mean() < 1.0 else []
        return out + [
            Value(
                "basic_privacy_items",
                "basic privacy BP (item-weighted over the original's supports)",
                basic_privacy(p, q, supports=np.clip(s, 0.0, 1.0)),
                about="original",
                unit="%",
                note="weights every item by its support; lower than BP at s0 when supports vary (Jensen)",
            )
        ]

    @staticmethod
    def _exact_bp(p: float, q: float, s0: float) -> Value:
        return Value(
            "basic_privacy_original",
            "basic privacy BP (at the original's exact average item support)",
            basic_privacy(p, q, s0=s0),
            about="original",
            unit="%",
            note=f"at s0 = {s0:.6g}, a figure of the original (with N and the items it gives its number of ones)",
        )

    def _reinterrogated(self, p: float, q: float, original: Any, itemsets: Any, ckw: dict[str, Any]) -> Figures:
        from ..progress import compute
        from .audit import aligned_distortion
        from .privacy import reinterrogated_privacy

        if itemsets is None or not len(itemsets):
            return Figures(notes=["re-interrogated privacy skipped: no itemset mined from the release"])
        aligned = aligned_distortion(original, self, self.key)
        if aligned is None:
            return Figures(
                notes=[
                    "re-interrogated privacy needs the rows in the original's order: "
                    "the release was written in keyed order (give the key)"
                ]
            )
        if "item_catalogue" in self.parameters:
            from .audit import on_universe

            try:
                original = on_universe(original, aligned)
            except InvalidParameter:  # a basket CSV names only the items its rows hold
                return Figures(notes=["re-interrogated privacy skipped: the release does not list every item of the original"])
        (nnz,) = compute(nnz_lazy(original), **ckw)
        cells = original.n_transactions * original.n_items
        s0 = int(nnz[0]) / cells if cells else 0.0
        if not 0.0 < s0 < 1.0:
            return Figures(notes=["re-interrogated privacy skipped: the original has no ones (or only ones)"])
        bp = basic_privacy(p, q, s0=s0)
        rp = reinterrogated_privacy(original, aligned, itemsets, bp, **ckw)
        return Figures(
            risk=[
                Value(
                    "reinterrogated_privacy",
                    "re-interrogated privacy RP",
                    rp,
                    about="comparison",
                    unit="%",
                    note=f"after the {len(itemsets):,} itemsets mined from the release "
                    f"(min_support {self.report_min_support:g}) are disclosed; BP = {bp:.2f}% at s0 = {s0:.4g}",
                )
            ]
        )
