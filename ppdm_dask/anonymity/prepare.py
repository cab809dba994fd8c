"""What an anonymizer checks and converts before the heavy work.

* :func:`table_roles` — every column of the input has a role (the unclassified ones are listed
  in one error, with the flags that classify them), nothing is guessed;
* the privacy floors of the parameters are refused unless overridden (:meth:`Release.overrides_of`)
  explicitly (the overrides are returned, to be recorded in the manifest);
* :func:`numeric_quasi_identifiers` — a QI given a numeric interval hierarchy is read as numbers
  (CSV columns are strings), with a clear error naming a value that does not parse;
* :func:`distinct_counts` — distinct values of the insensitive columns (one distributed pass),
  for the "nearly unique per record" test of :meth:`Roles.check_unique`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from ..data.hierarchy import Hierarchy
from ..data.tables import parse_numbers
from ..release import Roles

__all__ = ["table_roles", "numeric_quasi_identifiers", "distinct_counts"]


def table_roles(
    columns: Sequence[str],
    *,
    quasi_identifiers: Any,
    identifiers: Any = (),
    sensitive: Any = (),
    insensitive: Any = (),
    allow_unique: Any = (),
    source: str = "the table",
) -> Roles:
    """The :class:`Roles` of a table whose columns are ``columns``, validated.

    Raises
    ------
    RoleError
        Columns without a role (all of them listed, with the flags that classify them), a
        column with two roles, a named column that does not exist, no quasi-identifier.
    """
    roles = Roles(
        identifiers=identifiers,
        quasi_identifiers=quasi_identifiers,
        sensitive=sensitive,
        insensitive=insensitive,
        allow_unique=allow_unique,
    )
    roles.validate(columns, source=source)
    return roles


def _to_number(part: pd.DataFrame, columns: Sequence[str], source: str) -> pd.DataFrame:
    """Kernel: the ``columns`` of one partition as float64 numbers; a value that does not parse
    is an error naming the column."""
    out = part.copy()
    for c in columns:
        arr = parse_numbers(
            part[c],
            f"{source}: quasi-identifier {c!r} has an interval hierarchy but values that are not numbers",
            python=f"a categorical hierarchy for {c!r}",
            fix=f"`hierarchy` {c}=FILE (categorical)",
        )
        out[c] = pd.array(arr, dtype=pd.ArrowDtype(pa.float64()))
    return out


def numeric_quasi_identifiers(ddf: Any, hierarchies: Mapping[str, Hierarchy], *, source: str = "the table") -> Any:
    """``ddf`` with every non-numeric column that has an interval hierarchy read as numbers."""
    cols = [
        a
        for a, h in hierarchies.items()
        if a in ddf.columns
        and h.kind == "interval"
        and not (pd.api.types.is_numeric_dtype(ddf[a].dtype) and not pd.api.types.is_bool_dtype(ddf[a].dtype))
    ]
    if not cols:
        return ddf
    meta = _to_number(ddf._meta, cols, source)
    return ddf.map_partitions(_to_number, cols, source, meta=meta)


def distinct_counts(ddf: Any, columns: Sequence[str], **compute_kwargs: Any) -> tuple[dict[str, int], int]:
    """``({column: distinct values}, rows)`` in one distributed pass (HyperLogLog estimates:
    the test they feed is a ratio, and an exact count of a unique column would gather it)."""
    from ..progress import compute

    lazy = [ddf[c].nunique_approx() for c in columns]
    got = compute(ddf.map_partitions(len).sum(), *lazy, **{"progress": False, **compute_kwargs})
    return {c: int(round(float(v))) for c, v in zip(columns, got[1:])}, int(got[0])
