"""Repeated KRIMP generator releases of one input: the union of their generated rows against
the original (docs/krimp.md#repeated-releases).

Each release generates its rows afresh (another key, other parameters); whoever holds several
holds their union. The ledger counts the releases (:func:`compose`); the owner's report
measures the union of this release with every earlier one still readable
(:mod:`ppdm_dask.ledger.earlier`) with the same row comparison as one release
(:func:`.release.compare_counts`: 128-bit row fingerprints, :mod:`.scores`), the distinct rows
of all releases counted together:

``union_unique_copies``
    Rows of the union equal to a record unique in the original.
``union_unique_records_copied``
    Distinct unique original records that appear verbatim in the union, and in the note those
    of this release alone. More in the union than in this release is a warning (the summary
    turns amber): the earlier releases give away records this one keeps (each release that
    redraws its copies copies none; a release whose owner allowed copies does).
``union_rows_copying_records``
    The distance to closest record at 0: share of the union's rows equal to an original
    record (against ``records_shared``, the share of original records equal to another).
``union_rows_reproduced``, ``union_nas``
    Original records whose exact item set is a row of the union, and the normalized anonymity
    score of the union.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..data.fingerprints import merge_fingerprint_counts
from ..ledger.compose import Composition
from ..ledger.earlier import Earlier, composition_of, count_composition, open_earlier, union_start
from ..ledger.store import Record
from ..release.figures import Figures, Text, Value

if TYPE_CHECKING:
    from .release import GeneratedRelease

__all__ = ["compose", "ledger_figures", "union_figures", "union_opened"]


def ledger_figures(rel: GeneratedRelease) -> dict[str, Any]:
    """What the ledger keeps of a generator release: the rows generated and its public figures."""
    return {"rows": rel.parameters.get("n_rows"), **rel.public_privacy()}


def compose(rel: GeneratedRelease, earlier: Sequence[Record], ledger: Any, people: Any = None) -> Composition:
    """The number of releases of the input and which earlier ones are readable
    (:func:`~ppdm_dask.ledger.earlier.count_composition`)."""
    return count_composition(rel, earlier)


def union_opened(rel: GeneratedRelease) -> list[Earlier]:
    """The earlier releases of ``rel``'s composition, read back."""
    comp = composition_of(rel)
    return open_earlier(comp.earlier, rel.family) if comp is not None and comp.earlier else []


def union_figures(rel: GeneratedRelease, original: Any = None, **ckw: Any) -> Figures:
    """The figures of the union of ``rel`` with its readable earlier releases against the
    original (a TransactionArray; see the module docstring): one pass over the original and
    over every release. Empty for a release without earlier ones."""
    from ..progress import compute
    from .release import compare_counts
    from .scores import fingerprint_counts_lazy

    fig, good = union_start(rel.family, union_opened(rel), original, "the copies")
    if not good:
        return fig
    ckw = {"client": ckw.get("client"), "progress": bool(ckw.get("progress", False))}
    (fo, co), mine, *theirs = compute(
        fingerprint_counts_lazy(original),
        fingerprint_counts_lazy(rel.data),
        *[fingerprint_counts_lazy(r.data) for r in good],
        **ckw,
    )
    alone = compare_counts(fo, co, *mine)
    union = compare_counts(fo, co, *merge_fingerprint_counts([mine, *theirs]))
    n = len(good) + 1
    what = f"the union of {n} releases ({union['rows']:,} rows)"
    fig.risk += [
        Value(
            "union_unique_copies",
            f"Rows of {what} equal to a record unique in the original",
            union["unique_copy_rows"],
            about="comparison",
            unit="rows",
            note=f"this release alone: {alone['unique_copy_rows']:,}",
        ),
        Value(
            "union_unique_records_copied",
            f"Unique original records that appear verbatim in {what}",
            union["unique_copied"],
            about="comparison",
            unit="records",
            note=f"of the original's {union['unique_records']:,} unique records; this release alone copies "
            f"{alone['unique_copied']:,}",
        ),
        Value(
            "union_rows_copying_records",
            f"Rows of {what} equal to an original record",
            100.0 * union["rows_copying"] / max(1, union["rows"]),
            about="comparison",
            unit="%",
            note=f"{union['rows_copying']:,} of {union['rows']:,} rows (distance 0 to the closest record); this "
            f"release alone: {alone['rows_copying']:,} of {alone['rows']:,}",
        ),
        Value(
            "union_rows_reproduced",
            f"Original records reproduced exactly in {what}",
            100.0 * union["records_reproduced"] / max(1, union["records"]),
            about="comparison",
            unit="%",
            note=f"{union['records_reproduced']:,} of {union['records']:,} records; this release alone: "
            f"{alone['records_reproduced']:,}",
        ),
        Value(
            "union_nas",
            f"Normalized anonymity score NAS of {what}",
            union["nas"],
            about="comparison",
            note=f"this release alone: {alone['nas']:.4g}; 0: no original record reappears",
        ),
    ]
    if union["unique_copied"] > alone["unique_copied"]:
        fig.warnings.append(
            Text(
                "union_copies",
                f"the union of this release with {n - 1} earlier release(s) of its input "
                f"copies {union['unique_copied']} record(s) unique in the original, this release alone "
                f"{alone['unique_copied']}: whoever holds them all holds those records",
                about="comparison",
            )
        )
    return fig
