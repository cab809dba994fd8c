"""Per-block kernels on transaction data: pure numpy/scipy functions, no dask.

A *label block* is a pair ``(indptr, labels)`` (int64 offsets and the items of all rows, as
original labels). A *transaction block* is a ``scipy.sparse.csr_array`` of int32 column ids with
sorted, unique ids per row and int32 ones as data.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import DataFormatError, ItemIdError

__all__ = [
    "parse_fimi_bytes",
    "parse_csv_bytes",
    "normalize_labels",
    "canonical_mask",
    "canonicalize_rows",
    "scan_label_block",
    "encode_label_block",
    "csr_block",
    "item_counts",
    "row_lengths",
    "block_summary",
    "format_fimi_block",
    "format_csv_block",
]

_SPACE = np.zeros(256, dtype=bool)
_SPACE[[ord(" "), ord("\t"), ord("\r"), ord("\n"), ord("\v"), ord("\f")]] = True


def _line_count(buf: np.ndarray) -> int:
    """Number of lines in a text block (a final line without newline counts)."""
    n_nl = int(np.count_nonzero(buf == 10))
    return n_nl + int(buf.size > 0 and buf[-1] != 10)


def parse_fimi_bytes(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Parse FIMI text (one transaction per line, whitespace-separated item ids).

    Vectorised: digits are located with a byte mask, numbers assembled per token with
    ``np.add.reduceat``; no Python loop over lines. Empty lines are empty transactions.

    Returns
    -------
    indptr : ndarray of int64, shape (n_rows + 1,)
    labels : ndarray of int64, the item ids of all rows in order.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    n_rows = _line_count(buf)
    if buf.size == 0:
        return np.zeros(1, np.int64), np.zeros(0, np.int64)
    is_digit = (buf >= 48) & (buf <= 57)
    bad = ~(is_digit | _SPACE[buf])
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        line = int(np.count_nonzero(buf[:pos] == 10)) + 1
        char = bytes(buf[pos : pos + 1]).decode("latin-1")
        what = "negative item id" if char == "-" else f"non-integer item (character {char!r})"
        raise DataFormatError(f"FIMI line {line} of this block: {what}")
    prev_digit = np.empty_like(is_digit)
    prev_digit[0] = False
    prev_digit[1:] = is_digit[:-1]
    starts = np.flatnonzero(is_digit & ~prev_digit)
    if starts.size == 0:
        return np.zeros(n_rows + 1, np.int64), np.zeros(0, np.int64)
    digit_pos = np.flatnonzero(is_digit)
    token = np.searchsorted(starts, digit_pos, side="right") - 1
    lengths = np.bincount(token, minlength=starts.size)
    if lengths.max() > 18:
        raise DataFormatError("FIMI item id too large (more than 18 digits)")
    # power of ten of each digit = digits remaining in its token
    token_end = starts + lengths
    power = token_end[token] - digit_pos - 1
    values = np.add.reduceat((buf[digit_pos] - 48).astype(np.int64) * 10 ** power, np.flatnonzero(np.r_[True, token[1:] != token[:-1]]))
    # row of each token = number of newlines before its start
    newline_before = np.cumsum(buf == 10)
    row = newline_before[starts] - (buf[starts] == 10)
    counts = np.bincount(row, minlength=n_rows)
    indptr = np.zeros(n_rows + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr, values


def parse_csv_bytes(data: bytes, *, sep: str = ",", as_int: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Parse basket CSV text: one transaction per line, items separated by ``sep``.

    Items are stripped of surrounding whitespace and quotes; empty fields are ignored.
    ``as_int=None`` keeps strings unless every item is a decimal integer.
    """
    text = data.decode("utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    counts = np.zeros(len(lines), np.int64)
    items: list[str] = []
    for i, line in enumerate(lines):
        fields = [f.strip().strip('"').strip() for f in line.split(sep)]
        fields = [f for f in fields if f]
        counts[i] = len(fields)
        items.extend(fields)
    indptr = np.zeros(len(lines) + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    labels = np.array(items, dtype=str) if items else np.zeros(0, dtype="<U1")
    if as_int is None:
        as_int = bool(labels.size) and all(s.isdigit() for s in items)
    if as_int:
        try:
            labels = labels.astype(np.int64)
        except ValueError:
            raise DataFormatError("CSV items are not all integers") from None
    return indptr, labels


def normalize_labels(labels: Any) -> np.ndarray:
    """Validate item labels: non-negative integers (int64) or strings.

    Raises
    ------
    DataFormatError
        NaN, non-integral floats, booleans, or mixed objects.
    ItemIdError
        Negative integers.
    """
    arr = np.asarray(labels)
    kind = arr.dtype.kind
    if kind == "b":
        raise DataFormatError("items must be integers or strings, not booleans")
    if kind == "f":
        if np.isnan(arr).any():
            raise DataFormatError("NaN item found; items must be integers or strings")
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.floor(arr)):
            raise DataFormatError("non-integer item found (a float with a fraction or infinity)")
        arr = arr.astype(np.int64)
        kind = "i"
    if kind == "O":
        if arr.size == 0:
            return np.zeros(0, np.int64)
        types = {type(x) for x in arr.tolist()}
        if types <= {int, np.int64, np.int32}:
            arr = arr.astype(np.int64)
            kind = "i"
        elif types <= {str, np.str_}:
            return arr.astype(str)
        elif types <= {int, float, np.int64, np.int32, np.float64, np.float32}:
            return normalize_labels(arr.astype(np.float64))
        else:
            names = sorted(t.__name__ for t in types)
            if float in types and any(x != x for x in arr.tolist() if isinstance(x, float)):
                raise DataFormatError("NaN item found; items must be integers or strings")
            raise DataFormatError(f"items must be all integers or all strings, found {names}")
    if kind in "iu":
        arr = arr.astype(np.int64, copy=False)
        if arr.size and arr.min() < 0:
            raise ItemIdError(f"negative item id {int(arr.min())}; item ids must be >= 0")
        return arr
    if kind == "U":
        return arr
    if kind == "S":
        return arr.astype(str)
    raise DataFormatError(f"unsupported item type {arr.dtype}")


def _row_ids(indptr: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(indptr.size - 1, dtype=np.int64), np.diff(indptr))


def canonical_mask(indptr: np.ndarray, ids: np.ndarray) -> bool:
    """True when every row's ids are strictly increasing (sorted, no duplicates)."""
    if ids.size < 2:
        return True
    increasing = ids[1:] > ids[:-1]
    row_start = np.zeros(ids.size, dtype=bool)
    starts = indptr[:-1][np.diff(indptr) > 0]
    row_start[starts] = True
    return bool(np.all(increasing | row_start[1:]))


def canonicalize_rows(indptr: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Sort ids within each row and drop duplicates.

    Returns
    -------
    indptr, ids, n_removed
        ``n_removed`` counts duplicate entries that were dropped.
    """
    if canonical_mask(indptr, ids):
        return indptr, ids, 0
    rows = _row_ids(indptr)
    order = np.lexsort((ids, rows))
    rows, ids = rows[order], ids[order]
    keep = np.ones(ids.size, dtype=bool)
    keep[1:] = (rows[1:] != rows[:-1]) | (ids[1:] != ids[:-1])
    n_removed = int(ids.size - np.count_nonzero(keep))
    rows, ids = rows[keep], ids[keep]
    counts = np.bincount(rows, minlength=indptr.size - 1)
    new_indptr = np.zeros_like(indptr)
    np.cumsum(counts, out=new_indptr[1:])
    return new_indptr, ids, n_removed


def scan_label_block(block: tuple[np.ndarray, np.ndarray]) -> dict[str, Any]:
    """First pass over a label block: rows, distinct labels, duplicates, integer-ness."""
    indptr, labels = block
    labels = normalize_labels(labels)
    uniq = np.unique(labels)
    n_dup = 0
    if labels.size > 1:
        rows = _row_ids(indptr)
        order = np.lexsort((labels, rows))
        r, l = rows[order], labels[order]
        n_dup = int(np.count_nonzero((r[1:] == r[:-1]) & (l[1:] == l[:-1])))
    return {"rows": int(indptr.size - 1), "labels": uniq, "duplicates": n_dup, "nnz": int(labels.size)}


def csr_block(indptr: np.ndarray, ids: np.ndarray, n_items: int) -> sp.csr_array:
    """A transaction block from canonical row offsets and column ids (int32 everywhere)."""
    n_rows = indptr.size - 1
    indptr32 = indptr.astype(np.int32, copy=False)
    ids32 = ids.astype(np.int32, copy=False)
    data = np.ones(ids32.size, dtype=np.int32)
    return sp.csr_array((data, ids32, indptr32), shape=(n_rows, int(n_items)))


def encode_label_block(block: tuple[np.ndarray, np.ndarray], labels_sorted: np.ndarray) -> sp.csr_array:
    """Second pass: map labels to column ids of the (sorted) vocabulary, canonicalise rows."""
    indptr, labels = block
    labels = normalize_labels(labels)
    if labels_sorted.dtype.kind == "U":
        labels = labels.astype(str)
    ids = np.searchsorted(labels_sorted, labels)
    if ids.size:
        idc = np.minimum(ids, labels_sorted.size - 1)
        if labels_sorted.size == 0 or not np.all(labels_sorted[idc] == labels):
            raise ItemIdError("an item is missing from the vocabulary")
    indptr, ids, _ = canonicalize_rows(np.asarray(indptr, np.int64), ids.astype(np.int64))
    return csr_block(indptr, ids, labels_sorted.size)


def item_counts(block: sp.csr_array, n_items: int) -> np.ndarray:
    """Support count of every item in one block (int64; bincount of the CSR indices)."""
    return np.bincount(block.indices, minlength=n_items).astype(np.int64, copy=False)


def row_lengths(block: sp.csr_array) -> np.ndarray:
    """Number of items of each transaction of the block."""
    return np.diff(block.indptr).astype(np.int64)


def block_summary(block: sp.csr_array) -> dict[str, Any]:
    """Rows, nnz, empty rows and the transaction-length histogram of one block."""
    lengths = row_lengths(block)
    return {
        "rows": int(block.shape[0]),
        "nnz": int(block.indices.size),
        "empty": int(np.count_nonzero(lengths == 0)),
        "max_len": int(lengths.max()) if lengths.size else 0,
        "min_len": int(lengths.min()) if lengths.size else 0,
        "hist": np.bincount(lengths) if lengths.size else np.zeros(1, np.int64),
    }


def merge_summaries(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Combine :func:`block_summary` results (associative, for a tree reduction)."""
    nonempty = [p for p in parts if p["rows"]]
    width = max(p["hist"].size for p in parts)
    hist = np.zeros(width, np.int64)
    for p in parts:
        hist[: p["hist"].size] += p["hist"]
    return {
        "rows": sum(p["rows"] for p in parts),
        "nnz": sum(p["nnz"] for p in parts),
        "empty": sum(p["empty"] for p in parts),
        "max_len": max((p["max_len"] for p in nonempty), default=0),
        "min_len": min((p["min_len"] for p in nonempty), default=0),
        "hist": hist,
    }


def _label_strings(labels: np.ndarray) -> np.ndarray:
    return labels.astype(str).astype(object)


def format_fimi_block(block: sp.csr_array, labels: np.ndarray, sep: str = " ") -> bytes:
    """Text of one block: one line per transaction, labels joined by ``sep``."""
    if block.shape[0] == 0:
        return b""
    strs = _label_strings(labels)[block.indices]
    ip = block.indptr
    lines = [sep.join(strs[ip[i] : ip[i + 1]]) for i in range(block.shape[0])]
    return ("\n".join(lines) + "\n").encode("utf-8")


def format_csv_block(block: sp.csr_array, labels: np.ndarray) -> bytes:
    """Basket CSV text of one block (labels containing commas are quoted)."""
    lab = np.array([f'"{s}"' if "," in s else s for s in labels.astype(str).tolist()], dtype=object)
    return format_fimi_block(block, lab, sep=",")
