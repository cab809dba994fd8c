"""Loaders for the small samples bundled with the package (see samples/SOURCES.md)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import InvalidParameter

__all__ = ["SAMPLES", "sample_path", "load_sample", "list_samples"]

#: name -> (file, description)
SAMPLES: dict[str, tuple[str, str]] = {
    "mushroom": ("mushroom.dat.gz", "FIMI mushroom: 8,124 transactions, 119 items"),
    "chess": ("chess.dat.gz", "FIMI chess: 3,196 transactions, 75 items"),
    "bms-webview-1-5k": ("bms-webview-1-5k.dat.gz", "first 5,000 click-stream sessions of BMS-WebView-1"),
    "iris": ("iris.dat.gz", "UCI Iris, discretised (KRIMP), 150 rows"),
    "pima": ("pima.dat.gz", "UCI Pima Indians Diabetes, discretised (KRIMP), 768 rows"),
}


def list_samples() -> dict[str, str]:
    """Names and descriptions of the bundled samples."""
    return {name: desc for name, (_, desc) in SAMPLES.items()}


def sample_path(name: str) -> Path:
    """Filesystem path of a bundled sample (gzip FIMI text)."""
    if name not in SAMPLES:
        raise InvalidParameter(f"unknown sample {name!r}; available: {', '.join(SAMPLES)}")
    path = Path(str(resources.files("ppdm_dask.data") / "samples" / SAMPLES[name][0]))
    if not path.exists():  # pragma: no cover - broken installation
        raise FileNotFoundError(f"sample file missing from the installation: {path}")
    return path


def load_sample(name: str, *, npartitions: int | None = None):
    """A bundled sample as a TransactionArray (optionally split into ``npartitions``)."""
    from .formats import read_fimi

    tx = read_fimi(str(sample_path(name)))
    tx.metadata = {"source": f"sample:{name}"}
    if npartitions is not None:
        tx = tx.repartition(npartitions=npartitions)
    return tx
