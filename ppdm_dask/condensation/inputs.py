"""What the condensers are given: records (an array or a table), privacy levels (per record, one
for all, a keyed range or a column of the table) and the public parameters that describe them.

The **input** of a condensed release, as its identity names it (docs/condensation.md#one-key-many-releases),
is the records as the condenser sees them (the float64 attributes, in row order) and the
privacy levels when they are given (a column, or one level per record). Levels drawn from
``privacy_range`` are not input: they are drawn from the release's own stream key, which
derives from the input, so they cannot be part of it; a constant ``privacy_level`` is a public
parameter. :meth:`Records.digest_pieces` are the collections whose content digest is computed.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import dask.array as da
import numpy as np

from ..errors import InfeasiblePrivacyError, InvalidParameter
from ..random import Key, Tag
from ._validate import check_levels

__all__ = ["privacy_levels", "Records", "records_of"]


def privacy_levels(n: int, low: int, high: int, *, key: Any = None) -> np.ndarray:
    """Privacy levels drawn uniformly from ``{max(1, low), ..., high}`` (docs/condensation.md#correction-privacy-levels-are-at-least-1).

    The paper's experiments use ``[α − β, α]`` with β = 4. The condensers draw them from the
    stream key of the release (stream ``(PRIVACY_LEVELS, 0)``).
    """
    from ..random import as_key

    low, high = max(1, int(low)), int(high)
    if high < low:
        raise InvalidParameter(f"empty privacy range [{low}, {high}]")
    return as_key(key).generator(Tag.PRIVACY_LEVELS, 0).integers(low, high + 1, size=int(n)).astype(np.int64)


class Records:
    """Records as a float64 dask array, their privacy levels (given, or how to draw them),
    attribute names and public parameters.

    Attributes
    ----------
    X : dask.array.Array
        The attributes, float64 (N, d).
    given : ndarray or dask.array.Array or None
        Levels that are part of the input (a column or one per record), not yet validated;
        ``None`` when they are a constant or drawn.
    names : list of str
    parameters : dict
        Public parameters (``columns``, and ``privacy_level`` / ``privacy_range`` /
        ``privacy_column`` / ``privacy_levels``).
    """

    def __init__(
        self,
        X: da.Array,
        given: Any,
        constant: int | None,
        span: tuple[int, int] | None,
        names: list[str],
        parameters: dict[str, Any],
    ) -> None:
        self.X, self.given, self.names, self.parameters = X, given, names, parameters
        self._constant, self._span = constant, span

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    def digest_pieces(self) -> tuple[Any, Any]:
        """``(X, given levels or None)``: the input whose content digest identifies the release."""
        return self.X, self.given

    def known_max_level(self) -> int | None:
        """The largest level when it is known before any pass over the data (a constant)."""
        return self._constant

    def levels(self, given: Any, stream_key: Key) -> np.ndarray:
        """The validated int64 levels: ``given`` (the computed given levels), the constant, or
        drawn from ``stream_key`` (the release's stream key).

        Raises
        ------
        InfeasiblePrivacyError
            A level above the number of records.
        """
        n = self.n
        if self._constant is not None:
            p = np.full(n, self._constant, dtype=np.int64)
        elif self._span is not None:
            p = privacy_levels(n, self._span[0], self._span[1], key=stream_key)
        else:
            p = check_levels(np.asarray(given), n)
        big = np.flatnonzero(p > n)
        if big.size:
            raise InfeasiblePrivacyError(
                f"records {big[:10].tolist()} ask for privacy level {int(p[big].max())} but there are only {n} records",
                python=f"privacy levels of at most {n}",
                fix=f"privacy levels of at most {n}: `privacy_level`, `privacy_range` or `privacy_column`",
            )
        return p


def _as_dask(X: Any) -> da.Array:
    if isinstance(X, da.Array):
        return X
    arr = np.asarray(X)
    return da.from_array(arr, chunks=(max(1, min(arr.shape[0], 100_000)),) + ((arr.shape[1],) if arr.ndim == 2 else ()))


def _is_table(X: Any) -> bool:
    return hasattr(X, "columns") and hasattr(X, "dtypes")


def records_of(
    X: Any, privacy: Any, *, spec: Any, privacy_column: str | None, columns: Sequence[str] | None, allow_empty: bool = False
) -> Records:
    """Records and levels from ``X`` (numpy / dask array, pandas / dask DataFrame) and the privacy
    given to ``fit`` (``privacy``) or to the estimator (``spec``, ``privacy_column``). Nothing is
    computed: given levels stay lazy until the estimator's first pass."""
    from .io import table_to_array

    col_levels = None
    if _is_table(X):
        import dask.dataframe as dd

        df = X if isinstance(X, dd.DataFrame) else _from_pandas(X)
        if privacy_column is not None and privacy_column not in df.columns:
            raise InvalidParameter(
                f"the table has no privacy column {privacy_column!r}; its columns are {list(df.columns)}",
                parameter="privacy_column",
            )
        arr, names = table_to_array(
            df, columns=list(columns) if columns else None, exclude=(privacy_column,) if privacy_column else ()
        )
        if privacy_column is not None and privacy is None:
            col_levels = table_to_array(df, columns=[privacy_column])[0][:, 0]
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
    if given is None:
        raise InvalidParameter(
            "no privacy levels: pass privacy= to fit() or privacy_levels= / privacy_column= to the estimator",
            fix="`privacy_column`, `privacy_range` or `privacy_level`",
        )
    constant = span = None
    if col_levels is not None:
        params: dict[str, Any] = {"privacy_column": privacy_column}
    elif isinstance(given, numbers.Integral) and not isinstance(given, bool):
        if int(given) < 1:
            raise InvalidParameter(f"privacy levels must be >= 1, got {int(given)}", parameter="privacy_level")
        params, constant, given = {"privacy_level": int(given)}, int(given), None
    elif isinstance(given, tuple) and len(given) == 2:
        low, high = max(1, int(given[0])), int(given[1])
        if high < low:
            raise InvalidParameter(f"empty privacy range [{low}, {high}]", parameter="privacy_range")
        params, span, given = {"privacy_range": [int(given[0]), int(given[1])]}, (int(given[0]), int(given[1])), None
    else:
        params = {"privacy_levels": "per record (not published)"}
        if not isinstance(given, da.Array):
            given = np.asarray(given)
            if given.shape != (n,):
                raise InvalidParameter(f"privacy must have one level per row ({n}), got shape {given.shape}")
    if constant is not None and constant > n and n:
        raise InfeasiblePrivacyError(
            f"records {list(range(min(n, 10)))} ask for privacy level {constant} but there are only {n} records",
            python=f"privacy levels of at most {n}",
            fix=f"privacy levels of at most {n}: `privacy_level`, `privacy_range` or `privacy_column`",
        )
    return Records(arr.astype(np.float64), given, constant, span, names, {**params, "columns": names})


class StreamDigest:
    """The content digest of a stream of records received block by block — equal to
    ``content_digest(all records, all levels or None)`` of the whole stream in arrival order
    (:mod:`ppdm_dask.data.digest`), without keeping the records: the state is the digest's
    polynomial per piece, extended by each block.

    Parameters
    ----------
    d : int
        Attributes per record.
    levels : bool
        Whether the levels are part of the input (given per record) or not (a constant, or
        drawn from the release's stream).
    """

    def __init__(self, d: int, levels: bool) -> None:
        from ..data import _digest_kernels as K

        self.d, self.levels = int(d), bool(levels)
        self._x = self._p = K.EMPTY_POLY
        self._set = K.EMPTY_SET

    def update(self, X: np.ndarray, p: np.ndarray) -> None:
        """Extend by one block (rows in arrival order)."""
        from ..data import _digest_kernels as K

        hx = K.array_row_hashes(np.asarray(X, np.float64))
        self._x = K.combine_polys([self._x, K.block_poly(hx)])
        if self.levels:
            hp = K.array_row_hashes(np.asarray(p, np.float64))
            self._p = K.combine_polys([self._p, K.block_poly(hp)])
            hx = K.pair_row_hashes([hx, hp])  # a record and its own level are one record
        self._set = K.combine_multisets([self._set, K.block_multiset(hx)])

    def digest(self) -> bytes:
        """The :class:`~ppdm_dask.data.digest.InputDigest` of the stream so far."""
        from ..data import _digest_kernels as K
        from ..data.digest import InputDigest, finish_digest, finish_records, join_digests

        x_kind = f"array:{self.d}"
        order = [finish_digest(x_kind, self._x), finish_digest("array:1", self._p) if self.levels else b"none"]
        if self.levels:
            records = finish_records([x_kind, "array:1"], self._set)
        else:  # (records, None) are digested piece by piece (see content_digest_lazy)
            records = join_digests([finish_records([x_kind], self._set), finish_records(["none"], K.EMPTY_SET)])
        return InputDigest(records + join_digests(order))


def _from_pandas(df: Any) -> Any:
    """A pandas frame as one dask partition (arrow slices copied: :func:`ppdm_dask.data.tables.from_pandas`)."""
    from ..data.tables import from_pandas

    return from_pandas(df, npartitions=1)
