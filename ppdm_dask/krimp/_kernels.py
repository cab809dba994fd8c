"""Driver-side kernels shared by the KRIMP modules (no dask import).

* :class:`Database` / :func:`as_database` — one normalised in-memory form of a categorical or
  basket database: original item ids (labels), CSR rows over the *alphabet* (items that occur),
  item frequencies and the item renumbering (frequency descending, ties: larger original id
  first; docs/krimp.md#clarification-item-renumbering-decides-every-tie). Bitset views (rows as item bitsets, items as tid bitsets, both in *new* ids) are
  built lazily.
* :func:`exact_sum` — a numba port of CPython's ``math.fsum`` (Shewchuk partials + the half-even
  fix-up); it returns the correctly rounded sum of its terms, so it equals ``math.fsum`` on any
  finite input and in any term order.
* :func:`cover_bits` — cover of bitset rows by an ordered list of bitset elements
  (docs/krimp.md#krimp-code-tables-and-the-search).

Bit layout: item ``r`` is bit ``r & 63`` of word ``r >> 6`` (LSB first).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from ..errors import DataFormatError, ItemIdError

__all__ = [
    "Database",
    "as_database",
    "exact_sum",
    "cover_bits",
    "pack_rows",
    "n_words",
    "pack_columns",
]


def n_words(n_bits: int) -> int:
    """Number of uint64 words for ``n_bits`` bits (at least 1)."""
    return max(1, (int(n_bits) + 63) // 64)


# ---------------------------------------------------------------------------- numba helpers
@numba.njit(cache=True, nogil=True, inline="always")
def fits(a, b):
    """Bitset ``a`` is a subset of bitset ``b`` (1-d uint64 word rows)."""
    for k in range(b.shape[0]):
        if a[k] & ~b[k]:
            return False
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def take(a, b):
    """Remove the bits of ``a`` from ``b`` in place."""
    for k in range(b.shape[0]):
        b[k] &= ~a[k]


@numba.njit(cache=True, nogil=True)
def pack_rows(indptr, indices, mapping, n_bits):
    """Rows ``indices[indptr[i]:indptr[i+1]]`` → bitsets of ``mapping[index]`` (n_rows × W)."""
    n = indptr.size - 1
    w = max(1, (n_bits + 63) // 64)
    out = np.zeros((n, w), np.uint64)
    for i in range(n):
        for k in range(indptr[i], indptr[i + 1]):
            b = mapping[indices[k]]
            out[i, b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    return out


@numba.njit(cache=True, nogil=True)
def pack_columns(indptr, indices, mapping, n_items):
    """Vertical tid bitsets: item ``mapping[index]`` → bitset of the rows holding it."""
    n = indptr.size - 1
    tw = max(1, (n + 63) // 64)
    out = np.zeros((n_items, tw), np.uint64)
    for i in range(n):
        word = i >> 6
        bit = np.uint64(1) << np.uint64(i & 63)
        for k in range(indptr[i], indptr[i + 1]):
            out[mapping[indices[k]], word] |= bit
    return out


@numba.njit(cache=True, nogil=True)
def exact_sum(terms, n):
    """Correctly rounded sum of ``terms[:n]`` — CPython's ``math.fsum`` algorithm, finite input.

    Shewchuk's partials keep the running sum exactly as a list of non-overlapping doubles; the
    final loop and the half-even correction are those of ``Modules/mathmodule.c``. Because the
    result is *the* correctly rounded exact sum, it does not depend on the term order and equals
    ``math.fsum(terms[:n])`` bit for bit (tested).
    """
    p = np.empty(64, np.float64)
    m = 0
    for k in range(n):
        x = terms[k]
        i = 0
        for j in range(m):
            y = p[j]
            if abs(x) < abs(y):
                t = x
                x = y
                y = t
            hi = x + y
            yr = hi - x
            lo = y - yr
            if lo != 0.0:
                p[i] = lo
                i += 1
            x = hi
        m = i
        if x != 0.0:
            if m >= p.size:  # pragma: no cover - impossible for finite doubles (< 40 partials)
                q = np.empty(2 * p.size, np.float64)
                q[: p.size] = p
                p = q
            p[m] = x
            m += 1
    hi = 0.0
    if m > 0:
        m -= 1
        hi = p[m]
        lo = 0.0
        while m > 0:
            x = hi
            m -= 1
            y = p[m]
            hi = x + y
            yr = hi - x
            lo = y - yr
            if lo != 0.0:
                break
        if m > 0 and ((lo < 0.0 and p[m - 1] < 0.0) or (lo > 0.0 and p[m - 1] > 0.0)):
            y = lo * 2.0
            x = hi + y
            yr = x - hi
            if y == yr:
                hi = x
    return hi


@numba.njit(cache=True, nogil=True)
def cover_bits(rowbits, elbits, n_elements):
    """Cover every row (docs/krimp.md#krimp-code-tables-and-the-search) by ``elbits[:n_elements]``
    in order; singletons last.

    Returns ``(usage, rem)``: the usage of every element and, per row, the bitset of the items
    left for singletons (their usages are the column popcounts of ``rem``).
    """
    n, w = rowbits.shape
    usage = np.zeros(n_elements, np.int64)
    rem = rowbits.copy()
    for t in range(n):
        for e in range(n_elements):
            if fits(elbits[e], rem[t]):
                usage[e] += 1
                take(elbits[e], rem[t])
    return usage, rem


@numba.njit(cache=True, nogil=True)
def cover_lists(rowbits, elbits, n_elements, n_bits):
    """Cover of every row as element indices; singletons are ``n_elements + bit``.

    Returns CSR ``(indptr, elements)`` in cover order (non-singletons, then singletons by bit).
    """
    n, w = rowbits.shape
    counts = np.zeros(n + 1, np.int64)
    buf = np.empty(n * 8 + 16, np.int64)
    pos = 0
    rem = np.empty(w, np.uint64)
    for t in range(n):
        for k in range(w):
            rem[k] = rowbits[t, k]
        for e in range(n_elements):
            if fits(elbits[e], rem):
                take(elbits[e], rem)
                if pos >= buf.size:
                    nb = np.empty(buf.size * 2, np.int64)
                    nb[: buf.size] = buf
                    buf = nb
                buf[pos] = e
                pos += 1
        for b in range(n_bits):
            if (rem[b >> 6] >> np.uint64(b & 63)) & np.uint64(1):
                if pos >= buf.size:
                    nb = np.empty(buf.size * 2, np.int64)
                    nb[: buf.size] = buf
                    buf = nb
                buf[pos] = n_elements + b
                pos += 1
        counts[t + 1] = pos
    return counts, buf[:pos].copy()


# ---------------------------------------------------------------------------- the database
def std_lengths_from_frequencies(frequencies: Sequence[int] | np.ndarray) -> np.ndarray:
    """stdlen(i) = −log2(fr(i)/F) with F = Σ fr (0 where fr = 0), with ``math.log2``."""
    fr = [int(f) for f in np.asarray(frequencies).tolist()]
    total = sum(fr)
    return np.array([-math.log2(f / total) if f > 0 else 0.0 for f in fr], dtype=np.float64)


class AlphabetItems:
    """What follows from a database's items — ``labels`` (original ids, ascending), their
    ``frequencies`` and the renumbering ``order`` (new id → alphabet position) — for
    :class:`Database` and the distributed search's alphabet alike."""

    labels: np.ndarray
    frequencies: np.ndarray
    order: np.ndarray

    @property
    def n_items(self) -> int:
        return int(self.labels.size)

    @cached_property
    def new_labels(self) -> np.ndarray:
        """Original id of every new id (``labels[order]``)."""
        return self.labels[self.order]

    @cached_property
    def new_frequencies(self) -> np.ndarray:
        return self.frequencies[self.order]

    @cached_property
    def std_lengths(self) -> np.ndarray:
        """stdlen per alphabet position: −log2(fr/F), F = total item occurrences
        (docs/krimp.md#clarification-usage-not-support-and-what-is-encoded)."""
        return std_lengths_from_frequencies(self.frequencies)


@dataclass(frozen=True, eq=False)
class Database(AlphabetItems):
    """A transaction database normalised for KRIMP (driver memory).

    Attributes
    ----------
    labels : int64 array
        Original item ids of the *alphabet* (items occurring at least once), sorted ascending.
        Column ``k`` of the rows is item ``labels[k]``.
    indptr, indices : int64 arrays
        CSR rows over alphabet positions (sorted, unique within a row).
    frequencies : int64 array
        ``frequencies[k]`` = number of rows holding ``labels[k]``.
    new_ids : int64 array
        The item renumbering (docs/krimp.md#clarification-item-renumbering-decides-every-tie):
        alphabet position ``k`` → new id (frequency descending, among equal
        frequencies the larger original id gets the smaller new id).
    order : int64 array
        Inverse of ``new_ids``: new id ``r`` → alphabet position.
    """

    labels: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    frequencies: np.ndarray
    new_ids: np.ndarray
    order: np.ndarray

    @property
    def n_rows(self) -> int:
        return int(self.indptr.size - 1)

    @property
    def n_words(self) -> int:
        """uint64 words per row bitset."""
        return n_words(self.n_items)

    @cached_property
    def row_bits(self) -> np.ndarray:
        """(n_rows, W) uint64: every row as a bitset of new ids."""
        return pack_rows(self.indptr, self.indices, self.new_ids, self.n_items)

    @cached_property
    def tid_bits(self) -> np.ndarray:
        """(n_items, ceil(n_rows/64)) uint64: rows holding new id ``r``."""
        return pack_columns(self.indptr, self.indices, self.new_ids, self.n_items)

    def positions(self, items: Any) -> np.ndarray:
        """Alphabet positions of original ids; :class:`ItemIdError` for ids not in the alphabet."""
        arr = np.asarray(items)
        if arr.size == 0:
            return np.zeros(0, np.int64)
        if arr.dtype.kind not in "iu":
            raise ItemIdError(f"item ids must be integers, got dtype {arr.dtype}")
        arr = arr.astype(np.int64, copy=False)
        pos = np.searchsorted(self.labels, arr)
        pc = np.minimum(pos, self.n_items - 1)
        ok = (pos < self.n_items) & (self.labels[pc] == arr)
        if not np.all(ok):
            raise ItemIdError(f"items not in the database alphabet: {np.unique(arr[~ok])[:5].tolist()}")
        return pos.astype(np.int64)

    def to_new(self, items: Any) -> np.ndarray:
        """New ids of original ids."""
        return self.new_ids[self.positions(items)]

    def to_lists(self) -> list[list[int]]:
        """Rows as lists of original ids (small data / tests)."""
        lab = self.labels[self.indices].tolist()
        ip = self.indptr.tolist()
        return [lab[ip[i] : ip[i + 1]] for i in range(self.n_rows)]


def _csr_rows_to_labels(indptr: np.ndarray, cols: np.ndarray, col_labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return indptr.astype(np.int64), col_labels[cols]


def _canonical(m: Any) -> sp.csr_array:
    """CSR without duplicate entries or explicit zeros; copies only when it must change
    something (partition blocks read from Parquet can be read-only views)."""
    m = sp.csr_array(m)
    if not m.has_canonical_format or (m.data == 0).any():
        m = m.copy()
        m.sum_duplicates()
        m.eliminate_zeros()
    return m


def rows_as_label_csr(rows: Any, labels: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Normalise ``rows`` to ``(indptr, item ids)`` with *original* ids.

    Accepts a :class:`Database`, a ``TransactionArray`` (uses its vocabulary), a scipy sparse
    matrix/array (column ``j`` is item ``labels[j]``, default ``j``), or an iterable of item-id
    iterables. Duplicates inside a row are kept (callers deduplicate).
    """
    if isinstance(rows, Database):
        return rows.indptr.copy(), rows.labels[rows.indices]
    if hasattr(rows, "vocabulary") and hasattr(rows, "blocks") and hasattr(rows, "compute"):
        m = _canonical(rows.compute(progress=False))
        lab = np.asarray(rows.vocabulary.labels)
        if lab.dtype.kind not in "iu":
            raise DataFormatError("KRIMP needs integer item labels (original ids)")
        return _csr_rows_to_labels(m.indptr, m.indices, lab.astype(np.int64))
    if sp.issparse(rows):
        m = _canonical(rows)
        if labels is None:
            lab = np.arange(m.shape[1], dtype=np.int64)
        else:
            lab = np.asarray(labels)
            if lab.ndim != 1 or lab.size != m.shape[1]:
                raise DataFormatError(f"labels must have one entry per column ({m.shape[1]})")
            if lab.size and lab.dtype.kind not in "iu":
                raise DataFormatError("KRIMP needs integer item labels (original ids)")
            lab = lab.astype(np.int64)
        return _csr_rows_to_labels(m.indptr, m.indices, lab)
    if isinstance(rows, np.ndarray) and rows.ndim == 2:
        raise DataFormatError("pass a dense 0/1 matrix as scipy.sparse.csr_array(...)")
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Iterable):
        raise DataFormatError(f"cannot read transactions from {type(rows).__name__}")
    lens: list[int] = []
    parts: list[np.ndarray] = []
    for r in rows:
        a = np.asarray(list(r) if not isinstance(r, np.ndarray) else r)
        if a.ndim != 1:
            raise DataFormatError("every transaction must be a flat sequence of item ids")
        if a.size:
            if a.dtype.kind not in "iu":
                if a.dtype.kind == "f" and np.all(np.isfinite(a)) and np.all(a == np.round(a)):
                    a = a.astype(np.int64)
                else:
                    raise DataFormatError(f"item ids must be integers, got {a[:3].tolist()}")
            if a.min() < 0:
                raise ItemIdError(f"item ids must be non-negative, found {int(a.min())}")
        parts.append(a.astype(np.int64, copy=False))
        lens.append(a.size)
    indptr = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(np.asarray(lens, np.int64), out=indptr[1:])
    flat = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return indptr, flat.astype(np.int64)


def dedupe_sorted_rows(indptr: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort the column ids inside every row and drop duplicates."""
    n = indptr.size - 1
    if cols.size == 0:
        return indptr.astype(np.int64), cols.astype(np.int64)
    rowid = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    o = np.lexsort((cols, rowid))
    r, c = rowid[o], cols[o]
    keep = np.ones(c.size, bool)
    keep[1:] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
    r, c = r[keep], c[keep]
    out = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(r, minlength=n), out=out[1:])
    return out, c.astype(np.int64)


def renumber(labels: np.ndarray, frequencies: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The item renumbering (docs/krimp.md#clarification-item-renumbering-decides-every-tie) →
    ``(new_ids, order)`` for alphabet positions."""
    order = np.lexsort((-np.asarray(labels, np.int64), -np.asarray(frequencies, np.int64))).astype(np.int64)
    new_ids = np.empty_like(order)
    new_ids[order] = np.arange(order.size, dtype=np.int64)
    return new_ids, order


def as_database(db: Any, labels: Sequence[int] | np.ndarray | None = None) -> Database:
    """Normalise ``db`` into a :class:`Database`.

    Parameters
    ----------
    db : Database, TransactionArray, scipy sparse matrix/array, or iterable of item-id iterables
        The transactions. Items are original (integer) ids; a sparse matrix's column ``j`` is
        item ``labels[j]`` (default ``j``); a ``TransactionArray`` uses its vocabulary labels.
    labels : sequence of int, optional
        Column labels of a sparse matrix.

    Raises
    ------
    DataFormatError
        Empty database (no rows or no item occurrences), non-integer items.
    """
    if isinstance(db, Database):
        return db
    indptr, flat = rows_as_label_csr(db, labels)
    n = indptr.size - 1
    if n == 0 or flat.size == 0:
        raise DataFormatError("the database is empty (no rows or no items)")
    alphabet, cols = np.unique(flat, return_inverse=True)
    indptr, cols = dedupe_sorted_rows(indptr, cols.astype(np.int64).ravel())
    freq = np.bincount(cols, minlength=alphabet.size).astype(np.int64)
    new_ids, order = renumber(alphabet, freq)
    return Database(
        labels=alphabet.astype(np.int64),
        indptr=indptr,
        indices=cols,
        frequencies=freq,
        new_ids=new_ids,
        order=order,
    )
