"""The one estimator contract of ppdm-dask (scikit-learn's rules, as dask-ml follows them).

* ``__init__`` only stores its arguments, under the same names, unchanged: parameters are
  validated in :meth:`fit`, so :meth:`get_params` / :meth:`set_params` / ``clone`` work as in
  scikit-learn (they introspect the signature of ``__init__``).
* ``fit(X, *, client=None, progress=False)`` learns and returns ``self``; what it learns lives
  in attributes with a trailing underscore, among them ``report_`` (a dict of figures).
* ``transform(X)`` returns a :class:`~ppdm_dask.release.Release`; ``fit_transform`` does both.
* Using a learned attribute before ``fit`` raises :class:`~ppdm_dask.errors.NotFittedError`.
* Progress bars are off in the library (``progress=False``); the command line turns them on.

A parameter called ``key`` is a secret: ``repr`` never shows it.
"""

from __future__ import annotations

import abc
import inspect
from typing import Any

from .constraints import validate
from .errors import InvalidParameter, NotFittedError

__all__ = ["Estimator", "check_is_fitted"]

_SECRET_PARAMS = frozenset({"key"})


class Estimator(abc.ABC):
    """Base class of every fit/transform object of the package."""

    #: per constructor parameter, the constraints a value must meet one of
    #: (:mod:`ppdm_dask.constraints`); checked once, at the start of ``fit``
    _parameter_constraints: dict[str, list[Any]] = {}

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        names = []
        for p in sig.parameters.values():
            if p.name == "self":
                continue
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"{cls.__name__}.__init__ must name its parameters (no *args/**kwargs)")
            names.append(p.name)
        return names

    def get_params(self, deep: bool = False) -> dict[str, Any]:
        """The constructor parameters and their current values."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> "Estimator":
        """Set constructor parameters (unknown names are an error); returns ``self``."""
        valid = set(self._param_names())
        for name, value in params.items():
            if name not in valid:
                raise InvalidParameter(f"{type(self).__name__} has no parameter {name!r}; parameters: {sorted(valid)}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        sig = inspect.signature(type(self).__init__)
        shown = []
        for name in self._param_names():
            value = getattr(self, name, None)
            default = sig.parameters[name].default
            if name in _SECRET_PARAMS:
                if value is not None:
                    shown.append(f"{name}=<secret>")
                continue
            try:
                same = value is default or bool(value == default)
            except Exception:  # arrays, frames: always show
                same = False
            if not same:
                shown.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

    def __getattr__(self, name: str) -> Any:
        # only called when normal lookup fails: a learned attribute asked for before fit
        if name.endswith("_") and not name.startswith("__"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit() before using {name}")
        raise AttributeError(f"{type(self).__name__!s} object has no attribute {name!r}")

    def _validate_params(self) -> dict[str, Any]:
        """The declared parameters (``_parameter_constraints``), checked and normalized; the
        first refused one raises :class:`~ppdm_dask.errors.InvalidParameter` naming it."""
        cons = type(self)._parameter_constraints
        return validate(cons, {name: getattr(self, name) for name in cons})

    # ------------------------------------------------------------------ the contract
    @abc.abstractmethod
    def fit(self, X: Any, *, client: Any = None, progress: bool = False) -> "Estimator":
        """Learn from ``X``; sets the ``*_`` attributes (``report_`` among them); returns self."""

    @abc.abstractmethod
    def transform(self, X: Any = None) -> Any:
        """The release of ``X`` (or of the fitted data)."""

    def fit_transform(self, X: Any, *, client: Any = None, progress: bool = False) -> Any:
        """``fit(X)`` then ``transform(X)``: the release of ``X``."""
        return self.fit(X, client=client, progress=progress).transform(X)


def check_is_fitted(estimator: Any, *attributes: str) -> None:
    """Raise :class:`NotFittedError` unless ``estimator`` has every learned attribute named
    (default: ``report_``)."""
    for name in attributes or ("report_",):
        if name not in vars(estimator):
            raise NotFittedError(f"this {type(estimator).__name__} is not fitted yet: call fit() first")
