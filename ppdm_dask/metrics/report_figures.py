"""Report figures shared by the transaction releases (k^m-anonymised, distorted, generated):
the k^m audit curve, the share of unique baskets and the itemset utility, as
:class:`~ppdm_dask.release.figures.Figures` (docs/mining.md#report-figures-the-km-audit-curve-and-unique-baskets).

Figure ids (the same in every family that uses them):

* ``km_audit_release`` — plot (step): itemsets of <= m items with support in [1, k) in the
  release, m = 1..M (about ``release``); ``km_audit_original`` — the same for the original,
  with the release's curve beside it (about ``original``);
* ``km_rare_itemsets_release`` / ``km_rare_itemsets_original`` — the value at M;
* ``unique_baskets_release`` / ``unique_baskets_original`` — percent of records whose exact
  item set occurs once;
* ``itemsets_sigma_plus``, ``itemsets_sigma_minus``, ``itemsets_rho`` — σ⁺, σ⁻, ρ in percent
  (about ``comparison``); ``itemsets_support_scatter`` — original against release support of
  every itemset of F ∪ R (about ``comparison``).
"""

from __future__ import annotations

from typing import Any

from ..release.figures import About, Figures, Plot, Series, Value
from .km_audit import DEFAULT_MAX_SUBSETS, km_audit, unique_baskets

__all__ = ["audit_figures", "unique_basket_figures", "utility_figures", "compute_options", "utility_threshold"]


def compute_options(compute_kwargs: dict[str, Any]) -> dict[str, Any]:
    """``client`` and ``progress`` of ``compute_kwargs`` (progress off unless asked for)."""
    return {"client": compute_kwargs.get("client"), "progress": bool(compute_kwargs.get("progress", False))}


def utility_threshold(n_rows: int, count: int | None = None, floor: float = 0.01) -> float:
    """The relative mining threshold of the utility figures: ``floor`` (1 %), or the fraction a
    release's own support count gives when that is higher (a low count would let the number of
    itemsets explode)."""
    if count is not None and n_rows > 0:
        return max(float(floor), float(count) / n_rows)
    return float(floor)


def audit_figures(
    release: Any,
    original: Any,
    k: int,
    max_m: int,
    *,
    guaranteed_m: int | None = None,
    max_subsets: float = DEFAULT_MAX_SUBSETS,
    **compute_kwargs: Any,
) -> Figures:
    """The k^m audit curve of the release (and of the original when given) as risk figures.

    ``guaranteed_m``: the release promises 0 rare itemsets up to this m (k^m-anonymity); said in
    the note.
    """
    ckw = compute_options(compute_kwargs)
    figs = Figures()
    rel = km_audit(release, k, max_m, max_subsets=max_subsets, **ckw)
    promise = f"; the release guarantees 0 up to m = {guaranteed_m}" if guaranteed_m is not None else ""
    base = f"itemsets of at most m items supported by 1 to {k - 1} records (k = {k}){promise}"
    note = base + (f"; {rel.note}" if rel.note else "")
    curve = rel.rare[k]
    figs.risk.append(
        Plot(
            "km_audit_release",
            f"k^m audit of the release (k = {k})",
            "step",
            [Series("release", rel.m.tolist(), curve.tolist())],
            x_label="m (items known to the adversary)",
            y_label=f"itemsets with support in [1, {k})",
            note=note,
        )
    )
    figs.risk.append(
        Value(
            "km_rare_itemsets_release",
            f"itemsets of <= {rel.max_m} items in fewer than {k} records (release)",
            int(curve[-1]),
            unit="itemsets",
            note=f"of {int(rel.distinct[-1]):,} distinct itemsets that occur",
        )
    )
    if original is None:
        return figs
    org = km_audit(original, k, rel.max_m, max_subsets=max_subsets, **ckw)
    m_both = min(org.max_m, rel.max_m)
    onote = base + (f"; {org.note}" if org.note else "")
    figs.risk.append(
        Plot(
            "km_audit_original",
            f"k^m audit of the original and the release (k = {k})",
            "step",
            [
                Series("original", org.m[:m_both].tolist(), org.rare[k][:m_both].tolist()),
                Series("release", rel.m[:m_both].tolist(), curve[:m_both].tolist()),
            ],
            x_label="m (items known to the adversary)",
            y_label=f"itemsets with support in [1, {k})",
            about="original",
            note=onote,
        )
    )
    figs.risk.append(
        Value(
            "km_rare_itemsets_original",
            f"itemsets of <= {org.max_m} items in fewer than {k} records (original)",
            int(org.rare[k][-1]),
            about="original",
            unit="itemsets",
            note=f"of {int(org.distinct[-1]):,} distinct itemsets that occur",
        )
    )
    return figs


def unique_basket_figures(release: Any, original: Any = None, **compute_kwargs: Any) -> Figures:
    """Percent of records whose exact item set occurs once, in the release (and the original)."""
    ckw = compute_options(compute_kwargs)
    figs = Figures()
    sides: tuple[tuple[Any, About], ...] = ((release, "release"), (original, "original"))
    for tx, about in sides:
        if tx is None:
            continue
        u = unique_baskets(tx, **ckw)
        figs.risk.append(
            Value(
                f"unique_baskets_{about}",
                f"records with a unique basket ({about})",
                100.0 * u["share"],
                about=about,
                unit="%",
                note=f"{u['unique']:,} of {u['rows']:,} records; {u['distinct']:,} distinct baskets",
            )
        )
    return figs


def utility_figures(
    original: Any,
    release: Any,
    min_support: float | int,
    *,
    max_length: int | None = 3,
    miner: Any = None,
    recount: Any = None,
    how: str = "supports counted on the release",
    max_itemsets: int = 2_000_000,
    result: dict[str, Any] | None = None,
    **compute_kwargs: Any,
) -> Figures:
    """σ⁺, σ⁻, ρ and the support scatter of the release's frequent itemsets against the
    original's (see :mod:`.release_utility`); a note instead when mining explodes.

    ``miner``, ``recount``: see :func:`~ppdm_dask.metrics.release_utility.itemset_utility`;
    ``how`` says in the notes how the release's supports were obtained. ``result``: a dict updated with the result of
    :func:`~ppdm_dask.metrics.release_utility.itemset_utility` (e.g. to reuse the mined itemsets).
    """
    from ..errors import ResultTooLargeError
    from .release_utility import itemset_utility

    ckw = compute_options(compute_kwargs)
    # the longest itemset is said everywhere: |F| changes with it (a console mining every length
    # finds more itemsets than a report mining up to 3 items)
    where = f"min_support {min_support:g}, " + (
        f"itemsets of at most {max_length} items" if max_length else "itemsets of any length"
    )
    try:
        u = itemset_utility(
            original, release, min_support, max_length=max_length, miner=miner, recount=recount, max_itemsets=max_itemsets, **ckw
        )
    except ResultTooLargeError:
        return Figures(notes=[f"itemset utility skipped: more than {max_itemsets:,} frequent itemsets at {where}"])
    if result is not None:
        result.update(u)
    acc = u["accuracy"]
    note = (
        f"{where}; |F| = {u['n_original']:,} (original), |R| = {u['n_release']:,} (release, {how}), |F ∩ R| = {acc['n_common']:,}"
    )
    figs = Figures()
    figs.utility += [
        Value(
            "itemsets_max_length",
            "Longest itemset compared",
            max_length if max_length else "any",
            about="comparison",
            unit="items" if max_length else None,
            note=f"{where}; |F| = {u['n_original']:,} frequent itemsets of the original at this length (mine with the same "
            "maximum length to compare)",
        ),
        Value(
            "itemsets_sigma_plus",
            "σ⁺: itemsets frequent only in the release",
            acc["sigma_plus"],
            about="comparison",
            unit="%",
            note=note + "; in percent of |F|",
        ),
        Value(
            "itemsets_sigma_minus",
            "σ⁻: frequent itemsets of the original lost",
            acc["sigma_minus"],
            about="comparison",
            unit="%",
            note=note + "; in percent of |F|",
        ),
        Value(
            "itemsets_rho",
            "ρ: support error of the itemsets found",
            acc["rho"],
            about="comparison",
            unit="%",
            note=note + "; mean relative support error over F ∩ R",
        ),
    ]
    groups: dict[str, list[Any]] = {"in both": [], "original only": [], "release only": []}
    for _, x, y, in_f, in_r in u["points"]:
        groups["in both" if in_f and in_r else "original only" if in_f else "release only"].append((x, y))
    series = [Series(name, [p[0] for p in pts], [p[1] for p in pts]) for name, pts in groups.items() if pts]
    shown = len(u["points"])
    snote = note + (
        f"; {shown:,} of {u['n_points_total']:,} itemsets shown (evenly spaced)" if shown < u["n_points_total"] else ""
    )
    figs.utility.append(
        Plot(
            "itemsets_support_scatter",
            "Itemset supports: original against release",
            "scatter",
            series,
            x_label="support in the original",
            y_label="support in the release",
            about="comparison",
            note=snote + "; an itemset frequent on one side only is recounted on the other",
        )
    )
    return figs
