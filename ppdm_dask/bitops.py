"""Bit operations for the compiled kernels of every family (numba only; no dask).

:func:`ctpop` is LLVM's population count of a uint64 as a numba intrinsic: one instruction where
the CPU has it (vectorised VPOPCNTQ in the AND + popcount loops of the miners). :func:`and_count`
and :func:`gram_range` count on packed row bitsets: the pair counts of exact mining's level 2
and of EMASK's block search are this one kernel. Without numba the
module defines nothing and :data:`available` is False (the callers then use their numpy paths).
:func:`splitmix64` (numpy) mixes 64-bit words: the hashes of the ledger's joins and labels.
"""

from __future__ import annotations

import numpy as np

try:  # numba ships with pydata ``sparse`` (a dependency); the callers have numpy fallbacks
    from numba import types as _nbtypes
    from numba.extending import intrinsic as _intrinsic
except ImportError:  # pragma: no cover - numba is installed with the package
    _intrinsic = None

__all__ = ["available", "ctpop", "and_count", "gram_range", "GRAM_TILE_WORDS", "splitmix64"]


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser of every uint64 of ``x`` (wrapping arithmetic): a bijection that
    spreads every input bit over every output bit."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


#: Words (64 rows each) of every bit row processed per tile of the bitset Gram kernel.
GRAM_TILE_WORDS = 1024
#: The compiled bit operations exist (numba installed).
available = _intrinsic is not None

if _intrinsic is not None:

    @_intrinsic
    def ctpop(typingctx, x):  # pragma: no cover - compiled
        """Number of set bits of a uint64 (inside numba-compiled code only)."""

        def codegen(context, builder, signature, args):
            return builder.ctpop(args[0])

        return _nbtypes.uint64(_nbtypes.uint64), codegen

    from numba import njit as _njit

    @_njit(cache=True, nogil=True)
    def and_count(x, y):  # pragma: no cover - compiled
        """Set bits of ``x & y`` (two uint64 rows of equal length)."""
        s = np.uint64(0)
        for w in range(x.size):
            s += ctpop(x[w] & y[w])
        return s

    @_njit(cache=True, nogil=True)
    def gram_range(bits, a0, a1, out):  # pragma: no cover - compiled
        """``out[a, b] += |rows holding a and b|`` for ``a0 <= a < a1``, ``a < b``: the pair
        counts of packed row bitsets (exact mining's and EMASK's level 2)."""
        # out[a, b] += |rows containing a and b| for a0 <= a < a1, a < b (ranges of first items
        # write disjoint rows of out: threads may share it). Word tiles keep the rows in cache;
        # a 2 x 4 register block (8 running counts) amortises every load over several ANDs.
        # Rows are sliced per tile (contiguous 1-D views) and indexed from 0: LLVM then sees
        # unit-stride, non-negative indices and vectorises the popcounts.
        f, n_words = bits.shape
        for w0 in range(0, n_words, GRAM_TILE_WORDS):
            w1 = min(n_words, w0 + GRAM_TILE_WORDS)
            n = w1 - w0
            for a in range(a0, a1, 2):
                x = bits[a, w0:w1]
                if a + 1 >= a1:  # a lone first item at the range's end: one row at a time
                    for b in range(a + 1, f):
                        out[a, b] += and_count(x, bits[b, w0:w1])
                    continue
                y = bits[a + 1, w0:w1]
                out[a, a + 1] += and_count(x, y)
                b = a + 2
                while b + 4 <= f:
                    u0 = bits[b, w0:w1]
                    u1 = bits[b + 1, w0:w1]
                    u2 = bits[b + 2, w0:w1]
                    u3 = bits[b + 3, w0:w1]
                    s0 = np.uint64(0)
                    s1 = np.uint64(0)
                    s2 = np.uint64(0)
                    s3 = np.uint64(0)
                    t0 = np.uint64(0)
                    t1 = np.uint64(0)
                    t2 = np.uint64(0)
                    t3 = np.uint64(0)
                    for w in range(n):
                        xw = x[w]
                        yw = y[w]
                        v0 = u0[w]
                        v1 = u1[w]
                        v2 = u2[w]
                        v3 = u3[w]
                        s0 += ctpop(xw & v0)
                        s1 += ctpop(xw & v1)
                        s2 += ctpop(xw & v2)
                        s3 += ctpop(xw & v3)
                        t0 += ctpop(yw & v0)
                        t1 += ctpop(yw & v1)
                        t2 += ctpop(yw & v2)
                        t3 += ctpop(yw & v3)
                    out[a, b] += s0
                    out[a, b + 1] += s1
                    out[a, b + 2] += s2
                    out[a, b + 3] += s3
                    out[a + 1, b] += t0
                    out[a + 1, b + 1] += t1
                    out[a + 1, b + 2] += t2
                    out[a + 1, b + 3] += t3
                    b += 4
                while b < f:
                    out[a, b] += and_count(x, bits[b, w0:w1])
                    out[a + 1, b] += and_count(y, bits[b, w0:w1])
                    b += 1
