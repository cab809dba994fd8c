"""The officer's summary of a k^m-anonymous release: the guarantee in words, what stays unique
at m + 1 known items, utility at the generalised level (docs/anonymity.md#report-figures-of-km-releases,
docs/threat-model.md#km-anonymity).

* **m + 1 items** (:func:`~ppdm_dask.metrics.km_audit.singled_out`): the release promises
  nothing about an adversary who knows m + 1 items of a target. The attack
  ``attack_km_m_plus_1`` counts, on the release, the records that hold an (m + 1)-itemset no
  other record holds: an adversary who knows those items singles the record out. Baseline: the
  same at m items, 0 by the guarantee (k >= 2). The summary flags it above
  :data:`M_PLUS_1_THRESHOLD` of the records.
* **Utility at the generalised level**: a global recoding publishes an item as itself or as a
  node of the hierarchy ("a range"), so an itemset of original items and one of published labels
  never match. The original is mapped through the release's generalisation
  (:func:`item_images`) before the frequent itemsets are compared; for a global recoding the
  two sides then hold the same transactions and σ⁺ = σ⁻ = ρ = 0, and the loss is in the
  generalisation itself: the share of item occurrences published as themselves
  (``km_items_published_as_is``) and the NCP.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ..release.figures import Attack, Figures, Text, Value
from ..report.units import percent as _pct

__all__ = ["km_threat", "km_utility", "item_images", "generalised", "M_PLUS_1_THRESHOLD"]

#: Share of records singled out by m + 1 known items above which the summary flags the release
M_PLUS_1_THRESHOLD = 0.05

_TEST = "tests/anonymity/test_km_threat.py"


def item_images(rel: Any, original: Any) -> dict[str, str] | None:
    """Every item label of ``original`` -> the label the release publishes it as: the owner's
    map (the release the anonymiser made, or adopted from it), else rebuilt from a balanced
    hierarchy (its fan-out is public; it is built over the original's sorted items) and the
    published labels; None for a given hierarchy without the owner's map."""
    own = getattr(rel, "item_images", None)
    if own:
        return dict(own)
    hier = _balanced(rel, original)
    if hier is None:
        return None
    labels = np.asarray(original.vocabulary.labels)
    published = {str(x) for x in rel.data.vocabulary.labels}
    # exactly one of an item's ancestors-or-self is published: itself when kept, else its highest
    # cut ancestor (a lower cut node has no item left to publish, so it is not a label)
    out: dict[str, str] = {}
    for level in range(hier.levels):
        for item, node in zip(labels, hier.generalize(labels, level)):
            if str(node) in published:
                out[str(item)] = str(node)
    return out


def _balanced(rel: Any, original: Any) -> Any:
    """The release's balanced hierarchy rebuilt from its public fan-out over the original's
    sorted items (as :class:`~.estimators.KmAnonymizer` builds it), or None."""
    spec = str(rel.parameters.get("hierarchy", ""))
    labels = np.asarray(original.vocabulary.labels)
    if not spec.startswith("balanced, fan-out ") or not labels.size:
        return None
    from ..data.hierarchy import Hierarchy

    return Hierarchy.balanced(labels.size, int(spec.rsplit(" ", 1)[1]), labels=labels)


def generalised(original: Any, release: Any, images: dict[str, str]) -> Any:
    """``original`` with every item replaced by its published label (the release's
    vocabulary), one MAP per block; None when an item has no published image."""
    from ..data.transactions import TransactionArray
    from ..graph import CSR_META, blocks_from_tasks, unique_name
    from . import _km_kernels as K

    vocab = release.vocabulary
    index = {str(x): j for j, x in enumerate(vocab.labels)}
    col_map = np.array([index.get(images.get(str(x), ""), -1) for x in original.vocabulary.labels], np.int64)
    if (col_map < 0).any():
        return None
    n_cols = len(vocab)
    name = unique_name("km-generalised", original.blocks.name, col_map, n_cols)
    tasks = [(K.recode_block, b.key, col_map, n_cols) for b in original.blocks.to_delayed().ravel()]
    blocks = blocks_from_tasks(name, tasks, original.partition_rows, n_cols, meta=CSR_META, dependencies=[original.blocks])
    return TransactionArray(blocks, vocab, metadata=dict(original.metadata))


def km_threat(rel: Any, figs: Figures, original: Any, ckw: dict[str, Any]) -> Figures:
    """Fill the summary fields of a k^m release's figures (see the module docstring)."""
    from ..metrics.km_audit import singled_out

    k, m = int(rel.parameters["k"]), int(rel.parameters["m"])
    n = int(rel.data.n_transactions)
    items = int(rel.data.n_items)
    figs.guarantee = (
        f"Every combination of up to m = {m} published items that occurs is shared by at least k = {k} of the "
        f"{n:,} released transactions: an adversary who knows {m} items of a person's basket is left with at "
        f"least {k} candidates. {items:,} published items (items and generalised ranges)."
    )
    figs.protects = (
        f"It protects against re-identification by up to {m} known items. It does not protect against an "
        f"adversary who knows {m + 1} items or more, nor against learning an item that all {k} matching "
        "transactions share (no diversity of items), nor negative knowledge (an item a person did not buy), "
        "nor the combination of two generalisations of the same transactions."
    )
    rel_out = singled_out(rel.data, m + 1, k, **ckw)
    how = _how(rel_out)
    figs.attacks.append(
        Attack(
            "attack_km_m_plus_1",
            f"re-identification from {m + 1} known items",
            rel_out["unique_share"],
            0.0,
            M_PLUS_1_THRESHOLD,
            f"share of records holding a combination of {m + 1} items no other record holds",
            about="release",
            found=f"{rel_out['unique']:,} of {rel_out['targets']:,} {how}, hold a {m + 1}-item combination of their own "
            f"({_pct(rel_out['unique_share'])} of the records), {rel_out['rare']:,} one shared by fewer than {k}; "
            f"at {m} items none (the guarantee)",
            test=f"{_TEST}::test_m_plus_1_against_brute_force",
        )
    )
    learn: list[Any] = [
        Text(
            "learn_m_plus_1",
            f"What stays unique at {m + 1} items: an adversary who knows {m + 1} items of a basket "
            f"singles out about {_pct(rel_out['unique_share'])} of the records ({rel_out['unique']:,} of "
            f"{rel_out['targets']:,} {how}) and narrows {_pct(rel_out['rare_share'])} to fewer than {k}.",
        ),
        Value(
            "learn_m_plus_1_unique",
            f"Records singled out by {m + 1} known items (release)",
            100.0 * rel_out["unique_share"],
            unit="%",
            note=how,
        ),
    ]
    if original is not None:
        org = singled_out(original, m + 1, k, **ckw)
        learn.append(
            Value(
                "learn_m_plus_1_unique_original",
                f"Records singled out by {m + 1} known items (original)",
                100.0 * org["unique_share"],
                about="original",
                unit="%",
                note=_how(org),
            )
        )
    figs.learn += learn
    have = {i.id for i in figs.utility}
    figs.headline = [i for i in ("km_items_published_as_is", "km_ncp", "itemsets_sigma_minus") if i in have][:3]
    return figs


def _how(r: dict[str, Any]) -> str:
    """Which records were examined, for the sentences: all, or a sample (and a lower bound)."""
    size = f"with at least {r['size']} items"
    if not r["sampled"] and not r["subsets_capped"]:
        return f"records {size}, all examined"
    text = f"sampled records {size} (of {r['eligible']:,})" if r["sampled"] else f"records {size}"
    return text + (f"; at most {r['max_subsets']} combinations each, so a lower bound" if r["subsets_capped"] else "")


def km_utility(rel: Any, original: Any, ckw: dict[str, Any]) -> Figures:
    """Utility of a k^m release at the generalised level (module docstring), and the share of
    item occurrences published as themselves."""
    from ..metrics.report_figures import utility_figures
    from ..progress import compute

    images = item_images(rel, original)
    if images is None:
        return Figures(
            notes=[
                "itemset utility: a given hierarchy is the owner's, so the original's items cannot be mapped "
                "through the release's generalisation here (the report made with the release shows it)"
            ]
        )
    gen = generalised(original, rel.data, images)
    if gen is None:
        return Figures(notes=["itemset utility: an item of the original has no published label (not this release's input?)"])
    (counts,) = compute(original.item_supports_lazy(), **ckw)
    counts = np.asarray(counts, np.float64)
    kept = np.array([images.get(str(x)) == str(x) for x in original.vocabulary.labels], bool)
    share = float(counts[kept].sum() / counts.sum()) if counts.sum() else 1.0
    figs = Figures(
        utility=[
            Value(
                "km_items_published_as_is",
                "Item occurrences published as themselves (not generalised)",
                100.0 * share,
                about="comparison",
                unit="%",
                score=True,
                note=f"{int(kept.sum()):,} of {kept.size:,} items kept; the others are published as a range of the hierarchy",
            )
        ]
    )
    ncp = (rel.figures.get("utility") or {}).get("ncp")
    hier = _balanced(rel, original) if not isinstance(ncp, (int, float)) else None
    if hier is not None:  # read back: the NCP of the cut the published labels show, as the job computed it
        from .km import ncp_km

        items = {str(x) for x in original.vocabulary.labels}
        ncp = ncp_km(
            sorted({v for v in images.values() if v not in items}),
            hier,
            dict(zip([str(x) for x in original.vocabulary.labels], counts.astype(np.int64).tolist())),
        )
    if isinstance(ncp, (int, float)):
        figs.utility.append(
            Value(
                "km_ncp",
                "Information loss NCP of the generalisation",
                100.0 * float(ncp),
                about="comparison",
                unit="%",
                score=True,
                note="0 % publishes every item as itself, 100 % every item as the root",
            )
        )
    u = utility_figures(gen, rel.data, rel.report_min_support, max_length=rel.report_max_length, **ckw)
    level = (
        "; at the generalised level: the original's items mapped through the release's generalisation (0 for a global "
        "recoding: the loss is in the generalisation itself)"
    )
    u.utility = [replace(i, note=i.note + level) if isinstance(i, Value) else i for i in u.utility]
    return figs + u
