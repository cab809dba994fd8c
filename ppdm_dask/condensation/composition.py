"""Repeated condensed releases of one input: the union of their pseudo-records against the
original (docs/condensation.md#repeated-releases).

Each release of an input draws its pseudo-records afresh (another key, other parameters, the
other condenser); whoever holds several holds their union. The ledger counts the releases
(:func:`compose`); the owner's report measures the union of this release with every earlier
release still readable (:mod:`ppdm_dask.ledger.earlier`) with the same code as one release
(:mod:`.copies`, :mod:`.closest`), on the pseudo-records of all of them at once:

``union_pseudo_copies``
    Pseudo-records of the union equal to an original record no other original shares (exactly,
    every row; within float tolerance, the rows measured).
``union_originals_copied``
    Distinct unique original records that some pseudo-record of the union equals exactly, and
    in the note those this release copies alone. More in the union than in this release is a
    warning (the summary turns amber): the earlier releases give away records this one keeps.
``union_dcr_median``, ``union_dcr_p5``
    Median and 5th percentile of the distance of the union's measured pseudo-records to their
    closest original.
``union_dcr_closer_than_neighbour``, ``union_dcr_below_original_p5``
    Shares of the union's measured pseudo-records closer to their closest original than that
    original's nearest other original, and than the originals' 5th-percentile nearest-neighbour
    distance (about 5 % for records of the population that were not condensed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ledger.compose import Composition
from ..ledger.earlier import Earlier, composition_of, count_composition, open_earlier, union_start
from ..ledger.store import Record
from ..release.figures import Figures, Text, Value

if TYPE_CHECKING:
    from .release import CondensedRelease

__all__ = ["compose", "ledger_figures", "union_figures", "union_opened"]


def ledger_figures(rel: CondensedRelease) -> dict[str, Any]:
    """What the ledger keeps of a condensed release: the pseudo-records released and the
    public figures of its groups."""
    return {"pseudo_records": int(np.asarray(rel.published.get("n", [])).sum()), **rel.public_privacy()}


def compose(rel: CondensedRelease, earlier: Sequence[Record], ledger: Any, people: Any = None) -> Composition:
    """The number of releases of the input and which earlier ones are readable
    (:func:`~ppdm_dask.ledger.earlier.count_composition`)."""
    return count_composition(rel, earlier)


def union_opened(rel: CondensedRelease) -> list[Earlier]:
    """The earlier releases of ``rel``'s composition, read back; one of other attributes is not
    readable as part of the union."""
    comp = composition_of(rel)
    if comp is None or not comp.earlier:
        return []
    opened = open_earlier(comp.earlier, rel.family)
    for e in opened:
        if e.readable and list(e.release.columns) != list(rel.columns):
            e.release, e.reason = None, f"other attributes ({', '.join(map(str, e.release.columns))}): not part of the union"
    return opened


def _distinct(ids: np.ndarray) -> int:
    return int(np.unique(ids, axis=0).shape[0]) if ids.size else 0


def union_figures(rel: CondensedRelease, original: Any = None, **ckw: Any) -> Figures:
    """The figures of the union of ``rel`` with its readable earlier releases against the
    original (as :meth:`~.release.CondensedRelease.report_figures` takes it; see the module
    docstring). Empty for a release without earlier ones."""
    from .closest import COPY_RTOL, closeness
    from .copies import exact_copies

    fig, good = union_start(rel.family, union_opened(rel), original, "the copies and distances")
    if not good:
        return fig
    ckw.setdefault("progress", False)
    X = rel._original_arrays(original)[0]
    if int(X.shape[1]) != rel.d:
        return fig
    X = X.rechunk({1: -1})
    own = list(rel.data.to_delayed())
    parts = own + [p for r in good for p in r.data.to_delayed()]
    released = int(sum(np.asarray(r.published["n"]).sum() for r in [rel, *good]))
    exact = exact_copies(parts, list(X.to_delayed().ravel()), **ckw)
    near = closeness(parts, released, X, **ckw)
    close_only = int(np.count_nonzero(near.unique_copies & (near.dcr > 0)))
    unique = exact.unique
    copied = _distinct(exact.original[unique])
    copied_here = _distinct(exact.original[unique & (exact.pseudo[:, 0] < len(own))])
    n = len(good) + 1
    sampled = "" if near.measured >= released else f" (a public-seeded sample of {near.measured:,} of {released:,})"
    union = f"the union of {n} releases ({released:,} pseudo-records)"
    fig.risk += [
        Value(
            "union_pseudo_copies",
            f"Pseudo-records of {union} copying a unique original record",
            exact.n_unique + close_only,
            about="comparison",
            unit="records",
            note=f"{exact.n_unique} equal exactly (every row), {close_only} more within a relative {COPY_RTOL:g} "
            f"(rows measured{sampled})",
        ),
        Value(
            "union_originals_copied",
            f"Unique original records that {union} copies",
            copied,
            about="comparison",
            unit="records",
            note=f"this release alone copies {copied_here}; exact equality, every row",
        ),
    ]
    if near.measured:
        dcr5, nn5, _ = near.percentile(5)
        note = f"{near.measured:,} pseudo-records measured{sampled}; Euclidean in the attributes' units"
        fig.risk += [
            Value(
                "union_dcr_median",
                f"Median distance to the closest original, {union}",
                float(np.median(near.dcr)),
                about="comparison",
                note=note,
            ),
            Value(
                "union_dcr_p5", f"Distance to the closest original, 5th percentile, {union}", dcr5, about="comparison", note=note
            ),
            Value(
                "union_dcr_closer_than_neighbour",
                f"Pseudo-records of {union} closer to an original than that original's nearest other original",
                100.0 * near.share_closer,
                about="comparison",
                unit="%",
                note=note,
            ),
            Value(
                "union_dcr_below_original_p5",
                f"Pseudo-records of {union} closer to an original than the originals' 5th-percentile nearest-neighbour distance",
                100.0 * float(np.mean(near.dcr < nn5)),
                about="comparison",
                unit="%",
                note=note + f" ({nn5:.4g}); fresh records of the same population: about 5 %",
            ),
        ]
    if copied > copied_here:
        fig.warnings.append(
            Text(
                "union_copies",
                f"the union of this release with {n - 1} earlier release(s) of its input "
                f"copies {copied} unique original record(s), this release alone {copied_here}: whoever "
                "holds them all holds those records",
                about="comparison",
            )
        )
    return fig
