"""Bit operations for the compiled kernels of every family (numba only; no dask, no numpy arrays).

:func:`ctpop` is LLVM's population count of a uint64 as a numba intrinsic: one instruction where
the CPU has it (vectorised VPOPCNTQ in the AND + popcount loops of the miners). Without numba the
module defines nothing and :data:`available` is False (the callers then use their numpy paths).
"""

from __future__ import annotations

try:  # numba ships with pydata ``sparse`` (a dependency); the callers have numpy fallbacks
    from numba import types as _nbtypes
    from numba.extending import intrinsic as _intrinsic
except ImportError:  # pragma: no cover - numba is installed with the package
    _intrinsic = None

__all__ = ["available", "ctpop"]

#: The compiled bit operations exist (numba installed).
available = _intrinsic is not None

if _intrinsic is not None:

    @_intrinsic
    def ctpop(typingctx, x):  # pragma: no cover - compiled
        """Number of set bits of a uint64 (inside numba-compiled code only)."""

        def codegen(context, builder, signature, args):
            return builder.ctpop(args[0])

        return _nbtypes.uint64(_nbtypes.uint64), codegen
