"""The files of a written release against its manifest: every listed file present with its size
and SHA-256, and no other file in the folder (the report files excepted)."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

import dask

from .. import families
from ..data.folder import MANIFEST, sha256_file
from ..errors import PPDMError
from .base import INTERNAL_REPORT_FILES, REPORT_FILES, Release
from .names import FILE_CHECK
from .verdict import Check, Verdict

__all__ = ["file_checks", "verify_files"]


def _file_entry(fs: Any, path: str, expected: Mapping[str, Any], checksums: bool) -> tuple[str, str | None, int | None]:
    """Task: ``(name, problem or None, size)`` of one listed file."""
    name = expected["file"]
    full = posixpath.join(path, name)
    try:
        size = int(fs.size(full))
    except FileNotFoundError:
        return name, "missing", None
    if expected.get("bytes") is not None and size != int(expected["bytes"]):
        return name, f"{size:,} bytes, the manifest says {int(expected['bytes']):,}", size
    if checksums and expected.get("sha256") and sha256_file(fs, full) != expected["sha256"]:
        return name, "SHA-256 differs from the manifest (altered or replaced)", size
    return name, None, size


def file_checks(
    fs: Any, folder: str, manifest: Mapping[str, Any], *, checksums: bool = True, **compute_kwargs: Any
) -> list[Check]:
    """One check per listed file (present, size, checksum) and one per unexpected file."""
    from ..progress import compute

    entries = [*manifest.get("partitions", []), *manifest.get("files", [])]
    tasks = [dask.delayed(_file_entry, pure=False)(fs, folder, e, checksums) for e in entries]
    (results,) = compute(tasks, **{"progress": False, **compute_kwargs}) if tasks else ([],)
    checks = [Check(FILE_CHECK, problem is None, where=name, detail=problem or "") for name, problem, _ in results]
    if manifest.get("release", {}).get("output") != "csv":  # a CSV release shares its folder with other files
        listed = {e["file"] for e in entries} | {MANIFEST} | set(REPORT_FILES)
        for d in fs.ls(folder, detail=False):
            name = posixpath.basename(d.rstrip("/"))
            if name not in listed:
                checks.append(Check("no unlisted file", False, where=name, detail="a file the manifest does not list"))
            elif name in INTERNAL_REPORT_FILES:
                checks.append(
                    Check(
                        "no internal report inside the release",
                        False,
                        where=name,
                        status="warning",
                        detail="the owner's report describes the original data: move it out of the release "
                        "folder before the folder is shared (reports are now written beside the folder)",
                    )
                )
    return checks


def verify_files(
    url: str,
    *,
    original: Any = None,
    storage_options: Mapping[str, Any] | None = None,
    checksums: bool = True,
    **compute_kwargs: Any,
) -> Verdict:
    """The checks of :func:`ppdm_dask.verify` for a release of a family registered in
    :mod:`ppdm_dask.families`: the manifest, the files, then the family's recount (with
    ``original``)."""
    key = compute_kwargs.pop("key", None)  # the owner's, to check provenance against the original
    fs, folder, manifest = Release.load_manifest(url, storage_options=storage_options)
    rel = manifest["release"]
    family = rel.get("family")
    known = family in families.names()
    checks = [
        Check("manifest", known, figure=f"{family} / {rel.get('method')}", detail="" if known else f"unknown family {family!r}")
    ]
    if not checks[0].ok:
        return Verdict(checks)
    checks += file_checks(fs, folder, manifest, checksums=checksums, **compute_kwargs)
    if not all(c.passed for c in checks):
        checks.append(Check("guarantee recount", False, detail="not attempted: the files do not match the manifest"))
        return Verdict(checks)
    try:
        release = Release.open(url, storage_options=storage_options)
        if isinstance(original, str):
            original = type(release).read_original(original, storage_options=storage_options)
        verdict = release.verify(original, **({"key": key} if key is not None else {}), **compute_kwargs)
    except PPDMError as exc:
        return Verdict([*checks, Check("guarantee recount", False, detail=exc.message_for("cli"))])
    return Verdict([*checks, *verdict.checks])
