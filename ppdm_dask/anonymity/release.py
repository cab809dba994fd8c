"""The release of a k-anonymised (l-diverse) table, and of access-control anonymisation.

:class:`AnonymizedRelease` is what :class:`~ppdm_dask.anonymity.estimators.KAnonymizer` and
:class:`~ppdm_dask.anonymity.estimators.AccessControlAnonymizer` hand back: the released table
(identifiers dropped, quasi-identifiers generalised, sensitive and insensitive columns as they
were), its roles and public parameters. Written by :meth:`Release.write` (keyed row order,
suppressed records left out, verified on the written files before the commit).

Its guarantee is recounted from the released table alone — independently of the algorithm:

* ``identifiers absent`` — no identifier column is in the release;
* ``columns have roles`` — every released column is a quasi-identifier, sensitive or insensitive;
* ``k-anonymity`` — the smallest class over the QIs (suppressed rows left out) is >= k;
* ``l-diversity`` — when l is given, recounted over the sensitive column;
* ``t-closeness`` — when t is given: the largest Earth Mover's Distance of a class's sensitive
  distribution to the released records' is <= t (:func:`.checks.t_closeness_check`);
* ``suppressed records absent`` — no row with every QI ``'*'`` unless ``keep_suppressed``;
* ``row count`` — the rows in the files are the manifest's ``n_records`` (in memory: the
  released plus suppressed rows are the input's, a figure only the owner holds).

Against the original table (``verify(original=...)``, ``ppdm verify --original``; without it
these are listed as not checked, :meth:`AnonymizedRelease.original_only_checks`):

* ``identifier values absent`` — no value of a column of the original that the release does
  not publish (its identifiers among them: the public roles do not name them) appears in any
  released cell (nor as a component of a ``a|b|c`` value set) unless it is also a value of that
  released column in the original (so ids that happen to equal an age do not count);
* ``records`` — released rows + suppressed rows left out = original rows;
* ``sensitive values`` / ``insensitive values`` — the released values of each column published
  as is form a sub-multiset of the original's (equal when nothing was suppressed).

Public files hold nothing about the input beyond the release itself: the manifest has the
released rows (``n_records``), the public parameters and roles, and the class figures recounted
from the written files (:meth:`AnonymizedRelease.public_privacy`); the input's row count, the
suppressed records and the utility figures (computed with the original's domains) are the
owner's (:meth:`Release.summary`, the console, the internal report).

Its report figures (:meth:`AnonymizedRelease.report_figures`): the re-identification risk of the
release (and of the original on its quasi-identifiers) from the class sizes
(:mod:`.risk`), the attribute disclosure of the sensitive column (:mod:`.disclosure`) with the
officer's summary — guarantee, what it protects, what an attacker can still learn, the linkage
and attribute-inference attacks, warnings (:mod:`.threat`) — and with the original the utility —
discernibility, NCP / GCP, the error of a workload of COUNT queries (:mod:`.utility`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import dask
import numpy as np
import pandas as pd

from ..data.hierarchy import as_keys
from ..release import Check, Release, TableRelease
from ..release.base import floor_check
from ..release.figures import About, Figures, Plot, Series, Table, Value, histogram
from .checks import SUPPRESSED, class_counts, k_anonymity_check, l_diversity_check, t_closeness_check

__all__ = ["AnonymizedRelease", "FORMAT_NAME", "anonymity_floors"]

FORMAT_NAME = "ppdm-anonymized"
_COUNT = "count"
#: the largest t accepted without an override (see :func:`anonymity_floors`)
T_FLOOR = 0.5
#: checks that need the original: their names in :meth:`original_only_checks` and in the checks
_IDENTIFIERS_CHECK = "identifier values absent"
_RECORDS_CHECK = "records"


def anonymity_floors(parameters: Mapping[str, Any], overrides: Sequence[str] = ()) -> list[Check]:
    """The privacy floors of k-anonymity parameters: ``k >= 2``; when l is given, ``l >= 2``;
    when t is given, ``t <= 0.5`` (each a :func:`~ppdm_dask.release.base.floor_check`,
    overridden when named in ``overrides``).

    t is the largest distance a class's sensitive distribution may have from the table's; with
    the equal distance it is the largest change of the probability of any value or set of
    values. Beyond 0.5 a class may move an attacker's belief in a value by more than half —
    from a base rate under 50 % to a majority, or from 40 % to 95 % — and the model no longer
    stops the disclosure it is asked for (Li et al. experiment with t = 0.15 - 0.2)."""
    k = parameters.get("k")
    out = [floor_check("k >= 2", k is not None and k >= 2, k, 2, "k-anonymity with k = 1 protects nobody", overrides)]
    l = parameters.get("l")
    if l is not None:
        out.append(floor_check("l >= 2", l >= 2, l, 2, "a class with one sensitive value discloses it", overrides))
    t = parameters.get("t")
    if t is not None:
        out.append(
            floor_check(
                f"t <= {T_FLOOR:g}",
                t <= T_FLOOR,
                t,
                T_FLOOR,
                "a class may move the belief in a sensitive value by more than half",
                overrides,
            )
        )
    return out


def _key_counts(counts: pd.Series) -> pd.Series:
    """Value counts re-keyed by the string form of the values (``39`` and ``"39"`` agree)."""
    if counts is None or not len(counts):
        return pd.Series([], dtype=np.int64)
    keys = as_keys(pd.Series(counts.index.to_numpy(dtype=object)))
    return pd.Series(counts.to_numpy(dtype=np.int64), index=keys).groupby(level=0).sum()


def _tokens(values: Any) -> set[str]:
    """Released cells as strings, and the members of ``a|b|c`` value sets (local recoding)."""
    out: set[str] = set()
    for v in as_keys(pd.Series(np.asarray(list(values), dtype=object))):
        if v is None:
            continue
        out.add(v)
        if "|" in v:
            out.update(v.split("|"))
    return out


def _id_hits(part: pd.DataFrame, columns: Sequence[str], candidates: frozenset[str]) -> pd.DataFrame:
    """Kernel: the values of the identifier ``columns`` of one original partition that are
    among ``candidates`` (the released tokens), one per row of a ``value`` column."""
    hits: set[str] = set()
    for c in columns if candidates else ():
        keys = pd.unique(as_keys(part[c]))
        hits.update(k for k in keys if k is not None and k in candidates)
    return pd.DataFrame({"value": pd.Series(sorted(hits), dtype=object)})


class AnonymizedRelease(TableRelease):
    """A k-anonymous (l-diverse) table with its roles: see the module docstring.

    Parameters are those of :class:`~ppdm_dask.release.Release`; ``parameters`` holds
    ``k``, ``max_suppression``, ``keep_suppressed``, ``qi``, ``sensitive`` and, with
    l-diversity, ``l``, ``l_kind`` (and ``c``), with t-closeness ``t`` and ``t_kind``
    (``ordered`` or ``equal``).
    """

    family: ClassVar[str] = "relational"
    data_format: ClassVar[str] = FORMAT_NAME
    #: the generalisation hierarchies (attr -> Hierarchy), when known: the utility figures read
    #: released hierarchy nodes with them (a written release only names them)
    hierarchies: Mapping[str, Any] | None = None

    #: the release in memory this one was written from (see :meth:`adopt`)
    fitted: AnonymizedRelease | None = None
    #: ``(collection name, frequency set)`` of the input, counted by the anonymizer: the report's
    #: figures of that same input are taken from it instead of new passes over the input
    input_frequency: tuple[str, Any] | None = None

    #: the class figures recounted from the written files by the write-time check (see
    #: :meth:`public_privacy`)
    _recounted: dict[str, Any] | None = None

    def __init__(
        self,
        data: Any,
        *,
        hierarchies: Mapping[str, Any] | None = None,
        input_frequency: tuple[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """As :class:`~ppdm_dask.release.Release`, plus the owner's
        ``hierarchies`` and ``input_frequency`` (see the attributes)."""
        super().__init__(data, **kwargs)
        self.hierarchies = hierarchies
        self.input_frequency = input_frequency

    def _adopt(self, fitted: Release) -> AnonymizedRelease:
        """Take over from the release in memory that was written what the files do not hold:
        the hierarchies (the files only name them), the rows in input order (the classifier
        figure tests each held-out record in the class it was generalised to) and the owner's
        figures (input rows, suppressed records, utility: never in a public file)."""
        if isinstance(fitted, AnonymizedRelease) and fitted.manifest is None:
            self.fitted = fitted
            self.figures = {**self.figures, **fitted.figures}
            if fitted.hierarchies is not None:
                self.hierarchies = fitted.hierarchies
            self.input_frequency = fitted.input_frequency
        return self

    # ------------------------------------------------------------------ published hierarchies
    def _public_hierarchies(self) -> Any:
        """The side file of the hierarchies (:mod:`.public_hierarchies`), None without any."""
        from .public_hierarchies import public_hierarchies_table

        h = {a: x for a, x in (self.hierarchies or {}).items() if a in self.qi}
        return public_hierarchies_table(h, self.qi) if h else None

    def _extra_tables(self) -> dict[str, Any]:
        """``_hierarchies.parquet`` beside the rows: what reading the released labels needs."""
        from .public_hierarchies import HIERARCHIES_FILE

        table = self._public_hierarchies()
        return {**super()._extra_tables(), **({HIERARCHIES_FILE: table} if table is not None else {})}

    def _csv_write(self, fh: Any, blocks: list[Any], compute: Any) -> dict[str, Any]:
        # a CSV release is one file: its published hierarchies go into the sidecar manifest
        layout = super()._csv_write(fh, blocks, compute)
        table = self._public_hierarchies()
        return {**layout, **({"hierarchies": table.to_pydict()} if table is not None else {})}

    @classmethod
    def _open_data(cls, fs: Any, path: str, manifest: Mapping[str, Any], url: str, verify: bool) -> Any:
        from ..data.folder import read_part
        from .public_hierarchies import HIERARCHIES_FILE

        data = super()._open_data(fs, path, manifest, url, verify)
        entry = next((e for e in manifest.get("files", []) if e.get("file") == HIERARCHIES_FILE), None)
        return _WithHierarchies(data, read_part(fs, path, entry, verify=verify, url=url)) if entry else data

    @classmethod
    def _open_csv(cls, fs: Any, path: str, manifest: Mapping[str, Any], url: str) -> Any:
        return _WithHierarchies(super()._open_csv(fs, path, manifest, url), manifest.get("hierarchies"))

    @classmethod
    def _reopen(cls, data: Any, manifest: Mapping[str, Any]) -> AnonymizedRelease:
        from .public_hierarchies import read_public_hierarchies

        table = None
        if isinstance(data, _WithHierarchies):
            data, table = data.data, data.hierarchies
        obj = super()._reopen(data, manifest)
        obj.hierarchies = read_public_hierarchies(table) or None
        return obj

    # ------------------------------------------------------------------ parameters
    @property
    def k(self) -> int:
        return int(self.parameters["k"])

    @property
    def l(self) -> float | None:
        return self.parameters.get("l")

    @property
    def sensitive(self) -> str | None:
        return self.parameters.get("sensitive")

    def _input_rows(self) -> int | None:
        """Rows of the input, known to the estimator only (a written release does not say)."""
        rows = self.input_info.get("rows") if self.manifest is None else None
        return int(rows) if rows is not None else None

    # ------------------------------------------------------------------ family hooks
    def on_recount(self, verdict: Mapping[str, Any] | None) -> None:
        """The write-time check's recount of the classes gives :meth:`public_privacy`."""
        self._recounted = None
        for c in (verdict or {}).get("checks", []):
            if c.get("name") == "k-anonymity" and c.get("stats"):
                self._recounted = dict(c["stats"])

    @classmethod
    def parameter_floors(cls, method: str, parameters: Mapping[str, Any], overrides: Sequence[str] = ()) -> list[Check]:
        return anonymity_floors(parameters, overrides)

    # ------------------------------------------------------------------ ledger hooks
    def ledger_figures(self) -> dict[str, Any]:
        """What the ledger keeps to compose later releases: k and the quasi-identifiers."""
        return {"k": self.k, "quasi_identifiers": list(self.qi)}

    def ledger_columns(self) -> dict[str, str]:
        """Per person: the class label (the set of classes of the person's records) and, with a
        sensitive column, the label of the sensitive value."""
        return {"label": "set", "sens": "set"} if self.sensitive else {"label": "set"}

    def ledger_rows(self, blocks: list[Any]) -> list[Any]:
        """Per record, in the input's order: the 64-bit label of its class (the hash of its
        released quasi-identifier values; 0 when suppressed) and of its sensitive value, one
        task per block (:func:`.composition.table_labels`, :func:`.composition.sensitive_labels`)."""
        from .composition import sensitive_labels, table_labels

        qi, sens = list(self.qi), self.sensitive
        return [dask.delayed(_ledger_values, pure=True)(b, qi, sens, table_labels, sensitive_labels) for b in blocks]

    def ledger_people_extra(self) -> dict[str, Any]:
        """The k and the sensitive column, for the joins of later releases."""
        return {"k": self.k, "sensitive": self.sensitive}

    COMPOSES_WITH: ClassVar[tuple[str, ...]] = ("relational", "km")

    def compose(self, earlier: Sequence[Any], ledger: Any, people: Any = None) -> Any:
        """The intersection of this release's classes with those of the earlier table releases
        that share its input or its people (:func:`.composition.compose_tables`)."""
        from .composition import compose_tables

        return compose_tables(self, earlier, ledger, people)

    def public_privacy(self) -> dict[str, Any]:
        """The class figures of the released table — k achieved, classes, the highest and
        average prosecutor risk — as the write-time check recounted them from the written files
        (suppressed rows left out): anyone holding the release gets the same figures from its
        rows. The algorithm's own figures stay in :meth:`summary`. Empty before the release is
        written with its check; a release read back gives its manifest's."""
        if self.manifest is not None:  # read back: what its manifest published
            return dict((self.manifest.get("summary") or {}).get("privacy") or {})
        st = self._recounted
        if st is None:
            return {}
        n_classes, kept = int(st["n_classes"]), int(st["n_records"]) - int(st["n_suppressed"])
        k_min = int(st["min_class_size"])
        return {
            "k achieved": k_min,
            "classes": n_classes,
            "max risk": 1.0 / k_min if k_min else 0.0,
            "average risk": n_classes / kept if kept else 0.0,
        }

    def original_only_checks(self) -> list[tuple[str, str]]:
        """The properties only the original establishes (listed as not checked without it)."""
        out = [
            (_IDENTIFIERS_CHECK, "the original's columns that are not published"),
            (_RECORDS_CHECK, "the original's row count (released rows + suppressed rows left out)"),
        ]
        published = [str(c) for c in self.data.columns] if self.data is not None else []
        out += sorted(
            {
                (f"{self._role_of(c)} values", "the original's values of the columns published as is")
                for c in published
                if c not in self.qi
            }
        )
        return out

    def guarantee_checks(self, original: Any = None, **compute_kwargs: Any) -> list[Check]:
        data = self.data
        columns = [str(c) for c in data.columns]
        roles = self.roles
        qi = list(self.qi)
        checks: list[Check] = []
        identifiers = list(roles.identifiers) if roles is not None else []
        present = [c for c in identifiers if c in columns]
        checks.append(
            Check(
                "identifiers absent",
                not present,
                len(present),
                0,
                where=", ".join(present) or None,
                detail="identifier columns are never published",
            )
        )
        published = set(roles.published) if roles is not None else set(columns)
        unroled = [c for c in columns if c not in published and c not in present]
        checks.append(
            Check(
                "columns have roles",
                not unroled,
                len(unroled),
                0,
                where=", ".join(unroled) or None,
                detail="every released column is a quasi-identifier, sensitive or insensitive",
            )
        )
        with_t = self.parameters.get("t") is not None
        missing = [c for c in qi if c not in columns] + (
            [self.sensitive] if (self.l is not None or with_t) and self.sensitive not in columns else []
        )
        if missing or not qi:
            checks.append(
                Check(
                    "quasi-identifiers present",
                    False,
                    where=", ".join(missing) or None,
                    detail="the columns the guarantee is counted on are missing",
                )
            )
            return checks
        with_l = self.l is not None
        sens = self.sensitive if (self.sensitive in columns) else None
        counts = class_counts(data, qi, sens, **compute_kwargs)
        checks.append(k_anonymity_check(counts, qi, self.k))
        if with_l:
            checks.append(
                l_diversity_check(counts, qi, sens, self.l, self.parameters.get("l_kind", "distinct"), self.parameters.get("c"))
            )
        if with_t:
            checks.append(t_closeness_check(counts, qi, sens, self.parameters["t"], self.parameters.get("t_kind", "auto")))
        star = np.ones(len(counts), dtype=bool)
        for a in qi:
            star &= counts[a].astype(str).to_numpy() == SUPPRESSED
        n_rows = int(counts[_COUNT].sum()) if len(counts) else 0
        n_star = int(counts.loc[star, _COUNT].sum()) if len(counts) else 0
        written = self.manifest is not None
        if self.keep_suppressed:
            checks.append(Check("suppressed records absent", True, n_star, None, detail="kept on request (keep_suppressed)"))
        elif written:
            checks.append(
                Check(
                    "suppressed records absent",
                    n_star == 0,
                    n_star,
                    0,
                    detail="rows with every quasi-identifier '*' are left out of a release",
                )
            )
        else:  # in memory: the writer leaves them out
            checks.append(Check("suppressed records absent", True, n_star, None, detail="left out when written"))
        expected = self._input_rows()
        if written:  # the files against their manifest (the input's rows are not published)
            listed = self.manifest.get("n_records")
            if listed is not None:
                checks.append(
                    Check(
                        "row count",
                        int(listed) == n_rows,
                        n_rows,
                        int(listed),
                        detail="rows in the files = the manifest's n_records",
                    )
                )
        elif expected is not None:  # in memory, for the owner: suppressed rows are still in
            checks.append(
                Check(
                    "row count",
                    n_rows == expected,
                    n_rows,
                    expected,
                    detail="released rows, suppressed ones included until written = input rows",
                )
            )
        if original is not None:
            checks += self._original_checks(original, counts, qi, sens, n_rows, **compute_kwargs)
        return checks

    # ------------------------------------------------------------------ against the original
    def _original_checks(
        self, original: Any, counts: pd.DataFrame, qi: list[str], sens: str | None, n_total: int, **compute_kwargs: Any
    ) -> list[Check]:
        from ..progress import compute
        from .frequency import as_dask

        orig = as_dask(original)
        roles = self.roles
        data = self.data
        columns = [str(c) for c in data.columns]
        ocols = set(map(str, orig.columns))
        as_is = [c for c in columns if c not in qi]
        # released values of the columns published as is (the sensitive one is in ``counts``)
        lazy_rel = {c: data[c].value_counts(dropna=False) for c in as_is if c != sens}
        rel_counts = dict(zip(lazy_rel, compute(*lazy_rel.values(), **{"progress": False, **compute_kwargs}))) if lazy_rel else {}
        if sens is not None:
            rel_counts[sens] = counts.groupby(sens, observed=True, dropna=False)[_COUNT].sum()
        tokens = {c: _tokens(counts[c].unique()) for c in qi}
        tokens.update({c: _tokens(rel_counts[c].index) for c in as_is})
        # the public roles do not name the identifiers (a release does not publish those columns,
        # nor their names): read back, every column of the original the release does not publish
        # is searched, identifiers among them
        named = [c for c in (roles.identifiers if roles is not None else ()) if c in ocols]
        identifiers = named or sorted(c for c in ocols if c not in set(columns))
        candidates = frozenset(set().union(*tokens.values())) if tokens else frozenset()
        # the released tokens travel once per worker; each partition returns its few matches
        cand = dask.delayed(candidates, pure=True)
        hits = orig.map_partitions(_id_hits, identifiers, cand, meta=pd.DataFrame({"value": pd.Series([], dtype=object)}))
        lazy_orig = {c: orig[c].value_counts(dropna=False) for c in columns if c in ocols}
        got = compute(orig.map_partitions(len).sum(), hits, *lazy_orig.values(), **{"progress": False, **compute_kwargs})
        n_orig, id_hits = int(got[0]), set(got[1]["value"])
        orig_counts = {c: _key_counts(v) for c, v in zip(lazy_orig, got[2:])}

        checks: list[Check] = []
        leaked = {
            c: {t for t in tokens[c] if t in id_hits and t not in orig_counts.get(c, pd.Series([], dtype=np.int64)).index}
            for c in columns
        }
        bad = {c: len(v) for c, v in leaked.items() if v}
        checks.append(
            Check(
                _IDENTIFIERS_CHECK,
                not bad,
                int(sum(bad.values())),
                0,
                where=", ".join(f"column {c!r} ({n})" for c, n in bad.items()) or None,
                detail=f"values of {identifiers} of the original found in the release"
                if bad
                else (
                    f"no value of {identifiers} of the original is in the release"
                    if identifiers
                    else "the original has no column that the release leaves out"
                ),
            )
        )
        checks.append(self._records_check(counts, qi, n_total, n_orig))
        for c in as_is:
            rel = _key_counts(rel_counts[c])
            if c not in ocols:
                checks.append(
                    Check(f"{self._role_of(c)} values", False, where=f"column {c!r}", detail="not a column of the original")
                )
                continue
            base = orig_counts[c].reindex(rel.index, fill_value=0)
            excess = int((rel - base).clip(lower=0).sum())
            checks.append(
                Check(
                    f"{self._role_of(c)} values",
                    excess == 0,
                    excess,
                    0,
                    where=f"column {c!r}",
                    detail="released values not backed by the original (published as is, they must be a sub-multiset)",
                )
            )
        return checks

    def _records_check(self, counts: pd.DataFrame, qi: list[str], n_rows: int, n_orig: int) -> Check:
        """``records``: the released rows against the original's. A written release leaves its
        suppressed records out and does not say how many (a figure of the original): they are
        the original's rows less the released ones, and with the suppressed rows kept ('*')
        they are at most ``max_suppression`` of the original's rows."""
        n_star = int(counts.loc[_star_rows(counts, qi), _COUNT].sum()) if len(counts) else 0
        left_out = self.manifest is not None and not self.keep_suppressed
        dropped = n_orig - n_rows if left_out else 0
        suppressed = max(dropped, 0) + n_star
        limit = int(np.floor(float(self.parameters.get("max_suppression") or 0.0) * n_orig + 1e-9))
        if dropped < 0 or (not left_out and n_rows != n_orig):
            return Check(
                _RECORDS_CHECK,
                False,
                n_rows,
                n_orig,
                detail="released rows"
                + (
                    " (more than the original's)"
                    if dropped < 0
                    else ", suppressed ones included, differ from the rows of the original"
                ),
            )
        return Check(
            _RECORDS_CHECK,
            suppressed <= limit,
            n_rows,
            n_orig,
            where=None if suppressed <= limit else f"{suppressed:,} suppressed records",
            detail=f"released rows + {suppressed:,} suppressed record(s) = rows of the original; at most "
            f"{limit:,} may be suppressed (max_suppression)",
        )

    def _role_of(self, column: str) -> str:
        role = self.roles.of(column) if self.roles is not None else None
        return role if role in ("sensitive", "insensitive") else "published"

    # ------------------------------------------------------------------ report figures
    def report_figures(self, original: Any = None, **compute_kwargs: Any) -> Figures:
        """The risk figures of the release (and, with ``original``, of the original on its
        quasi-identifiers) and, with ``original``, the utility figures.

        Parameters
        ----------
        original : optional
            The original table (pandas / dask DataFrame, or its URL).
        **compute_kwargs
            ``client=``, ``progress=`` for the distributed passes; also ``population=`` (a
            table in the release's coding of the quasi-identifiers, for the journalist and
            marketer risk), ``hierarchies=`` (attr -> Hierarchy, to read released hierarchy
            nodes), ``threshold=`` (of the records at risk, default 0.2), ``storage_options=``
            (to read ``original`` from a URL); ``sampling_fraction=`` or ``population_size=``
            (the population risk) and ``weights=`` (a sampling-weight column of the original, or
            of the release when published): see :class:`.risk.PopulationPlan`.
        """
        from . import risk as R

        pop = {key: compute_kwargs.pop(key, None) for key in ("sampling_fraction", "population_size", "weights")}

        population = compute_kwargs.pop("population", None)
        hierarchies = compute_kwargs.pop("hierarchies", None) or self.hierarchies or {}
        threshold = float(compute_kwargs.pop("threshold", R.THRESHOLD))
        label = compute_kwargs.pop("label", None) or self.sensitive
        opts = compute_kwargs.pop("storage_options", None)
        ckw = {"progress": False, **compute_kwargs}
        if isinstance(original, str):
            original = type(self).read_original(original, storage_options=opts)
        from ..progress import compute
        from .checks import counts_lazy
        from .frequency import as_dask

        qi = list(self.qi)
        # one distributed pass for what does not need the original's domains: the release's rows
        # per QI tuple (and sensitive value), the original's class sizes and value counts (dask expressions; the
        # classifier's delayed counts are computed apart, dask does not mix the two kinds well)
        orig = as_dask(original) if original is not None else None
        fs = self._frequency_of(orig)
        first = self._original_lazy(orig, qi) if orig is not None and fs is None else []
        sens = self._disclosure_column()
        keys = [*qi, sens] if sens else qi
        plan = R.PopulationPlan(as_dask(self.data), orig, qi, fs=fs, **pop)  # its passes join this one
        got, pop_got = plan.split(compute(*counts_lazy(as_dask(self.data), keys), *first, *plan.lazy, **ckw))
        counts, by_value, threat_notes = _split_sensitive(got[0], got[1], qi, sens)
        first_got = got[2:] if fs is None else None
        star = _star_rows(counts, qi)
        kept = counts[~star]
        pop_sizes = None
        if population is not None:
            pop = class_counts(population, qi, **ckw)
            pop_sizes = _lookup_sizes(kept, pop, qi)
        freq = R.size_frequencies(kept[_COUNT].to_numpy(), pop_sizes)
        figs = Figures(
            risk=_risk_items(
                R.risk_summary(freq, threshold), R.size_histogram(freq), threshold, "release", population is not None
            )
        )
        figs = figs + plan.figures(pop_got, kept, self.k, threshold)
        figs = figs + self._threat_figures(by_value, kept, sens, original is not None) + Figures(notes=threat_notes)
        if original is None:
            figs.needs_original.append("the utility figures and the original's risk need the original data")
            return figs
        if self.manifest is not None:  # how many were left out is not published: the original says
            dropped = None
        elif not self.keep_suppressed:  # in memory: measured as it will be written, suppressed rows left out
            dropped, counts = int(counts.loc[star, _COUNT].sum()), counts[~star].reset_index(drop=True)
        else:
            dropped = 0
        figs = figs + self._original_figures(orig, first_got, counts, qi, dropped, hierarchies, threshold, ckw, fs)
        figs = figs + self._access_figures()
        plan, notes = self._classifier_plan(orig, qi, label)
        if plan is None:
            return figs + Figures(notes=notes)
        lengths = compute(*plan.lengths, **ckw) if plan.lengths else ()  # partition sizes unknown: a first pass
        return figs + self._classifier_figures(plan, plan.finish(compute(*plan.counts(lengths), **ckw), **ckw), label)

    def _disclosure_column(self) -> str | None:
        """The sensitive column whose attribute disclosure the report measures: the one the
        parameters name (l, t are decided on it), else the first declared one in the release."""
        columns = [str(c) for c in self.data.columns]
        if self.sensitive in columns:
            return self.sensitive
        declared = [c for c in (self.roles.sensitive if self.roles is not None else ()) if c in columns]
        return declared[0] if declared else None

    def _threat_figures(
        self, by_value: pd.DataFrame | None, kept: pd.DataFrame, sens: str | None, with_original: bool
    ) -> Figures:
        """Attribute disclosure, guarantee, protects, learn, attacks, warnings (:mod:`.threat`)."""
        from .disclosure import disclosure_summary
        from .threat import relational_threat

        qi = list(self.qi)
        summary = None
        if by_value is not None:
            ordered = True if self.parameters.get("t_kind") == "ordered" else None
            summary = disclosure_summary(by_value, qi, sens, ordered=ordered)
        declared = [str(c) for c in (self.roles.sensitive if self.roles is not None else ())] or ([sens] if sens else [])
        return relational_threat(
            self.method, self.parameters, qi, kept[_COUNT].to_numpy(), summary, declared=declared, with_original=with_original
        )

    def _access_figures(self) -> Figures:
        """Access control: the imprecision per permission and per role the anonymiser measured
        (the owner's figures, handed to the written release; :func:`.access_control.access_report_items`)."""
        from .access_control import access_report_items

        fig = (self.figures or {}).get("access")
        if fig:
            return Figures(utility=access_report_items(fig))
        if self.method == "access-control":
            return Figures(
                notes=[
                    "the imprecision per permission and per role needs the permission workload: only the "
                    "job that made the release reports it"
                ]
            )
        return Figures()

    def _frequency_of(self, orig: Any) -> Any:
        """The anonymizer's frequency set of ``orig`` when ``orig`` is the very input it counted."""
        if orig is None or self.input_frequency is None:
            return None
        from ..data.sources import collection_name

        name, fs = self.input_frequency
        return fs if collection_name(orig) == name and set(self.qi) <= set(fs.qi) else None

    @staticmethod
    def _original_lazy(orig: Any, qi: list[str]) -> list[Any]:
        """Lazy: the original's number of classes of each size and its value counts per QI."""
        # class sizes stay on the workers: only "how many classes of each size" comes back (the
        # rename: optimised together with the value counts, an unnamed size series fails in dask);
        # split_out=1: tree reductions (a shuffle of the few distinct keys costs more than it saves)
        size_freq = orig.groupby(qi, dropna=False, observed=True).size(split_out=1).rename("size").value_counts(split_out=1)
        return [size_freq, *[orig[a].value_counts(dropna=False, split_out=1) for a in qi]]

    def _classifier_plan(self, orig: Any, qi: list[str], label: str | None) -> tuple[Any, list[str]]:
        """The classifier's lazy counts (see :mod:`.classifier`), or None with the reason."""
        from .classifier import MAX_RECORDS, ClassifierPlan
        from .frequency import as_dask

        aligned = self if self.manifest is None else self.fitted
        if not label or label not in orig.columns:
            return None, ["classifier: no label column (the sensitive attribute, or label=)"]
        if aligned is None or label not in aligned.data.columns:
            return None, [
                "classifier: needs the release rows in input order (a release in memory, or the one written, "
                "handed over by the job) and the label published"
            ]
        plan = ClassifierPlan(
            [(as_dask(aligned.data), qi), (orig, qi)], label, getattr(aligned, "partition_rows", None), MAX_RECORDS
        )
        return plan, []

    @staticmethod
    def _classifier_figures(plan: Any, accuracies: list[tuple[float, int, int]], label: str) -> Figures:
        """Accuracy of the majority label per released class on held-out original records,
        against the same classifier on the original's QI tuples."""
        from .classifier import TEST_SHARE

        (acc, n_test, n_train), (base, _, _) = accuracies
        total = plan.total_rows
        sample = (
            f"; estimated on the first {n_test + n_train:,} of {total:,} records" if total and n_test + n_train < total else ""
        )
        note = (
            f"majority '{label}' per class, learnt on {n_train:,} records and tested on {n_test:,} held-out records "
            f"({TEST_SHARE:.0%}, a fixed public split{sample})"
        )
        rates = list(getattr(plan, "majority_rates", None) or [])
        # the held-out records are the same on both sides: the original's gives their label shares
        majority = rates[-1] if rates else float("nan")
        against = f"; read it against the majority-class rate {majority:.2%}" if majority == majority else ""
        return Figures(
            utility=[
                Value(
                    "utility_classifier_accuracy",
                    f"Accuracy predicting {label} (trained on the release)",
                    acc,
                    about="comparison",
                    unit="share",
                    score=True,
                    note=note + "; each test record in the class it was generalised to" + against,
                ),
                Value(
                    "utility_classifier_accuracy_original",
                    f"Accuracy predicting {label} (trained on the original)",
                    base,
                    about="comparison",
                    unit="share",
                    note=note + "; classes: the original quasi-identifier tuples" + against,
                ),
                Value(
                    "utility_majority_rate",
                    f"Majority-class rate of {label} (always guessing the most frequent value)",
                    majority,
                    about="comparison",
                    unit="share",
                    score=True,
                    note=f"share of the most frequent '{label}' among the {n_test:,} held-out records: the accuracy of a "
                    "classifier that learns nothing from the quasi-identifiers",
                ),
            ],
            notes=[
                f"classifier accuracy is to be read against the majority-class rate ({majority:.2%}): only the part "
                "above it is learnt from the quasi-identifiers"
            ]
            if majority == majority
            else [],
        )

    def _original_figures(
        self,
        orig: Any,
        got: Sequence[Any] | None,
        counts: pd.DataFrame,
        qi: list[str],
        dropped: int | None,
        hierarchies: Mapping[str, Any],
        threshold: float,
        ckw: dict[str, Any],
        fs: Any = None,
    ) -> Figures:
        """The original's risk and the utility figures from the computed :meth:`_original_lazy`
        (class-size frequencies, QI domains), then a pass for the true query answers; or all of
        it from the anonymizer's frequency set ``fs`` of this input (no pass). ``dropped`` (the
        suppressed records left out) None: the original's rows less the released ones."""
        from ..progress import compute
        from . import risk as R
        from . import utility as U

        if fs is not None:
            got = U.frequency_counts(fs, qi)
        freq = R.size_frequencies(got[0])
        orig_risk = R.risk_summary(freq, threshold)
        if dropped is None:  # the original's rows (its risk summary counts them) less the released ones
            dropped = max(0, orig_risk["n_records"] - int(counts[_COUNT].sum()))
        items = _risk_items(orig_risk, R.size_histogram(freq), threshold, "original", False)
        numeric = {a: pd.api.types.is_numeric_dtype(orig[a].dtype) and not pd.api.types.is_bool_dtype(orig[a].dtype) for a in qi}
        # a text column with a categorical hierarchy (zip codes) is categorical, as the anonymiser reads it
        domains = {
            a: U.domain_of(a, vc, numeric[a], not numeric[a] and getattr(hierarchies.get(a), "kind", None) == "categorical")
            for a, vc in zip(qi, got[1:])
        }
        # as the anonymiser: full-domain methods publish hierarchy nodes; the partitioning ones
        # (Mondrian, clustering, access control) publish numeric QIs as value ranges over the data
        full_domain = self.method in ("lattice", "datafly")
        used = {a: hierarchies.get(a) if full_domain or not domains[a].numeric else None for a in qi}
        tables = {a: U.label_table(pd.unique(counts[a].astype(str)), domains[a], used[a]) for a in qi}
        summary = U.utility_summary(counts, qi, tables, dropped)
        queries = U.query_workload([domains[a] for a in qi])
        if fs is not None:
            answers = U.frequency_answers(fs, queries, domains)
        else:
            keys = dask.delayed({a: d.keys for a, d in domains.items()}, pure=True)
            qs = dask.delayed(queries, pure=True)
            parts = [dask.delayed(U.answer_queries, pure=True)(p, qs, keys) for p in orig[qi].to_delayed()]
            (answers,) = compute(dask.delayed(_sum_arrays, pure=True)(parts, len(queries)), **ckw)
        errors = U.relative_errors(U.estimate_queries(counts, queries, tables), answers, summary["n_total"])
        return Figures(
            risk=items, utility=_utility_items(summary, errors, self.k, counts, qi), notes=_unread_notes(summary)
        ) + self._quality_figures(orig, counts, qi, domains, tables, used, ckw)

    def _quality_figures(
        self,
        orig: Any,
        counts: pd.DataFrame,
        qi: list[str],
        domains: Mapping[str, Any],
        tables: Mapping[str, Any],
        used: Mapping[str, Any],
        ckw: dict[str, Any],
    ) -> Figures:
        """The quality score (:mod:`ppdm_dask.metrics.quality`): the columns published as is
        (sensitive, insensitive) compared directly, with their pair trends (two passes over the
        release and the original); each quasi-identifier's shape from the released classes, their
        records spread evenly over the original values each label covers (no pass), read with
        only what the release publishes of its hierarchies (``used``: the hierarchy each label
        table was read with), so the job's report and ``ppdm report`` give the same score."""
        from ..metrics.quality import Quality, ks_complement, quality_figures, quality_report
        from .frequency import as_dask
        from .public_hierarchies import as_public
        from .utility import label_table, spread_over_domain

        roles = self.roles
        as_is = [
            c
            for c in (*(roles.sensitive if roles else ()), *(roles.insensitive if roles else ()))
            if c in self.data.columns and c in orig.columns
        ]
        q = Quality({}, {}, [])
        if as_is:
            rows = as_dask(self.data)
            if not self.keep_suppressed:  # measured as written: the suppressed rows are left out
                rows = rows.map_partitions(_kept_rows, qi, meta=rows._meta)
            q = quality_report(orig[as_is], rows[as_is], **ckw)
        for a in qi:
            dom, t = domains[a], tables[a]
            if used.get(a) is not None:  # a reader has the published part only: categorical nodes without their leaves
                t = label_table(t.labels, dom, as_public(used[a]))
            if not dom.size or not t.read.all():
                q.notes.append(
                    f"{a}: left out of the column shapes (released hierarchy nodes: the release does not publish "
                    "which values they cover)"
                )
                continue
            released = spread_over_domain(counts, a, t)
            truth = dom.counts.astype(float)
            if dom.numeric:
                q.shapes[a] = ("KS complement (labels spread over the values)", ks_complement(truth, released))
            else:
                tv = 1.0 - 0.5 * float(np.abs(truth / truth.sum() - released / max(released.sum(), 1e-300)).sum())
                q.shapes[a] = ("TV complement (labels spread over the values)", tv)
        q.notes.append(
            "quality score: quasi-identifiers compared through their released labels (each class spread evenly "
            "over the original values its label covers), pair trends among the columns published as is only"
        )
        return Figures(
            utility=quality_figures(q, "the released table"), notes=[f"quality: {n}" for n in q.notes[:-1]] + q.notes[-1:]
        )


def _ledger_values(block: Any, qi: list[str], sensitive: str | None, labels: Any, sens_labels: Any) -> dict[str, Any]:
    """Task: the ledger's per-record values of one block (class label, sensitive label)."""
    out = {"label": labels(block, qi)}
    if sensitive:
        out["sens"] = sens_labels(block, qi, sensitive)
    return out


class _WithHierarchies:
    """The rows read back with the release's published hierarchies (``_reopen`` unpacks them)."""

    def __init__(self, data: Any, hierarchies: Any) -> None:
        self.data, self.hierarchies = data, hierarchies


def _kept_rows(part: pd.DataFrame, qi: Sequence[str]) -> pd.DataFrame:
    """Kernel: the rows of one partition that are not suppressed (some QI not ``'*'``)."""
    star = np.ones(len(part), dtype=bool)
    for a in qi:
        star &= part[a].astype(str).to_numpy() == SUPPRESSED
    return part[~star]


def _split_sensitive(na: pd.Series, sizes: pd.Series, qi: list[str], sens: str | None) -> tuple[pd.DataFrame, Any, list[str]]:
    """The class counts on the QIs and, with ``sens``, the counts per (QI tuple, sensitive
    value) from one computed :func:`.checks.counts_lazy` over both; a sensitive column with
    missing values is left out of the attribute-disclosure figures (said in a note)."""
    from .checks import counts_of
    from .disclosure import fold_sensitive

    if not sens:
        return counts_of(na, sizes, qi), None, []
    if int(na[sens]) > 0:
        folded = sizes.groupby(level=list(range(len(qi))), dropna=False, observed=True).sum()
        return (
            counts_of(na, folded, qi),
            None,
            [f"attribute disclosure: {sens!r} has {int(na[sens]):,} missing values; its figures are left out"],
        )
    by_value = counts_of(na, sizes, [*qi, sens])
    return fold_sensitive(by_value, qi), by_value, []


def _sum_arrays(parts: list[np.ndarray], n: int) -> np.ndarray:
    """Sum of the per-partition query answers."""
    return np.sum(parts, axis=0) if parts else np.zeros(n, dtype=np.int64)


def _star_rows(counts: pd.DataFrame, qi: Sequence[str]) -> np.ndarray:
    """Rows of the class table whose every QI is ``'*'`` (suppressed records)."""
    star = np.ones(len(counts), dtype=bool)
    for a in qi:
        star &= counts[a].astype(str).to_numpy() == SUPPRESSED
    return star


def _lookup_sizes(kept: pd.DataFrame, pop: pd.DataFrame, qi: Sequence[str]) -> np.ndarray:
    """The population class size of each released class (0 when the population lacks it)."""
    key = lambda df: pd.MultiIndex.from_arrays([df[a].astype(str).to_numpy() for a in qi])  # noqa: E731
    sizes = pd.Series(pop[_COUNT].to_numpy(), index=key(pop)).groupby(level=list(range(len(qi)))).sum()
    return sizes.reindex(key(kept), fill_value=0).to_numpy(dtype=np.int64)


def _risk_items(
    r: dict[str, Any], hist: tuple[list[float], list[int]], threshold: float, about: About, population: bool
) -> list[Any]:
    """The risk figures of one table (``about`` release or original) from :func:`.risk.risk_summary`."""
    pre, whose = ("risk_", "the release") if about == "release" else ("risk_original_", "the original (its quasi-identifiers)")
    n, classes = r["n_records"], r["n_classes"]
    base = f"{n:,} records in {classes:,} classes of {whose}; suppressed records are left out"
    journ = (
        "with the population table given: 1 / size of the matching population class"
        if population
        else "no population table given: as ARX, the table is taken as the population, so journalist risk equals prosecutor risk"
    )
    marketer = (
        "sum over records of 1 / population class size, over the records"
        if population
        else "classes / records: the expected share of records re-identified when every record is attacked"
    )
    edges, counts = hist
    rows = [[round(t, 4), share, int(round(share * n))] for t, share in r["at_risk"]]
    return [
        Value(f"{pre}classes", "Equivalence classes", classes, about, "classes", note=base),
        Value(f"{pre}smallest_class", "Smallest class", r["min_class_size"], about, "records"),
        Value(
            f"{pre}prosecutor_max",
            "Highest prosecutor risk",
            r["prosecutor_max"],
            about,
            note="1 / smallest class size: the attacker knows the target is in the table",
        ),
        Value(
            f"{pre}prosecutor_average",
            "Average prosecutor risk",
            r["prosecutor_average"],
            about,
            note="mean over records of 1 / class size = classes / records",
        ),
        Value(f"{pre}journalist_max", "Highest journalist risk", r["journalist_max"], about, note=journ),
        Value(f"{pre}journalist_average", "Average journalist risk", r["journalist_average"], about, note=journ),
        Value(f"{pre}marketer", "Marketer risk", r["marketer"], about, note=marketer),
        Value(
            f"{pre}sample_uniques",
            "Sample uniques",
            r["sample_uniques"],
            about,
            "fraction of records",
            note=f"{r['n_sample_uniques']:,} records alone in their class",
        ),
        Value(
            f"{pre}records_at_risk",
            f"Records at risk (risk > {threshold:g})",
            r["records_at_risk"],
            about,
            "fraction of records",
            note=f"records whose 1 / class size exceeds {threshold:g}",
        ),
        Table(
            f"{pre}records_at_risk_by_threshold",
            "Records at risk by threshold",
            ["threshold", "fraction of records with 1 / class size > threshold", "records"],
            rows,
            about,
        ),
        Plot(
            f"{pre}class_sizes",
            "Equivalence class sizes",
            "histogram",
            [Series("classes", edges, counts)],
            x_label="class size (records)",
            y_label="classes",
            about=about,
            note=base,
        ),
    ]


def _utility_items(s: dict[str, Any], errors: np.ndarray, k: int, counts: pd.DataFrame, qi: list[str]) -> list[Any]:
    """The utility figures (about the comparison) from :func:`.utility.utility_summary` and the
    query errors."""
    from .metrics import average_class_size
    from .utility import N_QUERIES, SEED, error_bound

    kept = counts.loc[~_star_rows(counts, qi), _COUNT].to_numpy()
    c_avg = average_class_size(kept, k) if len(kept) else None
    edges, hist = histogram(errors, bins=20)
    workload = (
        f"{len(errors)} COUNT queries on 1-2 quasi-identifiers (seed {SEED}); estimates spread each class "
        f"uniformly over the values its labels cover; error = |estimate - true| / max(true, {error_bound(s['n_total']):g})"
    )
    return [
        Value(
            "utility_discernibility",
            "Discernibility (DM)",
            s["discernibility"],
            "comparison",
            note=f"sum of squared class sizes + {s['n_suppressed']:,} suppressed records x {s['n_total']:,} records",
        ),
        Value(
            "utility_gcp",
            "Global certainty penalty (GCP)",
            s["gcp"],
            "comparison",
            note="mean NCP over the quasi-identifiers and the records (0 = no loss, 1 = everything suppressed)",
        ),
        Value(
            "utility_avg_class_size",
            "Normalised average class size (C_avg)",
            c_avg,
            "comparison",
            note=f"released records / (classes x k), k = {k}; 1 is ideal",
        ),
        Table(
            "utility_ncp",
            "Normalised certainty penalty per quasi-identifier",
            ["quasi-identifier", "NCP", "records with unread labels"],
            [[a, s["ncp"][a], s["unread_records"][a]] for a in qi],
            "comparison",
        ),
        Plot(
            "utility_ncp_per_qi",
            "NCP per quasi-identifier",
            "bar",
            [Series("NCP", qi, [s["ncp"][a] for a in qi])],
            x_label="quasi-identifier",
            y_label="NCP",
            about="comparison",
        ),
        Value(
            "utility_query_error_mean",
            "Mean relative error of COUNT queries",
            float(np.mean(errors)) if len(errors) else None,
            "comparison",
            unit="share",
            note=workload + "; a share (1 = 100 % of the true count)",
        ),
        Value(
            "utility_query_error_median",
            "Median relative error of COUNT queries",
            float(np.median(errors)) if len(errors) else None,
            "comparison",
            unit="share",
            note=workload + "; a share (1 = 100 % of the true count)",
        ),
        Plot(
            "utility_query_errors",
            f"Relative error of {N_QUERIES} COUNT queries",
            "histogram",
            [Series("queries", edges, hist)],
            x_label="relative error (share of the true count, 1 = 100 %)",
            y_label="queries",
            about="comparison",
            note=workload,
        ),
    ]


def _unread_notes(s: dict[str, Any]) -> list[str]:
    """A sentence per quasi-identifier whose released labels could not all be read."""
    out = []
    for a, labels in s["unread"].items():
        sized = set(s.get("sized", {}).get(a, ()))
        if sized:
            out.append(
                f"{len(sized)} released label(s) of {a!r} are nodes of its published hierarchy: their NCP comes from "
                "the node sizes, but the release does not publish the leaves, so the query estimates take them as "
                "covering every value"
            )
            labels = [x for x in labels if x not in sized]
        if labels:
            shown = ", ".join(repr(x) for x in labels[:5]) + (" ..." if len(labels) > 5 else "")
            out.append(
                f"{len(labels)} released label(s) of {a!r} ({shown}; {s['unread_records'][a]:,} records) could not be "
                "read without the hierarchy and count as fully generalised in NCP and the query estimates "
                "(pass hierarchies= for exact figures)"
            )
    return out
