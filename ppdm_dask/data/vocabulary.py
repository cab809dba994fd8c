"""Item vocabulary: original item labels <-> column ids."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..errors import DataFormatError, ItemIdError

__all__ = ["Vocabulary"]


class Vocabulary:
    """Sorted, unique item labels; column id ``j`` stands for ``labels[j]``.

    Parameters
    ----------
    labels : array-like
        Unique labels: non-negative integers or strings. Sorted on construction, so the
        vocabulary of a data set does not depend on the order items were seen in.
    identity : bool
        Internal flag: labels are exactly ``0..n-1`` (fast paths skip the lookup).
    """

    __slots__ = ("labels", "identity")

    def __init__(self, labels: Iterable[Any], *, assume_sorted: bool = False) -> None:
        arr = np.asarray(labels if not isinstance(labels, range) else np.arange(labels.start, labels.stop))
        if arr.ndim != 1:
            raise DataFormatError("vocabulary labels must be one-dimensional")
        if arr.dtype.kind in "iu":
            arr = arr.astype(np.int64, copy=False)
            if arr.size and arr.min() < 0:
                raise ItemIdError(f"item ids must be non-negative, found {int(arr.min())}")
        elif arr.dtype.kind in "UO":
            arr = arr.astype(str)
        elif arr.dtype.kind == "f":
            raise DataFormatError("item labels must be integers or strings, not floats")
        elif arr.size == 0:
            arr = arr.astype(np.int64)
        else:
            raise DataFormatError(f"unsupported item label dtype {arr.dtype}")
        if not assume_sorted:
            arr = np.unique(arr)
        elif arr.size > 1 and not np.all(arr[1:] > arr[:-1]):
            raise DataFormatError("vocabulary labels must be sorted and unique")
        self.labels = arr
        self.identity = bool(arr.dtype.kind == "i" and (arr.size == 0 or (arr[0] == 0 and arr[-1] == arr.size - 1)))

    @classmethod
    def range(cls, n: int) -> Vocabulary:
        """The identity vocabulary ``0..n-1``."""
        return cls(np.arange(int(n), dtype=np.int64), assume_sorted=True)

    def __len__(self) -> int:
        return int(self.labels.size)

    @property
    def is_integer(self) -> bool:
        return self.labels.dtype.kind == "i"

    def encode(self, labels: Any) -> np.ndarray:
        """Column ids (int32) of ``labels``; raises :class:`ItemIdError` for unknown labels."""
        arr = np.asarray(labels)
        if self.identity and arr.dtype.kind in "iu":
            if arr.size and (arr.min() < 0 or arr.max() >= len(self)):
                bad = arr[(arr < 0) | (arr >= len(self))][:5]
                raise ItemIdError(f"item ids outside the vocabulary 0..{len(self) - 1}: {bad.tolist()}")
            return arr.astype(np.int32, copy=False)
        if self.labels.dtype.kind == "U":
            arr = arr.astype(str)
        pos = np.searchsorted(self.labels, arr)
        pos_c = np.minimum(pos, max(len(self) - 1, 0))
        ok = (pos < len(self)) & (self.labels[pos_c] == arr) if len(self) else np.zeros(arr.shape, bool)
        if not np.all(ok):
            raise ItemIdError(f"items not in the vocabulary: {arr[~ok][:5].tolist()}")
        return pos.astype(np.int32)

    def decode(self, ids: Any) -> np.ndarray:
        """Labels of column ids."""
        ids = np.asarray(ids)
        if ids.size and (ids.min() < 0 or ids.max() >= len(self)):
            raise ItemIdError(f"column ids outside 0..{len(self) - 1}")
        return self.labels[ids]

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Vocabulary)
            and self.labels.dtype.kind == other.labels.dtype.kind
            and np.array_equal(self.labels, other.labels)
        )

    def __repr__(self) -> str:
        head = ", ".join(map(str, self.labels[:5].tolist()))
        more = ", ..." if len(self) > 5 else ""
        return f"Vocabulary({len(self)} items: {head}{more})"

    def __dask_tokenize__(self):
        return ("Vocabulary", self.labels.dtype.str, self.labels.tobytes() if self.is_integer else tuple(self.labels.tolist()))
