"""Numeric attributes out of a table (read with :func:`ppdm_dask.data.tables.read_table`).

CSV columns are read as strings unless typed; :func:`table_to_array` converts the attributes it
is asked for to float64 and names the first column holding a value that is not a number.
Releases are written by :class:`~.release.CondensedRelease`.
"""

from __future__ import annotations

from typing import Any

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
from pandas.api.types import is_bool_dtype, is_numeric_dtype

from ..data.tables import parse_numbers
from ..errors import DataFormatError, InvalidParameter

__all__ = ["table_to_array"]


def _is_number(dtype: Any) -> bool:
    return is_numeric_dtype(dtype) and not is_bool_dtype(dtype)


def _to_float(part: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Kernel: the columns of one partition as float64; a value that is not a number is an error
    naming its column (missing values become NaN and are reported by the condensers)."""
    out = {
        c: parse_numbers(
            part[c],
            f"column {c!r} holds values that are not numbers",
            python=f"columns=[...] without {c!r}",
            fix=f"`columns` without {c}, or `dtype` {c}=float",
        )
        for c in columns
    }
    return pd.DataFrame(out, index=part.index)


def table_to_array(
    df: dd.DataFrame, *, columns: list[str] | None = None, exclude: tuple[str, ...] = ()
) -> tuple[da.Array, list[str]]:
    """The attributes of ``df`` as a float64 dask array with known row chunks.

    ``columns`` selects attributes and converts them to numbers (string columns of a CSV
    included); by default every numeric column not in ``exclude`` is taken and any other column
    is an error (no silent drop).

    Raises
    ------
    DataFormatError
        A column that is not numeric (default selection), or a selected column holding a value
        that does not parse as a number (raised when the array is computed).
    InvalidParameter
        An unknown column, or no attribute at all.
    """
    if columns is None:
        columns = [c for c in df.columns if c not in exclude and _is_number(df[c].dtype)]
        skipped = [c for c in df.columns if c not in exclude and c not in columns]
        if skipped:
            raise DataFormatError(
                f"non-numeric columns {skipped}: name the attributes to condense (the others are not "
                "published) or type them as numbers",
                python="columns=[...]",
                fix="`columns` COL,COL or `dtype` COL=float",
            )
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InvalidParameter(f"unknown columns {missing}; the table has {list(df.columns)}", parameter="columns")
    if not columns:
        raise InvalidParameter("no numeric attributes to condense", parameter="columns")
    meta = pd.DataFrame({c: np.zeros(0, np.float64) for c in columns})
    X = df[list(columns)].map_partitions(_to_float, list(columns), meta=meta).to_dask_array(lengths=True)
    return X, list(columns)
