"""Results of checks: one :class:`Check` per condition, gathered in a :class:`Verdict`.

Every ``check_*`` function of the package returns a Verdict and every ``is_*`` function a bool
(``bool(verdict)`` is ``verdict.ok``). A check carries the figure it measured, the threshold it
was held to and, when it fails, where the fault is (a file, a column, a class), so a failed
verification prints one line per failed check naming what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .figures import plain as _plain

__all__ = ["Check", "Verdict"]


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


@dataclass(frozen=True)
class Check:
    """The outcome of one condition.

    Attributes
    ----------
    name : str
        What was checked (``"k-anonymity"``, ``"checksum"``, ``"basic privacy floor"`` ...).
    ok : bool
        Whether it holds.
    figure : object
        The value measured (e.g. the smallest class size).
    threshold : object
        The value it is held to (e.g. k).
    where : str, optional
        The file, column or record group at fault (or checked).
    detail : str
        One more sentence for the reader.
    overridden : bool
        The condition fails but the user explicitly accepted it (recorded in the manifest):
        the verdict stays ok and says so.
    status : {"check", "unchecked", "warning"}
        ``unchecked``: a property this verification could not establish (e.g. one that needs
        the original data), listed so that nobody reads the verdict as covering it;
        ``warning``: something the reader should act on that does not make the release
        wrong. Neither fails the verdict.
    stats : mapping, optional
        The counts the check was decided on (e.g. ``n_classes``, ``violating_rows``), written
        with it.
    """

    name: str
    ok: bool
    figure: Any = None
    threshold: Any = None
    where: str | None = None
    detail: str = ""
    overridden: bool = False
    stats: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)
    status: str = "check"

    @property
    def passed(self) -> bool:
        """Holds, or was explicitly overridden (or is not a check: unchecked, warning)."""
        return bool(self.ok or self.overridden or self.status != "check")

    def line(self) -> str:
        """One line for a terminal: ``FAILED k-anonymity: 4 (needs 5) in part-00001.parquet``."""
        if self.status == "unchecked":
            status = "NOT CHECKED"
        elif self.status == "warning":
            status = "WARNING"
        else:
            status = "ok" if self.ok else ("OVERRIDDEN" if self.overridden else "FAILED")
        text = f"{status} {self.name}"
        if self.figure is not None:
            text += f": {_fmt(self.figure)}"
            if self.threshold is not None:
                text += f" (needs {_fmt(self.threshold)})"
        if self.where:
            text += f" in {self.where}"
        if self.detail:
            text += f" - {self.detail}"
        return text

    def to_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "ok": bool(self.ok), "figure": _plain(self.figure), "threshold": _plain(self.threshold)}
        if self.where:
            out["where"] = self.where
        if self.detail:
            out["detail"] = self.detail
        if self.overridden:
            out["overridden"] = True
        if self.stats:
            out["stats"] = _plain(dict(self.stats))
        if self.status != "check":
            out["status"] = self.status
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Check:
        return cls(
            name=str(d["name"]),
            ok=bool(d["ok"]),
            figure=d.get("figure"),
            threshold=d.get("threshold"),
            where=d.get("where"),
            detail=d.get("detail", ""),
            overridden=bool(d.get("overridden", False)),
            stats=d.get("stats"),
            status=str(d.get("status", "check")),
        )


@dataclass(frozen=True)
class Verdict:
    """A list of checks; ``ok`` when every check holds (or was explicitly overridden).

    ``verdict["k-anonymity"]`` is the first check of that name; ``bool(verdict)`` is ``ok``.
    """

    checks: tuple[Check, ...] = field(default_factory=tuple)

    def __init__(self, checks: Iterable[Check] = ()) -> None:
        object.__setattr__(self, "checks", tuple(checks))

    @property
    def ok(self) -> bool:
        return all(c.passed for c in self.checks)

    def __bool__(self) -> bool:
        return self.ok

    def __iter__(self) -> Iterator[Check]:
        return iter(self.checks)

    def __len__(self) -> int:
        return len(self.checks)

    def __contains__(self, name: object) -> bool:
        return any(c.name == name for c in self.checks)

    def __getitem__(self, name: str) -> Check:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(f"no check named {name!r}; checks: {[c.name for c in self.checks]}")

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default

    def __add__(self, other: Verdict | Iterable[Check]) -> Verdict:
        return Verdict((*self.checks, *tuple(other)))

    def failures(self) -> list[Check]:
        """The checks that do not pass."""
        return [c for c in self.checks if not c.passed]

    def notes(self) -> list[Check]:
        """The properties not checked and the warnings (they do not fail the verdict)."""
        return [c for c in self.checks if c.status != "check"]

    def lines(self, *, failed_only: bool = False) -> list[str]:
        return [c.line() for c in (self.failures() if failed_only else self.checks)]

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "checks": [c.to_dict() for c in self.checks]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Verdict:
        return cls(Check.from_dict(c) for c in d.get("checks", []))

    def __repr__(self) -> str:
        bad = [c.name for c in self.failures()]
        return f"Verdict(ok={self.ok}, checks={len(self.checks)}" + (f", failed={bad})" if bad else ")")
