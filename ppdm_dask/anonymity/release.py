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
* ``suppressed records absent`` — no row with every QI ``'*'`` unless ``keep_suppressed``;
* ``row count`` — released rows + suppressed rows dropped = input rows.

Against the original table (``verify(original=...)``, ``ppdm verify --original``):

* ``identifier values absent`` — no value of an identifier column of the original appears in
  any released cell (nor as a component of a ``a|b|c`` value set) unless it is also a value of
  that column in the original (so ids that happen to equal an age do not count);
* ``records`` — released rows + dropped suppressed rows = original rows;
* ``sensitive values`` / ``insensitive values`` — the released values of each column published
  as is form a sub-multiset of the original's (equal when nothing was suppressed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Callable, ClassVar

import dask
import numpy as np
import pandas as pd

from ..data.hierarchy import as_keys
from ..release import Check, TableRelease
from .checks import SUPPRESSED, class_counts, k_anonymity_check, l_diversity_check

__all__ = ["AnonymizedRelease", "FORMAT_NAME", "anonymity_floors"]

FORMAT_NAME = "ppdm-anonymized"
_COUNT = "count"


def anonymity_floors(release: Any, parameters: Mapping[str, Any]) -> list[Check]:
    """The privacy floors of k-anonymity parameters: ``k >= 2`` and, when l is given, ``l >= 2``
    (each a :meth:`Release.floor`, overridden when the user said so)."""
    k = parameters.get("k")
    out = [release.floor("k >= 2", k is not None and k >= 2, k, 2, detail="k-anonymity with k = 1 protects nobody")]
    l = parameters.get("l")
    if l is not None:
        out.append(release.floor("l >= 2", l >= 2, l, 2, detail="a class with one sensitive value discloses it"))
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
    l-diversity, ``l``, ``l_kind`` (and ``c``).
    """

    family: ClassVar[str] = "relational"
    data_format: ClassVar[str] = FORMAT_NAME

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
        """Rows of the input: from the manifest of a written release, else from the estimator."""
        if self.manifest is not None:
            rows = self.manifest.get("n_input_records", (self.manifest.get("input") or {}).get("rows"))
        else:
            rows = self.input_info.get("rows")
        return int(rows) if rows is not None else None

    # ------------------------------------------------------------------ family hooks
    def _layout(self, partitions: list[dict[str, Any]]) -> dict[str, Any]:
        out = super()._layout(partitions)
        out["n_input_records"] = self._input_rows()
        return out

    def _csv_write(self, fh: Any, blocks: list[Any], compute: Callable) -> dict[str, Any]:
        out = super()._csv_write(fh, blocks, compute)
        out["n_input_records"] = self._input_rows()
        return out

    def floor_checks(self) -> list[Check]:
        return anonymity_floors(self, self.parameters)

    def guarantee_checks(self, original: Any = None, **compute_kwargs: Any) -> list[Check]:
        data = self.data
        columns = [str(c) for c in data.columns]
        roles = self.roles
        qi = list(self.qi)
        checks: list[Check] = []
        identifiers = list(roles.identifiers) if roles is not None else []
        present = [c for c in identifiers if c in columns]
        checks.append(Check("identifiers absent", not present, len(present), 0, where=", ".join(present) or None,
                            detail="identifier columns are never published"))
        published = set(roles.published) if roles is not None else set(columns)
        unroled = [c for c in columns if c not in published and c not in present]
        checks.append(Check("columns have roles", not unroled, len(unroled), 0, where=", ".join(unroled) or None,
                            detail="every released column is a quasi-identifier, sensitive or insensitive"))
        missing = [c for c in qi if c not in columns] + ([self.sensitive] if self.l is not None and self.sensitive not in columns else [])
        if missing or not qi:
            checks.append(Check("quasi-identifiers present", False, where=", ".join(missing) or None,
                                detail="the columns the guarantee is counted on are missing"))
            return checks
        with_l = self.l is not None
        sens = self.sensitive if (self.sensitive in columns) else None
        counts = class_counts(data, qi, sens, **compute_kwargs)
        checks.append(k_anonymity_check(counts, qi, self.k))
        if with_l:
            checks.append(l_diversity_check(counts, qi, sens, self.l, self.parameters.get("l_kind", "distinct"),
                                            self.parameters.get("c")))
        star = np.ones(len(counts), dtype=bool)
        for a in qi:
            star &= counts[a].astype(str).to_numpy() == SUPPRESSED
        n_rows = int(counts[_COUNT].sum()) if len(counts) else 0
        n_star = int(counts.loc[star, _COUNT].sum()) if len(counts) else 0
        written = self.manifest is not None
        if self.keep_suppressed:
            checks.append(Check("suppressed records absent", True, n_star, None, detail="kept on request (keep_suppressed)"))
        elif written:
            checks.append(Check("suppressed records absent", n_star == 0, n_star, 0,
                                detail="rows with every quasi-identifier '*' are left out of a release"))
        else:  # in memory: the writer leaves them out
            checks.append(Check("suppressed records absent", True, n_star, None, detail="left out when written"))
        dropped = int(self.manifest.get("n_suppressed_dropped", 0)) if written else 0
        expected = self._input_rows()
        if written and self.manifest.get("n_records") is not None and int(self.manifest["n_records"]) != n_rows:
            checks.append(Check("row count", False, n_rows, int(self.manifest["n_records"]),
                                detail="rows in the files differ from the manifest's n_records"))
        elif expected is not None:
            checks.append(Check("row count", n_rows + dropped == expected, n_rows + dropped, expected,
                                detail=f"released rows + {dropped:,} suppressed rows left out = input rows"))
        if original is not None:
            checks += self._original_checks(original, counts, qi, sens, n_rows + dropped, **compute_kwargs)
        return checks

    # ------------------------------------------------------------------ against the original
    def _original_checks(self, original: Any, counts: pd.DataFrame, qi: list[str], sens: str | None, n_total: int,
                         **compute_kwargs: Any) -> list[Check]:
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
        identifiers = [c for c in (roles.identifiers if roles is not None else ()) if c in ocols]
        candidates = frozenset(set().union(*tokens.values())) if tokens else frozenset()
        # the released tokens travel once per worker; each partition returns its few matches
        cand = dask.delayed(candidates, pure=True)
        hits = orig.map_partitions(_id_hits, identifiers, cand, meta=pd.DataFrame({"value": pd.Series([], dtype=object)}))
        lazy_orig = {c: orig[c].value_counts(dropna=False) for c in columns if c in ocols}
        got = compute(orig.map_partitions(len).sum(), hits, *lazy_orig.values(), **{"progress": False, **compute_kwargs})
        n_orig, id_hits = int(got[0]), set(got[1]["value"])
        orig_counts = {c: _key_counts(v) for c, v in zip(lazy_orig, got[2:])}

        checks: list[Check] = []
        if identifiers:
            leaked = {c: {t for t in tokens[c] if t in id_hits and t not in orig_counts.get(c, pd.Series([], dtype=np.int64)).index}
                      for c in columns}
            bad = {c: len(v) for c, v in leaked.items() if v}
            checks.append(Check("identifier values absent", not bad, int(sum(bad.values())), 0,
                                where=", ".join(f"column {c!r} ({n})" for c, n in bad.items()) or None,
                                detail=f"values of {identifiers} of the original found in the release" if bad
                                else f"no value of {identifiers} of the original is in the release"))
        checks.append(Check("records", n_total == n_orig, n_total, n_orig,
                            detail="released rows + suppressed rows left out = rows of the original"))
        for c in as_is:
            rel = _key_counts(rel_counts[c])
            if c not in ocols:
                checks.append(Check(f"{self._role_of(c)} values", False, where=f"column {c!r}", detail="not a column of the original"))
                continue
            base = orig_counts[c].reindex(rel.index, fill_value=0)
            excess = int((rel - base).clip(lower=0).sum())
            checks.append(Check(f"{self._role_of(c)} values", excess == 0, excess, 0, where=f"column {c!r}",
                                detail="released values not backed by the original (published as is, they must be a sub-multiset)"))
        return checks

    def _role_of(self, column: str) -> str:
        role = self.roles.of(column) if self.roles is not None else None
        return role if role in ("sensitive", "insensitive") else "published"
