"""The release of k^m-anonymised transactions.

:class:`KmRelease` holds the generalised transactions of
:class:`~ppdm_dask.anonymity.estimators.KmAnonymizer`; written in the ppdm transaction layout
(so :func:`ppdm_dask.read` reads it like any dataset) or as one basket CSV file, in the keyed
row order, verified on the written files before the commit.

Its guarantee is recounted from the released transactions alone — every itemset of at most m
published items is supported 0 or >= k times (``k^m-anonymity``, counted without any hierarchy)
— and the ``transaction count`` of the files matches the manifest (in memory: the input's, a
figure only the owner holds).
Against the original (all order-free, since the release is shuffled; without it these are
listed as not checked, :meth:`KmRelease.original_only_checks`):

* ``transactions`` — one released transaction per original transaction;
* ``transaction lengths`` — global generalisation maps each transaction to one of at most its
  length, and an empty one to an empty one: so as many empty transactions, and for every L at
  most as many released transactions of >= L items as original ones;
* ``published items`` — every released item is an item of the original or a node of the cut
  the anonymiser chose (the owner's: the release in memory, or adopted by the job that wrote
  it); read back without it, the released items are no more than the original's.

Public files hold nothing about the input beyond the release: the public parameters (k, m, the
kind of hierarchy — never a file name) and the released transactions; the input's item count,
the cut and the NCP are the owner's (:meth:`Release.summary`, the internal report).

Report figures (:meth:`KmRelease.report_figures`): the k^m audit curve is the risk figure —
itemsets of at most m items supported by 1 to k - 1 released transactions, m = 1..the release's
m, which must be 0 for the release (and, with the original, the original's curve beside it) —
plus the share of unique baskets; with the original, the frequent itemsets of the release
against the original's at the generalised level (the original's items mapped through the
release's generalisation first: σ⁺, σ⁻, ρ and a support scatter), the share of item occurrences
published as themselves and the NCP; and the officer's summary (:mod:`.km_threat`: the guarantee
in words, what stays unique at m + 1 known items).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..release import Check, Figures, TransactionRelease
from ..release.base import floor_check
from .km import check_km_anonymity

__all__ = ["KmRelease"]

#: checks that need the original: their names in :meth:`original_only_checks` and in the checks
_ROWS_CHECK = "transactions"
_LENGTHS_CHECK = "transaction lengths"
_ITEMS_CHECK = "published items"


def _label_dict(labels: Any) -> dict[str, Any]:
    return {"label": labels}


class KmRelease(TransactionRelease):
    """k^m-anonymous transactions; parameters ``k``, ``m`` (and the hierarchy used)."""

    family: ClassVar[str] = "km"
    #: the owner's generalisation (input item label -> published label), never written: set by
    #: the anonymiser, kept by :meth:`_adopt`; the report compares itemsets through it
    item_images: dict[str, str] | None = None

    def __init__(self, data: Any, *, item_images: dict[str, str] | None = None, **kwargs: Any) -> None:
        """As :class:`~ppdm_dask.release.Release`, plus the owner's ``item_images`` (see the attribute)."""
        super().__init__(data, **kwargs)
        self.item_images = item_images

    #: relative mining threshold and longest itemsets of the utility figures
    report_min_support: ClassVar[float] = 0.01
    report_max_length: ClassVar[int] = 3

    @classmethod
    def parameter_floors(cls, method: str, parameters: Mapping[str, Any], overrides: Sequence[str] = ()) -> list[Check]:
        k = parameters.get("k")
        return [floor_check("k >= 2", k is not None and k >= 2, k, 2, "k^m-anonymity with k = 1 protects nobody", overrides)]

    # ------------------------------------------------------------------ ledger hooks
    def ledger_figures(self) -> dict[str, Any]:
        """What the ledger keeps to compose later releases: k and m."""
        return {"k": int(self.parameters["k"]), "m": int(self.parameters["m"])}

    def ledger_columns(self) -> dict[str, str]:
        """Per person: the class label (the set of the released baskets of the person)."""
        return {"label": "set"}

    def ledger_rows(self, blocks: list[Any]) -> list[Any]:
        """Per transaction, in the input's order: the 64-bit label of its class (the hash of its
        whole released itemset), one task per block (:func:`.composition.basket_labels`)."""
        import dask

        from ..data.fingerprints import label_hashes
        from .composition import basket_labels

        hashes = dask.delayed(label_hashes, pure=True)(np.asarray(self.data.vocabulary.labels))  # once, not per block
        return [dask.delayed(_label_dict, pure=True)(dask.delayed(basket_labels, pure=True)(b, hashes)) for b in blocks]

    def ledger_people_extra(self) -> dict[str, Any]:
        return {"k": int(self.parameters["k"]), "m": int(self.parameters["m"])}

    COMPOSES_WITH: ClassVar[tuple[str, ...]] = ("relational", "km")

    def compose(self, earlier: Sequence[Any], ledger: Any, people: Any = None) -> Any:
        """The intersection of this release's classes with those of the earlier table releases
        that share its input or its people (:func:`.composition.compose_tables`)."""
        from .composition import compose_tables

        return compose_tables(self, earlier, ledger, people)

    def _adopt(self, fitted: Any) -> KmRelease:
        """The owner's figures (input items, the cut, NCP) and generalisation map from the release in memory."""
        if isinstance(fitted, KmRelease) and fitted.manifest is None:
            self.figures = {**self.figures, **fitted.figures}
            self.item_images = fitted.item_images
        return self

    def original_only_checks(self) -> list[tuple[str, str]]:
        return [
            (_ROWS_CHECK, "the original's transaction count"),
            (_LENGTHS_CHECK, "the original's transaction lengths"),
            (_ITEMS_CHECK, "the original's items"),
        ]

    def guarantee_checks(self, original: Any = None, **compute_kwargs: Any) -> list[Check]:
        ckw = {"progress": False, **compute_kwargs}
        checks = list(check_km_anonymity(self.data, int(self.parameters["k"]), int(self.parameters["m"]), **ckw))
        n = self.data.n_transactions
        if self.manifest is not None:  # written: the files against the manifest (the input's count is not published)
            listed = self.manifest.get("n_transactions")
            if listed is not None:
                checks.append(
                    Check(
                        "transaction count",
                        int(listed) == n,
                        n,
                        int(listed),
                        detail="transactions in the files = the manifest's n_transactions",
                    )
                )
        elif self.input_info.get("rows") is not None:  # in memory, for the owner
            expected = int(self.input_info["rows"])
            checks.append(
                Check("transaction count", expected == n, n, expected, detail="one released transaction per input transaction")
            )
        if original is not None:
            checks += self._original_checks(original, **ckw)
        return checks

    def _original_checks(self, original: Any, **compute_kwargs: Any) -> list[Check]:
        from ..progress import compute
        from .km import as_transactions

        orig = as_transactions(original)
        rel = self.data
        n_rel, n_orig = rel.n_transactions, orig.n_transactions
        checks = [Check(_ROWS_CHECK, n_rel == n_orig, n_rel, n_orig, detail="one released transaction per original transaction")]
        rl, ol = compute(rel.row_lengths(), orig.row_lengths(), **compute_kwargs)
        rl, ol = np.asarray(rl, dtype=np.int64), np.asarray(ol, dtype=np.int64)
        top = int(max(rl.max(initial=0), ol.max(initial=0))) + 1
        # transactions with >= L items, for every L
        at_least_rel = np.cumsum(np.bincount(rl, minlength=top)[::-1])[::-1]
        at_least_orig = np.cumsum(np.bincount(ol, minlength=top)[::-1])[::-1]
        empty_rel, empty_orig = int((rl == 0).sum()), int((ol == 0).sum())
        longer = np.flatnonzero(at_least_rel[1:] > at_least_orig[1:])
        ok = empty_rel == empty_orig and not longer.size
        where = (
            f"transactions of >= {int(longer[0]) + 1} items"
            if longer.size
            else ("empty transactions" if empty_rel != empty_orig else None)
        )
        checks.append(
            Check(
                _LENGTHS_CHECK,
                ok,
                empty_rel,
                empty_orig,
                where=where,
                detail="generalisation never lengthens a transaction nor empties one (figure: empty transactions)",
            )
        )
        cut = (self.figures.get("utility") or {}).get("cut")
        labels = [str(x) for x in rel.vocabulary.labels]
        if cut is not None:
            allowed = {str(x) for x in orig.vocabulary.labels} | {str(x) for x in cut}
            foreign = [x for x in labels if x not in allowed]
            checks.append(
                Check(
                    _ITEMS_CHECK,
                    not foreign,
                    len(foreign),
                    0,
                    where=f"{len(foreign)} label(s), e.g. {foreign[0]!r}" if foreign else None,
                    detail="every released item is an original item or a node of the anonymiser's cut",
                )
            )
        else:  # read back without the owner's cut: a global recoding publishes at most as many items
            n_items = len(orig.vocabulary.labels)
            checks.append(
                Check(
                    _ITEMS_CHECK,
                    len(labels) <= n_items,
                    len(labels),
                    n_items,
                    detail="released items <= the original's items (a global generalisation maps items onto "
                    "nodes; the cut itself is the owner's)",
                )
            )
        return checks

    # ------------------------------------------------------------------ report
    def report_figures(self, original: Any = None, **compute_kwargs: Any) -> Figures:
        """Risk: the k^m audit curve (ids ``km_audit_release``, ``km_rare_itemsets_release``;
        with the original ``km_audit_original``, ``km_rare_itemsets_original``) for m = 1..the
        release's m, and the unique-basket shares (``unique_baskets_release`` / ``_original``).
        Utility (with the original): ``itemsets_sigma_plus``, ``itemsets_sigma_minus``,
        ``itemsets_rho``, ``itemsets_support_scatter`` at :attr:`report_min_support` (1 %),
        itemsets of at most :attr:`report_max_length` items, compared at the generalised level,
        and ``km_items_published_as_is``, ``km_ncp``. See
        :mod:`ppdm_dask.metrics.report_figures` and :mod:`.km_threat` (the summary fields)."""
        from ..metrics.report_figures import audit_figures, compute_options, unique_basket_figures
        from .km import as_transactions
        from .km_threat import km_threat, km_utility

        if isinstance(original, str):
            original = type(self).read_original(original)
        orig = as_transactions(original) if original is not None else None
        ckw = compute_options(compute_kwargs)
        k, m = int(self.parameters["k"]), int(self.parameters["m"])
        figs = audit_figures(self.data, orig, k, m, guaranteed_m=m, **compute_kwargs)
        figs += unique_basket_figures(self.data, orig, **compute_kwargs)
        if orig is None:
            figs.needs_original.append("the utility figures (frequent itemsets against the original) need the original data")
            return km_threat(self, figs, None, ckw)
        return km_threat(self, figs + km_utility(self, orig, ckw), orig, ckw)
