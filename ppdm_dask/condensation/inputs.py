"""What the condensers are given: records (an array or a table), privacy levels (per record, one
for all, a keyed range or a column of the table) and the public parameters that describe them."""

from __future__ import annotations

import numbers
from typing import Any, Sequence

import dask.array as da
import numpy as np

from ..errors import InfeasiblePrivacyError, InvalidParameter
from ..random import Key, Tag
from ._validate import check_levels

__all__ = ["privacy_levels", "Records", "records_of"]


def privacy_levels(n: int, low: int, high: int, *, key: Any = None) -> np.ndarray:
    """Privacy levels drawn uniformly from ``{max(1, low), ..., high}`` (docs/condensation.md#correction-privacy-levels-are-at-least-1).

    The paper's experiments use ``[α − β, α]`` with β = 4.
    """
    from ..random import as_key

    low, high = max(1, int(low)), int(high)
    if high < low:
        raise InvalidParameter(f"empty privacy range [{low}, {high}]")
    return as_key(key).generator(Tag.PRIVACY_LEVELS, 0).integers(low, high + 1, size=int(n)).astype(np.int64)


class Records:
    """Records as a float64 dask array, their levels, attribute names and public parameters."""

    def __init__(self, X: da.Array, levels: np.ndarray, names: list[str], parameters: dict[str, Any]) -> None:
        self.X, self.levels, self.names, self.parameters = X, levels, names, parameters


def _as_dask(X: Any) -> da.Array:
    if isinstance(X, da.Array):
        return X
    arr = np.asarray(X)
    return da.from_array(arr, chunks=(max(1, min(arr.shape[0], 100_000)),) + ((arr.shape[1],) if arr.ndim == 2 else ()))


def _is_table(X: Any) -> bool:
    return hasattr(X, "columns") and hasattr(X, "dtypes")


def records_of(X: Any, privacy: Any, *, spec: Any, privacy_column: str | None, columns: Sequence[str] | None,
               key: Key, allow_empty: bool = False) -> Records:
    """Records and levels from ``X`` (numpy / dask array, pandas / dask DataFrame) and the privacy
    given to ``fit`` (``privacy``) or to the estimator (``spec``, ``privacy_column``)."""
    from ..progress import compute
    from .io import table_to_array

    col_levels = None
    if _is_table(X):
        import dask.dataframe as dd

        df = X if isinstance(X, dd.DataFrame) else dd.from_pandas(X, npartitions=1)
        if privacy_column is not None and privacy_column not in df.columns:
            raise InvalidParameter(f"the table has no privacy column {privacy_column!r}; its columns are {list(df.columns)}",
                                   cli="--privacy-column")
        arr, names = table_to_array(df, columns=list(columns) if columns else None,
                                    exclude=(privacy_column,) if privacy_column else ())
        if privacy_column is not None and privacy is None:
            (col_levels,) = compute(table_to_array(df, columns=[privacy_column])[0][:, 0], progress=False)
    else:
        if privacy_column is not None:
            raise InvalidParameter("privacy_column names a column of a table; X is an array")
        arr = _as_dask(X)
        if arr.ndim != 2:
            raise InvalidParameter(f"X must be 2-D (records x attributes), got {arr.ndim}-D")
        names = list(columns) if columns else [f"x{j}" for j in range(arr.shape[1])]
        if len(names) != arr.shape[1]:
            raise InvalidParameter(f"{len(names)} column names for {arr.shape[1]} attributes")
    n = int(arr.shape[0])
    if n == 0 and not allow_empty:
        raise InvalidParameter("no records to condense")
    given = privacy if privacy is not None else (col_levels if col_levels is not None else spec)
    params: dict[str, Any]
    if col_levels is not None:
        params = {"privacy_column": privacy_column}
    if given is None:
        raise InvalidParameter("no privacy levels: pass privacy= to fit() or privacy_levels= / privacy_column= to the estimator",
                               cli="--privacy-column, --privacy-range or --privacy-level")
    if isinstance(given, da.Array):
        given = given.compute()
    if isinstance(given, numbers.Integral) and not isinstance(given, bool):
        params = {"privacy_level": int(given)}
        given = np.full(n, int(given), dtype=np.int64)
    elif isinstance(given, tuple) and len(given) == 2:
        params = {"privacy_range": [int(given[0]), int(given[1])]}
        given = privacy_levels(n, given[0], given[1], key=key)
    elif col_levels is None:
        params = {"privacy_levels": "per record (not published)"}
    p = check_levels(np.asarray(given), n)
    big = np.flatnonzero(p > n)
    if big.size:
        raise InfeasiblePrivacyError(
            f"records {big[:10].tolist()} ask for privacy level {int(p[big].max())} but there are only {n} records",
            python=f"privacy levels of at most {n}", cli=f"privacy levels of at most {n}: --privacy-level, --privacy-range or --privacy-column")
    return Records(arr.astype(np.float64), p, names, {**params, "columns": names})
