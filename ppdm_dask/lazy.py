"""Names a package re-exports, imported on first use (PEP 562).

A package's ``__init__`` that imports its modules up front makes every import of the package, and
of any module inside it, pay for all of them: ``ppdm --help`` would load Dask's collections,
pandas and numba to show one option's choices. A package lists instead which module defines each
public name; the module is imported when the name is first read.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, namespace: dict[str, Any], table: Mapping[str, str], public: list[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
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

    # A public name that is also the name of the module defining it (``anonymity.anonymize``, the
    # function in ``anonymity/anonymize.py``): importing that module makes Python set the
    # package's attribute to the module, after which no lookup reaches ``__getattr__``. The
    # package's class keeps the public name for the function instead.
    shadowed = {name for name, module in table.items() if module == "." + name}
    if shadowed:
        sys.modules[package].__class__ = _keeping(package, frozenset(shadowed))
    return __getattr__, __dir__


def _keeping(package: str, names: frozenset[str]) -> type[types.ModuleType]:
    """A module class on which setting one of ``names`` to its own submodule sets the submodule's
    attribute of that name instead."""

    class LazyPackage(types.ModuleType):
        def __setattr__(self, name: str, value: Any) -> None:
            if name in names and isinstance(value, types.ModuleType) and value.__name__ == f"{package}.{name}":
                value = getattr(value, name)
            super().__setattr__(name, value)

    return LazyPackage
