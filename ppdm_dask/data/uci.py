"""The four UCI data sets of the condensation experiments (Aggarwal & Yu, §4; docs/condensation.md#evaluation-protocol).

``load_uci(name)`` reads the original UCI files shipped in ``shared/data/uci`` (or any folder
given as ``path``) into ``(X, y)``:

* ``ionosphere`` — 351 x 34 radar returns, classes ``g``/``b`` → 0/1.
* ``ecoli`` — 336 x 7 (the sequence name is dropped), 8 localisation classes.
* ``pima`` — 768 x 8 (zeros mean "missing" in five columns; kept as recorded, as in the paper),
  classes 0/1.
* ``abalone`` — 4,177 records; X = the 7 continuous measurements (sex, a nominal attribute with
  no Euclidean meaning, is left out), y = age in years = rings + 1.5 (UCI's rule), a continuous
  target: the paper scores a prediction as accurate when it is within one year of the truth.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataFormatError, DatasetNotFoundError, InvalidParameter

__all__ = ["UCI_DATASETS", "load_uci", "uci_dir"]

UCI_DATASETS = ("ionosphere", "ecoli", "pima", "abalone")
_FILES = {
    "ionosphere": "ionosphere.data",
    "ecoli": "ecoli.data",
    "pima": "pima-indians-diabetes.data",
    "abalone": "abalone.data",
}
_SHAPES = {"ionosphere": (351, 34), "ecoli": (336, 7), "pima": (768, 8), "abalone": (4177, 7)}


def shared_data_dir() -> Path:
    """The shared benchmark data folder: ``$PPDM_SHARED_DATA`` if set, else ``shared/data``
    beside a source checkout of the project.

    Raises
    ------
    DatasetNotFoundError
        Neither exists (an installed package has no checkout beside it).
    """
    env = os.environ.get("PPDM_SHARED_DATA")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2]
    candidate = repo.parent / "shared" / "data"
    if (repo / "pyproject.toml").exists() and candidate.is_dir():
        return candidate
    raise DatasetNotFoundError(
        "the shared benchmark data folder was not found: set PPDM_SHARED_DATA to it "
        "(the bundled samples need no folder: ppdm samples)"
    )


def uci_dir() -> Path:
    """``$PPDM_SHARED_DATA/uci`` if the variable is set, else ``shared/data/uci`` beside the checkout."""
    return shared_data_dir() / "uci"


ADULT_QI = ("sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation")


def load_adult(path: str | os.PathLike | None = None, *, full: bool = False) -> tuple[Any, dict[str, Any]]:
    """UCI Adult and its ARX generalisation hierarchies.

    Parameters
    ----------
    path : path-like, optional
        A folder with ``adult.csv`` (or ``adult_2k.csv``) and ``adult_hierarchy_<attr>.csv``.
    full : bool
        Without ``path``: the full 30,162 complete records from the shared data folder
        (:func:`shared_data_dir`) instead of the 2,000-record sample bundled with the package
        (``ppdm samples``; drawn with a public seed, see its SOURCES.md).

    Returns
    -------
    (pandas.DataFrame, dict attr -> Hierarchy)
        The table (age numeric, the rest strings) and a hierarchy for every column (the one of
        ``salary-class`` included).
    """
    import pandas as pd

    from .datasets import sample_path
    from .hierarchy import Hierarchy

    if path is not None:
        folder = Path(path)
        file = next((folder / n for n in ("adult.csv", "adult_2k.csv") if (folder / n).exists()), folder / "adult.csv")
    elif full:
        folder = shared_data_dir() / "adult"
        file = folder / "adult.csv"
    else:
        file = sample_path("adult")
        folder = file.parent
    if not file.exists():
        raise DatasetNotFoundError(f"{file} not found (set PPDM_SHARED_DATA to the shared data folder)")
    df = pd.read_csv(file, sep=";")
    hier = {
        a: Hierarchy.from_csv(str(folder / f"adult_hierarchy_{a}.csv"), name=a)
        for a in df.columns
        if (folder / f"adult_hierarchy_{a}.csv").exists()
    }
    return df, hier


def _split_lines(path: Path, sep: str | None) -> list[list[str]]:
    rows = [line.split(sep) if sep else line.split() for line in path.read_text().splitlines() if line.strip()]
    return [[c.strip() for c in r] for r in rows]


def load_uci(name: str, path: str | os.PathLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One of the condensation paper's UCI data sets.

    Parameters
    ----------
    name : {"ionosphere", "ecoli", "pima", "abalone"}
    path : path-like, optional
        Folder holding the UCI files; default :func:`uci_dir`.

    Returns
    -------
    X : ndarray float64 (N, d)
    y : ndarray
        int64 class index (classes numbered in sorted order of their labels), or float64 age in
        years for abalone.
    """
    if name not in _FILES:
        raise InvalidParameter(f"unknown UCI data set {name!r}; use one of {UCI_DATASETS}")
    folder = Path(path) if path is not None else uci_dir()
    file = folder / _FILES[name]
    if not file.is_file():
        raise DatasetNotFoundError(f"{file} not found (set PPDM_SHARED_DATA to the shared data folder)")
    rows = _split_lines(file, None if name == "ecoli" else ",")
    try:
        if name == "ecoli":
            X = np.array([[float(v) for v in r[1:-1]] for r in rows])
            labels = [r[-1] for r in rows]
        elif name == "abalone":
            X = np.array([[float(v) for v in r[1:-1]] for r in rows])
            y = np.array([float(r[-1]) + 1.5 for r in rows])
        else:
            X = np.array([[float(v) for v in r[:-1]] for r in rows])
            labels = [r[-1] for r in rows]
    except (ValueError, IndexError) as exc:
        raise DataFormatError(f"{file}: not the UCI {name} format ({exc})") from None
    if X.shape != _SHAPES[name]:
        raise DataFormatError(f"{file}: expected {_SHAPES[name]} values, found {X.shape}")
    if name != "abalone":
        classes = sorted(set(labels))
        index = {c: i for i, c in enumerate(classes)}
        y = np.array([index[c] for c in labels], dtype=np.int64)
    return X, y
