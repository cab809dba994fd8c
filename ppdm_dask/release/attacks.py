"""Attacks on the public side of any release (docs/threat-model.md), as an adversary runs them.

The adversary holds every public file of a release (the folder, its manifest, the external
report) and the package's code; docs/threat-model.md says what else each family's adversary
knows. The attacks here do not depend on the family:

* :func:`input_oracle` — the public files as an oracle on the input: the adversary knows every
  input row but one person's value, builds each candidate input, and looks for anything
  computable from a candidate (its SHA-256, its size in bytes, its content digest, the unsalted
  fingerprint earlier versions published) in the public files. A candidate found tells the
  value.
* :func:`position_linkage` — one key lining two releases up: how much more alike the rows at
  the same position of two releases are than rows at random positions (1.0: no alignment).

Each returns the figures a test bounds (advantage over the baseline of no information).
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["public_files", "input_oracle", "position_linkage", "rank_correlation", "public_sample"]


def public_files(url: str, *, storage_options: Mapping[str, Any] | None = None) -> dict[str, bytes]:
    """``{name: bytes}`` of every public file of the release at ``url``: the files of its folder
    (or the CSV file and its manifest) and the external report beside it, if any."""
    from ..data.folder import open_fs
    from .base import is_csv_destination, report_paths, sidecar_manifest

    fs, path = open_fs(url, dict(storage_options or {}))
    names = [sidecar_manifest(path), path] if is_csv_destination(url) else fs.find(path)
    names += [p for p in (open_fs(u, dict(storage_options or {}))[1] for u in report_paths(url, "external")) if fs.exists(p)]
    out = {}
    for name in names:
        with fs.open(name, "rb") as fh:
            out[posixpath.basename(name)] = fh.read()
    return out


def _numbers(obj: Any) -> set[int]:
    if isinstance(obj, dict):
        return {n for v in obj.values() for n in _numbers(v)}
    if isinstance(obj, list):
        return {n for v in obj for n in _numbers(v)}
    return {int(obj)} if isinstance(obj, int) and not isinstance(obj, bool) else set()


def _json_numbers(files: Mapping[str, bytes]) -> set[int]:
    """Every integer in the JSON public files (manifest, external report) but the sizes and row
    counts of the release's own output files (the top-level ``partitions`` and ``files`` of a
    manifest, ``release.files`` of a report)."""
    out: set[int] = set()
    for name, data in files.items():
        if name.endswith((".json", "_SUCCESS")):
            try:
                doc = json.loads(data)
            except ValueError:
                continue
            if isinstance(doc, dict):
                doc = {k: v for k, v in doc.items() if k not in ("partitions", "files")}
                if isinstance(doc.get("release"), dict):
                    doc["release"] = {k: v for k, v in doc["release"].items() if k != "files"}
            out |= _numbers(doc)
    return out


def input_oracle(
    url: str,
    candidates: Sequence[str],
    *,
    digest_of: Callable[[str], bytes] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """For each candidate input file, what of it the public files of ``url`` show.

    Parameters
    ----------
    candidates : sequence of str
        Local paths of the candidate inputs (one per value the adversary tries).
    digest_of : callable, optional
        ``path -> bytes``: an unkeyed digest of a candidate's content the adversary can compute
        with the package (e.g. :func:`ppdm_dask.data.digest.content_digest` of the file read).

    Returns
    -------
    list of dict
        Per candidate: ``sha256`` (its SHA-256 hex found in a public file), ``size`` (its size in
        bytes found as a number in a JSON public file), ``digest`` (its content digest hex found)
        and ``unsalted`` (the one-file fingerprint earlier reports published found), each a bool,
        and ``found`` (any of them).
    """
    files = public_files(url, storage_options=storage_options)
    blob = b"\n".join(files.values())
    numbers = _json_numbers(files)
    out = []
    for path in candidates:
        raw = open(path, "rb").read()
        sha = hashlib.sha256(raw).hexdigest()
        name = os.path.basename(path)
        unsalted = hashlib.sha256(f"{name}\0{sha}\n".encode()).hexdigest()
        row = {
            "sha256": sha.encode() in blob,
            "size": len(raw) in numbers,
            "unsalted": unsalted.encode() in blob,
            "digest": digest_of is not None and digest_of(path).hex().encode() in blob,
        }
        row["found"] = any(row.values())
        out.append(row)
    return out


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's ρ of two equally long samples without ties (positions): the Pearson
    correlation of their ranks."""
    ra = np.argsort(np.argsort(np.asarray(a), kind="stable"), kind="stable").astype(np.float64)
    rb = np.argsort(np.argsort(np.asarray(b), kind="stable"), kind="stable").astype(np.float64)
    if ra.size < 2:
        return 0.0
    ra -= ra.mean()
    rb -= rb.mean()
    den = float(np.sqrt((ra * ra).sum() * (rb * rb).sum()))
    return float((ra * rb).sum() / den) if den else 0.0


def position_linkage(
    a: Sequence[Any] | np.ndarray,
    b: Sequence[Any] | np.ndarray,
    similarity: Callable[[Any, Any], float],
    *,
    shifts: Iterable[int] = (1, 7, 31, 127, 509),
) -> dict[str, float]:
    """How much alike the rows at the same position of two releases are, against rows at other
    positions.

    ``same`` is the mean ``similarity(a[i], b[i])``; ``random`` the mean over cyclic shifts of
    ``b`` (a deterministic stand-in for random pairs that needs no extra randomness);
    ``ratio = same / random`` is 1.0 when positions carry no link, and grows when one key put
    the same person at the same position in both releases.
    """
    n = min(len(a), len(b))
    if n < 2:
        return {"same": 0.0, "random": 0.0, "ratio": 1.0}
    same = float(np.mean([similarity(a[i], b[i]) for i in range(n)]))
    base = [float(np.mean([similarity(a[i], b[(i + s) % n]) for i in range(n)])) for s in shifts if s % n]
    rnd = float(np.mean(base)) if base else 0.0
    return {"same": same, "random": rnd, "ratio": same / rnd if rnd > 0 else (1.0 if same == 0 else float("inf"))}


def public_sample(eligible: np.ndarray, limit: int, seed: int) -> tuple[np.ndarray, np.random.Generator] | None:
    """The targets of an attack: at most ``limit`` of the positions where ``eligible`` holds,
    drawn without replacement and sorted, with the generator of public ``seed`` (it only chooses
    what to measure), returned too for the attack's further draws; None when none is eligible."""
    candidates = np.flatnonzero(eligible)
    if not candidates.size:
        return None
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(candidates, min(limit, candidates.size), replace=False)), rng
