"""The small samples bundled with the package (provenance in samples/SOURCES.md): FIMI
transaction files, a 2,000-record Adult sample with its hierarchies and an access-control
permissions file, and the synthetic ``people`` table with its hierarchies.

A sample is one or more files; ``ppdm samples --copy NAME`` copies them all."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import InvalidParameter

__all__ = ["SAMPLES", "sample_path", "sample_files", "load_sample", "list_samples"]

_ADULT_HIERARCHIES = tuple(
    f"adult_hierarchy_{a}.csv"
    for a in ("sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation", "salary-class")
)

#: name -> (files, the first being the data; description)
SAMPLES: dict[str, tuple[tuple[str, ...], str]] = {
    "mushroom": (("mushroom.dat.gz",), "FIMI mushroom: 8,124 transactions, 119 items"),
    "chess": (("chess.dat.gz",), "FIMI chess: 3,196 transactions, 75 items"),
    "bms-webview-1-5k": (("bms-webview-1-5k.dat.gz",), "first 5,000 click-stream sessions of BMS-WebView-1"),
    "iris": (("iris.dat.gz",), "UCI Iris, discretised (KRIMP), 150 rows"),
    "pima": (("pima.dat.gz",), "UCI Pima Indians Diabetes, discretised (KRIMP), 768 rows"),
    "led7": (("led7.dat.gz",), "UCI LED7 display digits, discretised (KRIMP), 3,200 rows, 8 attributes"),
    "ecoli": (("ecoli.csv",), "UCI Ecoli, 336 proteins: a name, 7 numeric attributes and 8 localisation classes (CSV)"),
    "adult": (
        ("adult_2k.csv", *_ADULT_HIERARCHIES, "adult_permissions.json"),
        "UCI Adult, 2,000 records (';'), its 9 ARX hierarchies and an access-control permissions file",
    ),
    "people": (
        ("people.csv", "people_hierarchy_zip.csv", "people_hierarchy_sex.csv"),
        "synthetic people (name, zip, age, sex, diagnosis), 1,000 rows, with zip and sex hierarchies",
    ),
    "events": (
        ("events_small.parquet",),
        "synthetic event log (user, item, ts, qty): 20,000 events of 811 users over 200 items in 7 days (Parquet)",
    ),
    "people-hierarchy-zip": (("people_hierarchy_zip.csv",), "ARX hierarchy of the people zip codes (02138;0213*;...;*)"),
    "people-hierarchy-sex": (("people_hierarchy_sex.csv",), "ARX hierarchy of the people sex column (female;*, male;*)"),
}


def list_samples() -> dict[str, str]:
    """Names and descriptions of the bundled samples."""
    return {name: desc for name, (_, desc) in SAMPLES.items()}


def _path(file: str) -> Path:
    path = Path(str(resources.files("ppdm_dask.data") / "samples" / file))
    if not path.exists():  # pragma: no cover - broken installation
        raise FileNotFoundError(f"sample file missing from the installation: {path}")
    return path


def sample_files(name: str) -> list[Path]:
    """Every file of a bundled sample, the data first."""
    if name not in SAMPLES:
        raise InvalidParameter(f"unknown sample {name!r}; available: {', '.join(SAMPLES)}", cli="ppdm samples")
    return [_path(f) for f in SAMPLES[name][0]]


def sample_path(name: str) -> Path:
    """Filesystem path of a bundled sample's data file (gzip FIMI text, or CSV)."""
    return sample_files(name)[0]


def load_sample(name: str, *, npartitions: int | None = None):
    """A bundled sample: transactions as a TransactionArray (optionally split into
        ``npartitions``), the ``people``, ``adult`` and ``ecoli`` tables as dask DataFrames (CSV
    columns are strings: type them with :func:`~ppdm_dask.data.tables.read_table`),
        a hierarchy sample as a :class:`~ppdm_dask.data.hierarchy.Hierarchy`, the ``events`` log as
    a dask DataFrame (group it into baskets with ``TransactionArray.from_events``)."""
    from .formats import read_fimi

    if name.startswith("people-hierarchy-"):
        from .hierarchy import Hierarchy

        return Hierarchy.from_csv(str(sample_path(name)), name=name.rsplit("-", 1)[-1])
    if name == "events":
        import dask.dataframe as dd

        events = dd.read_parquet(str(sample_path(name)))
        return events.repartition(npartitions=npartitions) if npartitions is not None else events
    if name in ("people", "adult", "ecoli"):
        from .tables import read_table

        df = read_table(str(sample_path(name)))
        return df.repartition(npartitions=npartitions) if npartitions is not None else df

    tx = read_fimi(str(sample_path(name)))
    tx.metadata = {"source": f"sample:{name}"}
    if npartitions is not None:
        tx = tx.repartition(npartitions=npartitions)
    return tx
