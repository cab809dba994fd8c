"""Small side files read whole: schemas, hierarchies, permissions (JSON or CSV text).

Each reader names the file and the flag that gives it in every error: a missing file, a folder
where a file is expected, bytes that are not UTF-8 text, an empty file, JSON that does not
parse. Without this a folder or a binary file surfaced as a raw ``IsADirectoryError`` or
``UnicodeDecodeError`` with no hint of which of the job's files was at fault.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import DataFormatError, DatasetNotFoundError

__all__ = ["read_text_file", "read_json_file"]


def read_text_file(url: str, *, what: str, parameter: str | None = None, storage_options: Mapping[str, Any] | None = None) -> str:
    """The whole text of the UTF-8 file at ``url``.

    Parameters
    ----------
    url : str
        Local path or fsspec URL.
    what : str
        What the file is, for messages (``"hierarchy"``).
    parameter : str, optional
        The parameter that names the file (``"hierarchy"``), added as the fix (the command line
        shows its flag).

    Raises
    ------
    DatasetNotFoundError
        Nothing at ``url``.
    DataFormatError
        A folder, bytes that are not UTF-8, or an empty file.
    """
    import fsspec

    hint = f"`{parameter}` FILE" if parameter else None
    try:
        with fsspec.open(url, "rb", **dict(storage_options or {})) as fh:
            data = fh.read()
    except FileNotFoundError:
        raise DatasetNotFoundError(f"no {what} file at {url}", fix=hint) from None
    except IsADirectoryError:
        raise DataFormatError(f"{what} {url} is a folder, not a file", fix=hint) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataFormatError(
            f"{what} file {url} is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line})", fix=hint
        ) from None
    if not text.strip():
        raise DataFormatError(f"{what} file {url} is empty", fix=hint)
    return text.removeprefix("\ufeff")  # a byte-order mark is not part of the first field


def read_json_file(url: str, *, what: str, parameter: str | None = None, storage_options: Mapping[str, Any] | None = None) -> Any:
    """The parsed JSON document at ``url`` (errors as :func:`read_text_file`, plus invalid JSON
    with its line and column)."""
    text = read_text_file(url, what=what, parameter=parameter, storage_options=storage_options)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataFormatError(
            f"{what} file {url} is not valid JSON: {exc}", fix=f"`{parameter}` FILE" if parameter else None
        ) from None
