"""Shared timing helper of the benchmark suites."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def best_of(fn: Callable[[], Any], repeat: int = 3) -> tuple[float, Any]:
    """Best wall time of ``repeat`` calls (noise only ever adds time) and the last result."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out
