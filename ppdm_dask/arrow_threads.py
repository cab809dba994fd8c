"""Arrow's own thread pools at interpreter exit: wait until they are idle before finalizing.

Arrow finishes a read on its own threads after the Python call that made it has returned: the
last references to the buffers it read from a Python file object (``PyBuffer``) are dropped
there, which takes the GIL. When the interpreter starts to finalize in between, CPython ends
such a thread inside a C++ destructor and the process aborts ("terminate called without an
active exception", exit status 134) — seen after ``ppdm`` printed its error line, and after a
script that wrote and read back Parquet. Importing the package registers
:func:`settle_arrow_threads` as an exit handler (:func:`register_exit_wait`); the command line
calls it too (once per process either way).
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable

__all__ = ["settle_arrow_threads", "register_exit_wait"]

_REGISTERED: list[Callable[..., bool]] = []


def _arrow_task_counters() -> list[Callable[[], int]]:
    """Counters of the tasks queued or running in Arrow's CPU and I/O thread pools, read
    through libarrow's exported C++ API (``arrow::internal::ThreadPool::GetNumTasks``); empty
    when pyarrow is not loaded or the library does not export them (another platform or ABI)."""
    if "pyarrow" not in sys.modules or not sys.platform.startswith("linux"):
        return []
    try:
        import ctypes

        import pyarrow

        name = f"libarrow.so.{pyarrow.cpp_build_info.so_version}"
        path = next(p for d in pyarrow.get_library_dirs() if os.path.exists(p := os.path.join(d, name)))
        lib = ctypes.CDLL(path)  # already loaded by pyarrow: the same handle
        pools = [lib["_ZN5arrow8internal16GetCpuThreadPoolEv"], lib["_ZN5arrow2io8internal15GetIOThreadPoolEv"]]
        num_tasks = lib["_ZN5arrow8internal10ThreadPool11GetNumTasksEv"]
    except (ImportError, AttributeError, OSError, StopIteration):
        return []
    for get in pools:
        get.restype, get.argtypes = ctypes.c_void_p, []
    num_tasks.restype, num_tasks.argtypes = ctypes.c_int, [ctypes.c_void_p]
    return [functools.partial(num_tasks, pool) for pool in (get() for get in pools) if pool]


def settle_arrow_threads(timeout: float = 10.0) -> bool:
    """Wait until Arrow's CPU and I/O thread pools run no task (at most ``timeout`` seconds);
    true when they are idle (or pyarrow is not in use).

    Arrow finishes a read on its own threads after the Python call that made it has returned:
    the last references to the buffers it read from a Python file object (``PyBuffer``) are
    dropped there, which takes the GIL. When the interpreter starts to finalize in between,
    CPython ends such a thread inside a C++ destructor and the process aborts
    ("terminate called without an active exception", exit status 134). Call this before the
    interpreter exits: it sleeps (the GIL released) while any Arrow task is queued or running.
    """
    counters = _arrow_task_counters()
    deadline = time.monotonic() + timeout
    idle = 0
    while counters and idle < 2:  # twice in a row: a task may hand work to the other pool
        idle = idle + 1 if sum(count() for count in counters) == 0 else 0
        if idle < 2:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.001)
    return True


def register_exit_wait() -> None:
    """Register (once per process) :func:`settle_arrow_threads` as an exit handler.

    Exit handlers run after the interpreter has joined its non-daemon threads (a job's
    ``threads`` pool among them) and, last in first out, after those that the libraries a job
    imported registered later: the wait is the last thing before finalization, when nothing
    can start another read.
    """
    if not _REGISTERED:
        import atexit

        atexit.register(settle_arrow_threads)
        _REGISTERED.append(settle_arrow_threads)
