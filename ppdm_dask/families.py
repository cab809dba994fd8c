"""The method families of ppdm-dask, in one registry.

A *family* is one kind of release (k-anonymous tables, EMASK-distorted baskets, sketches ...):
the name written as ``release.family`` in every manifest, the :class:`~ppdm_dask.release.Release`
subclass that writes, reads back and recounts it, the random-stream tags it draws from, the
command-line module and commands that make it, and its documentation page. Everything that must
know the families reads them from here, so that a family plugs in at one place:

* :meth:`Release.open <ppdm_dask.release.Release.open>` (and so ``ppdm verify`` and
  ``ppdm report``) resolves the class named in a manifest with :func:`release_class`, importing
  that family's module only (never every family up front);
* the report schema's list of families is :func:`names` (filled in when the schema is loaded);
* the command line's family commands are :func:`cli_commands`, ``name -> (module, attribute,
  help)``, so that ``ppdm --help`` lists them without importing their modules;
* the stream tags a family uses are :class:`ppdm_dask.random.Tag` members, named in
  :attr:`Family.tags`. Their numbers stay written out in :mod:`ppdm_dask.random`: a tag's number
  enters every stream drawn with it, so it may never be renumbered, let alone derived from the
  order of a list.

A family outside the package (a plug-in, or a test's toy family) is added with :func:`register`;
docs/architecture.md, "Adding a family", is the checklist.

This module holds strings only and imports nothing heavy: reading the registry (``ppdm --help``)
loads no family.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any

from .errors import InvalidParameter

__all__ = [
    "Command",
    "Family",
    "FAMILIES",
    "SHARED_TAGS",
    "register",
    "unregister",
    "get",
    "names",
    "release_class",
    "cli_commands",
]

#: a family or command name: lower case, digits and hyphens (it is written into manifests and typed as a command)
_NAME = re.compile(r"[a-z][a-z0-9-]*")
#: ``package.module:Class`` (or ``:attribute``)
_REF = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


@dataclass(frozen=True)
class Command:
    """One command a family adds to ``ppdm``.

    Parameters
    ----------
    name : str
        The command as typed (``km-anonymize``).
    attribute : str
        The :class:`click.Command` (or group) in the family's CLI module.
    help : str
        One line for ``ppdm --help`` (shown without importing the module).
    """

    name: str
    attribute: str
    help: str


@dataclass(frozen=True)
class Family:
    """One method family (see the module docstring).

    Parameters
    ----------
    name : str
        The manifest's ``release.family``; the class's :attr:`Release.family` must be the same.
    release : str
        ``"module:Class"`` of the :class:`~ppdm_dask.release.Release` subclass, imported only when
        a release of the family is read or written.
    tags : tuple of str
        Names of the :class:`ppdm_dask.random.Tag` members the family's own random steps draw
        from (those of the shared layers, :data:`SHARED_TAGS`, are not repeated).
    cli : str
        Module of the family's commands (``""``: none).
    commands : tuple of Command
        The commands that module defines.
    docs : str
        The family's documentation page (a path from the repository root, or a URL).
    """

    name: str
    release: str
    tags: tuple[str, ...] = ()
    cli: str = ""
    commands: tuple[Command, ...] = ()
    docs: str = ""


#: The built-in families, in the order the CLI lists them.
FAMILIES: tuple[Family, ...] = (
    Family(
        "relational",
        "ppdm_dask.anonymity.release:AnonymizedRelease",
        (),
        "ppdm_dask.cli.anonymity",
        (
            Command(
                "anonymize",
                "anonymize",
                "k-anonymise (and l-diversify, t-close) the table SRC (CSV or Parquet) and write the release to DST (DST.csv: one CSV file and DST.csv.manifest.json; otherwise a Parquet folder).",
            ),
            Command(
                "access-control",
                "access_control",
                "Anonymise SRC for a workload of role permissions with imprecision bounds (Pervaiz et al.) and report, per permission and per role, the imprecision and whether the bound holds, beside plain Mondrian; with --out, write the release.",
            ),
        ),
        "docs/anonymity.md",
    ),
    Family(
        "km",
        "ppdm_dask.anonymity.km_release:KmRelease",
        (),
        "ppdm_dask.cli.km",
        (
            Command(
                "km-anonymize",
                "km_anonymize",
                "k^m-anonymize the transactions SRC by global item generalisation and write the release to DST (a ppdm transaction folder, or DST.csv: one basket CSV file).",
            ),
        ),
        "docs/anonymity.md",
    ),
    Family(
        "emask",
        "ppdm_dask.emask.release:DistortedRelease",
        ("DISTORT", "S0_SAMPLE"),
        "ppdm_dask.cli.emask",
        (Command("emask", "emask", "EMASK/MASK: choose (p, q), release a distorted copy, mine it, audit its privacy."),),
        "docs/emask.md",
    ),
    Family(
        "sketch",
        "ppdm_dask.sketch.release:SketchRelease",
        ("SKETCH", "KMEANS_INIT", "KMEANS_SUPPRESSED", "KNN_PRIOR", "EVALUATION_SPLIT"),
        "ppdm_dask.cli.sketch",
        (Command("sketch", "sketch", "Sketch-based anonymization of sparse records (Aggarwal & Yu)."),),
        "docs/sketches.md",
    ),
    Family(
        "condensation",
        "ppdm_dask.condensation.release:CondensedRelease",
        ("CONDENSE_STATIC", "PSEUDO_DATA", "CONDENSE_DYNAMIC", "PRIVACY_LEVELS", "CONDENSE_CELLS", "EVALUATION_SPLIT"),
        "ppdm_dask.cli.condensation",
        (
            Command(
                "condense",
                "condense",
                "Condense the numeric records of SRC into groups of at least each member's privacy level and release pseudo-data with the groups' sizes at DST (Aggarwal & Yu); no pseudo-record copies a unique record of SRC.",
            ),
        ),
        "docs/condensation.md",
    ),
    Family(
        "krimp",
        "ppdm_dask.krimp.release:GeneratedRelease",
        ("KRIMP_GENERATE", "EVALUATION_SPLIT"),
        "ppdm_dask.cli.krimp",
        (Command("krimp", "krimp", "KRIMP code tables, the KRIMP data generator and DS dissimilarity (Vreeken et al.)."),),
        "docs/krimp.md",
    ),
)

#: Tags of the layers every family shares: the keyed row order of every release (``release``),
#: the Quest generator (``data``), the approximate kNN graph (``neighbors``) and the tag left to
#: callers (and plug-in families, whose streams already differ by their release's stream key).
SHARED_TAGS: tuple[str, ...] = ("ROW_ORDER", "QUEST", "KNN_MINHASH", "SAMPLE")

_registry: dict[str, Family] = {f.name: f for f in FAMILIES}


def _check(family: Family) -> None:
    """Refuse a malformed family before it is registered (one line naming the field)."""
    if not isinstance(family, Family):
        raise InvalidParameter(f"register() takes a ppdm_dask.families.Family, got {type(family).__name__}")
    if not _NAME.fullmatch(family.name or ""):
        raise InvalidParameter(f"family name {family.name!r}: use lower-case letters, digits and hyphens")
    if not _REF.fullmatch(family.release or ""):
        raise InvalidParameter(f"family {family.name!r}: release={family.release!r} must be 'module:Class'")
    if not all(isinstance(t, str) and t for t in family.tags):
        raise InvalidParameter(f"family {family.name!r}: tags must be names of ppdm_dask.random.Tag members")
    if family.commands and not family.cli:
        raise InvalidParameter(f"family {family.name!r}: commands need the module that defines them (cli=)")
    for c in family.commands:
        if not _NAME.fullmatch(c.name) or not c.attribute.isidentifier() or not c.help or "\n" in c.help:
            raise InvalidParameter(
                f"family {family.name!r}: command {c.name!r} needs a lower-case name, the attribute "
                "of its click command and one line of help"
            )
    taken = {c.name: f.name for f in _registry.values() if f.name != family.name for c in f.commands}
    clash = [c.name for c in family.commands if c.name in taken]
    if clash:
        raise InvalidParameter(f"family {family.name!r}: command {clash[0]!r} is already family {taken[clash[0]]!r}'s")


def register(family: Family) -> Family:
    """Add a family (a plug-in, or a test's toy family); returns it.

    Registering the same family again is a no-op; another family under a registered name, or a
    command another family already has, is refused.

    Raises
    ------
    InvalidParameter
        A malformed family, or one whose name or commands are taken.
    """
    _check(family)
    known = _registry.get(family.name)
    if known is not None and known != family:
        raise InvalidParameter(f"a different family is already registered as {family.name!r}; unregister() it first")
    _registry[family.name] = family
    return family


def unregister(name: str) -> None:
    """Remove a family added with :func:`register` (the built-in ones stay)."""
    if any(f.name == name for f in FAMILIES):
        raise InvalidParameter(f"{name!r} is a built-in family; it cannot be unregistered")
    _registry.pop(name, None)


def names() -> tuple[str, ...]:
    """The registered families' names: the built-in ones first, then the plug-ins in order."""
    return tuple(_registry)


def get(name: str) -> Family:
    """The registered family ``name``.

    Raises
    ------
    InvalidParameter
        No family of that name is registered.
    """
    try:
        return _registry[name]
    except (KeyError, TypeError):
        raise InvalidParameter(
            f"unknown family {name!r}; the registered families are {list(_registry)}",
            python="ppdm_dask.families.register(...) adds a plug-in family",
        ) from None


def _load(ref: str) -> Any:
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)


def release_class(name: str) -> type:
    """The :class:`~ppdm_dask.release.Release` subclass of family ``name``, its module imported
    now (the first time a release of the family is read or written).

    Raises
    ------
    InvalidParameter
        Unknown family, or a class whose ``family`` is not ``name`` (a registration error).
    """
    family = get(name)
    klass = _load(family.release)
    if getattr(klass, "family", None) != name:
        raise InvalidParameter(f"family {name!r} names {family.release}, whose family is {getattr(klass, 'family', None)!r}")
    return klass


def cli_commands() -> dict[str, tuple[str, str, str]]:
    """``command name -> (module, attribute, one-line help)`` of every registered family's
    commands: what ``ppdm`` lists in ``--help`` without importing the modules, and imports
    (``getattr(import_module(module), attribute)``) when the command is run."""
    return {c.name: (f.cli, c.attribute, c.help) for f in _registry.values() for c in f.commands}
