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
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from ..errors import InvalidParameter
from ..release import Check, TransactionRelease
from .distortion import check_pq
from .privacy import basic_privacy

__all__ = ["DistortedRelease", "FLOORS", "Z_MAX", "nnz_lazy", "pq_from_manifest"]

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


class DistortedRelease(TransactionRelease):
    """An EMASK/MASK release: ``data`` is the distorted TransactionArray.

    Parameters (public, in the manifest): ``p``, ``q``, ``privacy_floor`` (percent), ``n_items``
    and ``s0``, the average item support of the original. ``s0`` is one aggregate of the whole
    input (nnz / (N·d)); EMASK mining and ``emask choose`` need it and the release reveals it
    anyway up to binomial noise through its density, so publishing it costs no privacy.
    """

    family: ClassVar[str] = "emask"

    # ------------------------------------------------------------------ parameters
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
