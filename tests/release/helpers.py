"""Helpers for release tests: tamper with written releases the way an attacker (or a broken
disk) would, and compare releases byte for byte."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def manifest_of(folder: str | Path) -> dict:
    return json.loads((Path(folder) / "_SUCCESS").read_text())


def flip_byte(path: str | Path, offset: int | None = None) -> None:
    """Change one byte of a file (in the middle unless ``offset`` is given)."""
    p = Path(path)
    data = bytearray(p.read_bytes())
    i = len(data) // 2 if offset is None else offset
    data[i] ^= 0xFF
    p.write_bytes(bytes(data))


def forge_part(folder: str | Path, name: str, table: pa.Table) -> None:
    """Replace part file ``name`` by ``table`` and update its manifest entry (rows, bytes,
    SHA-256) so that the files match the manifest again: only a recount of the guarantee can
    tell that the release was broken."""
    folder = Path(folder)
    path = folder / name
    old = pq.read_table(path)
    table = table.replace_schema_metadata(old.schema.metadata)
    pq.write_table(table, path, row_group_size=max(table.num_rows, 1))
    manifest = manifest_of(folder)
    for entry in [*manifest.get("partitions", []), *manifest.get("files", [])]:
        if entry["file"] == name:
            entry.update(bytes=path.stat().st_size, sha256=hashlib.sha256(path.read_bytes()).hexdigest())
            if "rows" in entry:
                entry["rows"] = table.num_rows
    from ppdm_dask.data.folder import _ROW_TOTALS

    total = _ROW_TOTALS.get(manifest.get("format"))
    if total in manifest:  # the row total too, or the reader refuses the manifest itself
        manifest[total] = sum(int(e["rows"]) for e in manifest["partitions"])
    (folder / "_SUCCESS").write_text(json.dumps(manifest, indent=1))


def append_rows(folder: str | Path, rows: pa.Table, name: str = "part-00000.parquet") -> None:
    """Append ``rows`` (same schema) to part file ``name`` and forge the manifest to match."""
    old = pq.read_table(Path(folder) / name)
    forge_part(folder, name, pa.concat_tables([old, rows.cast(old.schema)]))


def data_bytes(folder: str | Path) -> dict[str, bytes]:
    """Every data file of a release, by name: not the manifest (it holds a timestamp), nor the
    report (it describes the release and holds timestamps)."""
    from ppdm_dask.release.base import REPORT_FILES

    return {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir()) if p.name != "_SUCCESS" and p.name not in REPORT_FILES}
