"""Names a package re-exports, imported on first use (PEP 562).

A package's ``__init__`` that imports its modules up front makes every import of the package, and
of any module inside it, pay for all of them: ``ppdm --help`` would load Dask's collections,
pandas and numba to show one option's choices. A package lists instead which module defines each
public name; the module is imported when the name is first read.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, namespace: dict[str, Any], table: Mapping[str, str],
                 public: list[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    namespace : dict
        The package's ``globals()``: a name read once is kept there, so later reads skip the hook.
    table : mapping
        Public name -> the module that defines it (relative to ``package``, e.g. ``".km"``).
    public : list of str
        The package's ``__all__``.
    """

    def __getattr__(name: str) -> Any:
        try:
            module = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(public))

    return __getattr__, __dir__
