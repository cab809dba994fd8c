"""Declared parameter constraints, checked in one place (scikit-learn's ``_parameter_constraints``).

A constraint list says what a parameter may be; a value is accepted when it meets one of them::

    _parameter_constraints = {
        "k": [Interval(int, 1, None)],                       # an integer >= 1
        "s0": [Interval(float, 0, 1, closed="neither")],      # a number in (0, 1)
        "method": [Options({"mondrian", "cluster"})],
        "max_len": [None, Interval(int, 2, None)],            # None, or an integer >= 2
        "closed": [bool],                                     # any instance of a type
        "key": ["key"],                                       # anything (a key is checked by Key)
    }

:func:`validate` checks a mapping of values against such a table and returns the values
normalized (an integer of an integer interval as ``int``, a number of a float interval as
``float``); the first refused value raises :class:`~ppdm_dask.errors.InvalidParameter` that names
the parameter (``parameter=``), so the command line shows its flag. Booleans are never numbers
here (``True`` is not a ``k``).

On the floor of :mod:`ppdm_dask.errors`: imports nothing of the package but the errors.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .errors import InvalidParameter

__all__ = ["Interval", "Options", "Predicate", "validate", "check"]


class Interval:
    """Numbers of one kind within bounds.

    Parameters
    ----------
    kind : {int, float}
        ``int``: integers (Python or NumPy, not bool), returned as ``int``; ``float``: finite real
        numbers (integers too, not bool), returned as ``float``.
    left, right : number or None
        The bounds; None leaves that side open-ended.
    closed : {"both", "left", "right", "neither"}
        Which bounds belong to the interval.
    """

    def __init__(self, kind: type, left: float | None, right: float | None, *, closed: str = "both") -> None:
        if kind not in (int, float):
            raise TypeError(f"Interval kind must be int or float, got {kind!r}")
        if closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"closed must be 'both', 'left', 'right' or 'neither', got {closed!r}")
        self.kind, self.left, self.right, self.closed = kind, left, right, closed

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool):
            return False
        if self.kind is int:
            if not isinstance(value, numbers.Integral):
                return False
        elif not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
            return False
        if self.left is not None:
            if value < self.left or (value == self.left and self.closed in ("right", "neither")):
                return False
        if self.right is not None:
            if value > self.right or (value == self.right and self.closed in ("left", "neither")):
                return False
        return True

    def normalize(self, value: Any) -> Any:
        return int(value) if self.kind is int else float(value)

    def __str__(self) -> str:
        what = "an integer" if self.kind is int else "a number"
        lo_in = self.closed in ("both", "left")
        hi_in = self.closed in ("both", "right")
        if self.left is not None and self.right is not None:
            return f"{what} in {'[' if lo_in else '('}{self.left:g}, {self.right:g}{']' if hi_in else ')'}"
        if self.left is not None:
            return f"{what} {'>=' if lo_in else '>'} {self.left:g}"
        if self.right is not None:
            return f"{what} {'<=' if hi_in else '<'} {self.right:g}"
        return what


class Options:
    """One of a fixed set of values (compared with ``==``, so no arrays)."""

    def __init__(self, options: Iterable[Any]) -> None:
        self.options = tuple(options)

    def accepts(self, value: Any) -> bool:
        try:
            # True is not the option 1, nor 1 the option True
            return any(
                isinstance(value, bool) == isinstance(o, bool) and isinstance(value, type(o)) and bool(value == o)
                for o in self.options
            )
        except Exception:  # an array compared elementwise: not one of the options
            return False

    def normalize(self, value: Any) -> Any:
        return value

    def __str__(self) -> str:
        shown = sorted(self.options, key=repr) if all(isinstance(o, str) for o in self.options) else self.options
        return f"one of {', '.join(repr(o) for o in shown)}"


class Predicate:
    """Any value ``test(value)`` holds for, described by ``description`` in the error."""

    def __init__(self, test: Callable[[Any], bool], description: str) -> None:
        self.test, self.description = test, description

    def accepts(self, value: Any) -> bool:
        return bool(self.test(value))

    def normalize(self, value: Any) -> Any:
        return value

    def __str__(self) -> str:
        return self.description


class _IsNone:
    def accepts(self, value: Any) -> bool:
        return value is None

    def normalize(self, value: Any) -> Any:
        return None

    def __str__(self) -> str:
        return "None"


class _InstanceOf:
    def __init__(self, kind: type) -> None:
        self.kind = kind

    def accepts(self, value: Any) -> bool:
        return isinstance(value, self.kind)

    def normalize(self, value: Any) -> Any:
        return bool(value) if self.kind is bool else value

    def __str__(self) -> str:
        return "True or False" if self.kind is bool else f"a {self.kind.__name__}"


class _Anything:
    def accepts(self, value: Any) -> bool:
        return True

    def normalize(self, value: Any) -> Any:
        return value

    def __str__(self) -> str:
        return "anything"


def _constraint(spec: Any) -> Any:
    """The constraint object of one entry of a constraint list."""
    if spec is None:
        return _IsNone()
    if isinstance(spec, (Interval, Options, Predicate)):
        return spec
    if spec == "key":  # a secret key is checked (and derived) by Key itself
        return _Anything()
    if isinstance(spec, type):
        return _InstanceOf(spec)
    if callable(spec):
        return Predicate(spec, getattr(spec, "__doc__", None) or spec.__name__)
    raise TypeError(f"unknown parameter constraint {spec!r}")


def check(name: str, value: Any, constraints: Iterable[Any]) -> Any:
    """``value`` normalized by the first of ``constraints`` it meets; otherwise one
    :class:`~ppdm_dask.errors.InvalidParameter` naming ``name``."""
    parsed = [_constraint(c) for c in constraints]
    for c in parsed:
        if c.accepts(value):
            return c.normalize(value)
    shown = [str(c) for c in parsed if not isinstance(c, _IsNone)]
    text = " or ".join(shown) if shown else "None"
    if any(isinstance(c, _IsNone) for c in parsed) and shown:
        text += " (or None)"
    raise InvalidParameter(f"{name} must be {text}, got {value!r}", parameter=name)


def validate(constraints: Mapping[str, Iterable[Any]], values: Mapping[str, Any]) -> dict[str, Any]:
    """Every value of ``values`` that ``constraints`` declares, checked and normalized.

    Parameters
    ----------
    constraints : mapping of str to list
        Per parameter name, the constraints of which a value must meet one.
    values : mapping of str to any
        The values by parameter name; a name without constraints is passed through unchecked.

    Returns
    -------
    dict
        The values, normalized (``np.int64(3)`` of an integer interval becomes ``3``).

    Raises
    ------
    InvalidParameter
        For the first refused value (in the order of ``values``), naming its parameter.
    """
    return {name: check(name, value, constraints[name]) if name in constraints else value for name, value in values.items()}
