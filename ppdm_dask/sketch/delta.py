"""δ-anonymous sketches (SPEC §1.4, corrected Fig. 1 of Aggarwal & Yu)."""

from __future__ import annotations

import numbers
from typing import Any, Iterable

import dask.array as da
import numpy as np
import scipy.sparse as sp

from ..errors import InvalidParameter
from ..random import KeyLike
from . import _kernels as K
from .generator import SketchGenerator
from .sketches import SketchArray, _resolve_generator, sketch

__all__ = ["DeltaAnonymizer", "anonymize_record", "delta_components", "check_delta"]


def check_delta(delta: float, m_max: int) -> tuple[float, int]:
    """Validate ``delta > 0`` (finite) and ``m_max >= 1``."""
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not np.isfinite(delta) or delta <= 0:
        raise InvalidParameter(f"delta must be a positive finite number, got {delta!r}")
    if isinstance(m_max, bool) or not isinstance(m_max, numbers.Integral) or m_max < 1:
        raise InvalidParameter(f"m_max must be an integer >= 1, got {m_max!r}")
    return float(delta), int(m_max)


def _block_components(block: sp.csr_array, weights: sp.csr_array | None, delta: float, m_max: int) -> np.ndarray:
    if weights is not None:
        return K.delta_components(weights.indptr, weights.data, delta, m_max)
    return K.delta_components(block.indptr, np.ones(block.indices.size), delta, m_max)


def delta_components(tx: Any, delta: float, m_max: int = 256) -> da.Array:
    """Lazy int32 ``(N,)``: the δ-anonymous number of components of every record (0 =
    suppressed), one MAP task per row block, aligned with ``tx``'s row chunks."""
    delta, m_max = check_delta(delta, m_max)
    meta = np.empty(0, np.int32)
    if tx.weights is not None:
        return da.map_blocks(_block_components, tx.blocks, tx.weights, delta, m_max,
                             drop_axis=1, dtype=np.int32, meta=meta)
    return tx.blocks.map_blocks(_block_components, None, delta, m_max, drop_axis=1, dtype=np.int32, meta=meta)


class DeltaAnonymizer:
    """Publish each record as a δ-anonymous sketch (SPEC §1.4).

    Every record x gets the LARGEST admissible number of components
    ``m = min(ifloor(V_x / delta), m_max)`` with ``V_x = |x|^2 - max_t x_t^2``; records with
    ``V_x < delta`` (in particular every record with at most one non-zero) are suppressed
    (m = 0). No other record is involved, so this is a pure MAP.

    Parameters
    ----------
    delta : float, default 0.2
        Minimum variance of the reconstruction of any attribute, in units of x^2 (data are not
        normalised: for unit-norm rows every delta >= 1 suppresses everything).
    m_max : int, default 256
        Cap on the components per record (capping only adds privacy).
    key : Key, int or bytes, optional
        Secret key from which the PUBLIC generator seed is derived one-way; mutually
        exclusive with ``generator``. A fresh OS-entropy key when both are omitted.
    generator : SketchGenerator, optional
        Reuse a generator (e.g. to sketch a test set comparably with a training set).

    Attributes
    ----------
    generator_ : SketchGenerator
        The public generator used (set by :meth:`fit`).
    report_ : dict
        ``n_records``, ``n_suppressed``, ``mean_components`` (over kept records), ``delta``,
        ``m_max`` of the last :meth:`transform`. Computed lazily on first access, from the
        component counts only (one O(nnz) pass, no sketching). After writing the sketches,
        the same figures are in the manifest returned by :meth:`SketchArray.to_parquet`; after
        :meth:`SketchArray.persist`, :meth:`report` gives them at no cost.

    Examples
    --------
    >>> sk = DeltaAnonymizer(delta=0.3, key=my_key).fit_transform(tx)   # doctest: +SKIP
    >>> manifest = sk.to_parquet("s3://bucket/sketches")                  # doctest: +SKIP
    """

    def __init__(self, delta: float = 0.2, m_max: int = 256, key: KeyLike = None,
                 generator: SketchGenerator | None = None) -> None:
        self.delta = delta
        self.m_max = m_max
        self.key = key
        self.generator = generator

    def __repr__(self) -> str:  # never shows the key
        return f"DeltaAnonymizer(delta={self.delta!r}, m_max={self.m_max!r})"

    def fit(self, tx: Any = None) -> "DeltaAnonymizer":
        """Validate the parameters and fix ``generator_`` (the data are not needed)."""
        check_delta(self.delta, self.m_max)
        self.generator_ = _resolve_generator(self.key, self.generator)
        return self

    def transform(self, tx: Any) -> SketchArray:
        """δ-anonymous sketches of ``tx`` with the fitted generator (lazy)."""
        if not hasattr(self, "generator_"):
            raise InvalidParameter("call fit() or fit_transform() first")
        delta, m_max = check_delta(self.delta, self.m_max)
        m = delta_components(tx, delta, m_max)
        out = sketch(tx, m, generator=self.generator_, m_max=m_max)
        out.metadata.update({"method": "delta", "delta": delta, "m_max": m_max})
        self._last = out
        self.__dict__.pop("_report", None)
        return out

    def fit_transform(self, tx: Any) -> SketchArray:
        """:meth:`fit` then :meth:`transform`: lazy δ-anonymous sketches of ``tx``."""
        return self.fit(tx).transform(tx)

    def report(self, sketches: SketchArray | None = None, **compute_kwargs: Any) -> dict[str, Any]:
        """Suppression and component figures of ``sketches`` (default: the last transform)."""
        if sketches is None:
            if not hasattr(self, "_last"):
                raise InvalidParameter("nothing transformed yet")
            sketches = self._last
        return {**sketches.summary(**compute_kwargs), "delta": float(self.delta), "m_max": int(self.m_max)}

    @property
    def report_(self) -> dict[str, Any]:
        """See the class docstring (computed once, then cached)."""
        if "_report" not in self.__dict__:
            self._report = self.report()
        return self._report


def anonymize_record(
    items: Iterable[int],
    values: Iterable[float] | None = None,
    *,
    delta: float,
    generator: SketchGenerator,
    m_max: int = 256,
) -> np.ndarray:
    """δ-anonymous sketch of ONE record at collection time (the data holder never sends x).

    Parameters
    ----------
    items : iterable of int
        Column ids of the non-zero attributes (duplicates: a set for binary data; their
        values are added when ``values`` is given).
    values : iterable of float, optional
        x_t of each item (default 1).
    delta, m_max
        As in :class:`DeltaAnonymizer`.
    generator : SketchGenerator
        The generator shared by all records (e.g. ``DeltaAnonymizer(...).fit().generator_``).

    Returns
    -------
    ndarray
        float64 sketch of length m (0 when the record is suppressed).
    """
    delta, m_max = check_delta(delta, m_max)
    ids = np.asarray(list(items))
    if ids.size and ids.dtype.kind not in "iu":
        raise InvalidParameter("item ids must be integers")
    ids = ids.astype(np.int64)
    if values is None:
        cols = np.unique(ids)
        x = np.ones(cols.size)
    else:
        vals = np.asarray(list(values), dtype=np.float64)
        if vals.shape != ids.shape:
            raise InvalidParameter("values must have one entry per item")
        if not np.all(np.isfinite(vals)):
            raise InvalidParameter("values must be finite")
        cols, inv = np.unique(ids, return_inverse=True)
        x = np.bincount(inv.ravel(), weights=vals, minlength=cols.size)
    keep = x != 0
    cols, x = generator.check_items(cols[keep]), x[keep]
    indptr = np.array([0, cols.size], dtype=np.int64)
    m = int(K.delta_components(indptr, x, delta, m_max)[0])
    if m == 0:
        return np.zeros(0, dtype=np.float64)
    return generator.sketch_csr(indptr, cols, x, 1, m, m)[0]
