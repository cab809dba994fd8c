"""The shared, public ±1 generator of the sketches (docs/sketches.md#the-shared-sign-generator)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import InvalidParameter
from ..random import KeyLike, as_key
from . import _kernels as K

__all__ = ["SketchGenerator", "SCHEME", "MATRIX_SCHEME"]

#: Scheme id of the degree-3 polynomial hash over F_(2^31-1) (4-wise independent signs).
SCHEME = "poly4-mersenne31"
#: Scheme id of an explicit sign matrix (test oracle only).
MATRIX_SCHEME = "explicit-matrix"


class SketchGenerator:
    """The family of ±1 vectors ``r^1, r^2, ...`` shared by all sketches that are compared.

    Parameters
    ----------
    seed : int
        PUBLIC non-negative seed: it is published with the sketches, because attribute
        reconstruction needs ``r_t^j``; privacy is statistical
        (docs/sketches.md#clarification-one-generator-shared-by-all-records). Use
        :meth:`from_key` to derive it one-way from a secret key.

    Notes
    -----
    Component ``j`` (1-based) depends only on ``(seed, j)`` (prefix stable), and its signs are
    4-wise independent across items. Coefficients are cached; a pickle carries the cache (a few
    KB), so workers do not re-derive them.
    """

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or int(seed) < 0:
            raise InvalidParameter(f"the generator seed must be a non-negative integer, got {seed!r}")
        self._seed: int | None = int(seed)
        self._matrix: np.ndarray | None = None
        self._coef = np.empty((0, 4), dtype=np.int64)
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_key(cls, key: KeyLike = None) -> SketchGenerator:
        """Derive the public seed one-way from a secret key (``None``: a fresh OS-entropy key);
        publishing the seed reveals nothing about the key."""
        return cls(int(as_key(key).digest("sketch-generator")[:32], 16))

    @classmethod
    def from_matrix(cls, matrix: Any) -> SketchGenerator:
        """Explicit signs ``R`` in {±1}^(m x d): component j uses row j-1 (for exact
        enumeration tests). Sketches then have at most m components over items ``0..d-1``."""
        r = np.asarray(matrix)
        if r.ndim != 2 or not np.all(np.isin(r, (-1, 1))):
            raise InvalidParameter("the sign matrix must be 2-D with entries -1 or +1")
        gen = cls.__new__(cls)
        gen._seed = None
        gen._matrix = np.ascontiguousarray(r, dtype=np.int8)
        gen._matrix.setflags(write=False)
        gen._coef = np.empty((0, 4), dtype=np.int64)
        gen._lock = threading.Lock()
        return gen

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any]) -> SketchGenerator:
        """Inverse of :meth:`to_metadata`."""
        scheme = metadata.get("scheme")
        if scheme == SCHEME:
            if int(metadata.get("prime", K.PRIME)) != K.PRIME:
                raise InvalidParameter(f"unsupported prime {metadata['prime']} for {SCHEME}")
            try:
                return cls(int(str(metadata["seed"])))
            except (KeyError, ValueError):
                raise InvalidParameter("generator metadata without a valid seed") from None
        if scheme == MATRIX_SCHEME:
            return cls.from_matrix(np.asarray(metadata["matrix"], dtype=np.int8))
        raise InvalidParameter(f"unknown sketch generator scheme {scheme!r}")

    # ------------------------------------------------------------------ properties
    @property
    def scheme(self) -> str:
        """``"poly4-mersenne31"`` or ``"explicit-matrix"``."""
        return SCHEME if self._matrix is None else MATRIX_SCHEME

    @property
    def seed(self) -> int | None:
        """The public seed (None for an explicit matrix)."""
        return self._seed

    @property
    def max_components(self) -> int | None:
        """Most components available (rows of an explicit matrix), None if unbounded."""
        return None if self._matrix is None else int(self._matrix.shape[0])

    @property
    def n_items(self) -> int | None:
        """Item ids must be below this (``PRIME`` or the columns of an explicit matrix)."""
        return K.PRIME if self._matrix is None else int(self._matrix.shape[1])

    # ------------------------------------------------------------------ signs
    def coefficients(self, m: int) -> np.ndarray:
        """Polynomial coefficients ``(a0, a1, a2, a3)`` of components 1..m, int64 ``(m, 4)``."""
        if self._matrix is not None:
            raise InvalidParameter("an explicit-matrix generator has no polynomial coefficients")
        m = self._check_m(m)
        if m > self._coef.shape[0]:
            with self._lock:
                have = self._coef.shape[0]
                if m > have:
                    extra = K.component_coefficients(self._seed, have + 1, m + 1)
                    coef = np.concatenate([self._coef, extra])
                    coef.setflags(write=False)
                    self._coef = coef
        return self._coef[:m]

    def _check_m(self, m: int) -> int:
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or int(m) < 0:
            raise InvalidParameter(f"the number of components must be a non-negative integer, got {m!r}")
        m = int(m)
        if self._matrix is not None and m > self._matrix.shape[0]:
            raise InvalidParameter(f"the sign matrix has only {self._matrix.shape[0]} components, {m} requested")
        return m

    def check_items(self, items: Any) -> np.ndarray:
        """Item ids as a flat int64 array; InvalidParameter unless integers in ``[0, n_items)``."""
        items = np.asarray(items)
        if items.size and items.dtype.kind not in "iu":
            raise InvalidParameter("item ids must be integers")
        items = items.astype(np.int64, copy=False).ravel()
        if items.size and (items.min() < 0 or items.max() >= self.n_items):
            raise InvalidParameter(f"item ids must lie in [0, {self.n_items}) for this generator")
        return items

    def signs(self, items: Any, m: int) -> np.ndarray:
        """Signs ``r_t^j`` of components 1..m for each item, int8 ``(m, len(items))``."""
        m = self._check_m(m)
        items = self.check_items(items)
        if self._matrix is not None:
            return self._matrix[:m, items].copy()
        return K.signs(self.coefficients(m), items)

    def signs_t(self, items: Any, m: int) -> np.ndarray:
        """Transposed float64 signs ``(len(items), m)`` (the dense operand of ``X @ R.T``)."""
        m = self._check_m(m)
        items = self.check_items(items)
        if self._matrix is not None:
            return self._matrix[:m, items].T.astype(np.float64)
        return K.signs_t(self.coefficients(m), items)

    def sketch_csr(
        self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, n_rows: int, m: Any, m_max: int
    ) -> np.ndarray:
        """Zero-padded sketches ``(n_rows, m_max)`` float64 of one CSR block; row i has ``m[i]``
        components (``m`` an int or one value per row)."""
        m_max = self._check_m(m_max)
        if self._matrix is None:
            if np.size(indices):
                self.check_items(np.array([np.min(indices), np.max(indices)]))
            return K.sketch_block(indptr, indices, data, n_rows, self.coefficients(m_max), m)
        cols, local = K.distinct_columns(indices)
        table = self.signs_t(cols, m_max)
        return K.sketch_with_signs(indptr, local, data, n_rows, table, m)

    # ------------------------------------------------------------------ (de)serialisation
    def to_metadata(self) -> dict[str, Any]:
        """Public JSON description, e.g. ``{"scheme": "poly4-mersenne31", "seed": "123...",
        "prime": 2147483647}`` (the seed as a string: it exceeds JSON's safe integers)."""
        if self._matrix is not None:
            return {"scheme": MATRIX_SCHEME, "matrix": self._matrix.tolist()}
        return {"scheme": SCHEME, "seed": str(self._seed), "prime": K.PRIME}

    def __getstate__(self) -> dict[str, Any]:
        return {"seed": self._seed, "matrix": self._matrix, "coef": self._coef}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._seed = state["seed"]
        self._matrix = state["matrix"]
        self._coef = state["coef"]
        self._lock = threading.Lock()

    def _identity(self) -> tuple:
        if self._matrix is not None:
            return (MATRIX_SCHEME, self._matrix.shape, self._matrix.tobytes())
        return (SCHEME, self._seed)

    def __dask_tokenize__(self) -> tuple:
        from dask.base import tokenize

        return ("SketchGenerator", tokenize(self._identity()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SketchGenerator) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __repr__(self) -> str:
        if self._matrix is not None:
            return f"SketchGenerator.from_matrix(<{self._matrix.shape[0]}x{self._matrix.shape[1]}>)"
        return f"SketchGenerator(seed={self._seed})"
