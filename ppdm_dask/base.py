"""The one estimator contract of ppdm-dask (scikit-learn's rules, as dask-ml follows them).

* ``__init__`` only stores its arguments, under the same names, unchanged: parameters are
  validated in :meth:`fit`, so :meth:`get_params` / :meth:`set_params` / ``clone`` work as in
  scikit-learn (they introspect the signature of ``__init__``).
* ``fit(X, *, client=None, progress=False)`` learns and returns ``self``; what it learns lives
  in attributes with a trailing underscore, among them ``report_`` (a dict of figures).
* ``release(*, client=None, progress=False)`` returns the
  :class:`~ppdm_dask.release.Release` of what was fitted (no ``X``: the release is of the data
  given to ``fit``); ``fit_release(X)`` does both.
* ``transform(X)`` exists only on a :class:`Transformer`: an estimator whose fitted parameters
  apply to any data, so that ``X`` itself is transformed — the EMASK
  :class:`~ppdm_dask.emask.Distorter` (distorts ``X`` with the fitted p, q) and the
  :class:`~ppdm_dask.sketch.DeltaAnonymizer` (sketches every record of ``X`` with the fitted
  generator; each record on its own). The other families learn something of the fitted rows
  themselves (the generalised table, the k-NN graph's component counts, the groups, the code
  table): their release cannot be applied to other data, so they have ``release()`` only.
  ``fit_transform`` does ``fit(X)`` then ``transform(X)``.
* Keys, one rule: ``fit`` resolves the ``key`` parameter once (:meth:`Estimator._resolve_key`:
  the key given, or a fresh secret one when it is None) into the fitted attribute ``key_``;
  every release the estimator builds is constructed with ``key_``, and read through
  :attr:`ppdm_dask.release.Release.key`.
* Using a learned attribute before ``fit`` raises :class:`~ppdm_dask.errors.NotFittedError`.
* Progress bars are off in the library (``progress=False``); the command line turns them on.

A parameter called ``key`` (and the fitted ``key_``) is a secret: ``repr`` never shows it.
"""

from __future__ import annotations

import abc
import inspect
from typing import TYPE_CHECKING, Any

from .constraints import validate
from .errors import InvalidParameter, NotFittedError

if TYPE_CHECKING:
    from .random import Key

__all__ = ["Estimator", "Transformer", "check_is_fitted"]

_SECRET_PARAMS = frozenset({"key"})


class Estimator(abc.ABC):
    """Base class of every estimator of the package (``fit``, then ``release``)."""

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

    def set_params(self, **params: Any) -> Estimator:
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

    def validate_params(self) -> dict[str, Any]:
        """The declared parameters (``_parameter_constraints``), checked and normalized; the
        first refused one raises :class:`~ppdm_dask.errors.InvalidParameter` naming it.

        ``fit`` calls it first; the command line calls it before its job starts a scheduler, so
        a refused option costs no cluster."""
        cons = type(self)._parameter_constraints
        return validate(cons, {name: getattr(self, name) for name in cons})

    def _resolve_key(self) -> Key:
        """The key of this fit, resolved once (called by ``fit``): the ``key`` parameter, or a
        fresh secret key when it is None; recorded as the fitted attribute ``key_``, which
        every release of the fit is constructed with."""
        from .random import as_key

        self.key_ = as_key(getattr(self, "key", None))
        return self.key_

    # ------------------------------------------------------------------ the contract
    @abc.abstractmethod
    def fit(self, X: Any, *, client: Any = None, progress: bool = False) -> Estimator:
        """Learn from ``X``; sets the ``*_`` attributes (``report_`` and ``key_`` among them);
        returns self."""

    @abc.abstractmethod
    def release(self, *, client: Any = None, progress: bool = False) -> Any:
        """The :class:`~ppdm_dask.release.Release` of what was fitted (lazy; its ``write``
        writes and checks it); ``client``/``progress`` for the families whose release computes."""

    def fit_release(self, X: Any, *, client: Any = None, progress: bool = False) -> Any:
        """``fit(X)`` then :meth:`release`: the release of ``X``."""
        return self.fit(X, client=client, progress=progress).release(client=client, progress=progress)


class Transformer(Estimator):
    """An estimator whose fitted parameters apply to any data: ``transform(X)`` is the release
    of ``X`` transformed with them (see the module notes for which families are)."""

    @abc.abstractmethod
    def transform(self, X: Any) -> Any:
        """The release of ``X`` transformed with the fitted parameters."""

    def fit_transform(self, X: Any, *, client: Any = None, progress: bool = False) -> Any:
        """``fit(X)`` then ``transform(X)``: the release of ``X``."""
        return self.fit(X, client=client, progress=progress).transform(X)


def check_is_fitted(estimator: Any, *attributes: str) -> None:
    """Raise :class:`NotFittedError` unless ``estimator`` has every learned attribute named
    (default: ``report_``)."""
    for name in attributes or ("report_",):
        if name not in vars(estimator):
            raise NotFittedError(f"this {type(estimator).__name__} is not fitted yet: call fit() first")
