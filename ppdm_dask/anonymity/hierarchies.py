"""Generalisation hierarchies named by short specifications (the CLI's ``--hierarchy`` and
``--hierarchies``), so the command line and notebooks load them the same way.

* ``ATTR=FILE`` — an ARX hierarchy (``;``-separated, one row per leaf: ``leaf;level1;...;*``);
* ``ATTR=interval:LOW:HIGH:WIDTH`` — numeric intervals of width ``WIDTH`` on ``[LOW, HIGH)``,
  doubling up to the root (the column is read as numbers, see :mod:`.prepare`);
* a folder: ``<attr>.csv`` or ``<anything>_<attr>.csv`` for every quasi-identifier not given
  explicitly (the layout of the Adult hierarchies and of the ``people`` sample).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..data.hierarchy import Hierarchy
from ..errors import InvalidParameter

__all__ = ["parse_hierarchy", "load_hierarchies"]

_SPEC = "ATTR=FILE or ATTR=interval:LOW:HIGH:WIDTH"


def parse_hierarchy(spec: str, *, storage_options: Mapping[str, Any] | None = None) -> tuple[str, Hierarchy]:
    """``(attr, Hierarchy)`` of one ``ATTR=FILE`` / ``ATTR=interval:LOW:HIGH:WIDTH`` spec."""
    attr, sep, value = str(spec).partition("=")
    attr, value = attr.strip(), value.strip()
    if not sep or not attr or not value:
        raise InvalidParameter(f"expected {_SPEC}, got {spec!r}", fix="`hierarchy` age=interval:0:100:10")
    if value.startswith("interval:"):
        parts = value.split(":")[1:]
        try:
            low, high, width = (float(x) for x in parts)
        except ValueError:
            raise InvalidParameter(
                f"expected interval:LOW:HIGH:WIDTH for {attr!r}, got {value!r}", fix=f"`hierarchy` {attr}=interval:0:100:10"
            ) from None
        return attr, Hierarchy.from_intervals(width=width, low=low, high=high, name=attr)
    return attr, Hierarchy.from_csv(value, name=attr, storage_options=dict(storage_options or {}))


def load_hierarchies(
    specs: Iterable[str] = (),
    folder: str | None = None,
    qi: Sequence[str] = (),
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> dict[str, Hierarchy]:
    """The hierarchies of ``specs`` and, for every QI without one, the file of ``folder`` named
    ``<attr>.csv`` or ``*_<attr>.csv`` (several matches are an error: name the file).

    Raises
    ------
    InvalidParameter
        A malformed spec, an attribute given twice, or several files for one attribute.
    DatasetNotFoundError
        A hierarchy file or the folder does not exist.
    """
    opts = dict(storage_options or {})
    out: dict[str, Hierarchy] = {}
    for spec in specs:
        attr, h = parse_hierarchy(spec, storage_options=opts)
        if attr in out:
            raise InvalidParameter(f"two hierarchies for {attr!r}", fix="`hierarchy` once per attribute")
        out[attr] = h
    if folder:
        from ..data.folder import open_fs
        from ..errors import DatasetNotFoundError

        fs, root = open_fs(folder, opts)
        if not fs.isdir(root):
            raise DatasetNotFoundError(f"no hierarchy folder at {folder}", fix="`hierarchies` DIR")
        names = {posixpath.basename(f.rstrip("/")): f for f in fs.ls(root, detail=False)}
        for a in qi:
            if a in out:
                continue
            hits = sorted(n for n in names if n == f"{a}.csv" or n.endswith(f"_{a}.csv"))
            if len(hits) > 1:  # never guess between two tables' hierarchies
                raise InvalidParameter(
                    f"{folder} holds several hierarchies for {a!r}: {hits}",
                    python=f"hierarchies={{{a!r}: Hierarchy.from_csv(...)}}",
                    fix=f"`hierarchy` {a}=FILE picks one",
                )
            if hits:
                out[a] = Hierarchy.from_csv(fs.unstrip_protocol(names[hits[0]]), name=a, storage_options=opts)
    return out
