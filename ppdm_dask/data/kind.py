"""Baskets or a table? The kind of an input, told from its first lines or its Parquet schema.

The two kinds of input are read by different commands: **baskets** (FIMI, basket CSV, a ppdm
transaction dataset: one set of items per line or row) by ``mine``, ``emask``, ``sketch``,
``km-anonymize``, ``krimp``, ``convert`` and ``info``; **tables** (CSV or Parquet with named
columns, one value per cell) by ``anonymize``, ``access-control`` and ``condense``. A table read
as baskets does not fail on its own: its header becomes a transaction and every cell an item,
so a name column ends up in the release's vocabulary. Each reader therefore asks
:func:`kind_of_text` (or :func:`kind_of_parquet_schema` / :func:`kind_of_manifest_format`)
first and refuses the other kind, naming the commands that read it.

What makes a text file a **table** (any of):

* a **header row** of column-like names (each holds a letter and is not a number; all
  different; none of them occurs among the cells below), the same number of fields in (nearly)
  every row under one of the separators ``,`` ``;`` tab ``|`` (or whitespace, in a file with
  none of those: a label may hold a space), and rows that read as records: a column of numbers
  under a name, or, with at least 8 rows, a column of a few repeated values found in no other
  column (an attribute's own domain);
* **no header**, but fixed field counts and cells that items never are: a column of decimal
  numbers (``0.455``), or values repeated inside most rows (a basket lists an item once).

What makes it **baskets**: FIMI lines (whitespace-separated non-negative integer item ids), or
lines of varying length with no header row. Anything else is ``unknown`` and left to the
reader. Dense FIMI data, where every line has the same number of items (chess, mushroom), stays
baskets: its first line is item ids, not names, and no id repeats within a line. A basket CSV
with fixed-length baskets stays baskets too: its first basket shares items with the others, or
its frequent items wander between positions. See ``docs/data.md#input-kinds-baskets-or-a-table``.

The check reads the first 64 KiB of a file (of the first file of a glob). A basket CSV whose
first line really is a basket of rare labels can look like a header: the override is
``check_kind=False`` (Python) or ``--as-baskets`` (CLI), which runs the job inside
:func:`reading_as_baskets`.
"""

from __future__ import annotations

import contextlib
import contextvars
import csv
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import DataFormatError

__all__ = [
    "InputKind",
    "kind_of_text",
    "kind_of_parquet_schema",
    "kind_of_manifest_format",
    "read_head",
    "refuse_table",
    "refuse_baskets",
    "check_baskets_file",
    "reading_as_baskets",
    "TABLE_COMMANDS",
    "BASKET_COMMANDS",
    "HEAD_BYTES",
]

#: bytes read from the start of a file to tell its kind (whole lines only)
HEAD_BYTES = 64 * 1024
#: lines of the head looked at (enough for the repeats and field counts to show)
_MAX_LINES = 1000
_SEPARATORS = {",": "','", ";": "';'", "\t": "tab", "|": "'|'", None: "whitespace"}
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_DECIMAL = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?")
_ITEM_ID = re.compile(r"[0-9]+")
#: data rows needed before repeated labels alone (no column of numbers) show a table
_MIN_RECORDS = 8
#: the command lines of each kind, as the refusals name them
TABLE_COMMANDS = "ppdm anonymize, ppdm access-control or ppdm condense"
BASKET_COMMANDS = "ppdm mine, ppdm emask, ppdm sketch, ppdm km-anonymize or ppdm krimp"
#: manifest formats of ppdm folders of each kind
_TABLE_FORMATS = ("ppdm-anonymized", "ppdm-condensed", "ppdm-table")
_BASKET_FORMATS = ("ppdm-transactions",)

_AS_BASKETS: contextvars.ContextVar[bool] = contextvars.ContextVar("ppdm_read_as_baskets", default=False)


@dataclass(frozen=True)
class InputKind:
    """The kind of an input and the evidence for it.

    Attributes
    ----------
    kind : {"table", "baskets", "unknown"}
    reason : str
        What showed it, for the error line (``"header row name,zip,age; 3 fields in every
        row; column 'age' holds numbers"``); empty for ``unknown``.
    """

    kind: str
    reason: str = ""


UNKNOWN = InputKind("unknown")


# ---------------------------------------------------------------------- text
def _lines(head: bytes | str, complete: bool) -> list[str]:
    """The non-empty lines of ``head`` (the last one dropped when the head was cut off)."""
    text = head.decode("utf-8", errors="replace") if isinstance(head, bytes) else head
    text = text.removeprefix("\ufeff")
    if not complete and "\n" in text:
        text = text[: text.rindex("\n")]  # whole lines only
    return [ln for ln in text.splitlines() if ln.strip()][:_MAX_LINES]


def _is_number(cell: str) -> bool:
    return _NUMBER.fullmatch(cell) is not None


def _column_like(cell: str) -> bool:
    """A header cell: a name with a letter in it, not a number, not a sentence."""
    return 0 < len(cell) <= 64 and not _is_number(cell) and any(ch.isalpha() for ch in cell)


def _split(lines: Sequence[str], sep: str | None) -> list[list[str]] | None:
    """The cells of every line under ``sep`` (``None``: runs of whitespace; otherwise CSV quoting
    as the basket and table readers apply it), stripped; ``None`` if the quoting is broken."""
    if sep is None:
        return [ln.split() for ln in lines]
    try:
        return [[c.strip() for c in row] for row in csv.reader(lines, delimiter=sep, strict=True)]
    except csv.Error:
        return None


def _shown(cells: Sequence[str], sep: str | None, limit: int = 8) -> str:
    joiner = " " if sep is None else sep if sep != "\t" else "<tab>"
    more = f"{joiner}..." if len(cells) > limit else ""
    return joiner.join(cells[:limit]) + more


def _fields_text(n: int, fixed: float) -> str:
    where = "every row" if fixed == 1.0 else f"{fixed:.0%} of the rows"
    return f"{n} field{'s' if n != 1 else ''} in {where}"


def _header_table(rows: list[list[str]], sep: str | None) -> str | None:
    """The evidence that ``rows`` are a header row and records below it, or ``None``."""
    header, data = rows[0], rows[1:]
    n = len(header)
    if not data:
        return None
    names = header[1:] if n > 1 and header[0] == "" else header  # an unnamed index column (pandas' to_csv)
    if not names or not all(_column_like(c) for c in names) or len(set(names)) != len(names):
        return None
    fixed = sum(len(r) == n for r in data) / len(data)
    if fixed < (1.0 if n == 1 else 0.9):
        return None
    below = {c for r in data for c in r}
    if any(c in below for c in names):  # a name that is also a cell: the first line is a basket like the others
        return None
    records = [r for r in data if len(r) == n]
    columns = [[r[j] for r in records if r[j] != ""] for j in range(n)]
    numeric = next(
        (
            name
            for name, col in zip(header, columns)
            if name and len(col) >= max(1, len(records) // 2) and all(_is_number(c) for c in col)
        ),
        None,
    )
    if numeric is not None:
        evidence = f"column {numeric!r} holds numbers"
    else:
        # weaker than a column of numbers, so more is asked: enough rows, and a column of few
        # values found in no other column (an attribute's own domain). Fixed-length baskets
        # whose first one is rare fail it: a small vocabulary would repeat the first basket, and
        # an item found often wanders between positions.
        categorical = None
        if n > 1 and len(records) >= _MIN_RECORDS:
            for j, (name, col) in enumerate(zip(header, columns)):
                others = {c for k, other in enumerate(columns) if k != j for c in other}
                if name and len(col) >= len(records) // 2 and len(set(col)) <= len(col) // 2 and not set(col) & others:
                    categorical = name
                    break
        if categorical is None:
            return None
        evidence = f"column {categorical!r} repeats a few values of its own"
    return f"header row {_shown(header, sep)}; {_fields_text(n, fixed)}; {evidence}"


def _headerless_table(rows: list[list[str]], sep: str | None) -> str | None:
    """The evidence that ``rows`` are records without a header (fixed field counts and cells no
    basket holds), or ``None``."""
    n = len(rows[0])
    if n < 2 or len(rows) < 5 or any(len(r) != n for r in rows):
        return None
    for j in range(n):
        col = [r[j] for r in rows]
        if all(_is_number(c) for c in col) and sum(_DECIMAL.fullmatch(c) is not None for c in col) >= 0.9 * len(col):
            return f"no header, but {_fields_text(n, 1.0)} and column {j + 1} holds decimal numbers ({', '.join(col[:3])}, ...)"
    repeats = sum(len({c for c in r if c}) < sum(1 for c in r if c) for r in rows)
    if repeats >= 0.5 * len(rows):
        return (
            f"no header, but {_fields_text(n, 1.0)} and values repeat within {repeats:,} of {len(rows):,} rows "
            "(a basket lists each item once)"
        )
    return None


def _is_fimi(lines: Sequence[str]) -> bool:
    return all(_ITEM_ID.fullmatch(tok) for ln in lines for tok in ln.split())


def kind_of_text(head: bytes | str, *, complete: bool = True) -> InputKind:
    """The kind of a text file from its first bytes.

    Parameters
    ----------
    head : bytes or str
        The start of the file (decompressed), e.g. its first 64 KiB.
    complete : bool
        Whether ``head`` is the whole file (otherwise its last, cut-off line is ignored).

    Returns
    -------
    InputKind
        ``table`` (a header row and records, or records that no basket file holds),
        ``baskets`` (FIMI lines, or lines of varying length without a header) or ``unknown``.
    """
    lines = _lines(head, complete)
    if not lines:
        return UNKNOWN
    if _is_fimi(lines):
        lengths = [len(ln.split()) for ln in lines]
        lo, hi = min(lengths), max(lengths)
        return InputKind("baskets", f"FIMI lines of {lo} item ids each" if lo == hi else f"FIMI lines of {lo} to {hi} item ids")
    # whitespace separates fields only in files with no other separator: a label may hold a space
    plain = not any(ch in ln for ln in lines for ch in ",;\t|")
    grids = [(sep, rows) for sep in _SEPARATORS if (sep is not None or plain) and (rows := _split(lines, sep)) is not None]
    # the separator that splits the first line into the most fields speaks first
    grids.sort(key=lambda g: -len(g[1][0]))
    for sep, rows in grids:
        if len(rows[0]) >= 2 or sep is None:  # one column: judged once, split at whitespace (no separator in the file)
            why = _header_table(rows, sep) or _headerless_table(rows, sep)
            if why:
                return InputKind("table", why)
    rows = _split(lines, ",") or _split(lines, None)
    lengths = {len(r) for r in rows}
    below = {x for r in rows[1:] for x in r}
    first_like_header = all(_column_like(c) for c in rows[0]) and not any(c in below for c in rows[0])
    if len(rows) > 1 and len(lengths) > 1 and not first_like_header:
        return InputKind("baskets", f"lines of {min(lengths)} to {max(lengths)} items separated by ',' and no header row")
    return UNKNOWN


# ---------------------------------------------------------------------- Parquet
def kind_of_parquet_schema(names: Sequence[str], types: Sequence[Any], column: str = "items") -> InputKind:
    """The kind of a foreign Parquet file from its schema (column names and their Arrow types;
    ``None`` for a type that is not Arrow): baskets when ``column`` is a list column (what the
    basket reader reads), a table when no column is a list."""
    import pyarrow as pa

    lists = [n for n, t in zip(names, types) if isinstance(t, pa.DataType) and (pa.types.is_list(t) or pa.types.is_large_list(t))]
    if column in lists:
        return InputKind("baskets", f"a list column {column!r} of items")
    if not lists:
        return InputKind("table", f"columns {_shown(list(names), ', ')}; no list column {column!r} of items")
    return UNKNOWN


def kind_of_manifest_format(fmt: Any) -> InputKind:
    """The kind of a ppdm folder from its manifest's ``format``."""
    if fmt in _TABLE_FORMATS:
        return InputKind("table", f"a {fmt} dataset")
    if fmt in _BASKET_FORMATS:
        return InputKind("baskets", f"a {fmt} dataset")
    return UNKNOWN


# ---------------------------------------------------------------------- refusals
def refuse_table(url: str, kind: InputKind, *, text: bool = True) -> None:
    """Raise when a basket reader was given a table: one line naming the file, the evidence and
    the table commands (and, for a text file, the override)."""
    if kind.kind != "table":
        return
    if text:
        raise DataFormatError(
            f"{url} looks like a table, not baskets ({kind.reason}): as baskets its header would be a transaction "
            "and every cell an item",
            fix=f"tables are released with {TABLE_COMMANDS}; `as_baskets` if every line really is a basket",
            python="read it with ppdm_dask.read_table; check_kind=False if every line really is a basket",
        )
    raise DataFormatError(
        f"{url} is a table, not baskets ({kind.reason})",
        cli=f"tables are released with {TABLE_COMMANDS}",
        python="read it with ppdm_dask.read_table",
    )


def refuse_baskets(url: str, kind: InputKind) -> None:
    """Raise when a table reader was given baskets: one line naming the file, the evidence and
    the basket commands."""
    if kind.kind == "baskets":
        raise DataFormatError(
            f"{url} holds baskets, not a table ({kind.reason})",
            cli=f"baskets are read by {BASKET_COMMANDS}",
            python="read it with ppdm_dask.read",
        )


@contextlib.contextmanager
def reading_as_baskets() -> Iterator[None]:
    """Within this block the basket readers read a text file as baskets even when it looks like a
    table (the CLI's ``--as-baskets``, which must also reach readers called deep inside a job,
    such as ``ppdm verify --original``)."""
    token = _AS_BASKETS.set(True)
    try:
        yield
    finally:
        _AS_BASKETS.reset(token)


def read_head(url: str, storage_options: Mapping[str, Any] | None = None) -> tuple[bytes, bool] | None:
    """``(first HEAD_BYTES decompressed bytes, whether that is the whole file)`` of ``url`` (of
    the first file of a glob); ``None`` when it cannot be read (the reader then says why)."""
    from .folder import open_fs

    try:
        fs, path = open_fs(url, storage_options)
        if any(ch in path for ch in "*?["):
            matches = sorted(fs.expand_path(path))
            if not matches:
                return None
            path = matches[0]
        if fs.isdir(path):
            return None
        from fsspec.utils import infer_compression

        with fs.open(path, "rb", compression=infer_compression(path)) as fh:
            head = fh.read(HEAD_BYTES + 1)
    except Exception:  # missing, unreadable, damaged: the reader names the file and the fault
        return None
    return head[:HEAD_BYTES], len(head) <= HEAD_BYTES


def check_baskets_file(url: str, storage_options: Mapping[str, Any] | None = None, *, check_kind: bool = True) -> None:
    """Refuse a text file given to a basket reader when it looks like a table (unless
    ``check_kind`` is false or the caller runs inside :func:`reading_as_baskets`)."""
    if not check_kind or _AS_BASKETS.get():
        return
    got = read_head(url, storage_options)
    if got is not None:
        refuse_table(url, kind_of_text(got[0], complete=got[1]))
