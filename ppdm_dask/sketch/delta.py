"""δ-anonymous sketches (corrected Fig. 1 of Aggarwal & Yu; docs/sketches.md#δ-anonymity)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np
import scipy.sparse as sp

from ..base import Transformer, check_is_fitted
from ..constraints import Interval, validate
from ..errors import InvalidParameter
from ..random import KeyLike
from . import _kernels as K
from .generator import SketchGenerator
from .sketches import resolve_generator, sketch

if TYPE_CHECKING:
    from .release import SketchRelease

__all__ = ["DeltaAnonymizer", "anonymize_record", "delta_components", "check_delta"]


#: the parameters of delta-anonymization (:mod:`ppdm_dask.constraints`)
DELTA_CONSTRAINTS: dict[str, list[Any]] = {
    "delta": [Interval(float, 0, None, closed="neither")],
    "m_max": [Interval(int, 1, None)],
}


def check_delta(delta: float, m_max: int) -> tuple[float, int]:
    """Validate ``delta > 0`` (finite) and ``m_max >= 1``."""
    v = validate(DELTA_CONSTRAINTS, {"delta": delta, "m_max": m_max})
    return v["delta"], v["m_max"]


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
        return da.map_blocks(_block_components, tx.blocks, tx.weights, delta, m_max, drop_axis=1, dtype=np.int32, meta=meta)
    return tx.blocks.map_blocks(_block_components, None, delta, m_max, drop_axis=1, dtype=np.int32, meta=meta)


class DeltaAnonymizer(Transformer):
    """Publish each record as a δ-anonymous sketch (docs/sketches.md#δ-anonymity).

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
        Secret key: the PUBLIC generator seed is derived from it one-way, and it orders the rows
        of the written release. Mutually exclusive with ``generator``; a fresh OS-entropy key
        drawn at :meth:`fit` when omitted (``key_``).
    generator : SketchGenerator, optional
        Reuse a generator (e.g. to sketch a test set comparably with a training set).
    keep_suppressed : bool, default False
        Write suppressed records as empty rows (for row-aligned releases); by default a
        suppressed record publishes nothing, not even its label.
    keep_record_ids : bool, default False
        Publish a ``record_id`` column of the input (dropped by default).
    allow_weak : bool or sequence of str
        Privacy floors explicitly overridden (recorded in the manifest).
    ledger : "default", Ledger, str or None
        Where the release is recorded and composed with the earlier releases of its input
        (docs/sketches.md#repeated-releases): ``"default"`` the user's ledger, a
        :class:`~ppdm_dask.ledger.Ledger` or its location, None to opt out (said in the manifest).

    Attributes
    ----------
    generator_ : SketchGenerator
        The public generator used.
    key_ : Key
        The key of every release of this fit (resolved at :meth:`fit`).
    report_ : dict
        ``n_records``, ``n_suppressed``, ``mean_components`` (over kept records), ``delta``,
        ``m_max`` of the fitted data (one O(nnz) pass over the component counts, no sketching).

    Examples
    --------
    >>> release = DeltaAnonymizer(delta=0.3, key=my_key).fit_transform(tx)   # doctest: +SKIP
    >>> manifest = release.write("s3://bucket/sketches")                      # doctest: +SKIP
    >>> sketches = release.data                                               # doctest: +SKIP
    """

    def __init__(
        self,
        delta: float = 0.2,
        m_max: int = 256,
        key: KeyLike = None,
        generator: SketchGenerator | None = None,
        keep_suppressed: bool = False,
        keep_record_ids: bool = False,
        allow_weak: Any = False,
        ledger: Any = "default",
    ) -> None:
        self.delta = delta
        self.m_max = m_max
        self.key = key
        self.generator = generator
        self.keep_suppressed = keep_suppressed
        self.keep_record_ids = keep_record_ids
        self.allow_weak = allow_weak
        self.ledger = ledger

    _parameter_constraints = DELTA_CONSTRAINTS

    def _parameters(self) -> dict[str, Any]:
        v = self.validate_params()
        delta, m_max = v["delta"], v["m_max"]
        return {
            "delta": delta,
            "m_max": m_max,
            "keep_suppressed": bool(self.keep_suppressed),
            "keep_record_ids": bool(self.keep_record_ids),
        }

    def fit(self, X: Any = None, *, client: Any = None, progress: bool = False) -> DeltaAnonymizer:
        """Validate the parameters, fix ``generator_`` and count the suppressed records of ``X``
        (``X=None``: only the generator, e.g. for :func:`anonymize_record` at collection time)."""
        from ..data.digest import content_digest
        from ..data.sources import collection_name
        from .release import SketchRelease

        params = self._parameters()
        # refuse before any pass over the data
        self._overrides = SketchRelease.overrides_of("delta", params, self.allow_weak)
        self._resolve_key()
        # the generator is the release's own (key + identity, which names the input by its
        # content digest): one key never gives two releases the same random vectors. Fitted
        # without data (records sketched one at a time), the identity has no input.
        self._input_digest = None if X is None else content_digest(X, client=client, progress=progress)
        resolve_generator(self.key, self.generator)  # refuses key and generator together
        self.generator_ = (
            resolve_generator(None, self.generator)
            if self.generator is not None
            else resolve_generator(SketchRelease.streams_for(self.key_, "delta", params, self._input_digest), None)
        )
        if X is None:
            self.report_, self._fitted, self._fitted_X = {"delta": params["delta"], "m_max": params["m_max"]}, None, None
            return self
        self.report_ = self.report(delta_components(X, params["delta"], params["m_max"]), client=client, progress=progress)
        self._fitted = collection_name(X)
        self._fitted_X = X
        return self

    def release(self, *, client: Any = None, progress: bool = False) -> SketchRelease:
        """The release of the δ-anonymous sketches of the fitted data (lazy)."""
        check_is_fitted(self, "generator_")
        if self._fitted_X is None:
            raise InvalidParameter("this DeltaAnonymizer was fitted without data: transform(X) sketches the records given")
        return self.transform(self._fitted_X)

    def transform(self, X: Any) -> SketchRelease:
        """The release of δ-anonymous sketches of ``X`` with the fitted generator (lazy);
        ``.data`` is the :class:`~.sketches.SketchArray` in input order."""
        from ..data.sources import collection_name, source_of
        from .release import SketchRelease, sketch_figures

        check_is_fitted(self, "generator_")
        params = self._parameters()
        m = delta_components(X, params["delta"], params["m_max"])
        out = sketch(X, m, generator=self.generator_, m_max=params["m_max"])
        out.metadata.update({"method": "delta", "delta": params["delta"], "m_max": params["m_max"]})
        report = self.report_ if self._fitted is not None and collection_name(X) == self._fitted else self.report(m)
        release = SketchRelease(
            out,
            method="delta",
            parameters=params,
            figures=sketch_figures(report, {"delta": params["delta"]}),
            key=self.key_,
            source=source_of(X),
            input_info={"rows": int(X.n_transactions)},
            overrides=self._overrides,
            input_digest=self._input_digest,
            ledger=self.ledger,
            ledger_input=X,
        )  # each record's V_x for the ledger (docs/sketches.md#repeated-releases)
        return release

    def report(self, sketches: Any, **compute_kwargs: Any) -> dict[str, Any]:
        """Suppression and component figures of ``sketches`` (a SketchArray, a SketchRelease or
        a dask array of component counts)."""
        from ..progress import compute

        m = getattr(getattr(sketches, "data", sketches), "m", sketches)
        compute_kwargs.setdefault("progress", False)
        n_supp, total = compute((m == 0).sum(), m.astype(np.int64).sum(), **compute_kwargs)
        n = int(m.shape[0])
        kept = n - int(n_supp)
        return {
            "n_records": n,
            "n_suppressed": int(n_supp),
            "mean_components": float(total / kept) if kept else 0.0,
            "delta": float(self.delta),
            "m_max": int(self.m_max),
        }


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
