"""Input checks shared by the condensation entry points (one wording for every error)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DataFormatError, InvalidParameter

__all__ = ["check_records", "check_levels"]


def check_records(X: Any, *, where: str = "") -> np.ndarray:
    """``X`` as a C-contiguous float64 (n, d) array of finite numbers.

    ``where`` names the row numbering in messages (e.g. ``" of the block"``).
    """
    X = np.asarray(X)
    if X.ndim != 2:
        raise InvalidParameter(f"X must be a 2-d array (n, d), got shape {X.shape}")
    if X.dtype.kind not in "fiub":
        raise DataFormatError(f"X must be numeric, got dtype {X.dtype}")
    X = np.ascontiguousarray(X, dtype=np.float64)
    if not np.isfinite(X).all():
        bad = np.flatnonzero(~np.isfinite(X).all(axis=1))
        raise DataFormatError(f"X must be finite; rows {bad[:10].tolist()}{where} hold NaN or inf")
    return X


def check_levels(privacy: Any, n: int, *, where: str = "") -> np.ndarray:
    """Privacy levels as int64 (n,): integers (whole floats accepted) >= 1, one per record."""
    p = np.asarray(privacy)
    if p.shape != (n,):
        raise InvalidParameter(f"privacy must have one level per row ({n}), got shape {p.shape}")
    if p.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(p) | (p != np.round(p)))
        if bad.size:
            raise InvalidParameter(f"privacy levels must be integers; rows {bad[:10].tolist()}{where} are not")
    elif p.dtype.kind not in "iu":
        raise InvalidParameter(f"privacy levels must be integers, got dtype {p.dtype}")
    if p.size and p.min() < 1:
        low = np.flatnonzero(p < 1)
        raise InvalidParameter(f"privacy levels must be >= 1; rows {low[:10].tolist()}{where} have {p[low[:10]].tolist()}")
    if p.size and p.dtype.kind == "u" and p.max() > np.iinfo(np.int64).max:
        raise InvalidParameter("privacy levels must fit in int64")
    return np.ascontiguousarray(p, dtype=np.int64)
