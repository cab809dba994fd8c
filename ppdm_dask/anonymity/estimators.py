"""Estimators of the anonymity family (the contract of :mod:`ppdm_dask.base`).

* :class:`KAnonymizer` — k-anonymity / l-diversity / t-closeness of a table (lattice, Datafly, Mondrian,
  clustering) -> :class:`~ppdm_dask.anonymity.release.AnonymizedRelease`;
* :class:`AccessControlAnonymizer` — the same, tuned for a workload of role permissions
  (Pervaiz et al.) -> an ``AnonymizedRelease`` of method ``"access-control"``;
* :class:`KmAnonymizer` — k^m-anonymity of transactions ->
  :class:`~ppdm_dask.anonymity.km_release.KmRelease`.

``fit`` checks before any heavy work that every column has a role and that the parameters
clear the privacy floors (``allow_weak`` overrides them, recorded in the manifest), then runs
the plain functions (:func:`~.anonymize.anonymize`, :func:`~.anonymize.anonymize_for_permissions`,
:func:`~.km.km_anonymize`) and refuses quasi-identifier or insensitive columns that are nearly
unique per record (likely direct identifiers) unless declared with ``allow_unique``.
``release()`` returns the release of the fitted data; ``release.write(url)`` publishes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..base import Estimator, check_is_fitted
from ..constraints import Options
from ..data.hierarchy import Hierarchy
from ..data.sources import collection_name, source_of
from ..errors import InvalidParameter
from ._diversity import COUNT_CONSTRAINTS
from .anonymize import METHODS, AnonymizationResult, anonymize, anonymize_for_permissions
from .frequency import as_dask, frequency_set
from .prepare import distinct_counts, numeric_quasi_identifiers, table_roles
from .release import AnonymizedRelease

__all__ = ["KAnonymizer", "AccessControlAnonymizer", "KmAnonymizer"]


def _figures(res: AnonymizationResult, keep_suppressed: bool) -> dict[str, Any]:
    """Records, privacy and utility figures of a release from the anonymiser's decision."""
    s = res.summary()
    utility = {"discernibility": s["discernibility"], "gcp": s["gcp"], "C_avg (mean class size / k)": s["avg_class_size"]}
    if s.get("precision") is not None:
        utility["precision"] = s["precision"]
    if s.get("node"):
        utility["node"] = s["node"]
    return {
        "records": {
            "input": s["n_records"],
            "released": s["n_records"] - (0 if keep_suppressed else s["n_suppressed"]),
            "suppressed": s["n_suppressed"],
        },
        "privacy": {
            "k achieved": s["min_class_size"],
            "classes": s["n_classes"],
            "max risk": s["risk_max"],
            "average risk": s["risk_average"],
            "records at risk": s["records_at_risk"],
        },
        "utility": utility,
    }


def _diversity(l: float | None, kind: str, c: float | None, t: float | None = None, t_kind: str = "auto") -> dict[str, Any]:
    """The l-diversity and t-closeness parameters of a release (none without l / t; ``t_kind``
    is resolved to ordered or equal once the sensitive column is known)."""
    from ._diversity import validate_closeness

    t, t_kind = validate_closeness(t, t_kind)
    out: dict[str, Any] = {}
    if l is not None:
        out.update({"l": l, "l_kind": kind, **({"c": c} if c is not None else {})})
    if t is not None:
        out.update({"t": t, "t_kind": t_kind})
    return out


def _resolved_t(params: dict[str, Any], t_kind: str | None) -> None:
    """Record the distance t-closeness was decided with (``auto`` resolved by the anonymiser)."""
    if params.get("t") is not None and t_kind:
        params["t_kind"] = t_kind


def _hierarchy_names(hierarchies: Mapping[str, Hierarchy]) -> dict[str, str]:
    return {a: f"{h.kind}, {h.levels} levels" for a, h in sorted(hierarchies.items())}


def _merged(base: dict[str, Any], more: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with the sections of ``more`` added (a section's figures merged, not replaced)."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in base.items()}
    for section, values in more.items():
        if isinstance(values, Mapping) and isinstance(out.get(section), dict):
            out[section].update(values)
        else:
            out[section] = values
    return out


def _column_names(value: Any) -> tuple[str, ...]:
    """Column names given as one name, a comma-separated string or a sequence (None: none)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(c.strip() for c in value.split(",") if c.strip())
    return tuple(str(c) for c in value)


def _aligned_people(people: Any, table: Any) -> Any:
    """The input's persons cut as the released table's partitions (a table published in one
    partition gets the persons of every input partition in one block)."""
    if people is None:
        return None
    n = getattr(table, "npartitions", 1)
    if n == len(people.blocks):
        return people
    if n == 1:
        import dask

        from ..data.persons import People

        block = dask.delayed(np.concatenate, pure=True)(people.blocks)
        return People([block], people.kind, people.columns, people.bound)
    raise InvalidParameter(f"the released table has {n} partitions for {len(people.blocks)} of the input")


class _TableAnonymizer(Estimator):
    """What the relational anonymizers share: roles, floors, input conversion, the release."""

    def _prepare(
        self, X: Any, parameters: dict[str, Any], method: str, *, client: Any = None, progress: bool = False
    ) -> dict[str, Any]:
        """Roles, overrides and the input, checked before the heavy work; the input's content
        digest (one pass: it names the input in the release's identity, which orders the rows)."""
        from ..data.digest import content_digest

        ddf = as_dask(X)
        source = source_of(X)
        where = source.url if source is not None else "the table"
        person = _column_names(getattr(self, "person", None))
        unknown = [c for c in person if c not in ddf.columns]
        if unknown:
            raise InvalidParameter(
                f"person column(s) {unknown} are not in {where} (columns: {list(ddf.columns)})",
                parameter="person",
                fix="`person` COL of the table",
            )
        declared = _column_names(self.identifiers)
        roles = table_roles(
            list(ddf.columns),
            quasi_identifiers=self.quasi_identifiers,
            # the person column is never published: an identifier
            identifiers=[*declared, *[c for c in person if c not in declared]],
            sensitive=self.sensitive,
            insensitive=self.insensitive,
            allow_unique=self.allow_unique,
            source=where,
        )
        sens = list(roles.sensitive)
        if (self.l is not None or self.t is not None) and len(sens) != 1:
            what = "l-diversity" if self.l is not None else "t-closeness"
            raise InvalidParameter(
                f"{what} needs exactly one sensitive column, got {sens}", python="sensitive='COL'", fix="`sensitive` COL"
            )
        counted = sens[0] if len(sens) == 1 else None
        parameters.update(qi=list(roles.quasi_identifiers), sensitive=counted)
        overrides = AnonymizedRelease.overrides_of(method, parameters, self.allow_weak)
        hier = dict(self.hierarchies or {})
        digest = content_digest(ddf, client=client, progress=progress)
        from ..data.persons import frame_people

        return {
            # whose each record is: the person column(s), else the identifiers, else the record
            "people": frame_people(ddf, person or tuple(roles.identifiers)),
            "ddf": numeric_quasi_identifiers(ddf, hier, source=where),
            "source": source,
            "roles": roles,
            "digest": digest,
            "sensitive": counted,
            "keep": [c for c in sens if c != counted] + list(roles.insensitive),
            "hierarchies": hier,
            "overrides": overrides,
            "name": collection_name(ddf),
            "schema": {str(c): str(t) for c, t in ddf.dtypes.items()},
        }

    def _frequency(self, prep: dict[str, Any], *, required: bool, client: Any, progress: bool) -> Any:
        """The frequency set (one pass), then the "nearly unique" test of the QI and insensitive
        columns; QI distinct counts come from the frequency set's domains."""
        ddf, roles = prep["ddf"], prep["roles"]
        fs = frequency_set(
            ddf,
            list(roles.quasi_identifiers),
            sensitive=prep["sensitive"],
            hierarchies=prep["hierarchies"],
            require_hierarchies=required,
            client=client,
            progress=progress,
        )
        distinct = {d.name: len(d.values) for d in fs.domains}
        if roles.insensitive:
            more, _ = distinct_counts(ddf, list(roles.insensitive), client=client, progress=progress)
            distinct.update(more)
        roles.check_unique(distinct, fs.n_records)
        prep["rows"] = fs.n_records
        return fs

    def _fitted(self, prep: dict[str, Any], parameters: dict[str, Any], method: str, frequency: Any = None) -> None:
        self.roles_ = prep["roles"]
        self.overrides_ = prep["overrides"]
        self.parameters_ = parameters
        self._resolve_key()
        self._fit_info = {
            "name": prep["name"],
            "source": prep["source"],
            "method": method,
            "input_info": {"rows": prep["rows"], "schema": prep["schema"]},
            "hierarchies": prep["hierarchies"],
            "frequency": frequency,
            "digest": prep["digest"],
            "people": prep["people"],
        }

    def _release(self, res: AnonymizationResult, figures: Mapping[str, Any] | None = None) -> AnonymizedRelease:
        check_is_fitted(self, "result_")
        info = self._fit_info
        return AnonymizedRelease(
            res.table,
            method=info["method"],
            parameters=self.parameters_,
            figures=_merged(_figures(res, bool(self.parameters_.get("keep_suppressed"))), figures or {}),
            roles=self.roles_,
            key=self.key_,
            source=info["source"],
            input_info=info["input_info"],
            overrides=self.overrides_,
            input_digest=info["digest"],
            partition_rows=res.partition_rows,
            ledger=self.ledger,  # where write() records it (docs/ledger.md)
            hierarchies=info.get("hierarchies"),  # the report reads released hierarchy nodes with them
            # the report's figures of this input need no pass over it
            input_frequency=(info["name"], info["frequency"]) if info.get("frequency") is not None else None,
            people=_aligned_people(info.get("people"), res.table),
        )


class KAnonymizer(_TableAnonymizer):
    """k-anonymise (and l-diversify) a table: every column has a role, identifiers are dropped,
    quasi-identifiers generalised, sensitive and insensitive columns published as is.

    Parameters
    ----------
    quasi_identifiers : str or sequence of str
        Generalised columns.
    k : int
        Minimum class size (floor: k >= 2).
    sensitive, identifiers, insensitive : str or sequence of str
        The other roles; every column of the table needs one.
    allow_unique : sequence of str
        QI or insensitive columns accepted although nearly unique per record.
    l, kind, c : optional
        l-diversity of the (single) sensitive column: ``kind`` distinct, entropy or recursive
        (floor: l >= 2).
    t : float, optional
        t-closeness of the (single) sensitive column: every class's distribution within Earth
        Mover's Distance t of the released records' (floor: t <= 0.5).
    t_kind : {"auto", "ordered", "equal"}
        The EMD's ground distance (``auto``: ordered for a numeric sensitive column, else equal).
    max_suppression : float
        Fraction of records that may be suppressed (lattice, Datafly).
    method : {"lattice", "datafly", "mondrian", "cluster"}
    hierarchies : mapping attr -> Hierarchy
        Generalisation hierarchies (one per QI for lattice and Datafly). A QI with an interval
        hierarchy is read as numbers.
    keep_suppressed : bool
        Publish suppressed records (every QI ``'*'``) instead of leaving them out.
    allow_weak : bool, str or sequence of str
        Accept parameters below the privacy floors (``True``: all; or the floor names, e.g.
        ``["k >= 2"]``); recorded in the manifest.
    key : Key, int or bytes, optional
        Secret key of the release's row order (never shown; a fresh one drawn at :meth:`fit`
        when None: ``key_``).
    ledger : "default", Ledger, str or None
        Where ``release.write`` records the release and composes it with the earlier releases of
        its input (docs/ledger.md): ``"default"`` the user's ledger, a
        :class:`~ppdm_dask.ledger.Ledger` or its location, None to opt out (said in the manifest).
    person : str or sequence of str, optional
        The column(s) naming whose each record is (never published: an identifier). Default: the
        identifier columns; without any, each record is its own person. The ledger composes the
        release with every earlier release that holds the same people (docs/ledger.md#the-person).
    consistent : bool
        Anonymise consistently with the earlier table releases in the ledger that hold the same
        people (a refreshed extract): their intersection classes keep at least k people and their
        sensitive values stay diverse, at the cost of suppressing whom that cannot hold for
        (:mod:`.consistent`); the figures compare it with a fresh anonymisation.

    Attributes
    ----------
    result_ : AnonymizationResult
    report_ : dict
        The anonymiser's figures (discernibility, classes, risk, search statistics ...).
    roles_ : Roles
    overrides_ : tuple of str
    """

    def __init__(
        self,
        quasi_identifiers: Any,
        *,
        k: int,
        sensitive: Any = None,
        identifiers: Any = (),
        insensitive: Any = (),
        allow_unique: Any = (),
        l: float | None = None,
        kind: str = "distinct",
        c: float | None = None,
        max_suppression: float = 0.0,
        method: str = "lattice",
        hierarchies: Mapping[str, Hierarchy] | None = None,
        keep_suppressed: bool = False,
        allow_weak: bool | str | Iterable[str] = False,
        key: Any = None,
        t: float | None = None,
        t_kind: str = "auto",
        ledger: Any = "default",
        person: Any = None,
        consistent: bool = False,
    ) -> None:
        self.quasi_identifiers = quasi_identifiers
        self.k = k
        self.sensitive = sensitive
        self.identifiers = identifiers
        self.insensitive = insensitive
        self.allow_unique = allow_unique
        self.l = l
        self.kind = kind
        self.c = c
        self.t = t
        self.t_kind = t_kind
        self.max_suppression = max_suppression
        self.method = method
        self.hierarchies = hierarchies
        self.keep_suppressed = keep_suppressed
        self.allow_weak = allow_weak
        self.key = key
        self.ledger = ledger
        self.person = person
        self.consistent = consistent

    _parameter_constraints = {"k": COUNT_CONSTRAINTS["k"], "method": [Options(METHODS)]}

    def fit(self, X: Any, *, client: Any = None, progress: bool = False) -> KAnonymizer:
        """Check roles and floors, anonymise ``X`` (pandas or dask DataFrame); returns self."""
        self.validate_params()
        params = {
            "k": self.k,
            **_diversity(self.l, self.kind, self.c, self.t, self.t_kind),
            "max_suppression": float(self.max_suppression),
            "keep_suppressed": bool(self.keep_suppressed),
        }
        prep = self._prepare(X, params, self.method, client=client, progress=progress)
        named = _hierarchy_names({a: h for a, h in prep["hierarchies"].items() if a in prep["roles"].quasi_identifiers})
        if named:
            params["hierarchies"] = named
        fs = None
        if self.method != "cluster":
            fs = self._frequency(prep, required=self.method in ("lattice", "datafly"), client=client, progress=progress)
        else:
            roles = prep["roles"]
            distinct, prep["rows"] = distinct_counts(
                prep["ddf"], [*roles.quasi_identifiers, *roles.insensitive], client=client, progress=progress
            )
            roles.check_unique(distinct, prep["rows"])
        res = anonymize(
            prep["ddf"],
            list(prep["roles"].quasi_identifiers),
            k=self.k,
            sensitive=prep["sensitive"],
            hierarchies=prep["hierarchies"],
            l=self.l,
            kind=self.kind,
            c=self.c,
            max_suppression=self.max_suppression,
            method=self.method,
            keep=prep["keep"],
            client=client,
            progress=progress,
            frequency=fs,
            t=self.t,
            t_kind=self.t_kind,
        )
        _resolved_t(params, res.t_kind)
        self.consistent_ = None
        if self.consistent:
            res = self._consistent(prep, res, fs, params, client=client, progress=progress)
        self.result_ = res
        self.report_ = res.summary()
        if self.consistent_ is not None:
            self.report_["consistent"] = self.consistent_
        self._fitted(prep, params, self.method, fs)
        return self

    def _consistent(
        self, prep: dict[str, Any], fresh: AnonymizationResult, fs: Any, params: dict[str, Any], *, client: Any, progress: bool
    ) -> AnonymizationResult:
        """The consistent release of the extract (:mod:`.consistent`), its figures beside those of
        the fresh anonymisation ``fresh`` in :attr:`consistent_`."""
        from ..ledger.compose import resolve
        from .consistent import consistent_anonymize

        if self.t is not None:
            raise InvalidParameter("a consistent release does not support t-closeness", fix="`consistent` without `t`")
        ledger = resolve(self.ledger)
        if ledger is None:
            raise InvalidParameter(
                "a consistent release is made against the earlier releases in the ledger: give a ledger",
                fix="`consistent` with a `ledger`",
            )
        if fs is None:
            fs = self._frequency(prep, required=False, client=client, progress=progress)
        res, info = consistent_anonymize(
            prep["ddf"],
            prep["people"],
            qi=list(prep["roles"].quasi_identifiers),
            k=self.k,
            sensitive=prep["sensitive"],
            hierarchies=prep["hierarchies"],
            l=self.l,
            kind=self.kind,
            c=self.c,
            method=self.method,
            keep=prep["keep"],
            fs=fs,
            ledger=ledger,
            client=client,
            progress=progress,
        )
        params["consistent"] = True

        def utility(r: AnonymizationResult) -> dict[str, Any]:
            return {
                "suppressed": int(r.n_suppressed),
                "suppressed_share": r.n_suppressed / r.n_records if r.n_records else 0.0,
                "gcp": r.gcp,
                "classes": int(r.class_sizes.size),
                "ncp": dict(r.ncp_per_attribute),
            }

        self.consistent_ = {**info, "consistent": utility(res), "fresh": utility(fresh)}
        return res

    def release(self, *, client: Any = None, progress: bool = False) -> AnonymizedRelease:
        """The release of the fitted table."""
        check_is_fitted(self, "result_")
        extra = None
        info = getattr(self, "consistent_", None)
        if info is not None:
            extra = {
                "utility": {
                    "fresh anonymisation: suppressed": info["fresh"]["suppressed"],
                    "fresh anonymisation: gcp": info["fresh"]["gcp"],
                    "consistent: shared people suppressed": info["shared_people_suppressed"],
                    "consistent: new records suppressed": info["new_records_suppressed"],
                },
                "privacy": {"consistent with earlier releases": len(info["earlier_releases"])},
            }
        return self._release(self.result_, extra)


class AccessControlAnonymizer(_TableAnonymizer):
    """Accuracy-constrained access control (Pervaiz et al., TKDE 2014): k-anonymise (and
    l-diversify) a table with Mondrian cuts chosen to meet the imprecision bounds of a workload
    of role permissions. Roles, floors and the release as :class:`KAnonymizer`.

    Parameters
    ----------
    permissions : list of dict, ``{"permissions": [...]}``, or Permission objects
        ``{"role", "bound", "where": {attr: [lo, hi] | value | [values]}, "name"}``.
    quasi_identifiers, k, sensitive, identifiers, insensitive, allow_unique, l, kind, c, t, t_kind,
    hierarchies, allow_weak, key, ledger, person
        As :class:`KAnonymizer`.

    Attributes
    ----------
    result_ : AccessControlResult
    report_ : dict
        The release figures plus ``permission_report`` / ``role_report`` (imprecision and
        whether each bound holds) and the same for plain Mondrian (``mondrian_*``).
    """

    def __init__(
        self,
        permissions: Any,
        quasi_identifiers: Any,
        *,
        k: int,
        sensitive: Any = None,
        identifiers: Any = (),
        insensitive: Any = (),
        allow_unique: Any = (),
        l: float | None = None,
        kind: str = "distinct",
        c: float | None = None,
        hierarchies: Mapping[str, Hierarchy] | None = None,
        allow_weak: bool | str | Iterable[str] = False,
        key: Any = None,
        t: float | None = None,
        t_kind: str = "auto",
        ledger: Any = "default",
        person: Any = None,
    ) -> None:
        self.permissions = permissions
        self.quasi_identifiers = quasi_identifiers
        self.k = k
        self.sensitive = sensitive
        self.identifiers = identifiers
        self.insensitive = insensitive
        self.allow_unique = allow_unique
        self.l = l
        self.kind = kind
        self.c = c
        self.t = t
        self.t_kind = t_kind
        self.hierarchies = hierarchies
        self.allow_weak = allow_weak
        self.key = key
        self.ledger = ledger
        self.person = person

    def fit(self, X: Any, *, client: Any = None, progress: bool = False) -> AccessControlAnonymizer:
        """Check roles and floors, anonymise ``X`` for the permissions; returns self."""
        params = {
            "k": self.k,
            **_diversity(self.l, self.kind, self.c, self.t, self.t_kind),
            "max_suppression": 0.0,
            "keep_suppressed": False,
        }
        prep = self._prepare(X, params, "access-control", client=client, progress=progress)
        fs = self._frequency(prep, required=False, client=client, progress=progress)
        res = anonymize_for_permissions(
            prep["ddf"],
            list(prep["roles"].quasi_identifiers),
            self.permissions,
            k=self.k,
            sensitive=prep["sensitive"],
            l=self.l,
            kind=self.kind,
            c=self.c,
            hierarchies=prep["hierarchies"],
            keep=prep["keep"],
            client=client,
            progress=progress,
            frequency=fs,
            t=self.t,
            t_kind=self.t_kind,
        )
        _resolved_t(params, res.release.t_kind)
        params["permissions"] = [p.name or p.role for p in res.permissions]
        self.result_ = res
        self.report_ = {
            **res.release.summary(),
            "permission_report": res.report.to_pandas().to_dict(orient="records"),
            "role_report": res.report.roles_to_pandas().to_dict(orient="records"),
            "mondrian_permission_report": res.baseline.to_pandas().to_dict(orient="records"),
            "mondrian_role_report": res.baseline.roles_to_pandas().to_dict(orient="records"),
        }
        self._fitted(prep, params, "access-control", fs)
        return self

    def release(self, *, client: Any = None, progress: bool = False) -> AnonymizedRelease:
        """The release of the fitted table."""
        from .access_control import access_figures

        check_is_fitted(self, "result_")
        # the access figures are the owner's: the internal report
        return self._release(self.result_.release, {"access": access_figures(self.result_.report, self.result_.baseline)})


class KmAnonymizer(Estimator):
    """k^m-anonymise transactions by global item generalisation (Terrovitis et al.).

    Parameters
    ----------
    hierarchy : Hierarchy or str, optional
        Categorical item hierarchy (leaves = item labels), or the URL of an ARX hierarchy file.
    k : int
        Every itemset of at most ``m`` items is supported 0 or >= k times (floor: k >= 2).
    m : int
        Adversary knowledge: number of items known.
    method : {"AA", "DA"}
    fan_out : int, optional
        Instead of ``hierarchy``: a balanced hierarchy over the sorted item labels.
    allow_weak, key, ledger
        As :class:`KAnonymizer`.

    Attributes
    ----------
    result_ : KmResult
    report_ : dict
    overrides_ : tuple of str
    """

    def __init__(
        self,
        hierarchy: Hierarchy | str | None = None,
        *,
        k: int,
        m: int = 2,
        method: str = "AA",
        fan_out: int | None = None,
        allow_weak: bool | str | Iterable[str] = False,
        key: Any = None,
        ledger: Any = "default",
    ) -> None:
        self.hierarchy = hierarchy
        self.k = k
        self.m = m
        self.method = method
        self.fan_out = fan_out
        self.allow_weak = allow_weak
        self.key = key
        self.ledger = ledger

    _parameter_constraints = COUNT_CONSTRAINTS

    def fit(self, X: Any, *, client: Any = None, progress: bool = False) -> KmAnonymizer:
        """Check the floors, then k^m-anonymise ``X`` (a TransactionArray or lists of items)."""
        from .km import as_transactions, km_anonymize
        from .km_release import KmRelease

        self.validate_params()
        if (self.hierarchy is None) == (self.fan_out is None):
            raise InvalidParameter("give exactly one of hierarchy and fan_out", fix="`hierarchy` FILE or `fan_out` F")
        method = str(self.method).upper()
        params = {"k": self.k, "m": self.m}
        overrides = KmRelease.overrides_of(method, params, self.allow_weak)
        tx = as_transactions(X)
        if self.fan_out is not None:
            hier = Hierarchy.balanced(tx.n_items, self.fan_out, labels=tx.vocabulary.labels, name="items")
        elif isinstance(self.hierarchy, str):
            hier = Hierarchy.from_csv(self.hierarchy, name="items")
        else:
            hier = self.hierarchy
        # what the hierarchy is, never where it came from: a file name or a hierarchy's name is
        # the owner's, and a balanced hierarchy's depth follows from the input's item count
        params["hierarchy"] = f"balanced, fan-out {self.fan_out}" if self.fan_out is not None else f"given, {hier.levels} levels"
        from ..data.digest import content_digest
        from ..data.persons import transaction_people

        digest = content_digest(tx, client=client, progress=progress)  # names the input in the release's identity
        res = km_anonymize(tx, hier, self.k, self.m, method=method, client=client, progress=progress)
        self.result_ = res
        self.report_ = res.summary()
        self.overrides_ = overrides
        self._resolve_key()
        self._fit_info = {
            "name": collection_name(tx),
            "source": source_of(X),
            "parameters": params,
            "input_info": {"rows": tx.n_transactions, "items": tx.n_items},
            "digest": digest,
            "people": transaction_people(tx),
        }
        return self

    def release(self, *, client: Any = None, progress: bool = False) -> Any:
        """The :class:`~ppdm_dask.anonymity.km_release.KmRelease` of the fitted transactions."""
        from .km_release import KmRelease

        check_is_fitted(self, "result_")
        info, res = self._fit_info, self.result_
        figures = {
            "records": {
                "transactions": res.transactions.n_transactions,
                "input items": info["input_info"]["items"],
                "published items": res.transactions.n_items,
            },
            "privacy": {},
            "utility": {
                "ncp": res.ncp,
                "generalised items": res.n_generalized_items,
                "cut size": len(res.cut),
                "cut": list(res.cut),
            },
        }
        return KmRelease(
            res.transactions,
            method=res.method,
            parameters=info["parameters"],
            figures=figures,
            key=self.key_,
            source=info["source"],
            input_info=info["input_info"],
            overrides=self.overrides_,
            input_digest=info["digest"],
            ledger=self.ledger,  # where write() records it (docs/ledger.md)
            # the owner's: the report compares itemsets at the generalised level
            item_images=res.item_images,
            people=info.get("people"),
        )
