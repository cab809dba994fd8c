"""Content digests of a collection, one block at a time (pure numpy/pyarrow, no Dask).

Every row gets a 128-bit hash of its content (:func:`transaction_row_hashes`,
:func:`frame_row_hashes`, :func:`array_row_hashes`), from which two digests are folded, each the
same for any partitioning:

* **the records** ("these records, in any order"): a multiset hash, four 64-bit lanes each the sum
  (mod 2^64) of a different mix of every row's hash (:func:`block_multiset`; pieces add up,
  :func:`combine_multisets`). The same records in another order, cut into other blocks, read
  from CSV or from Parquet, are one input: what the ledger knows an input by.
* **the order** ("these rows, in this order"), in 124 bits: a block is folded into four
  polynomial hashes ``P = Σ_r h_r · b^(n-1-r) mod p`` (one per 31-bit prime ``p``); two
  consecutive pieces combine exactly (:func:`combine_polys`: ``P = P1 · b^n2 + P2``). The order
  salts a release's random streams only: the streams of a release are drawn per row position,
  so a permuted copy of an input must not reuse them (the noise of row ``r`` would then fall on
  another record, and two releases would cancel each other's noise).

Rows of several aligned pieces (records and their privacy levels) are one record each:
:func:`pair_row_hashes` mixes their hashes row by row before the multiset is taken.

Values hash by type, not by their text: the string ``"02138"`` and the integer ``2138`` differ,
as do an item labelled ``1`` and one labelled ``"1"``. Every hash used here is defined by this
module (splitmix64, BLAKE2b of UTF-8 text), so the digest does not change between numpy, pandas
or pyarrow versions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "PRIMES",
    "BASES",
    "text_hashes",
    "transaction_row_hashes",
    "frame_row_hashes",
    "array_row_hashes",
    "block_poly",
    "combine_polys",
    "EMPTY_POLY",
    "block_multiset",
    "combine_multisets",
    "EMPTY_SET",
    "pair_row_hashes",
]

#: four 31-bit primes and bases of the polynomial lanes (products of two residues fit in uint64)
PRIMES = np.array([2147483647, 2147483629, 2147483587, 2147483579], dtype=np.uint64)
BASES = np.array([1103515245, 1664525, 69069, 2654435761 % 2147483579], dtype=np.uint64)
#: the digest state of no rows: ``(rows, lanes)``
EMPTY_POLY = (0, (0, 0, 0, 0))
#: the multiset state of no rows: ``(rows, lanes)``
EMPTY_SET = (0, (0, 0, 0, 0))
#: salts of the four multiset lanes (each lane sums another mix of the row hash)
_SET_SALTS = (
    np.uint64(0x243F6A8885A308D3),
    np.uint64(0x13198A2E03707344),
    np.uint64(0xA4093822299F31D0),
    np.uint64(0x082EFA98EC4E6C89),
)
_PIECE_SALT = np.uint64(0x452821E638D01377)

_M1 = np.uint64(0x9E3779B97F4A7C15)
_NULL = np.uint64(0x6A09E667F3BCC909)
_COL_SALT = np.uint64(0xBB67AE8584CAA73B)
_LANE2 = np.uint64(0x3C6EF372FE94F82B)
_WEIGHT_SALT = np.uint64(0xA54FF53A5F1D36F1)
_TYPE = {
    "int": np.uint64(0x510E527FADE682D1),
    "float": np.uint64(0x9B05688C2B3E6C1F),
    "text": np.uint64(0x1F83D9ABFB41BD6B),
    "bool": np.uint64(0x5BE0CD19137E2179),
}


def _splitmix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser (wrapping uint64 arithmetic)."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = x + _M1
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def text_hashes(values: Sequence[Any]) -> np.ndarray:
    """64-bit BLAKE2b hashes of the UTF-8 text of ``values`` (one per value)."""
    out = np.empty(len(values), dtype=np.uint64)
    for i, v in enumerate(values):
        out[i] = int.from_bytes(hashlib.blake2b(str(v).encode("utf-8"), digest_size=8, person=b"ppdm-digest").digest(), "little")
    return out


def _float_bits(x: np.ndarray) -> np.ndarray:
    """IEEE bits of float64 values with -0.0 as 0.0 and every NaN as one NaN."""
    x = np.asarray(x, dtype=np.float64) + 0.0  # -0.0 + 0.0 is 0.0
    x = np.where(np.isnan(x), np.nan, x)
    return x.view(np.uint64)


def _mix_two(h: np.ndarray) -> np.ndarray:
    """Two independent 64-bit lanes of each hash, as an ``(n, 2)`` array."""
    return np.stack([_splitmix(h), _splitmix(h ^ _LANE2)], axis=1)


def transaction_row_hashes(
    indptr: np.ndarray,
    indices: np.ndarray,
    label_hash: np.ndarray,
    weights: np.ndarray | None = None,
    columns: Sequence[np.ndarray] = (),
) -> np.ndarray:
    """``(rows, 2)`` uint64 hashes of transaction rows: the set of item labels (``label_hash``:
    one hash per column id of the vocabulary, e.g. :func:`text_hashes` of the labels), the
    weights of the entries when given, and the row-aligned ``columns`` (already hashed per row,
    see :func:`column_hashes`)."""
    ip = np.asarray(indptr, np.int64)
    idx = np.asarray(indices, np.int64)
    n = ip.size - 1
    entry = label_hash[idx]
    if weights is not None:
        with np.errstate(over="ignore"):
            entry = entry ^ _splitmix(_float_bits(weights) ^ _WEIGHT_SALT)
    lanes = _mix_two(entry)
    out = np.zeros((n, 2), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(2):
            c = np.zeros(idx.size + 1, np.uint64)
            np.cumsum(lanes[:, j], out=c[1:])
            out[:, j] = c[ip[1:]] - c[ip[:-1]] + _splitmix(np.diff(ip).astype(np.uint64) + np.uint64(j))
        for k, col in enumerate(columns):
            out += _mix_two(np.asarray(col, np.uint64) ^ _splitmix(np.full(n, k, np.uint64) + _COL_SALT))
    return out


def column_hashes(values: Any) -> np.ndarray:
    """64-bit hash of every value of one column (a pyarrow Array or ChunkedArray, or a numpy
    array): typed (see the module docstring), nulls equal to each other only."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(np.asarray(values))
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], type=arr.type)
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode() if hasattr(arr, "dictionary_decode") else arr.cast(t.value_type)
        t = arr.type
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    n = len(arr)
    if pa.types.is_boolean(t):
        raw = np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.uint64) ^ _TYPE["bool"]
    elif pa.types.is_unsigned_integer(t):  # the same bits as int64 below 2**63; uint64 pseudonyms above it
        raw = np.asarray(arr.cast(pa.uint64()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.uint64) ^ _TYPE["int"]
    elif pa.types.is_integer(t):
        raw = (
            np.asarray(arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64).view(np.uint64)
            ^ _TYPE["int"]
        )
    elif pa.types.is_floating(t) or pa.types.is_decimal(t):
        raw = _float_bits(np.asarray(arr.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False))) ^ _TYPE["float"]
    elif pa.types.is_temporal(t):
        raw = (
            np.asarray(arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64).view(np.uint64)
            ^ _TYPE["int"]
        )
    else:  # text and anything else: by its text, one hash per distinct value
        text = arr.cast(pa.string()) if not pa.types.is_string(t) and not pa.types.is_large_string(t) else arr
        enc = pc.dictionary_encode(text)
        uniq = enc.dictionary.to_pylist()
        codes = np.asarray(enc.indices.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
        raw = (text_hashes(uniq) ^ _TYPE["text"])[codes] if uniq else np.zeros(n, np.uint64)
    raw = _splitmix(np.asarray(raw, np.uint64))
    return np.where(valid, raw, _NULL)


def frame_row_hashes(columns: Sequence[tuple[str, Any]]) -> np.ndarray:
    """``(rows, 2)`` uint64 hashes of table rows from ``(column name, column values)`` pairs:
    the name of every column is part of the hash of its values."""
    if not columns:
        return np.zeros((0, 2), np.uint64)
    n = len(columns[0][1])
    out = np.zeros((n, 2), dtype=np.uint64)
    names = text_hashes([c for c, _ in columns])
    with np.errstate(over="ignore"):
        for (_, values), nh in zip(columns, names):
            out += _mix_two(column_hashes(values) ^ _splitmix(np.full(n, nh ^ _COL_SALT, np.uint64)))
    return out


def array_row_hashes(x: np.ndarray) -> np.ndarray:
    """``(rows, 2)`` uint64 hashes of the rows of a 2-D float64 array (column position counts)."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    n, d = x.shape
    out = np.zeros((n, 2), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(d):
            h = _splitmix(_float_bits(x[:, j]) ^ _TYPE["float"]) ^ _splitmix(np.full(n, j, np.uint64) + _COL_SALT)
            out += _mix_two(h)
    return out


def _powers(n: int, base: np.uint64, p: np.uint64) -> np.ndarray:
    """``base ** r mod p`` for ``r = 0 .. n-1`` by doubling (log2(n) vector steps)."""
    out = np.ones(max(n, 1), dtype=np.uint64)
    have, step = 1, base % p
    while have < n:
        take = min(have, n - have)
        out[have : have + take] = (out[:take] * step) % p
        have += take
        step = (step * step) % p
    return out[:n]


def block_poly(hashes: np.ndarray) -> tuple[int, tuple[int, int, int, int]]:
    """The digest state ``(rows, lanes)`` of one block's row hashes (``(rows, 2)`` uint64)."""
    h = np.asarray(hashes, dtype=np.uint64).reshape(-1, 2)
    n = h.shape[0]
    if n == 0:
        return EMPTY_POLY
    words = (h[:, 0], h[:, 0] >> np.uint64(32), h[:, 1], h[:, 1] >> np.uint64(32))
    lanes = []
    for w, p, b in zip(words, PRIMES, BASES):
        pw = _powers(n, b, p)[::-1]  # b^(n-1-r)
        # terms < 2**31 each: their sum fits in uint64 for any block of fewer than 2**33 rows
        lanes.append(int(np.sum(((w % p) * pw) % p, dtype=np.uint64) % p))
    return n, tuple(lanes)  # type: ignore[return-value]


def combine_polys(parts: Sequence[tuple[int, Sequence[int]]]) -> tuple[int, tuple[int, int, int, int]]:
    """The digest state of consecutive pieces (in order): ``P = P1 · b^n2 + P2`` per lane."""
    n_total, lanes = 0, [0, 0, 0, 0]
    for n, part in parts:
        for i, (p, b) in enumerate(zip(PRIMES.tolist(), BASES.tolist())):
            lanes[i] = (lanes[i] * pow(b, int(n), p) + int(part[i])) % p
        n_total += int(n)
    return n_total, tuple(lanes)  # type: ignore[return-value]


def block_multiset(hashes: np.ndarray) -> tuple[int, tuple[int, int, int, int]]:
    """The multiset state ``(rows, lanes)`` of one block's row hashes (``(rows, 2)`` uint64):
    lane ``j`` is ``Σ_r mix_j(h_r) mod 2^64`` with ``mix_j(h) = splitmix(h0 ^ splitmix(h1 ^ s_j))``,
    so the state does not depend on the rows' order and two blocks add up."""
    h = np.asarray(hashes, dtype=np.uint64).reshape(-1, 2)
    n = h.shape[0]
    if n == 0:
        return EMPTY_SET
    lanes = []
    with np.errstate(over="ignore"):
        for salt in _SET_SALTS:
            mixed = _splitmix(h[:, 0] ^ _splitmix(h[:, 1] ^ salt))
            lanes.append(int(np.sum(mixed, dtype=np.uint64)))
    return n, tuple(lanes)  # type: ignore[return-value]


def combine_multisets(parts: Sequence[tuple[int, Sequence[int]]]) -> tuple[int, tuple[int, int, int, int]]:
    """The multiset state of several pieces, in any order: rows and lanes added (mod 2^64)."""
    n_total, lanes = 0, [0, 0, 0, 0]
    for n, part in parts:
        n_total += int(n)
        for i in range(4):
            lanes[i] = (lanes[i] + int(part[i])) & 0xFFFFFFFFFFFFFFFF
    return n_total, tuple(lanes)  # type: ignore[return-value]


def pair_row_hashes(pieces: Sequence[np.ndarray | None]) -> np.ndarray:
    """``(rows, 2)`` hashes of records made of several aligned pieces (a row of each; ``None``:
    an absent piece): piece ``i``'s row hash is mixed with its position, then the pieces added,
    so a record's hash binds its pieces together (a record and its own privacy level)."""
    present = [(i, np.asarray(p, dtype=np.uint64).reshape(-1, 2)) for i, p in enumerate(pieces) if p is not None]
    if len(present) == 1 and len(pieces) == 1:
        return present[0][1]
    n = present[0][1].shape[0] if present else 0
    out = np.zeros((n, 2), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i, h in present:
            if h.shape[0] != n:
                raise ValueError(f"the pieces of one record have {h.shape[0]} and {n} rows")
            salt = _splitmix(np.full(n, i, np.uint64) + _PIECE_SALT)
            out += _mix_two(h[:, 0] ^ _splitmix(h[:, 1] ^ salt))
    return out
