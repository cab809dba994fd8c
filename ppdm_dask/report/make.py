"""Make, validate and write the report of a release (``Release.report`` and ``ppdm report``)."""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Mapping
from typing import Any

from .build import build_report
from .html import render_html
from .schema import validate_report

__all__ = ["make_report", "report_destination"]


def report_destination(release: Any, out: str | None, audience: str) -> tuple[str, str] | None:
    """``(json, html)`` URLs the report goes to: ``out`` (``.html``: that page and the JSON
    beside it; else a folder), or the release's own place, or None (an unwritten release)."""
    from ..release.base import report_paths, report_stem

    stem = report_stem(audience)
    if out:
        if out.lower().endswith((".html", ".htm")):
            return out.rsplit(".", 1)[0] + ".json", out
        return posixpath.join(out.rstrip("/"), stem + ".json"), posixpath.join(out.rstrip("/"), stem + ".html")
    url = (release.manifest or {}).get("_url")
    return report_paths(url, audience) if url else None


def _manifest_sha256(url: str, storage_options: Mapping[str, Any] | None) -> str:
    """SHA-256 of the manifest's bytes as they are on disk (the report names the exact release)."""
    from ..data.folder import MANIFEST, open_fs
    from ..release import is_csv_destination, sidecar_manifest

    fs, path = open_fs(
        sidecar_manifest(url) if is_csv_destination(url) else posixpath.join(url.rstrip("/"), MANIFEST),
        dict(storage_options or {}),
    )
    with fs.open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def make_report(
    release: Any,
    original: Any = None,
    *,
    out: str | None = None,
    audience: str = "internal",
    storage_options: Mapping[str, Any] | None = None,
    verify: bool = True,
    overwrite: bool = False,
    original_options: Mapping[str, Any] | None = None,
    figure_options: Mapping[str, Any] | None = None,
    **compute_kwargs: Any,
) -> dict[str, Any]:
    """The report of ``release`` (see :meth:`ppdm_dask.release.Release.report`).

    Parameters
    ----------
    release : Release
        A release in memory or read back (:func:`ppdm_dask.open_release`).
    original : data or str, optional
        The original data or its URL (read with the family's reader, ``original_options``
        passed on, e.g. ``sep=``).
    out : str, optional
        Where to write (``.html`` file or folder); default: with the written release.
    audience : {"internal", "external"}
    verify : bool
        For a written release: recount the guarantee now from its files (checksums included);
        without, the verdict recorded in the manifest when the files were written is shown.
    overwrite : bool
        Replace an existing report (refused otherwise, before any work).
    figure_options : mapping, optional
        Passed to the family's ``report_figures`` only (e.g. a table's ``sampling_fraction=``).
    **compute_kwargs
        ``client=``, ``progress=``.

    Returns
    -------
    dict
        The report document, plus ``paths`` (``{"json", "html"}`` or None).
    """
    from ..data.atomic import atomic_file
    from ..data.folder import refuse_existing
    from ..release import Verdict

    compute_kwargs.setdefault("progress", False)
    # the owner's key, when given (ppdm --key-file KEY report ...): the internal report's verdict
    # then also holds the checks only the key holder can run (provenance, per-row checks)
    key = compute_kwargs.pop("key", None)
    opts = dict(storage_options or {})
    dest = report_destination(release, out, audience)
    if dest is not None:
        for path in dest:
            refuse_existing(path, opts, overwrite=overwrite)
    original_url = original if isinstance(original, str) else None
    if original_url is not None:
        original = type(release).read_original(original_url, storage_options=opts, **dict(original_options or {}))

    manifest = release.manifest
    url = (manifest or {}).get("_url")
    # the external verdict is what anyone holding the release can recount: never against the original
    checked_against = original if audience == "internal" else None
    if manifest is not None and url:
        if verify:
            from ..release.files import verify_files

            owner = {"key": key} if key is not None and checked_against is not None else {}
            verdict = verify_files(url, original=checked_against, storage_options=opts, **owner, **compute_kwargs)
            verified = "Recounted now from the written files: manifest, SHA-256 of every file, privacy floors and the guarantee."
        else:
            verdict = Verdict.from_dict(manifest.get("guarantees") or {"checks": []})
            verified = (
                f"Recounted from the written files before they were committed ({manifest['release'].get('created')}); "
                "re-check any time with ppdm verify."
            )
        manifest = {**manifest, "_sha256": _manifest_sha256(url, opts)}
    else:
        verdict = release.verify(checked_against, **compute_kwargs)
        verified = "Recounted from the data in memory (the release is not written yet)."
    figures = release.report_figures(original, **compute_kwargs, **dict(figure_options or {}))
    doc = build_report(
        release,
        original,
        verdict=verdict,
        verified=verified,
        audience=audience,
        figures=figures,
        manifest=manifest,
        url=url,
        original_url=original_url,
    )
    validate_report(doc)
    html = render_html(doc)
    if dest is not None:
        json_path, html_path = dest
        with atomic_file(json_path, storage_options=opts, overwrite=overwrite, mode="w") as fh:
            fh.write(json.dumps(doc, indent=1))
        with atomic_file(html_path, storage_options=opts, overwrite=overwrite, mode="w") as fh:
            fh.write(html)
    return {**doc, "paths": {"json": dest[0], "html": dest[1]} if dest else None}
