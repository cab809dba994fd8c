"""SipHash-2-4 (Aumasson & Bernstein 2012) in numba: the keyed 64-bit hash of user values in
:mod:`ppdm_dask.data.events` (strings straight from the arrow buffers, no Python objects).

The key is two 64-bit words ``k0, k1`` (its 16 bytes read little-endian). Messages are bytes;
a user value is hashed as a type byte then its bytes (:func:`siphash_users`), a (user hash,
session number) pair as 16 little-endian bytes (:func:`siphash_pairs`).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import pyarrow as pa

__all__ = ["TYPE_INT", "TYPE_STR", "siphash", "siphash_users", "siphash_pairs"]

#: Type bytes that start every hashed user value, so that the integer 1 and the string "1"
#: are different users.
TYPE_INT = 1
TYPE_STR = 2

_C0 = np.uint64(0x736F6D6570736575)
_C1 = np.uint64(0x646F72616E646F6D)
_C2 = np.uint64(0x6C7967656E657261)
_C3 = np.uint64(0x7465646279746573)


# ------------------------------------------------------------------------------ SipHash-2-4
@numba.njit(cache=True, nogil=True, inline="always")
def _rotl(x: np.uint64, b: int) -> np.uint64:
    return (x << np.uint64(b)) | (x >> np.uint64(64 - b))


@numba.njit(cache=True, nogil=True, inline="always")
def _rounds(v0: Any, v1: Any, v2: Any, v3: Any, n: int) -> tuple[Any, Any, Any, Any]:
    for _ in range(n):
        v0 = v0 + v1
        v1 = _rotl(v1, 13)
        v1 ^= v0
        v0 = _rotl(v0, 32)
        v2 = v2 + v3
        v3 = _rotl(v3, 16)
        v3 ^= v2
        v0 = v0 + v3
        v3 = _rotl(v3, 21)
        v3 ^= v0
        v2 = v2 + v1
        v1 = _rotl(v1, 17)
        v1 ^= v2
        v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


@numba.njit(cache=True, nogil=True)
def _sip_bytes(k0: np.uint64, k1: np.uint64, buf: np.ndarray, start: int, n: int, prefix: int) -> np.uint64:
    """SipHash-2-4 of the message ``[prefix] + buf[start:start+n]`` (no prefix when < 0)."""
    v0 = k0 ^ _C0
    v1 = k1 ^ _C1
    v2 = k0 ^ _C2
    v3 = k1 ^ _C3
    has = 1 if prefix >= 0 else 0
    length = n + has
    n_words = length // 8
    for w in range(n_words):
        m = np.uint64(0)
        for b in range(8):
            j = 8 * w + b
            byte = np.uint64(prefix) if (has == 1 and j == 0) else np.uint64(buf[start + j - has])
            m |= byte << np.uint64(8 * b)
        v3 ^= m
        v0, v1, v2, v3 = _rounds(v0, v1, v2, v3, 2)
        v0 ^= m
    last = np.uint64(length & 0xFF) << np.uint64(56)
    for b in range(length - 8 * n_words):
        j = 8 * n_words + b
        byte = np.uint64(prefix) if (has == 1 and j == 0) else np.uint64(buf[start + j - has])
        last |= byte << np.uint64(8 * b)
    v3 ^= last
    v0, v1, v2, v3 = _rounds(v0, v1, v2, v3, 2)
    v0 ^= last
    v2 ^= np.uint64(0xFF)
    v0, v1, v2, v3 = _rounds(v0, v1, v2, v3, 4)
    return v0 ^ v1 ^ v2 ^ v3


@numba.njit(cache=True, nogil=True)
def _sip_many(k0: np.uint64, k1: np.uint64, buf: np.ndarray, offsets: np.ndarray, prefix: int) -> np.ndarray:
    out = np.empty(offsets.size - 1, dtype=np.uint64)
    for i in range(offsets.size - 1):
        out[i] = _sip_bytes(k0, k1, buf, offsets[i], offsets[i + 1] - offsets[i], prefix)
    return out


@numba.njit(cache=True, nogil=True)
def _sip_pairs(k0: np.uint64, k1: np.uint64, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # the 16-byte message LE(a[i]) || LE(b[i]): two full words, then the length word
    out = np.empty(a.size, dtype=np.uint64)
    last = np.uint64(16) << np.uint64(56)
    for i in range(a.size):
        v0 = k0 ^ _C0
        v1 = k1 ^ _C1
        v2 = k0 ^ _C2
        v3 = k1 ^ _C3
        for m in (a[i], b[i]):
            v3 ^= m
            v0, v1, v2, v3 = _rounds(v0, v1, v2, v3, 2)
            v0 ^= m
        v3 ^= last
        v0, v1, v2, v3 = _rounds(v0, v1, v2, v3, 2)
        v0 ^= last
        v2 ^= np.uint64(0xFF)
        v0, v1, v2, v3 = _rounds(v0, v1, v2, v3, 4)
        out[i] = v0 ^ v1 ^ v2 ^ v3
    return out


def siphash(k0: int, k1: int, message: bytes) -> int:
    """SipHash-2-4 of one byte string under the key words ``k0, k1`` (the key's first and last
    8 bytes read little-endian)."""
    buf = np.frombuffer(bytes(message), dtype=np.uint8) if message else np.zeros(1, np.uint8)
    return int(_sip_bytes(np.uint64(k0), np.uint64(k1), buf, 0, len(message), -1))


def siphash_pairs(k0: int, k1: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """SipHash-2-4 of the 16-byte messages ``LE(a[i]) || LE(b[i])`` (uint64 words)."""
    a = np.ascontiguousarray(a, dtype=np.uint64)
    b = np.ascontiguousarray(b.astype(np.int64, copy=False).view(np.uint64))
    return _sip_pairs(np.uint64(k0), np.uint64(k1), a, b)


def siphash_users(values: pa.Array, k0: int, k1: int) -> np.ndarray:
    """uint64 SipHash-2-4 of every user value (no nulls): integers as the type byte
    :data:`TYPE_INT` then 8 little-endian bytes, strings as :data:`TYPE_STR` then their UTF-8
    bytes (read straight from the arrow buffers)."""
    kk0, kk1 = np.uint64(k0), np.uint64(k1)
    if pa.types.is_integer(values.type):
        ints = np.ascontiguousarray(values.to_numpy(zero_copy_only=False).astype("<i8"))
        buf = ints.view(np.uint8)
        offsets = np.arange(0, 8 * ints.size + 1, 8, dtype=np.int64)
        return _sip_many(kk0, kk1, buf if buf.size else np.zeros(1, np.uint8), offsets, TYPE_INT)
    arr = values.cast(pa.large_string())
    _, off_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(off_buf, dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None and data_buf.size else np.zeros(1, np.uint8)
    return _sip_many(kk0, kk1, data, np.ascontiguousarray(offsets), TYPE_STR)
