"""The officer's summary of a relational (or access-control) release: its guarantee in words,
what it protects against, what an attacker can still learn, the threat model's attacks run on
the release, and the risks that are not attacks (docs/threat-model.md#k-anonymity-and-l-diversity).

:func:`relational_threat` turns what the report's pass already counted — rows per (QI tuple,
sensitive value) of the released table — into :class:`~ppdm_dask.release.figures.Figures`
fields; nothing here reads data. Two attacks apply to one released table:

``attack_linkage`` (prosecutor re-identification)
    The attacker knows a target's quasi-identifiers and that the target is in the table, finds
    the target's class and picks one of its records. Success: the average prosecutor risk
    (classes / records, the expected share of records re-identified when every record is
    attacked); baseline: 1 / n (picking a record of the table at random). Threshold
    :data:`LINKAGE_THRESHOLD` = 0.2 = 1/5: a k >= 5 release (every class >= 5 records, so an
    average risk <= 1/5) is never flagged; a k = 2 release whose classes are mostly pairs is.
``attack_attribute_inference`` (homogeneity)
    The attacker knows a target's quasi-identifiers and guesses the most frequent sensitive
    value of the target's class. Success: the share of released records whose value is their
    class's most frequent one; baseline: the share of the table's most frequent value (the
    guess for everyone without the classes). Threshold :data:`INFERENCE_THRESHOLD` = 0.05: five
    percentage points more right guesses than the base rate. At the 2,000 records of the Adult
    sample that is more than five standard errors of a hit rate near 77 %
    (sqrt(0.77 x 0.23 / 2000) = 0.0094), so it is not sampling noise; t-closeness with
    t <= 0.2 on a value whose base rate is above 70 % leaves a gain of 0 (no class can turn the
    minority value into its majority).

Warnings (they make the summary amber): a sensitive column published without any
attribute-disclosure model (no l, no t), and — without t-closeness, the one model that bounds
a class's shares against the table's — classes where one sensitive value holds at least
:data:`~.disclosure.SHARE_THRESHOLD` of the records (l-diversity asks for several values, not
for balanced ones: distinct l = 2 on a binary attribute accepts 77 records of one value and 1
of the other).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..release.figures import Attack, Figures, Text, Value
from ..report.units import percent as _pct
from .disclosure import DisclosureSummary, disclosing_classes, disclosure_items

__all__ = ["LINKAGE_THRESHOLD", "INFERENCE_THRESHOLD", "HEADLINE", "relational_threat", "model_warning"]

#: advantage of the prosecutor attack (average risk - 1/n) the summary flags: 1/5
LINKAGE_THRESHOLD = 0.2
#: advantage of the attribute inference (hit rate - base rate) the summary flags
INFERENCE_THRESHOLD = 0.05
#: the utility values the summary box shows (when the original was given)
HEADLINE = ["utility_gcp", "utility_query_error_mean", "utility_classifier_accuracy"]
#: QI tuples named in an attack's findings and in the warning
NAMED = 3

TEST = "tests/anonymity/test_disclosure.py"


def _records(n: int) -> str:
    return f"{n:,} record" + ("" if n == 1 else "s")


def _classes(n: int) -> str:
    return f"{n:,} class" + ("" if n == 1 else "es")


def _g(x: Any) -> str:
    return f"{float(x):.4g}"


def model_warning(sensitive: Sequence[str], parameters: Mapping[str, Any]) -> str | None:
    """The warning for sensitive columns published without an attribute-disclosure model
    (no l, no t), or None."""
    cols = [str(c) for c in sensitive]
    if not cols or parameters.get("l") is not None or parameters.get("t") is not None:
        return None
    names = ", ".join(repr(c) for c in cols)
    return (
        f"sensitive column{'s' if len(cols) > 1 else ''} {names} published without an attribute-disclosure model: "
        "k-anonymity hides who a record is, not what its class holds; ask for t-closeness (--t) or "
        "l-diversity (--l, --l-kind entropy|recursive)"
    )


def _model_words(p: Mapping[str, Any], sens: str | None, s: DisclosureSummary | None) -> list[str]:
    """The attribute-disclosure models asked, in words, with what the release achieves."""
    out = []
    l, kind = p.get("l"), p.get("l_kind", "distinct")
    if l is not None:
        if kind == "entropy":
            got = f"; achieved {_g(s.entropy_l)}" if s is not None else ""
            out.append(f"the {sens} values of every class have an entropy of at least ln {_g(l)} (entropy l = {_g(l)}{got})")
        elif kind == "recursive":
            c = p.get("c")
            out.append(
                f"in every class the most frequent {sens} value has fewer than c = {_g(c)} times the records of the "
                f"{int(l)}-th and rarer values together (recursive (c, l) = ({_g(c)}, {int(l)}))"
            )
        else:
            got = f"; achieved {s.distinct_l}" if s is not None else ""
            out.append(f"every class holds at least {int(l)} distinct {sens} values (distinct l = {int(l)}{got})")
    if p.get("t") is not None:
        t_kind = p.get("t_kind", "equal")
        got = ""
        if s is not None:
            val = s.t_ordered if t_kind == "ordered" and s.t_ordered is not None else s.t_equal
            got = f"; achieved {_g(val)}"
        out.append(
            f"every class's {sens} distribution is within Earth Mover's Distance t = {_g(p['t'])} of the table's "
            f"({t_kind} distance{got})"
        )
    return out


def _named(rows: Any, qi: Sequence[str], n: int = NAMED) -> str:
    """A few classes by their QI labels: ``(age=30-39, sex=Male: 95.0 % <=50K, 20 records)``."""
    parts = []
    for _, r in rows.head(n).iterrows():
        labels = ", ".join(f"{a}={r[a]}" for a in qi)
        parts.append(f"({labels}: {_pct(r['share'])} {r['top']}, {_records(int(r['size']))})")
    return "; ".join(parts)


def _guarantee(
    method: str, p: Mapping[str, Any], qi: Sequence[str], sens: str | None, sizes: np.ndarray, s: DisclosureSummary | None
) -> str:
    k = int(p.get("k", 1))
    n, classes = int(sizes.sum()), int(len(sizes))
    smallest = int(sizes.min()) if len(sizes) else 0
    head = "Access control for the permissions' workload: e" if method == "access-control" else "E"
    text = (
        f"{head}very record shares its quasi-identifiers ({', '.join(qi)}) with at least {k - 1} other"
        f"{'s' if k != 2 else ''} (k = {k}); {_records(n)} in {_classes(classes)}, the smallest of {smallest:,}."
    )
    models = _model_words(p, sens, s)
    if models:
        text += " " + "; ".join(m[0].upper() + m[1:] for m in models) + "."
    return text


def _protects(p: Mapping[str, Any], sens: str | None, s: DisclosureSummary | None) -> str:
    k = int(p.get("k", 1))
    text = (
        f"It protects against linkage: knowing someone's quasi-identifiers, an attacker finds at least {k} records "
        f"and picks the right one with a chance of at most 1/{k} = {_pct(1 / k)}."
    )
    if sens is None:
        return text + " No sensitive column is published. It does not hide whether someone is in the table."
    if p.get("t") is not None:
        text += (
            f" t-closeness bounds what a class tells about {sens}: its distribution is within t = {_g(p['t'])} of the "
            "table's, so the attacker's belief in any value (or set of values) moves by at most t from the base rate."
        )
    elif p.get("l") is not None:
        text += (
            f" l-diversity keeps several {sens} values in every class but does not balance them: a class may still be "
            + (f"{_pct(s.profile['share'].max())} one value" if s is not None and len(s.profile) else "mostly one value")
            + ", which discloses it."
        )
    else:
        text += f" It does not protect {sens}: a class whose records share one value discloses it to anyone who finds the class."
    return text + " It does not hide whether someone is in the table, nor what an attacker knows from elsewhere."


def _learn(p: Mapping[str, Any], sens: str | None, sizes: np.ndarray, s: DisclosureSummary | None) -> list[Any]:
    n, classes = int(sizes.sum()), int(len(sizes))
    out: list[Any] = []
    if n:
        smallest = int(sizes.min())
        out.append(
            Text(
                "learn_linkage",
                f"Knowing someone's quasi-identifiers (and that they are in the table), an attacker picks their record "
                f"with a chance of 1/{smallest} = {_pct(1 / smallest)} at worst (the smallest class) and "
                f"{_pct(classes / n)} on average ({_classes(classes)} / {_records(n)}).",
            )
        )
    if s is None or not s.n_records:
        return out
    out.append(
        Text(
            "learn_sensitive_confidence",
            f"Knowing someone's quasi-identifiers, an attacker learns their {sens} with >= {_pct(s.threshold)} confidence "
            f"for {s.n_disclosing_records:,} of {s.n_records:,} records ({_classes(s.n_disclosing_classes)}"
            + (f", {s.n_homogeneous_classes:,} with a single value" if s.n_homogeneous_classes else "")
            + f"); guessing their class's most frequent value is right for {_pct(s.inference_success)} of the records, "
            f"against {_pct(s.base_rate)} for guessing {s.base_value!r} for everyone.",
        )
    )
    if p.get("t") is not None:
        out.append(
            Text(
                "learn_belief_shift",
                f"No class moves the attacker's belief in a {sens} value (or set of values) by more than "
                f"{_g(s.t_equal)} from the table's distribution (t achieved, equal distance)."
                + (
                    f" With the values in their order the distance is at most {_g(s.t_ordered)}."
                    if s.t_ordered is not None
                    else ""
                ),
            )
        )
    out.append(
        Value(
            "learn_inference_advantage",
            f"Right guesses of {sens} above the base rate",
            s.inference_success - s.base_rate,
            unit="fraction of records",
            note="share of records whose value is their class's most frequent one, less the share of the table's "
            "most frequent value",
        )
    )
    return out


def _attacks(sens: str | None, sizes: np.ndarray, qi: Sequence[str], s: DisclosureSummary | None) -> list[Attack]:
    n, classes = int(sizes.sum()), int(len(sizes))
    out: list[Attack] = []
    if n:
        at_risk = sizes[1.0 / sizes > LINKAGE_THRESHOLD]
        out.append(
            Attack(
                "attack_linkage",
                "linkage (prosecutor re-identification)",
                classes / n,
                1.0 / n,
                LINKAGE_THRESHOLD,
                "share of records re-identified when every record is attacked (average prosecutor risk, classes / records)",
                found=(
                    f"smallest class {int(sizes.min()):,} records (risk {_pct(1 / sizes.min())}); "
                    f"{_records(int(at_risk.sum()))} in classes of fewer than {round(1 / LINKAGE_THRESHOLD)} records"
                ),
                test=f"{TEST}::test_linkage_attack",
            )
        )
    if s is not None and s.n_records:
        hit = disclosing_classes(s, qi)
        found = (
            f"{_classes(s.n_disclosing_classes)} ({_records(s.n_disclosing_records)}) have >= {_pct(s.threshold)} one "
            f"{sens} value, "
            + (f"{s.n_homogeneous_classes:,} of them a single value" if s.n_homogeneous_classes else "none a single value")
        )
        if len(hit):
            found += f", e.g. {_named(hit, qi)}"
        out.append(
            Attack(
                "attack_attribute_inference",
                f"attribute inference of {sens} (class's most frequent value)",
                s.inference_success,
                s.base_rate,
                INFERENCE_THRESHOLD,
                f"share of records whose {sens} is their class's most frequent value (baseline: the table's most frequent "
                f"value {s.base_value!r} for everyone)",
                found=found,
                test=f"{TEST}::test_attribute_inference_attack_on_adult",
            )
        )
    return out


def _warnings(
    p: Mapping[str, Any], declared: Sequence[str], sens: str | None, qi: Sequence[str], s: DisclosureSummary | None
) -> list[str | Text]:
    out: list[str | Text] = []
    w = model_warning(declared, p)
    if w:
        out.append(w)
    if s is not None and p.get("t") is None and s.n_disclosing_classes:
        why = (
            "no attribute-disclosure model was asked"
            if p.get("l") is None
            else f"{p.get('l_kind', 'distinct')} l-diversity does not bound the share of one value"
        )
        out.append(
            f"{_classes(s.n_disclosing_classes)} ({_records(s.n_disclosing_records)} of {s.n_records:,}) have "
            f">= {_pct(s.threshold)} one {sens} value ({why}), e.g. {_named(disclosing_classes(s, qi), qi)}"
        )
    return out


def relational_threat(
    method: str,
    parameters: Mapping[str, Any],
    qi: Sequence[str],
    sizes: Any,
    summary: DisclosureSummary | None,
    *,
    declared: Sequence[str] = (),
    with_original: bool = False,
) -> Figures:
    """The summary fields (and the attribute-disclosure figures) of a relational release.

    Parameters
    ----------
    method : str
        The release's method (``access-control`` says so in the guarantee).
    parameters : mapping
        The release's public parameters (k, l, l_kind, c, t, t_kind).
    qi : sequence of str
    sizes : array_like of int
        The released classes' sizes (suppressed records left out).
    summary : DisclosureSummary, optional
        :func:`~.disclosure.disclosure_summary` of the sensitive column analysed (None without one).
    declared : sequence of str
        Every sensitive column of the release (the warning names them).
    with_original : bool
        The utility figures exist: the summary box shows :data:`HEADLINE`.

    Returns
    -------
    Figures
        ``risk``: the attribute-disclosure items; ``guarantee``, ``protects``, ``learn``,
        ``attacks``, ``headline``, ``warnings``.
    """
    qi = list(qi)
    sizes = np.asarray(sizes, dtype=np.int64)
    sens = summary.sensitive if summary is not None else None
    return Figures(
        risk=disclosure_items(summary, qi) if summary is not None and summary.n_records else [],
        guarantee=_guarantee(method, parameters, qi, sens, sizes, summary),
        protects=_protects(parameters, sens, summary),
        learn=_learn(parameters, sens, sizes, summary),
        attacks=_attacks(sens, sizes, qi, summary),
        headline=list(HEADLINE) if with_original else [],
        warnings=_warnings(parameters, declared, sens, qi, summary),
    )
