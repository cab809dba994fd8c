"""Per-block kernels on transaction data: pure numpy/scipy functions, no dask.

A *label block* is a pair ``(indptr, labels)`` (int64 offsets and the items of all rows, as
original labels). A *transaction block* is a ``scipy.sparse.csr_array`` of int32 column ids with
sorted, unique ids per row and int32 ones as data.
"""

from __future__ import annotations

import functools
import re
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
    "csv_field",
    "CSVSyntaxError",
]

_SPACE = np.zeros(256, dtype=bool)
_SPACE[[ord(" "), ord("\t"), ord("\r"), ord("\n"), ord("\v"), ord("\f")]] = True


def _line_count(buf: np.ndarray) -> int:
    """Number of lines in a text block (a final line without newline counts)."""
    n_nl = int(np.count_nonzero(buf == 10))
    return n_nl + int(buf.size > 0 and buf[-1] != 10)


def parse_fimi_bytes(data: bytes, source: str | None = None) -> tuple[np.ndarray, np.ndarray]:
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
        where = f"{source} line {line}" if source else f"FIMI line {line} of this block"
        raise DataFormatError(
            f"{where}: {what} (a FIMI file holds non-negative integer item ids; basket CSV is read with --format csv)"
        )
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
    values = np.add.reduceat(
        (buf[digit_pos] - 48).astype(np.int64) * 10**power, np.flatnonzero(np.r_[True, token[1:] != token[:-1]])
    )
    # row of each token = number of newlines before its start
    newline_before = np.cumsum(buf == 10)
    row = newline_before[starts] - (buf[starts] == 10)
    counts = np.bincount(row, minlength=n_rows)
    indptr = np.zeros(n_rows + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr, values


class CSVSyntaxError(DataFormatError):
    """A malformed quoted field in basket CSV; ``line`` is its 1-based line number."""

    def __init__(self, message: str, line: int, reason: str) -> None:
        super().__init__(message)
        self.line = line
        self.reason = reason

    def __reduce__(self):  # picklable (raised on Dask workers)
        return type(self), (str(self), self.line, self.reason)


def _check_sep(sep: str) -> None:
    if not sep or '"' in sep or "\n" in sep or "\r" in sep:
        raise ValueError(f"basket CSV separator {sep!r} must be non-empty, without a quote or a line break")


@functools.lru_cache(maxsize=16)
def _csv_field_re(sep: str) -> re.Pattern[str]:
    """One basket-CSV field, matched in ``sep + line`` (a line without its newline).

    Each match is the separator before a field and the field (the next separator is left for
    the next match). Groups: 1 the inside of a quoted field (quotes still doubled), 2 an unquoted
    field without its surrounding whitespace, 3 a separator where no well-formed field follows
    (an unterminated quote, or text after a closing quote). An empty field matches none of them.
    """
    s = re.escape(sep)
    if len(sep) == 1:
        ws, text, first, last = rf"[^\S{s}]", rf"[^{s}]", rf'[^"\s{s}]', rf"[^\s{s}]"
    else:
        ws, text, first, last = rf"(?:(?!{s})\s)", rf"(?:(?!{s}).)", rf'(?!{s})[^"\s]', rf"(?!{s})\S"
    return re.compile(
        rf"{s}{ws}*"
        rf'(?:"([^"]*(?:""[^"]*)*)"{ws}*'  # quoted: "" inside is a quote, whitespace around ignored
        rf"|({first}(?:{text}*{last})?){ws}*"  # unquoted: a quote inside (not first) is literal
        rf"|)(?={s}|$)"  # or empty
        r"|(.)"
    )


def _csv_quoted_line(line: str, sep: str, lineno: int) -> list[str]:
    """Fields of a line that contains a quote (RFC 4180 with lenient whitespace)."""
    whole = line.strip()
    if len(whole) > 1 and whole[0] == '"' == whole[-1]:  # every field quoted, as some writers do
        fields = whole[1:-1].split(f'"{sep}"')
        if whole.count('"') == 2 * len(fields):  # no other quote: no "" inside, no unquoted field
            return [f for f in fields if f]
    found = _csv_field_re(sep).findall(sep + line)
    fields = [quoted.replace('""', '"') if quoted else plain for quoted, plain, _ in found]
    if "" in fields:  # empty fields (no item), or a malformed quote
        if any(bad for _, _, bad in found):
            raise _csv_syntax_error(line, sep, lineno)
        fields = [f for f in fields if f]
    return fields


def _csv_syntax_error(line: str, sep: str, lineno: int) -> CSVSyntaxError:
    m = next(m for m in _csv_field_re(sep).finditer(sep + line) if m.group(3))
    opened = line.index('"', m.start())  # the bad field starts at m.start() of ``line``
    pos = opened + 1
    while (pos := line.find('"', pos)) != -1 and line.startswith('""', pos):
        pos += 2  # a doubled quote inside the field
    if pos == -1:
        reason = (
            f"unterminated quoted field (opened at column {opened + 1}); a quoted field must "
            "close on its line: basket CSV labels cannot contain line breaks"
        )
    else:
        reason = f"text after the closing quote of a quoted field (column {pos + 2})"
    return CSVSyntaxError(reason, lineno, reason)


def _csv_int_block(data: bytes, sep: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Vectorised parse of a block made only of digits, ``sep`` and newlines (CRLF allowed).

    Every field is then a decimal integer or empty, so the block is an integer block; ``None``
    when the block has anything else (or an item of more than 18 digits).
    """
    if len(sep) != 1 or not sep.isascii() or sep.isdigit() or not data:
        return None
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
    allowed = b"0123456789\n" + sep.encode()
    if data[:4096].translate(None, allowed):  # cheap early exit for text blocks
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    is_digit = (buf >= 48) & (buf <= 57)
    if np.count_nonzero(is_digit | (buf == ord(sep)) | (buf == 10)) != buf.size:
        return None
    edge = np.diff(is_digit.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts, ends = np.flatnonzero(edge == 1), np.flatnonzero(edge == -1)
    if starts.size and int((ends - starts).max()) > 18:
        return None
    newlines = np.flatnonzero(buf == 10)
    line_ends = newlines if buf[-1] == 10 else np.r_[newlines, buf.size]
    indptr = np.zeros(line_ends.size + 1, np.int64)
    indptr[1:] = np.searchsorted(starts, line_ends)
    tokens = [t for t in data.replace(b"\n", sep.encode()).split(sep.encode()) if t]
    labels = np.array(tokens).astype(np.int64) if tokens else np.zeros(0, np.int64)
    return indptr, labels


def parse_csv_bytes(
    data: bytes, *, sep: str = ",", as_int: bool | None = None, source: str | None = None, first_line: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Parse basket CSV text: one transaction per line, items separated by ``sep``.

    The dialect is RFC 4180 with ``sep`` as separator: a field may be quoted (``"a,b"``), a
    quote inside a quoted field is doubled (the field ``"5"" disk"`` is the label ``5" disk``)
    and its text is kept verbatim, spaces included. Unquoted fields are stripped of surrounding
    whitespace (a quote inside one, not first, is literal); whitespace around a quoted field is
    ignored; empty fields, quoted or not, are no item. A quoted field must close on its own line
    (labels cannot contain line breaks: lines are the unit of the parallel split), otherwise
    :class:`CSVSyntaxError` (a :class:`DataFormatError`) names ``source`` and the line
    (``first_line`` is the number of the block's first line). Lines without a quote take a
    plain split, and a block of only digits, separators and newlines a vectorised integer parse.
    ``as_int=None`` keeps strings unless every item is a decimal integer (quoted or not).
    """
    _check_sep(sep)
    if as_int is not False and b'"' not in data:
        fast = _csv_int_block(data, sep)
        if fast is not None and fast[1].size:
            return fast
    text = data.decode("utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    counts = np.zeros(len(lines), np.int64)
    items: list[str] = []
    quoted_block = '"' in text
    try:
        for i, line in enumerate(lines):
            if quoted_block and '"' in line:
                fields = _csv_quoted_line(line, sep, i + first_line)
            else:
                fields = [f.strip() for f in line.split(sep)]
                fields = [f for f in fields if f]
            counts[i] = len(fields)
            items.extend(fields)
    except CSVSyntaxError as exc:
        where = f"{source} line {exc.line}" if source else f"basket CSV line {exc.line} of this block"
        raise CSVSyntaxError(f"{where}: {exc.reason}", exc.line, exc.reason) from None
    indptr = np.zeros(len(lines) + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    labels = np.array(items, dtype=str) if items else np.zeros(0, dtype="<U1")
    if as_int is None:
        as_int = bool(labels.size) and all(s.isdigit() and s.isascii() for s in items)
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


def csv_field(label: str, sep: str = ",") -> str:
    """One label as a basket-CSV field (RFC 4180 quoting, see :func:`parse_csv_bytes`).

    Quoted (inner quotes doubled) when it contains ``sep``, a quote or a CR, or has leading or
    trailing whitespace. Empty labels and labels with a line feed cannot be stored
    (:class:`DataFormatError`): an empty field is no item, and lines are transactions.
    """
    if not label:
        raise DataFormatError("basket CSV cannot store an empty item label (an empty field is no item); write Parquet")
    if "\n" in label:
        raise DataFormatError(f"basket CSV cannot store the item label {label!r} (it contains a line break); write Parquet")
    if sep in label or '"' in label or "\r" in label or label[0].isspace() or label[-1].isspace():
        return '"' + label.replace('"', '""') + '"'
    return label


def format_csv_block(block: sp.csr_array, labels: np.ndarray, sep: str = ",") -> bytes:
    """Basket CSV text of one block: labels joined by ``sep``, quoted as :func:`csv_field` says."""
    _check_sep(sep)
    if labels.dtype.kind in "iu":
        return format_fimi_block(block, labels, sep=sep)
    lab = np.array([csv_field(s, sep) for s in labels.astype(str).tolist()], dtype=object)
    return format_fimi_block(block, lab, sep=sep)
