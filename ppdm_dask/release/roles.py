"""Attribute roles of a relational release, as ARX defines them.

* **identifier** — directly identifying (name, e-mail, record number): never published;
* **quasi-identifier** — identifying in combination (zip, age, sex): generalised;
* **sensitive** — what must not be linked to a person (diagnosis): published as is, protected by
  l-diversity when asked;
* **insensitive** — published as is.

Every column of the input needs a role: an unclassified column is an error that lists all of
them (publishing or dropping a column silently is how identifiers leak). A quasi-identifier or
insensitive column whose values are (nearly) unique per record is refused as a likely direct
identifier unless it is declared with ``allow_unique`` (the override is recorded).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import RoleError

__all__ = ["Roles", "ROLE_NAMES", "UNIQUE_RATIO", "UNIQUE_MIN_ROWS", "nearly_unique"]

ROLE_NAMES = ("identifier", "quasi_identifier", "sensitive", "insensitive")
_FLAGS = {"identifier": "--identifier", "quasi_identifier": "--qi", "sensitive": "--sensitive", "insensitive": "--insensitive"}

#: A column with at least this share of distinct values per record is "nearly unique" ...
UNIQUE_RATIO = 0.9
#: ... once the table has at least this many records (below, every column looks unique).
UNIQUE_MIN_ROWS = 100


def _names(value: str | Iterable[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(c.strip() for c in value.split(",") if c.strip())
    return tuple(str(c) for c in value)


@dataclass(frozen=True)
class Roles:
    """The role of every column of a table.

    Parameters
    ----------
    identifiers, quasi_identifiers, sensitive, insensitive : sequence of str or comma-separated str
    allow_unique : sequence of str
        Quasi-identifier or insensitive columns accepted although nearly unique per record.
    """

    identifiers: tuple[str, ...] = ()
    quasi_identifiers: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    insensitive: tuple[str, ...] = ()
    allow_unique: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        for name in ("identifiers", "quasi_identifiers", "sensitive", "insensitive", "allow_unique"):
            object.__setattr__(self, name, _names(getattr(self, name)))
        seen: dict[str, str] = {}
        for role, cols in self._by_role().items():
            for c in cols:
                if c in seen and seen[c] != role:
                    raise RoleError(f"column {c!r} has two roles: {seen[c]} and {role}")
                seen[c] = role

    def _by_role(self) -> dict[str, tuple[str, ...]]:
        return {
            "identifier": self.identifiers,
            "quasi_identifier": self.quasi_identifiers,
            "sensitive": self.sensitive,
            "insensitive": self.insensitive,
        }

    def of(self, column: str) -> str | None:
        """The role of ``column`` (None when it has none)."""
        for role, cols in self._by_role().items():
            if column in cols:
                return role
        return None

    @property
    def published(self) -> list[str]:
        """Columns that appear in a release, in role order: QIs, sensitive, insensitive."""
        return [*self.quasi_identifiers, *self.sensitive, *self.insensitive]

    def validate(self, columns: Sequence[str], *, source: str = "the table") -> None:
        """Every column has exactly one role and every named column exists.

        Raises
        ------
        RoleError
            Naming the unclassified (or unknown) columns and the flags that classify them.
        """
        columns = [str(c) for c in columns]
        named = [c for cols in self._by_role().values() for c in cols]
        unknown = [c for c in dict.fromkeys(named + list(self.allow_unique)) if c not in columns]
        if unknown:
            raise RoleError(f"{source} has no column(s) {unknown}; its columns are {columns}")
        missing = [c for c in columns if self.of(c) is None]
        if missing:
            raise RoleError(
                f"{len(missing)} column(s) of {source} have no role: {', '.join(missing)}; give every column one of "
                "identifier (dropped), quasi-identifier (generalised), sensitive or insensitive (published as is)",
                python="identifiers=, quasi_identifiers=, sensitive=, insensitive=",
                fix="`identifiers` COLS, `quasi_identifiers` COLS, `sensitive` COL, `insensitive` COLS",
            )
        if not self.quasi_identifiers:
            raise RoleError(
                f"no quasi-identifier among the columns of {source}: name them",
                python="quasi_identifiers=[...]",
                fix="`quasi_identifiers` COL,COL",
            )

    def check_unique(self, distinct: Mapping[str, int], n_records: int) -> None:
        """Refuse quasi-identifier or insensitive columns that are nearly unique per record
        (``distinct[c] >= UNIQUE_RATIO * n_records`` with at least ``UNIQUE_MIN_ROWS``
        records) unless listed in ``allow_unique``."""
        bad = [
            c
            for c in (*self.quasi_identifiers, *self.insensitive)
            if c in distinct and c not in self.allow_unique and nearly_unique(distinct[c], n_records)
        ]
        if bad:
            shown = ", ".join(f"{c} ({distinct[c]:,} distinct values in {n_records:,} records)" for c in bad)
            raise RoleError(
                f"likely direct identifier(s): {shown}; declare them as identifiers (dropped) or accept them explicitly",
                python=f"allow_unique={bad}",
                fix="`identifiers` COL, or `allow_unique` " + ",".join(bad),
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "identifier": list(self.identifiers),
            "quasi_identifier": list(self.quasi_identifiers),
            "sensitive": list(self.sensitive),
            "insensitive": list(self.insensitive),
            "allow_unique": list(self.allow_unique),
        }

    def public_dict(self) -> dict[str, Any]:
        """The roles as a public file may show them: the published columns' roles and the
        number of identifier columns dropped, never their names (the release does not publish
        those columns, so their names are not the release's to tell)."""
        out = self.to_dict()
        out["identifiers_dropped"] = len(out.pop("identifier"))
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Roles:
        return cls(
            identifiers=d.get("identifier", ()),
            quasi_identifiers=d.get("quasi_identifier", ()),
            sensitive=d.get("sensitive", ()),
            insensitive=d.get("insensitive", ()),
            allow_unique=d.get("allow_unique", ()),
        )


def nearly_unique(n_distinct: int, n_records: int) -> bool:
    """Whether a column with ``n_distinct`` values over ``n_records`` records looks like an
    identifier (see :data:`UNIQUE_RATIO`, :data:`UNIQUE_MIN_ROWS`)."""
    return n_records >= UNIQUE_MIN_ROWS and n_distinct >= UNIQUE_RATIO * n_records
