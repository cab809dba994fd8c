"""Exception hierarchy of ppdm-dask.

Every public entry point validates its input and raises one of these, so callers (and the
``ppdm`` command line) can tell a user mistake from a bug. Each class also derives from the
closest built-in exception, so ``except ValueError`` keeps working.

An error names what to change in Python terms only: ``parameter`` (the keyword argument it is
about, ``"min_support"``), ``fix`` (how to fix it, with parameter names between backticks:
``"raise `min_support` or set `max_length`"``) and ``python`` (a fix text for a library user
only, ``"overwrite=True"``). The library never spells a ``ppdm`` flag: the command line renders
the parameter names through its one table of flags (:mod:`ppdm_dask.cli.flags`, passed to
:meth:`PPDMError.message_for`). ``cli`` is left for a hint only the command line has and that
names no flag ("'ppdm ledger list' shows the ids").
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = [
    "PPDMError",
    "InvalidParameter",
    "WeakParameterError",
    "RoleError",
    "DataFormatError",
    "ItemIdError",
    "IncompleteDatasetError",
    "CorruptDatasetError",
    "DatasetNotFoundError",
    "DatasetExistsError",
    "PrivacyViolation",
    "InfeasiblePrivacyError",
    "NotFittedError",
    "ResultTooLargeError",
    "DuplicateItemsWarning",
    "with_message",
]


class PPDMError(Exception):
    """Base class of every error raised on purpose by ppdm-dask.

    Parameters
    ----------
    message : str
        One line: what is wrong and where (file, column or parameter).
    parameter : str, optional
        The keyword argument the error is about (``"min_support"``); the command line shows its
        flag (``(--min-support)``) when the error has no ``fix``.
    fix : str, optional
        How to fix it, naming parameters between backticks (``"`min_count` 2 or more"``): a
        library user reads the names, the command line their flags.
    python : str, optional
        A fix for library users only (``overwrite=True``); it replaces ``fix`` in ``str(error)``.
    cli : str, optional
        A fix only the command line has, naming no flag (``"ppdm samples"``).
    """

    def __init__(
        self,
        message: str = "",
        *,
        python: str | None = None,
        cli: str | None = None,
        parameter: str | None = None,
        fix: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.python = python
        self.cli = cli
        self.parameter = parameter
        self.fix = fix

    def parameters(self) -> list[str]:
        """Every parameter name the error mentions (its ``parameter`` and the names in ``fix``)."""
        names = [self.parameter] if self.parameter else []
        return names + [n for n in _NAMED.findall(self.fix or "") if n not in names]

    def message_for(self, audience: str = "python", flags: Mapping[str, str] | None = None) -> str:
        """The message with the fix spelled for ``audience``: ``"python"`` (parameter names) or
        ``"cli"`` (each name rendered through ``flags``, the command line's table; a name the
        table lacks stays as is)."""
        if audience == "cli":
            spell = dict(flags or {})
            render = lambda m: spell.get(m.group(1), m.group(1))  # noqa: E731
            if self.fix:
                hint: str | None = _NAMED.sub(render, self.fix)
            elif self.parameter:
                hint = spell.get(self.parameter, self.parameter)
            else:
                hint = self.cli
        else:
            hint = self.python if self.python else (_NAMED.sub(r"\1", self.fix) if self.fix else None)
        return f"{self.message} ({hint})" if hint else self.message

    def __str__(self) -> str:
        return self.message_for("python")

    def __reduce__(self):  # keep the hints when an error crosses a process boundary
        return (_rebuild, (type(self), self.message, self.python, self.cli, self.parameter, self.fix))


#: a parameter name inside a ``fix`` text
_NAMED = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")


def _rebuild(
    cls: type, message: str, python: str | None, cli: str | None, parameter: str | None = None, fix: str | None = None
) -> PPDMError:
    return cls(message, python=python, cli=cli, parameter=parameter, fix=fix)


class InvalidParameter(PPDMError, ValueError):
    """A parameter is out of its admissible range (e.g. p + q = 1, k > N, delta <= 0)."""


class WeakParameterError(InvalidParameter):
    """A parameter is admissible but below the privacy floor; refused unless the caller
    overrides it explicitly (the override is then recorded in the release manifest)."""


class RoleError(InvalidParameter):
    """Attribute roles are missing, contradictory, or a column looks like a direct identifier."""


class DataFormatError(PPDMError, ValueError):
    """Input data cannot be read as expected (bad schema, non-integer items, NaN ...)."""


class ItemIdError(DataFormatError):
    """An item id is negative or outside the item vocabulary."""


class IncompleteDatasetError(DataFormatError):
    """A dataset location holds no committed dataset (e.g. a failed or running write)."""


class CorruptDatasetError(DataFormatError):
    """A committed dataset does not match its manifest (missing, truncated, swapped or altered
    part files, wrong row counts or checksums)."""


class DatasetNotFoundError(PPDMError, FileNotFoundError):
    """No data at the given URL."""


class DatasetExistsError(PPDMError, FileExistsError):
    """The output location already holds data and overwriting was not requested."""


class OutputNotWritableError(PPDMError, PermissionError):
    """The output location cannot be written (read-only, no permission, a file in the way)."""


class PrivacyViolation(PPDMError):
    """A privacy requirement would be (or was found to be) violated."""


class InfeasiblePrivacyError(PPDMError, ValueError):
    """The privacy levels cannot be met: some record asks for a group larger than the data."""


class ResultTooLargeError(PPDMError, MemoryError):
    """A result would outgrow memory (itemsets of Apriori, KRIMP candidates): refused before it
    does, with the parameters that bound it."""


class NotFittedError(PPDMError, AttributeError):
    """An estimator was used before :meth:`fit` (scikit-learn's convention)."""


class DuplicateItemsWarning(UserWarning):
    """Duplicate items inside a transaction were removed."""


def with_message(exc: BaseException) -> BaseException:
    """``exc`` itself, or the same exception rebuilt from its ``args`` when it lost its message
    on the way from a Dask worker.

    distributed pickles a task's exception with tblib, which rebuilds an exception whose class
    has an ``__init__`` of its own but no ``__reduce__`` (``UnicodeDecodeError`` among the
    built-in ones) without calling that ``__init__``: the client gets the right class and
    ``args`` but an empty ``str()`` ("UnicodeDecodeError" and nothing else). Calling the class
    on the ``args`` again restores the message; the traceback and cause are kept.
    """
    if not exc.args or str(exc).strip():
        return exc
    try:
        rebuilt = type(exc)(*exc.args)
        if not str(rebuilt).strip():
            return exc
    except Exception:  # a class that cannot be rebuilt from its args: keep what arrived
        return exc
    rebuilt.__cause__ = exc.__cause__
    rebuilt.__context__ = exc.__context__
    rebuilt.__suppress_context__ = exc.__suppress_context__
    return rebuilt.with_traceback(exc.__traceback__)
