"""Keyed random row order of a release, across partitions, independent of the partitioning.

Publishing rows in the input's order lets anyone who knows that order link records by position.
Every release is therefore written in a random order derived from the key:

* global row ``r`` gets a 64-bit sort key, value ``r % BLOCK_ROWS`` of the raw stream
  ``(Tag.ROW_ORDER, r // BLOCK_ROWS)`` — it depends on the key and ``r`` only;
* the output is cut into ``n_files`` buckets by the high bits of the sort key (so the number of
  files depends only on the number of rows), and each bucket is sorted by (sort key, row);
* so the same key gives the same bytes for any partitioning of the input, a retried task
  reproduces its output, and without the key the order reveals nothing about the input order.

Kernels (:func:`row_keys`, :func:`split_rows`, :func:`merge_rows`) work on one block and know
nothing of Dask; :func:`shuffle` wires them (one split task per input block, one merge task per
output file). A block is any object the given :class:`BlockOps` can count, slice and concatenate.

Every output file takes rows from every input block, so all the pieces exist at once: the whole
release is in flight. When that does not fit in the workers' memory, :func:`stage_pieces`
writes each split task's pieces to a staging folder of the output's storage instead (one file
per input block with an index of its pieces, :func:`split_to_files`) and each merge task reads
its own piece of every file (:func:`merge_from_files`):
a worker then holds one block per running task, and nothing is left to the Dask workers to
spill. Both give the same blocks.
"""

from __future__ import annotations

import math
import pickle
import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..random import BLOCK_ROWS, Key, Tag

__all__ = [
    "BlockOps",
    "row_keys",
    "bucket_of",
    "n_files",
    "split_rows",
    "merge_rows",
    "shuffle",
    "stage_pieces",
    "split_to_files",
    "merge_from_files",
    "output_positions",
]


@dataclass(frozen=True)
class BlockOps:
    """How to count, take rows of and concatenate one kind of block (module-level functions,
    so that tasks pickle); optionally how to store a piece compactly while it is staged
    (``stage``/``unstage``: the unstaged block must write the same bytes)."""

    n_rows: Callable[[Any], int]
    take: Callable[[Any, np.ndarray], Any]
    concat: Callable[[list[Any]], Any]
    stage: Callable[[Any], Any] | None = None
    unstage: Callable[[Any], Any] | None = None


def row_keys(key: Key, start: int, stop: int) -> np.ndarray:
    """The uint64 sort keys of global rows ``start .. stop-1``."""
    out = np.empty(max(0, stop - start), dtype=np.uint64)
    r = start
    while r < stop:
        b = r // BLOCK_ROWS
        lo, hi = r - b * BLOCK_ROWS, min(stop, (b + 1) * BLOCK_ROWS) - b * BLOCK_ROWS
        raw = np.random.Philox(key.seed_sequence(Tag.ROW_ORDER, b)).random_raw(hi)
        out[r - start : r - start + hi - lo] = raw[lo:hi]
        r += hi - lo
    return out


def bucket_of(keys: np.ndarray, n_out: int) -> np.ndarray:
    """Output file of each sort key: ``floor(key * n_out / 2**64)``, exact in integers."""
    return ((keys >> np.uint64(32)) * np.uint64(n_out) >> np.uint64(32)).astype(np.int64)


def n_files(n_rows: int, rows_per_file: int) -> int:
    """Number of output files for ``n_rows`` rows (at least one)."""
    return max(1, math.ceil(int(n_rows) / max(1, int(rows_per_file))))


def split_rows(block: Any, start: int, key: Key, n_out: int, ops: BlockOps) -> tuple[Any, ...]:
    """Kernel: cut one input block (global rows ``start ..``) into ``n_out`` pieces
    ``(rows, sort keys, global row ids)``, one per output file."""
    n = int(ops.n_rows(block))
    keys = row_keys(key, start, start + n)
    dest = bucket_of(keys, n_out)
    order = np.argsort(dest, kind="stable")
    bounds = np.searchsorted(dest[order], np.arange(n_out + 1))
    pieces = []
    for j in range(n_out):
        idx = order[bounds[j] : bounds[j + 1]]
        pieces.append((ops.take(block, idx), keys[idx], start + idx.astype(np.int64)))
    return tuple(pieces)


def merge_rows(pieces: Sequence[tuple[Any, ...]], ops: BlockOps) -> Any:
    """Kernel: the rows of one output file, sorted by (sort key, global row)."""
    merged = ops.concat([p[0] for p in pieces])
    keys = np.concatenate([p[1] for p in pieces]) if pieces else np.zeros(0, np.uint64)
    rows = np.concatenate([p[2] for p in pieces]) if pieces else np.zeros(0, np.int64)
    order = np.lexsort((rows, keys))
    return ops.take(merged, order)


def shuffle(blocks: Sequence[Any], rows: Sequence[int], key: Key, n_out: int, ops: BlockOps, *, name: str) -> list[Any]:
    """Graph: the keyed order of the rows of ``blocks`` (delayed, ``rows[i]`` rows each) as
    ``n_out`` delayed output blocks."""
    import dask
    from dask.base import tokenize

    starts = np.concatenate([[0], np.cumsum([int(r) for r in rows])]).astype(np.int64)
    token = tokenize(name, key.digest("row-order"), [getattr(b, "key", b) for b in blocks], list(rows), n_out)
    split = dask.delayed(split_rows, nout=n_out, pure=True)
    parts = [
        split(b, int(starts[i]), key, n_out, ops, dask_key_name=f"row-order-split-{token}-{i}") for i, b in enumerate(blocks)
    ]
    merge = dask.delayed(merge_rows, pure=True)
    return [merge([p[j] for p in parts], ops, dask_key_name=f"row-order-merge-{token}-{j}") for j in range(n_out)]


def _stage_path(folder: str, i: int) -> str:
    return posixpath.join(folder, f"pieces-{i:05d}.bin")


def split_to_files(block: Any, start: int, key: Key, n_out: int, ops: BlockOps, fs: Any, folder: str, i: int) -> int:
    """Kernel: :func:`split_rows` of input block ``i``, its pieces written to one file of
    ``folder`` (a scratch folder of ours, deleted after the merge): a header of ``n_out + 1``
    little-endian int64 offsets, then piece ``j`` pickled at ``[offsets[j], offsets[j+1])``.
    One file per input block, not per piece. Returns the block's number of rows."""
    blobs = []
    for piece in split_rows(block, start, key, n_out, ops):
        if ops.stage is not None:
            piece = (ops.stage(piece[0]), *piece[1:])
        blobs.append(pickle.dumps(piece, protocol=pickle.HIGHEST_PROTOCOL))
    header = 8 * (n_out + 1)
    offsets = header + np.concatenate([[0], np.cumsum([len(b) for b in blobs])]).astype("<i8")
    with fs.open(_stage_path(folder, i), "wb") as fh:
        fh.write(offsets.tobytes())
        for blob in blobs:
            fh.write(blob)
    return int(ops.n_rows(block))


def merge_from_files(done: Sequence[int], j: int, ops: BlockOps, fs: Any, folder: str) -> Any:
    """Kernel: :func:`merge_rows` of output file ``j`` from piece ``j`` of each of the
    ``len(done)`` staged files (they stay until the whole release is written, so that a retried
    task finds them again)."""
    pieces = []
    for i in range(len(done)):
        with fs.open(_stage_path(folder, i), "rb") as fh:
            fh.seek(8 * j)
            lo, hi = np.frombuffer(fh.read(16), dtype="<i8")
            fh.seek(int(lo))
            piece = pickle.loads(fh.read(int(hi - lo)))  # our own scratch file, written above
        pieces.append((ops.unstage(piece[0]), *piece[1:]) if ops.unstage is not None else piece)
    return merge_rows(pieces, ops)


def stage_pieces(
    blocks: Sequence[Any], rows: Sequence[int], key: Key, n_out: int, ops: BlockOps, *, name: str, fs: Any, folder: str
) -> Any:
    """Graph: one :func:`split_to_files` task per input block, and a barrier task (the list of
    their row counts) that a consumer of output file ``j`` passes to :func:`merge_from_files`."""
    import dask
    from dask.base import tokenize

    starts = np.concatenate([[0], np.cumsum([int(r) for r in rows])]).astype(np.int64)
    token = tokenize(name, key.digest("row-order"), [getattr(b, "key", b) for b in blocks], list(rows), n_out, folder)
    split = dask.delayed(split_to_files, pure=True)
    done = [
        split(b, int(starts[i]), key, n_out, ops, fs, folder, i, dask_key_name=f"row-order-stage-{token}-{i}")
        for i, b in enumerate(blocks)
    ]
    # one barrier: every consumer depends on it alone, so the graph grows with blocks + files,
    # not with blocks x files
    return dask.delayed(list, pure=True)(done, dask_key_name=f"row-order-staged-{token}")


def output_positions(key: Key, n_rows: int, n_out: int) -> np.ndarray:
    """For the owner of the key: the output position of every input row (``n_rows`` rows,
    ``n_out`` files, no row dropped). ``positions[r]`` is where global row ``r`` was written."""
    keys = row_keys(key, 0, int(n_rows))
    dest = bucket_of(keys, n_out)
    order = np.lexsort((np.arange(keys.size), keys, dest))
    pos = np.empty(keys.size, dtype=np.int64)
    pos[order] = np.arange(keys.size)
    return pos
