"""Small helpers that build Dask graphs over row blocks (no algorithm logic here)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

__all__ = [
    "CSR_META",
    "MAX_PARTITIONS",
    "partitions_of",
    "check_partition_count",
    "blocks_from_tasks",
    "concat_rows",
    "block_partials",
    "tree_sum",
    "tree_reduce",
]

#: Meta of every transaction block: dask cannot infer it from scipy chunks.
CSR_META = sp.csr_array((0, 0), dtype=np.int32)
#: Most partitions one collection may have: each costs a task and scheduler memory (~KBs), and
#: the graph is built on the driver, so a runaway row count fails here and not with MemoryError.
MAX_PARTITIONS = 1_000_000


def partitions_of(rows: int, block_rows: int, blocks_per_partition: int) -> int:
    """Partitions of ``rows`` rows cut into blocks of ``block_rows``, ``blocks_per_partition``
    blocks per partition (the generators' layout)."""
    n_blocks = -(-int(rows) // int(block_rows))
    return -(-n_blocks // int(blocks_per_partition))


def check_partition_count(n_partitions: int, what: str, *, python: str, fix: str) -> None:
    """Refuse a plan of more than :data:`MAX_PARTITIONS` partitions (``what`` says whose),
    with the fix in both spellings (see :class:`~ppdm_dask.errors.PPDMError`)."""
    from .errors import InvalidParameter

    if n_partitions > MAX_PARTITIONS:
        raise InvalidParameter(
            f"{what} would take {n_partitions:,} partitions, more than the {MAX_PARTITIONS:,} one job can schedule",
            python=python,
            fix=fix,
        )


def blocks_from_tasks(
    name: str,
    tasks: Sequence[tuple],
    rows: Sequence[int],
    n_cols: int,
    *,
    meta: Any = CSR_META,
    dtype: Any = np.int32,
    dependencies: Sequence[Any] = (),
) -> da.Array:
    """A row-blocked dask array from one task tuple ``(func, *args)`` per block.

    Unlike ``da.concatenate`` this keeps 0-row blocks, so an empty partition stays a partition.
    ``name`` must be unique for the content (include a ``tokenize`` of the inputs).
    """
    if len(tasks) != len(rows):
        raise ValueError("one task per block is needed")
    dsk = {(name, i, 0): task for i, task in enumerate(tasks)}
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=list(dependencies))
    chunks = (tuple(int(r) for r in rows) or (0,), (int(n_cols),))
    if not tasks:  # a zero-block array is not representable; use one empty block
        graph = HighLevelGraph.from_collections(name, {(name, 0, 0): (_empty_csr, int(n_cols))}, dependencies=[])
    return da.Array(graph, name, chunks, meta=meta, dtype=dtype)


def _empty_csr(n_cols: int) -> sp.csr_array:
    return sp.csr_array((0, n_cols), dtype=np.int32)


def block_partials(
    blocks: da.Array,
    kernel: Callable[..., np.ndarray],
    shape: tuple[int, ...],
    dtype: Any,
    *args: Any,
    **kwargs: Any,
) -> da.Array:
    """Apply ``kernel(block, *args, **kwargs) -> ndarray(shape)`` to every row block.

    Returns a dense dask array of shape ``(n_blocks, *shape)``: one partial result per block,
    ready for a tree reduction (``.sum(axis=0, split_every=...)``).
    """

    def _wrapped(block, *a, **kw):
        out = np.asarray(kernel(block, *a, **kw), dtype=dtype)
        if out.shape != tuple(shape):
            raise ValueError(f"kernel returned shape {out.shape}, expected {shape}")
        return out[None, ...]

    nb = blocks.numblocks[0]
    out_chunks = ((1,) * nb,) + tuple((s,) for s in shape)
    # drop the item axis of the input and add the result axes
    return blocks.map_blocks(
        _wrapped,
        *args,
        chunks=out_chunks,
        drop_axis=1 if len(shape) == 0 else None,
        new_axis=list(range(2, 1 + len(shape))) if len(shape) > 1 else None,
        dtype=dtype,
        meta=np.empty((0,) * (1 + len(shape)), dtype=dtype),
        **kwargs,
    )


def tree_sum(
    blocks: da.Array,
    kernel: Callable[..., np.ndarray],
    shape: tuple[int, ...],
    dtype: Any,
    *args: Any,
    split_every: int = 8,
    **kwargs: Any,
) -> da.Array:
    """Sum ``kernel(block)`` over all row blocks as a tree reduction (lazy, 0-d or n-d)."""
    return block_partials(blocks, kernel, shape, dtype, *args, **kwargs).sum(axis=0, split_every=split_every, dtype=dtype)


def tree_reduce(parts: Sequence[Any], combine: Callable[[list], Any], *, split_every: int = 8) -> Any:
    """Reduce delayed ``parts`` with ``combine(list_of_parts)`` in a tree of fan-in ``split_every``."""
    level = list(parts)
    if not level:
        raise ValueError("nothing to reduce")
    depth = 0
    while len(level) > 1:
        level = [dask.delayed(combine, pure=True)(level[i : i + split_every]) for i in range(0, len(level), split_every)]
        depth += 1
    if depth == 0:
        return dask.delayed(combine, pure=True)(level)
    return level[0]


def concat_rows(arrays: Sequence[da.Array], rows: Sequence[int], dtype: Any = np.int64) -> da.Array:
    """Concatenate 1-D per-block arrays and restore the exact row chunks (0-row ones included:
    ``da.concatenate`` drops empty chunks)."""
    out = da.concatenate(list(arrays)) if arrays else da.zeros(0, dtype=dtype)
    rows = tuple(int(r) for r in rows)
    if out.chunks[0] != rows and rows:
        out = out.rechunk({0: rows})
    return out


def unique_name(prefix: str, *args: Any) -> str:
    """Deterministic graph key name from the inputs."""
    return f"{prefix}-{tokenize(*args)}"
