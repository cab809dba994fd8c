"""The EMASK release: distorted transactions with the public distortion parameters, and the
checks that re-verify them from the written files.

What can be checked without the original
    A distortion leaves one statistical fingerprint that anybody can recount: the density of
    ones. With ``s0`` the average item support of the original, a (p, q) distortion has
    ``E[density] = s0 p + (1 - s0)(1 - q)``, so ``s0 = (density - (1 - q)) / (p + q - 1)`` is
    estimated from the release alone. It must be a support in [0, 1] (within 6 standard errors of
    the binomial noise); rows that were never distorted usually give an estimate far outside
    (e.g. 0.01 dense data released as is under q = 0.98 estimate s0 < 0). The basic privacy at
    the most favourable s0 consistent with the release must meet the floor.

What is checked against the original
    Same number of rows and the same items; the recorded s0 and the basic privacy at the exact
    s0; and the number of ones in the release against its binomial law given the original
    (rows are in a keyed random order, so only aggregates can be compared without the key).

Report figures (:meth:`DistortedRelease.report_figures`)
    Risk from the public parameters alone: the local-DP ε of one item bit and of a record as a
    function of the number of items in which two records differ, and the basic privacy at the
    recorded s0; from the release, its k^m audit curve and unique-basket share; with the
    original, the item-weighted basic privacy, the re-interrogated privacy (when the rows can be
    aligned with the original: an unwritten release, or the owner's key) and the original's
    curve and share. Utility with the original: the frequent itemsets mined from the release with
    reconstructed supports against the original's.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, ClassVar

import numpy as np

from ..errors import InvalidParameter, PPDMError
from ..release import Check, Figures, Plot, Release, Series, TransactionRelease, Value
from .distortion import check_pq
from .privacy import basic_privacy, ldp_epsilon

__all__ = ["DistortedRelease", "FLOORS", "Z_MAX", "nnz_lazy", "pq_from_manifest", "reconstructed_supports"]

#: The privacy floors of an EMASK release (names accepted by ``allow_weak``).
FLOORS = ("basic privacy",)
#: Largest admissible |z-score| of a count against its binomial law (≈ 1e-9 false alarms).
Z_MAX = 6.0


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


def _bp_interval(p: float, q: float, lo: float, hi: float) -> float:
    """Largest basic privacy over supports in ``[lo, hi]`` (inside (0, 1)): the most favourable
    reading of a statistical estimate of s0."""
    eps = 1e-12
    lo, hi = max(lo, eps), min(hi, 1.0 - eps)
    grid = np.unique(np.r_[np.linspace(lo, hi, 33), lo, hi])
    return max(basic_privacy(p, q, s0=float(s)) for s in grid)


def _emask_miner(tx: Any, min_support: float | int, *, p: float, q: float, **kwargs: Any) -> Any:
    from .mining import mine

    return mine(tx, p, q, min_support, **kwargs)


def reconstructed_supports(tx: Any, itemsets: list[frozenset], *, p: float, q: float, client: Any = None,
                           progress: bool = False) -> np.ndarray:
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
    subsets = sorted({c for _, ids in known for j in range(1, len(ids) + 1) for c in combinations(ids, j)}, key=lambda c: (len(c), c))
    counts = exact_supports(tx, [frozenset(str(labels[i]) for i in c) for c in subsets], {"client": client, "progress": progress})
    count_of = dict(zip(subsets, counts.tolist()))
    for i, ids in known:
        sigma = [np.array([float(tx.n_transactions)])] + [np.array([sum(count_of[c] for c in combinations(ids, size))])
                                                         for size in range(1, len(ids) + 1)]
        out[i] = float(closed_form_estimate(sigma, len(ids), p, q)[0])
    return out


class DistortedRelease(TransactionRelease):
    """An EMASK/MASK release: ``data`` is the distorted TransactionArray.

    Parameters (public, in the manifest): ``p``, ``q``, ``privacy_floor`` (percent), ``n_items``
    and ``s0``, the average item support of the original. ``s0`` is one aggregate of the whole
    input (nnz / (N·d)); EMASK mining and ``emask choose`` need it and the release reveals it
    anyway up to binomial noise through its density, so publishing it costs no privacy.
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

    # ------------------------------------------------------------------ parameters
    def mean_row_length(self) -> float | None:
        """Expected length of a distorted row: p·s0·n + (1 - q)·(1 - s0)·n over n items."""
        try:
            p, q = self._pq()
            s0, n = float(self.parameters["s0"]), float(self.data.n_items)
        except (KeyError, TypeError, ValueError, PPDMError):
            return None
        return p * s0 * n + (1.0 - q) * (1.0 - s0) * n

    def _pq(self) -> tuple[float, float]:
        return check_pq(self.parameters.get("p"), self.parameters.get("q"))

    def _floor_value(self) -> float:
        floor = self.parameters.get("privacy_floor")
        if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0.0 <= float(floor) <= 100.0:
            raise InvalidParameter(f"privacy_floor must be a percentage in [0, 100], got {floor!r}")
        return float(floor)

    def _overridden(self, ok: bool) -> bool:
        return not ok and "basic privacy" in self.overrides

    def floor_checks(self) -> list[Check]:
        """``basic privacy``: BP(p, q) at the recorded s0 of the input >= ``privacy_floor``."""
        try:
            p, q = self._pq()
            floor = self._floor_value()
            s0 = float(self.parameters.get("s0"))
            bp = basic_privacy(p, q, s0=s0)
        except (InvalidParameter, TypeError, ValueError) as exc:
            return [Check("distortion parameters", False, detail=str(exc))]
        return [self.floor("basic privacy", bp >= floor, bp, floor, detail=f"at s0 = {s0:.4g}, the average item support of the input")]

    # ------------------------------------------------------------------ guarantee
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
        checks = [Check("distortion parameters", items_ok, figure=f"p={p}, q={q}, {recorded} items",
                        detail="" if items_ok else f"the data have {tx.n_items} items")]
        if not items_ok:
            return checks
        lazy = [nnz_lazy(tx)] + ([nnz_lazy(original)] if original is not None else [])
        counts = compute(*lazy, **compute_kwargs)
        nnz = int(counts[0][0])
        checks += self._density_checks(p, q, floor, nnz, recorded)
        if original is not None:
            checks += self._original_checks(p, q, floor, nnz, original, int(counts[1][0]), recorded)
        return checks

    def _is_csv(self) -> bool:
        return (self.manifest or {}).get("release", {}).get("output") == "csv"

    def _density_checks(self, p: float, q: float, floor: float, nnz: int, n_items: int) -> list[Check]:
        n_bits = self.data.n_transactions * n_items
        if n_bits == 0:
            return [Check("s0 from the release density", True, detail="no rows: nothing to estimate")]
        delta = p + q - 1.0
        s_hat = (nnz / n_bits - (1.0 - q)) / delta
        s = min(max(s_hat, 0.0), 1.0)
        sd = math.sqrt((s * p * (1 - p) + (1 - s) * q * (1 - q)) / n_bits) / abs(delta)
        tol = Z_MAX * sd + 1e-12
        ok = -tol <= s_hat <= 1.0 + tol
        checks = [Check("s0 from the release density", ok, figure=s_hat, threshold="[0, 1]",
                        detail=f"(density - (1 - q)) / (p + q - 1), ± {tol:.3g} ({Z_MAX:g} standard errors)"
                        + ("" if ok else "; the rows are not a (p, q) distortion of any data"))]
        if ok:
            bp = _bp_interval(p, q, s_hat - tol, s_hat + tol)
            checks.append(Check("basic privacy (estimated from the release)", bp >= floor, figure=bp, threshold=floor,
                                detail=f"at the most favourable s0 in [{max(s_hat - tol, 0):.4g}, {min(s_hat + tol, 1):.4g}]",
                                overridden=self._overridden(bp >= floor)))
        return checks

    def _original_checks(self, p: float, q: float, floor: float, nnz: int, original: Any, nnz_t: int, n_items: int) -> list[Check]:
        tx = self.data
        n, d = original.n_transactions, original.n_items
        if self._is_csv():
            labels_ok = bool(np.isin(tx.vocabulary.labels, original.vocabulary.labels).all())
        else:
            labels_ok = tx.vocabulary == original.vocabulary
        same = tx.n_transactions == n and n_items == d and labels_ok
        checks = [Check("same rows and items as the original", same, figure=f"{tx.n_transactions} x {n_items}",
                        threshold=f"{n} x {d}", detail="" if same else "the release is not a distortion of this original")]
        if not same or n * d == 0:
            return checks
        s0 = nnz_t / (n * d)
        recorded = float(self.parameters.get("s0", float("nan")))
        checks.append(Check("s0 of the original", math.isclose(s0, recorded, rel_tol=1e-9, abs_tol=1e-15), figure=s0,
                            threshold=recorded, detail="the recorded s0 against nnz / (N d) of the original"))
        if 0.0 < s0 < 1.0:
            bp = basic_privacy(p, q, s0=s0)
            checks.append(Check("basic privacy (original)", bp >= floor, figure=bp, threshold=floor, detail=f"at the exact s0 = {s0:.4g}",
                                overridden=self._overridden(bp >= floor)))
        mean = p * nnz_t + (1.0 - q) * (n * d - nnz_t)
        var = p * (1 - p) * nnz_t + q * (1 - q) * (n * d - nnz_t)
        z = abs(nnz - mean) / math.sqrt(var) if var > 0 else (0.0 if nnz == mean else math.inf)
        checks.append(Check("ones consistent with a (p, q) distortion of the original", z < Z_MAX, figure=z, threshold=f"< {Z_MAX:g}",
                            detail=f"|z| of {nnz:,} ones against the binomial mean {mean:,.1f}"))
        return checks

    # ------------------------------------------------------------------ report
    def public_privacy(self) -> dict[str, Any]:
        """Public figures: the local-DP ε of an item bit, a function of (p, q) alone."""
        eps = ldp_epsilon(float(self.parameters["p"]), float(self.parameters["q"]))
        return {"ldp_epsilon_per_item": eps if math.isfinite(eps) else "inf"}

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
        ``ldp_epsilon_all_items`` (n = number of items), ``basic_privacy`` (at the recorded
        s0), ``km_audit_release``, ``km_rare_itemsets_release``, ``unique_baskets_release``; with
        the original ``basic_privacy_items`` (item-weighted over the original's supports),
        ``reinterrogated_privacy`` (when the rows can be aligned), ``km_audit_original``,
        ``km_rare_itemsets_original``, ``unique_baskets_original``. Utility (with the original):
        ``itemsets_sigma_plus``, ``itemsets_sigma_minus``, ``itemsets_rho``,
        ``itemsets_support_scatter``, the release side mined with EMASK-Apriori (reconstructed
        supports) at :attr:`report_min_support`.
        """
        from ..metrics.report_figures import audit_figures, compute_options, unique_basket_figures, utility_figures

        if isinstance(original, str):
            original = type(self).read_original(original)
        ckw = compute_options(compute_kwargs)
        p, q = self._pq()
        figs = Figures(risk=self._epsilon_figures(p, q))
        s0 = self.parameters.get("s0")
        if isinstance(s0, (int, float)) and 0.0 < float(s0) < 1.0:
            figs.risk.append(Value("basic_privacy", "basic privacy BP (at the recorded average item support)",
                                   basic_privacy(p, q, s0=float(s0)), unit="%",
                                   note=f"probability that a 1 of the original is not reconstructed, at s0 = {float(s0):.4g}"))
        figs += audit_figures(self.data, original, self.report_audit_k, self.report_audit_m, **ckw)
        figs += unique_basket_figures(self.data, original, **ckw)
        if original is None:
            figs.notes.append("the utility figures, the item-weighted and the re-interrogated privacy need the original data")
            return figs
        figs.risk += self._original_privacy(p, q, original, ckw)
        mined: dict[str, Any] = {}
        figs += utility_figures(original, self.data, self.report_min_support, max_length=self.report_max_length,
                                miner=partial(_emask_miner, p=p, q=q), recount=partial(reconstructed_supports, p=p, q=q),
                                how="reconstructed supports (EMASK-Apriori)", result=mined, **ckw)
        figs += self._reinterrogated(p, q, original, mined.get("release_itemsets"), ckw)
        return figs

    def _epsilon_figures(self, p: float, q: float) -> list[Any]:
        eps = ldp_epsilon(p, q)
        d = int(self.parameters.get("n_items") or self.data.n_items)
        out: list[Any] = [Value("ldp_epsilon_item", "local-DP ε of one item", eps,
                                note="ln max(p/(1−q), (1−q)/p, (1−p)/q, q/(1−p)); public (p and q only)")]
        if not math.isfinite(eps):
            out.append(Value("ldp_epsilon_all_items", "local-DP ε of a whole record", eps,
                             note="an output bit reveals its input bit with certainty (p or q is 0 or 1)"))
            return out
        n = np.unique(np.linspace(1, max(d, 1), min(max(d, 1), self.report_epsilon_points)).round().astype(np.int64))
        out.append(Plot("ldp_epsilon_record", "Local-DP ε of a record against the number of items it differs in", "line",
                        [Series("ε(n) = n·ε_item", n.tolist(), (n * eps).tolist())], x_label="n (items in which two records differ)",
                        y_label="ε", note=f"sequential composition over the {d:,} independently distorted item bits"))
        out.append(Value("ldp_epsilon_all_items", "local-DP ε of a whole record (all items)", d * eps,
                         note=f"{d:,} items × ε_item: the worst case over any two records"))
        return out

    def _original_privacy(self, p: float, q: float, original: Any, ckw: dict[str, Any]) -> list[Any]:
        from ..progress import compute

        (sup,) = compute(original.item_supports_lazy(), **ckw)
        s = np.asarray(sup, np.float64) / max(original.n_transactions, 1)
        if s.sum() <= 0:
            return []
        return [Value("basic_privacy_items", "basic privacy BP (item-weighted over the original's supports)",
                      basic_privacy(p, q, supports=np.clip(s, 0.0, 1.0)), about="original", unit="%",
                      note="weights every item by its support; lower than BP at s0 when supports vary (Jensen)")]

    def _reinterrogated(self, p: float, q: float, original: Any, itemsets: Any, ckw: dict[str, Any]) -> Figures:
        from ..progress import compute
        from .audit import _aligned_distortion
        from .privacy import reinterrogated_privacy

        if itemsets is None or not len(itemsets):
            return Figures(notes=["re-interrogated privacy skipped: no itemset mined from the release"])
        aligned = _aligned_distortion(original, self, self._key)
        if aligned is None:
            return Figures(notes=["re-interrogated privacy needs the rows in the original's order: "
                                  "the release was written in keyed order (give the key)"])
        (nnz,) = compute(nnz_lazy(original), **ckw)
        cells = original.n_transactions * original.n_items
        s0 = int(nnz[0]) / cells if cells else 0.0
        if not 0.0 < s0 < 1.0:
            return Figures(notes=["re-interrogated privacy skipped: the original has no ones (or only ones)"])
        bp = basic_privacy(p, q, s0=s0)
        rp = reinterrogated_privacy(original, aligned, itemsets, bp, **ckw)
        return Figures(risk=[Value("reinterrogated_privacy", "re-interrogated privacy RP", rp, about="comparison", unit="%",
                                   note=f"after the {len(itemsets):,} itemsets mined from the release "
                                        f"(min_support {self.report_min_support:g}) are disclosed; BP = {bp:.2f}% at s0 = {s0:.4g}")])
