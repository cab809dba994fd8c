"""Accuracy-constrained privacy-preserving access control (docs/anonymity.md#accuracy-constrained-access-control).

After Pervaiz, Aref, Ghafoor & Prabhu, "Accuracy-constrained privacy-preserving access control
mechanism for relational data", IEEE TKDE 26(4), 2014. A role is granted *permissions*: a
conjunctive selection predicate Q over quasi-identifiers with an imprecision bound B_Q. The
anonymised relation is a partition of the table into classes with regions; a query returns every
tuple of every class whose region meets Q on every attribute (overlap semantics), so

    imprec(Q) = |Q_T*| - |Q_T|,  |Q_T*| = sum of |E| over classes E whose region meets Q,

and the permission is satisfied iff imprec(Q) <= B_Q. Everything works on the frequency set
(distinct QI tuples ``X`` with record counts ``weights``); categorical values are integer codes
and a :class:`QISchema` maps attribute names and labels to columns and codes.

:class:`AccuracyConstrainedAnonymizer` partitions with the top-down imprecision-driven Mondrian
variant (``mondrian_partition(split="imprecision")``); :func:`select_anonymization` picks, among
candidate partitions, the one satisfying most permissions (ties: least total imprecision).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import pandas as pd

from ..constraints import check
from ..errors import InvalidParameter, PrivacyViolation
from ._diversity import COUNT_CONSTRAINTS, diverse_mask, validate_diversity
from .mondrian import Regions, _check_categorical, as_2d_float, as_counts, class_regions, mondrian_partition

__all__ = [
    "permission_entries",
    "QISchema",
    "Predicate",
    "Query",
    "Permission",
    "PermissionResult",
    "RoleSummary",
    "AccessReport",
    "Selection",
    "parse_query",
    "parse_permissions",
    "query_mask",
    "query_count",
    "overlapping_classes",
    "imprecision",
    "evaluate_permissions",
    "access_figures",
    "access_report_items",
    "select_anonymization",
    "AccuracyConstrainedAnonymizer",
]


# ----------------------------------------------------------------------------- schema
@dataclass(frozen=True)
class QISchema:
    """Names and value labels of the quasi-identifier columns of ``X``.

    Parameters
    ----------
    columns : sequence of str
        Column names, in the order of the columns of X.
    categorical : sequence of bool
        Which columns hold categorical codes.
    categories : mapping str -> sequence, optional
        For a categorical column, its labels in code order (label ``categories[c][i]`` has code
        i). A categorical column without an entry is addressed by its codes directly.
    """

    columns: tuple[str, ...]
    categorical: tuple[bool, ...]
    categories: Mapping[str, tuple] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cols = tuple(str(c) for c in self.columns)
        cat = tuple(bool(b) for b in self.categorical)
        if len(cols) != len(cat) or not cols:
            raise InvalidParameter("columns and categorical must be non-empty and of equal length")
        if len(set(cols)) != len(cols):
            raise InvalidParameter(f"duplicate column names: {cols}")
        cats = {}
        for name, labels in dict(self.categories).items():
            if name not in cols:
                raise InvalidParameter(f"categories given for unknown column {name!r}")
            if not cat[cols.index(name)]:
                raise InvalidParameter(f"categories given for numeric column {name!r}")
            labels = tuple(labels)
            if len(set(labels)) != len(labels):
                raise InvalidParameter(f"duplicate labels in the categories of {name!r}")
            cats[name] = labels
        object.__setattr__(self, "columns", cols)
        object.__setattr__(self, "categorical", cat)
        object.__setattr__(self, "categories", cats)

    @classmethod
    def default(cls, categorical: Sequence[bool]) -> QISchema:
        """Columns named ``"0"``, ``"1"``, ... addressed by index or name; values are codes."""
        return cls(tuple(str(i) for i in range(len(categorical))), tuple(categorical))

    def index(self, attribute: str | int) -> int:
        """Column index of ``attribute`` (a name or an index)."""
        if isinstance(attribute, (int, np.integer)) and not isinstance(attribute, bool):
            if 0 <= attribute < len(self.columns):
                return int(attribute)
        elif isinstance(attribute, str) and attribute in self.columns:
            return self.columns.index(attribute)
        raise InvalidParameter(f"unknown attribute {attribute!r}; the quasi-identifiers are {list(self.columns)}")

    def codes(self, j: int, values: Sequence[Any]) -> np.ndarray:
        """Codes of categorical column j for ``values`` (labels, or codes without categories)."""
        name = self.columns[j]
        labels = self.categories.get(name)
        if labels is None:
            out = []
            for v in values:
                if isinstance(v, bool) or not isinstance(v, (int, np.integer, float, np.floating)) or v != int(v) or v < 0:
                    raise InvalidParameter(f"attribute {name!r} has no category labels: values must be codes >= 0, got {v!r}")
                out.append(int(v))
            return np.asarray(out, dtype=np.float64)
        pos = {str(lab): i for i, lab in enumerate(labels)}
        unknown = [v for v in values if str(v) not in pos]
        if unknown:
            raise InvalidParameter(f"unknown value(s) {unknown[:10]} for attribute {name!r}")
        return np.asarray([pos[str(v)] for v in values], dtype=np.float64)


# ----------------------------------------------------------------------------- queries
@dataclass(frozen=True)
class Predicate:
    """One conjunct: ``low <= attribute <= high`` (numeric) or ``attribute in values`` (categorical).

    Give either ``low`` and ``high`` (use ``-inf``/``inf`` for an open end) or ``values``.
    """

    attribute: str | int
    low: float | None = None
    high: float | None = None
    values: tuple | None = None

    def __post_init__(self) -> None:
        if self.values is not None:
            if self.low is not None or self.high is not None:
                raise InvalidParameter(f"predicate on {self.attribute!r}: give a range or a value set, not both")
            vals = tuple(dict.fromkeys(self.values))  # de-duplicated, order kept
            if not vals:
                raise InvalidParameter(f"predicate on {self.attribute!r}: empty value set")
            object.__setattr__(self, "values", vals)
            return
        if self.low is None or self.high is None:
            raise InvalidParameter(f"predicate on {self.attribute!r}: give low and high, or values")
        try:
            lo, hi = float(self.low), float(self.high)
        except (TypeError, ValueError):
            raise InvalidParameter(
                f"predicate on {self.attribute!r}: bounds must be numbers, got {self.low!r}, {self.high!r}"
            ) from None
        if math.isnan(lo) or math.isnan(hi):
            raise InvalidParameter(f"predicate on {self.attribute!r}: NaN bound")
        if lo > hi:
            raise InvalidParameter(f"predicate on {self.attribute!r}: low {lo} > high {hi}")
        object.__setattr__(self, "low", lo)
        object.__setattr__(self, "high", hi)

    @property
    def is_range(self) -> bool:
        return self.values is None


@dataclass(frozen=True)
class Query:
    """A conjunction of predicates on distinct attributes; unconstrained attributes are omitted."""

    predicates: tuple[Predicate, ...] = ()

    def __post_init__(self) -> None:
        preds = tuple(self.predicates)
        attrs = [p.attribute for p in preds]
        if len(set(attrs)) != len(attrs):
            raise InvalidParameter(f"a query constrains each attribute at most once, got {attrs}")
        object.__setattr__(self, "predicates", preds)

    def compile(self, schema: QISchema) -> dict[int, Any]:
        """The query in X space: ``{column: (lo, hi)}`` / ``{column: codes}``."""
        out: dict[int, Any] = {}
        for p in self.predicates:
            j = schema.index(p.attribute)
            if j in out:
                raise InvalidParameter(f"attribute {schema.columns[j]!r} is constrained twice")
            if schema.categorical[j]:
                if p.is_range:
                    raise InvalidParameter(f"categorical attribute {schema.columns[j]!r} needs a value set, not a range")
                out[j] = schema.codes(j, p.values)
            else:
                if not p.is_range:
                    raise InvalidParameter(f"numeric attribute {schema.columns[j]!r} needs a range [lo, hi], not a value set")
                out[j] = (p.low, p.high)
        return out


@dataclass(frozen=True)
class Permission:
    """A permission of ``role``: query ``query`` with imprecision bound ``bound`` (records, >= 0)."""

    role: str
    query: Query
    bound: float
    name: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.role, str) or not self.role:
            raise InvalidParameter(f"role must be a non-empty string, got {self.role!r}")
        if not isinstance(self.query, Query):
            raise InvalidParameter(f"query must be a Query, got {type(self.query).__name__}")
        b = self.bound
        if isinstance(b, bool) or not isinstance(b, (int, float, np.integer, np.floating)) or not (math.isfinite(b) and b >= 0):
            raise InvalidParameter(f"imprecision bound must be a finite number >= 0, got {b!r}")


def parse_query(where: Mapping[str, Any], schema: QISchema) -> Query:
    """Query from ``{"age": [25, 30], "state": ["Karnataka"]}``.

    A numeric attribute takes ``[lo, hi]`` (``null``/``None`` for an open end) or a single number;
    a categorical attribute takes a list of labels or a single label.
    """
    if not isinstance(where, Mapping):
        raise InvalidParameter(f"'where' must be a mapping attribute -> condition, got {type(where).__name__}")
    preds = []
    for attr, cond in where.items():
        j = schema.index(attr)
        if schema.categorical[j]:
            vals = list(cond) if isinstance(cond, (list, tuple, set, frozenset)) else [cond]
            numbers = [v for v in vals if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)]
            if numbers and schema.categories.get(schema.columns[j]) is not None:
                # [17, 19] on a text column would silently mean the set {"17", "19"}, not the range 17..19
                raise InvalidParameter(
                    f"attribute {attr!r} is read as text (categorical), so {cond!r} would be a set of labels, not a range; "
                    f"type the column as numbers for a range, or write its labels as strings for a set",
                    fix=f"`dtype` {attr}=int",
                )
            schema.codes(j, vals)  # unknown labels are an error here, not a silent empty match
            preds.append(Predicate(attr, values=tuple(vals)))
        else:
            if isinstance(cond, (list, tuple)):
                if len(cond) != 2:
                    raise InvalidParameter(f"numeric attribute {attr!r} needs [lo, hi], got {cond!r}")
                lo, hi = cond
            else:
                lo = hi = cond
            lo = -math.inf if lo is None else lo
            hi = math.inf if hi is None else hi
            for v in (lo, hi):
                if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                    raise InvalidParameter(f"numeric attribute {attr!r}: bounds must be numbers, got {cond!r}")
            preds.append(Predicate(attr, low=lo, high=hi))
    return Query(tuple(preds))


_PERMISSION_KEYS = {"role", "bound", "where", "name"}


def permission_entries(spec: Any) -> list[Mapping]:
    """The entries of a permission document, checked for shape only (no schema needed): a list
    of mappings with the keys ``role``, ``bound``, ``where`` (and optionally ``name``), or
    ``{"permissions": [...]}``.

    Raises
    ------
    InvalidParameter
        The document or an entry has the wrong shape.
    """
    if isinstance(spec, Mapping):
        if set(spec) != {"permissions"}:
            raise InvalidParameter("a permission file is a list of permissions or {'permissions': [...]}")
        spec = spec["permissions"]
    if not isinstance(spec, (list, tuple)):
        raise InvalidParameter(f"permissions must be a list, got {type(spec).__name__}")
    for i, entry in enumerate(spec):
        if not isinstance(entry, Mapping):
            raise InvalidParameter(f"permission {i} must be a mapping, got {type(entry).__name__}")
        missing = {"role", "bound", "where"} - set(entry)
        extra = set(entry) - _PERMISSION_KEYS
        if missing or extra:
            raise InvalidParameter(f"permission {i}: missing keys {sorted(missing)}, unknown keys {sorted(extra)}")
    return list(spec)


def parse_permissions(spec: Any, schema: QISchema) -> list[Permission]:
    """Permissions from plain dicts (as loaded from JSON/YAML).

    Parameters
    ----------
    spec : list of dict, or dict with key ``"permissions"``
        Each entry ``{"role": str, "bound": number >= 0, "where": {attr: condition}, "name": str}``
        (``name`` optional); conditions as in :func:`parse_query`.
    schema : QISchema

    Returns
    -------
    list of Permission

    Raises
    ------
    InvalidParameter
        Missing or unknown keys, unknown attribute or label, lo > hi, negative bound.
    """
    out = []
    for i, entry in enumerate(permission_entries(spec)):
        try:
            query = parse_query(entry["where"], schema)
            out.append(Permission(entry["role"], query, entry["bound"], entry.get("name")))
        except InvalidParameter as e:
            label = f"permission {i}" + (f" ({entry['name']!r})" if entry.get("name") else "")
            raise InvalidParameter(
                f"{label}: {e.message}", python=e.python, cli=e.cli, parameter=e.parameter, fix=e.fix
            ) from None
    return out


# ----------------------------------------------------------------------------- metrics
def _schema(schema: QISchema | None, categorical: Sequence[bool] | None, q: int) -> QISchema:
    if schema is None:
        if categorical is None:
            raise InvalidParameter("give a schema or categorical")
        return QISchema.default(_check_categorical(categorical, q))
    if len(schema.columns) != q:
        raise InvalidParameter(f"the schema has {len(schema.columns)} columns, X has {q}")
    if categorical is not None and tuple(_check_categorical(categorical, q)) != schema.categorical:
        raise InvalidParameter("categorical disagrees with the schema")
    return schema


def _compiled(query: Query | Mapping[int, Any], schema: QISchema) -> dict[int, Any]:
    if isinstance(query, Query):
        return query.compile(schema)
    if isinstance(query, Permission):
        return query.query.compile(schema)
    raise InvalidParameter(f"expected a Query, got {type(query).__name__}")


def query_mask(X: Any, query: Query, *, schema: QISchema | None = None, categorical: Sequence[bool] | None = None) -> np.ndarray:
    """Which tuples of X satisfy ``query`` (bool, one per row)."""
    X = as_2d_float(X)
    sch = _schema(schema, categorical, X.shape[1])
    m = np.ones(len(X), dtype=bool)
    for j, cons in _compiled(query, sch).items():
        x = X[:, j]
        m &= np.isin(x, cons) if sch.categorical[j] else (x >= cons[0]) & (x <= cons[1])
    return m


def query_count(
    X: Any, weights: Any, query: Query, *, schema: QISchema | None = None, categorical: Sequence[bool] | None = None
) -> int:
    """|Q_T|: number of records satisfying ``query``."""
    m = query_mask(X, query, schema=schema, categorical=categorical)
    w = as_counts(weights, "weights", 1)
    if w.shape != m.shape:
        raise InvalidParameter(f"weights has shape {w.shape}, X has {len(m)} rows")
    return int(w[m].sum())


def overlapping_classes(regions: Regions, query: Query, *, schema: QISchema | None = None) -> np.ndarray:
    """Which classes (rows of ``regions``) have a region meeting ``query`` on every attribute."""
    q = len(regions.categorical)
    sch = _schema(schema, regions.categorical if schema is None else None, q)
    if sch.categorical != regions.categorical:
        raise InvalidParameter("the schema's categorical columns differ from the regions'")
    m = np.ones(regions.n_classes, dtype=bool)
    for j, cons in _compiled(query, sch).items():
        if sch.categorical[j]:
            pres = regions.present[j]
            codes = cons[cons < pres.shape[1]].astype(np.int64)
            m &= pres[:, codes].any(axis=1)
        else:
            m &= (regions.low[:, j] <= cons[1]) & (regions.high[:, j] >= cons[0])
    return m


def _regions(X: np.ndarray, weights: Any, class_id: Any, sch: QISchema, regions: Regions | None) -> Regions:
    if regions is None:
        return class_regions(X, weights, class_id, sch.categorical)
    return regions


def imprecision(
    X: Any,
    weights: Any,
    class_id: Any,
    query: Query,
    *,
    schema: QISchema | None = None,
    categorical: Sequence[bool] | None = None,
    regions: Regions | None = None,
) -> int:
    """imprec(Q) = |Q_T*| - |Q_T| under overlap semantics
    (docs/anonymity.md#accuracy-constrained-access-control).

    Parameters
    ----------
    X, weights : frequency set (tuples and record counts).
    class_id : array_like of int
        Class of each tuple.
    query : Query
    schema, categorical : column description (one of them).
    regions : Regions, optional
        Precomputed ``class_regions(X, weights, class_id, ...)``.
    """
    X = as_2d_float(X)
    sch = _schema(schema, categorical, X.shape[1])
    reg = _regions(X, weights, class_id, sch, regions)
    returned = int(reg.sizes[overlapping_classes(reg, query, schema=sch)].sum())
    return returned - query_count(X, weights, query, schema=sch)


@dataclass(frozen=True)
class PermissionResult:
    """Evaluation of one permission."""

    role: str
    name: str | None
    bound: float
    true_count: int  # |Q_T|
    returned: int  # |Q_T*|
    imprecision: int
    satisfied: bool


@dataclass(frozen=True)
class RoleSummary:
    """Per-role totals."""

    n_satisfied: int
    n_permissions: int
    total_imprecision: int


@dataclass(frozen=True)
class AccessReport:
    """Per-permission and per-role results of a partition against a set of permissions."""

    permissions: tuple[PermissionResult, ...]
    roles: dict[str, RoleSummary]

    @property
    def n_satisfied(self) -> int:
        return sum(p.satisfied for p in self.permissions)

    @property
    def n_permissions(self) -> int:
        return len(self.permissions)

    @property
    def fraction_satisfied(self) -> float:
        return self.n_satisfied / self.n_permissions if self.permissions else 1.0

    @property
    def total_imprecision(self) -> int:
        return sum(p.imprecision for p in self.permissions)

    def to_pandas(self) -> pd.DataFrame:
        """One row per permission."""
        return pd.DataFrame(
            [p.__dict__ for p in self.permissions],
            columns=["role", "name", "bound", "true_count", "returned", "imprecision", "satisfied"],
        )

    def roles_to_pandas(self) -> pd.DataFrame:
        """One row per role."""
        return pd.DataFrame(
            [{"role": r, **s.__dict__} for r, s in self.roles.items()],
            columns=["role", "n_satisfied", "n_permissions", "total_imprecision"],
        )


def evaluate_permissions(
    X: Any,
    weights: Any,
    class_id: Any,
    permissions: Sequence[Permission],
    *,
    schema: QISchema | None = None,
    categorical: Sequence[bool] | None = None,
    regions: Regions | None = None,
) -> AccessReport:
    """Imprecision and satisfaction of every permission, with per-role totals.

    Returns
    -------
    AccessReport
        Roles appear in order of first appearance in ``permissions``.
    """
    X = as_2d_float(X)
    sch = _schema(schema, categorical, X.shape[1])
    reg = _regions(X, weights, class_id, sch, regions)
    w = as_counts(weights, "weights", 1)
    results = []
    for p in permissions:
        if not isinstance(p, Permission):
            raise InvalidParameter(f"expected Permission objects, got {type(p).__name__}")
        true = query_count(X, w, p.query, schema=sch)
        ret = int(reg.sizes[overlapping_classes(reg, p.query, schema=sch)].sum())
        imp = ret - true
        results.append(PermissionResult(p.role, p.name, float(p.bound), true, ret, imp, bool(imp <= p.bound)))
    roles: dict[str, list[PermissionResult]] = {}
    for r in results:
        roles.setdefault(r.role, []).append(r)
    summary = {
        name: RoleSummary(sum(r.satisfied for r in rs), len(rs), sum(r.imprecision for r in rs)) for name, rs in roles.items()
    }
    return AccessReport(tuple(results), summary)


def access_figures(report: AccessReport, baseline: AccessReport | None = None) -> dict[str, Any]:
    """The imprecision per permission and per role of a release (and of plain Mondrian on the
    same workload), as plain data the release keeps among the owner's figures: the imprecision
    ``|Q_T*| − |Q_T|`` needs the true answers on the original, so it goes into the internal
    report only (never the public manifest)."""
    out: dict[str, Any] = {
        "permissions": report.to_pandas().to_dict(orient="records"),
        "roles": report.roles_to_pandas().to_dict(orient="records"),
    }
    if baseline is not None:
        out["mondrian_permissions"] = baseline.to_pandas().to_dict(orient="records")
        out["mondrian_roles"] = baseline.roles_to_pandas().to_dict(orient="records")
    return out


def access_report_items(fig: Mapping[str, Any]) -> list[Any]:
    """The report items of :func:`access_figures`: a table per permission and per role (with
    plain Mondrian's imprecision beside), and the permissions met."""
    from ..release.figures import Table, Value

    perms, roles = list(fig.get("permissions") or []), list(fig.get("roles") or [])
    base_p = list(fig.get("mondrian_permissions") or [None] * len(perms))
    base_r = {r["role"]: r for r in fig.get("mondrian_roles") or []}
    about: Final = "comparison"  # the true answers |Q_T| are the original's
    met = sum(bool(p["satisfied"]) for p in perms)
    note = "imprecision = records the release returns for the query (every class its region overlaps) − true answer"
    return [
        Value(
            "utility_permissions_met",
            "Permissions whose imprecision bound holds",
            met,
            about=about,
            unit="permissions",
            note=f"{met:,} of {len(perms):,}; " + note,
        ),
        Table(
            "utility_imprecision_per_permission",
            "Imprecision per permission",
            [
                "role",
                "permission",
                "bound",
                "true answer",
                "returned",
                "imprecision",
                "bound holds",
                "imprecision with plain Mondrian",
            ],
            [
                [
                    p["role"],
                    p["name"] or p["role"],
                    p["bound"],
                    int(p["true_count"]),
                    int(p["returned"]),
                    int(p["imprecision"]),
                    "yes" if p["satisfied"] else "no",
                    int(b["imprecision"]) if b else None,
                ]
                for p, b in zip(perms, base_p)
            ],
            about=about,
            note=note,
        ),
        Table(
            "utility_imprecision_per_role",
            "Imprecision per role",
            ["role", "permissions met", "permissions", "total imprecision", "total imprecision with plain Mondrian"],
            [
                [
                    r["role"],
                    int(r["n_satisfied"]),
                    int(r["n_permissions"]),
                    int(r["total_imprecision"]),
                    int(base_r[r["role"]]["total_imprecision"]) if r["role"] in base_r else None,
                ]
                for r in roles
            ],
            about=about,
            note="per role: the permissions whose bound holds and the sum of their imprecision",
        ),
    ]


# ----------------------------------------------------------------------------- selection
@dataclass(frozen=True)
class Selection:
    """Result of :func:`select_anonymization`."""

    key: Any  # index (or mapping key) of the chosen candidate
    class_id: np.ndarray
    report: AccessReport
    reports: dict[Any, AccessReport]  # every candidate's report, in candidate order


def _check_privacy(
    key: Any, w: np.ndarray, cid: np.ndarray, k: int | None, S: np.ndarray | None, l: float | None, kind: str, c: float | None
) -> None:
    _, inv = np.unique(cid, return_inverse=True)
    if k is not None:
        sizes = np.bincount(inv, weights=w)
        if sizes.min(initial=np.inf) < k:
            raise PrivacyViolation(f"candidate {key!r} is not {k}-anonymous (smallest class {int(sizes.min())})")
    if l is not None:
        counts = np.zeros((inv.max(initial=-1) + 1, S.shape[1]), dtype=np.int64)
        np.add.at(counts, inv, S)
        bad = ~diverse_mask(counts, l, kind, c)
        if bad.any():
            raise PrivacyViolation(f"candidate {key!r} is not {kind} {l}-diverse ({int(bad.sum())} classes violate)")


def select_anonymization(
    candidates: Sequence[Any] | Mapping[Any, Any],
    permissions: Sequence[Permission],
    X: Any,
    weights: Any,
    *,
    schema: QISchema | None = None,
    categorical: Sequence[bool] | None = None,
    k: int | None = None,
    sensitive_counts: Any = None,
    l: float | None = None,
    kind: str = "distinct",
    c: float | None = None,
) -> Selection:
    """Choose the candidate partition satisfying most permissions
    (docs/anonymity.md#accuracy-constrained-access-control).

    Ties: least total imprecision, then the first candidate in the given order.

    Parameters
    ----------
    candidates : sequence or mapping of array_like of int
        Class labels of the tuples of X, one array per candidate partition.
    permissions : sequence of Permission
    X, weights : frequency set.
    schema, categorical : column description (one of them).
    k, sensitive_counts, l, kind, c : optional
        When given, every candidate is verified k-anonymous / l-diverse first.

    Raises
    ------
    PrivacyViolation
        A candidate is not k-anonymous or not l-diverse.
    InvalidParameter
        No candidates, or a candidate of the wrong length.
    """
    X = as_2d_float(X)
    sch = _schema(schema, categorical, X.shape[1])
    w = as_counts(weights, "weights", 1)
    if w.shape != (len(X),):
        raise InvalidParameter(f"weights has shape {w.shape}, X has {len(X)} rows")
    items = list(candidates.items()) if isinstance(candidates, Mapping) else list(enumerate(candidates))
    if not items:
        raise InvalidParameter("no candidate partitions")
    if k is not None:
        k = check("k", k, COUNT_CONSTRAINTS["k"])
    l, kind, c = validate_diversity(l, kind, c)
    S = None
    if l is not None:
        if sensitive_counts is None:
            raise InvalidParameter("checking l-diversity needs sensitive_counts")
        S = as_counts(sensitive_counts, "sensitive_counts", 2)
        if S.shape[0] != len(X):
            raise InvalidParameter(f"sensitive_counts has {S.shape[0]} rows, X has {len(X)}")
    reports: dict[Any, AccessReport] = {}
    labels: dict[Any, np.ndarray] = {}
    for key, cand in items:
        cid = as_counts(cand, f"candidate {key!r}", 1)
        if cid.shape != (len(X),):
            raise InvalidParameter(f"candidate {key!r} labels {cid.shape[0]} tuples, X has {len(X)}")
        _check_privacy(key, w, cid, k, S, l, kind, c)
        labels[key] = cid
        reports[key] = evaluate_permissions(X, w, cid, permissions, schema=sch)
    best = min(reports, key=lambda kk: (-reports[kk].n_satisfied, reports[kk].total_imprecision))  # min keeps the first on ties
    return Selection(best, labels[best], reports[best], reports)


# ----------------------------------------------------------------------------- anonymiser
class AccuracyConstrainedAnonymizer:
    """k-anonymous (l-diverse) partition that tries to meet the permissions' imprecision bounds.

    Top-down Mondrian whose cuts are chosen to reduce the imprecision of the permissions'
    queries (median and predicate-boundary candidates, objective documented in
    :class:`ppdm_dask.anonymity.mondrian._ImprecisionCuts`), falling back to median cuts.

    Parameters
    ----------
    k : int
        Minimum class size.
    permissions : sequence of Permission
    l, kind, c : optional
        l-diversity of every class.
    closeness : Closeness, optional
        t-closeness of every class to the whole table (:func:`.mondrian.mondrian_partition`).

    Attributes
    ----------
    class_id_ : ndarray of int64
        Class of each input tuple.
    regions_ : Regions
    report_ : AccessReport
        Per-permission and per-role imprecision / satisfaction.
    schema_ : QISchema
    n_classes_ : int
    """

    def __init__(
        self,
        k: int,
        permissions: Sequence[Permission],
        *,
        l: float | None = None,
        kind: str = "distinct",
        c: float | None = None,
        closeness: Any = None,
    ) -> None:
        self.k = k
        self.permissions = permissions
        self.l = l
        self.kind = kind
        self.c = c
        self.closeness = closeness

    def fit(
        self,
        X: Any,
        weights: Any,
        *,
        categorical: Sequence[bool] | None = None,
        sensitive_counts: Any = None,
        schema: QISchema | None = None,
    ) -> AccuracyConstrainedAnonymizer:
        """Partition the frequency set ``(X, weights)``.

        Parameters
        ----------
        X : array_like (n_tuples, q)
        weights : array_like of int (n_tuples,)
        categorical : sequence of bool, optional
            Needed when ``schema`` is not given.
        sensitive_counts : array_like of int (n_tuples, n_values), optional
            Needed with ``l``.
        schema : QISchema, optional
            Names/labels used by the permissions (default: columns addressed by index, codes).

        Returns
        -------
        self
        """
        X = as_2d_float(X)
        sch = _schema(schema, categorical, X.shape[1])
        perms = list(self.permissions)
        for p in perms:
            if not isinstance(p, Permission):
                raise InvalidParameter(f"expected Permission objects, got {type(p).__name__}")
        queries = [p.query.compile(sch) for p in perms]
        bounds = [float(p.bound) for p in perms]
        self.class_id_ = mondrian_partition(
            X,
            weights,
            self.k,
            categorical=sch.categorical,
            sensitive_counts=sensitive_counts,
            l=self.l,
            kind=self.kind,
            c=self.c,
            closeness=self.closeness,
            split="imprecision",
            queries=queries,
            bounds=bounds,
        )
        self.schema_ = sch
        self.regions_ = class_regions(X, weights, self.class_id_, sch.categorical)
        self.n_classes_ = self.regions_.n_classes
        self.report_ = evaluate_permissions(X, weights, self.class_id_, perms, schema=sch, regions=self.regions_)
        return self

    def fit_predict(self, X: Any, weights: Any, **fit_params: Any) -> np.ndarray:
        """``fit`` and return ``class_id_``."""
        return self.fit(X, weights, **fit_params).class_id_
