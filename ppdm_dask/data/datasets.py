"""Loaders for the small samples bundled with the package (see samples/SOURCES.md): FIMI
transaction files, the synthetic ``people`` table and its zip-code hierarchy."""

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
    "people": ("people.csv", "synthetic people (name, zip, age, sex, diagnosis), 1,000 rows: the roles/verify demo"),
    "people-hierarchy-zip": ("people_hierarchy_zip.csv", "ARX hierarchy of the people zip codes (02138;0213*;...;*)"),
    "people-hierarchy-sex": ("people_hierarchy_sex.csv", "ARX hierarchy of the people sex column (female;*, male;*)"),
}


def list_samples() -> dict[str, str]:
    """Names and descriptions of the bundled samples."""
    return {name: desc for name, (_, desc) in SAMPLES.items()}


def sample_path(name: str) -> Path:
    """Filesystem path of a bundled sample (gzip FIMI text, or CSV for ``people*``)."""
    if name not in SAMPLES:
        raise InvalidParameter(f"unknown sample {name!r}; available: {', '.join(SAMPLES)}")
    path = Path(str(resources.files("ppdm_dask.data") / "samples" / SAMPLES[name][0]))
    if not path.exists():  # pragma: no cover - broken installation
        raise FileNotFoundError(f"sample file missing from the installation: {path}")
    return path


def load_sample(name: str, *, npartitions: int | None = None):
    """A bundled sample: transactions as a TransactionArray (optionally split into
    ``npartitions``), the ``people`` table as a typed dask DataFrame (strings), its hierarchy
    as a :class:`~ppdm_dask.data.hierarchy.Hierarchy`."""
    from .formats import read_fimi

    if name.startswith("people-hierarchy-"):
        from .hierarchy import Hierarchy

        return Hierarchy.from_csv(str(sample_path(name)), name=name.rsplit("-", 1)[-1])
    if name == "people":
        from .tables import read_table

        df = read_table(str(sample_path(name)))
        return df.repartition(npartitions=npartitions) if npartitions is not None else df

    tx = read_fimi(str(sample_path(name)))
    tx.metadata = {"source": f"sample:{name}"}
    if npartitions is not None:
        tx = tx.repartition(npartitions=npartitions)
    return tx
