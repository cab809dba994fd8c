"""The EMASK estimator: check the privacy floor on the data, then release its distortion."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..base import Transformer, check_is_fitted
from ..errors import InvalidParameter, WeakParameterError
from ..release.base import overrides_for
from .composition import json_number, person_basic_privacy
from .distortion import DISTORTION_CONSTRAINTS, check_pq, distort
from .privacy import basic_privacy, ldp_epsilon
from .release import BASIC_PRIVACY, FLOORS, DistortedRelease, nnz_lazy

__all__ = ["Distorter"]


class Distorter(Transformer):
    """EMASK / MASK distortion as an estimator (docs/emask.md#distortion).

    ``fit`` measures the average item support s0 of the data and the basic privacy BP(p, q, s0)
    and refuses parameters below the floor before anything is distorted; :meth:`release` returns
    the :class:`~ppdm_dask.emask.release.DistortedRelease` of the fitted data, ``transform(X)``
    that of other data distorted with the same parameters (a transformer: the distortion
    applies to any transactions).

    Parameters
    ----------
    p, q : float
        A 1 stays 1 with probability ``p``; a 0 stays 0 with probability ``q`` (p + q != 1).
    key : Key, int or bytes, optional
        Secret key of the distortion and of the release's row order; a fresh secret key drawn
        at :meth:`fit` when omitted (``key_``). Never shown or written.
    privacy_floor : float, default 90.0
        Smallest acceptable basic privacy in percent (the floor of ``ppdm emask choose``).
    allow_weak : bool or sequence of str, default False
        Accept failing floors: ``True`` every one, or a list of floor names (``"basic privacy"``);
        the overridden floors are recorded in the release manifest.
    items : sequence, optional
        A public item catalogue, fixed before the data are seen, listing every item the data
        can hold (labels of the data's type): the release's item universe. Every item of it is
        distorted, including those no basket holds, and s0 is over it. Without it the universe
        is the input's own item list, which the release publishes: it tells which items some
        original basket holds (docs/emask.md#the-item-universe).
    epsilon_budget : float, optional
        The most local-DP ε per item that all the releases of the input may add up to
        (docs/emask.md#repeated-releases): a release whose composition with the earlier ones in
        the ledger goes beyond it is refused when written, unless ``write(...,
        allow_composition=True)`` (recorded in the manifest). The smallest budget given with any
        release of the input holds. Without it the composition is held to the privacy floor
        alone. Not part of the release's identity: it does not change the release's noise.
    ledger : "default", Ledger, str or None, default "default"
        Where the releases are recorded (:class:`~ppdm_dask.ledger.Ledger`, or its location):
        ``"default"`` the user's; None opts out (the manifest says so). Handed to the
        releases, whose :meth:`~ppdm_dask.release.Release.write` records them.

    Attributes
    ----------
    s0_ : float
        Average item support of the fitted data, nnz / (N·d).
    basic_privacy_ : float
        BP(p, q) at ``s0_``, percent.
    overrides_ : tuple of str
        Floors that fail and were overridden.
    key_ : Key
        The key of every release of this fit (resolved at :meth:`fit`).
    report_ : dict
        ``n_transactions``, ``n_items``, ``s0``, ``basic_privacy``, ``ldp_epsilon_per_item``,
        ``privacy_floor``, ``overrides``.
    """

    def __init__(
        self,
        p: float,
        q: float,
        *,
        key: Any = None,
        privacy_floor: float = 90.0,
        allow_weak: bool | Sequence[str] = False,
        items: Sequence[Any] | None = None,
        epsilon_budget: float | None = None,
        ledger: Any = "default",
    ) -> None:
        self.p = p
        self.q = q
        self.key = key
        self.privacy_floor = privacy_floor
        self.allow_weak = allow_weak
        self.items = items
        self.epsilon_budget = epsilon_budget
        self.ledger = ledger

    def _universe(self, tx: Any) -> Any:
        """``tx`` on its item universe: the catalogue's columns when ``items`` is given."""
        if self.items is None:
            return tx
        from .items import catalogue_vocabulary, on_vocabulary

        return on_vocabulary(tx, catalogue_vocabulary(self.items))

    _parameter_constraints = DISTORTION_CONSTRAINTS

    def _validated(self) -> tuple[float, float, float, frozenset[str]]:
        v = self.validate_params()
        p, q = check_pq(v["p"], v["q"])
        return p, q, v["privacy_floor"], frozenset(overrides_for(self.allow_weak, FLOORS))

    def _budget(self) -> float | None:
        """``epsilon_budget``: None or a positive finite number of ε per item."""
        return self.validate_params()["epsilon_budget"]

    def _assess(self, tx: Any, *, client: Any = None, progress: bool = False) -> dict[str, Any]:
        """s0 and BP of ``tx``; raises :class:`WeakParameterError` below a floor not overridden."""
        from ..data.digest import content_digest_lazy
        from ..progress import compute

        p, q, floor, allowed = self._validated()
        # the content digest names the input as given; s0 is over the item universe
        n, d = tx.n_transactions, self._universe(tx).n_items
        if n == 0 or d == 0:
            raise InvalidParameter("no transactions or no items: s0 (and basic privacy) is undefined")
        from ..data.persons import histogram_figures, records_per_person_lazy, transaction_people

        people = transaction_people(tx)
        # one pass: the ones, the content digest that names the input in the release's identity,
        # and (a person known) the baskets of every person
        lazy = [nnz_lazy(tx), content_digest_lazy(tx)] + ([records_per_person_lazy(people)] if people.known else [])
        nnz, digest, *hist = compute(*lazy, client=client, progress=progress)
        s0 = int(nnz[0]) / (n * d)
        if not 0.0 < s0 < 1.0:
            raise InvalidParameter(
                f"the data has {'no ones' if s0 == 0 else 'every item in every row'}: basic privacy is undefined"
            )
        bp = basic_privacy(p, q, s0=s0)
        per_person = histogram_figures(hist[0]) if hist else None
        copies = int(per_person["max"]) if per_person else 1
        # the floor holds for the person: an item a person has (or lacks) in each of their b baskets
        # is b distorted copies of one bit (docs/emask.md#the-person)
        bp_person = person_basic_privacy(p, q, s0, copies) if copies > 1 else bp
        weak = [] if bp_person >= floor else [BASIC_PRIVACY]
        refused = [w for w in weak if w not in allowed]
        if refused and copies > 1:
            raise WeakParameterError(
                f"basic privacy {bp_person:.2f}% of a person's item over their {copies} baskets (p={p}, q={q}, at "
                f"s0 = {s0:.4g}; {bp:.2f}% for one basket) is below the floor {floor:g}%; refused",
                python="max_baskets_per_user=N when grouping the events, other p, q, lower privacy_floor, or "
                "allow_weak=['basic privacy'] (recorded in the manifest)",
                fix="bound the baskets per person with `max_baskets_per_user`, choose other `p`/`q`, lower "
                "`privacy_floor`, or `allow_weak` (recorded in the manifest)",
            )
        if refused:
            raise WeakParameterError(
                f"basic privacy {bp:.2f}% of p={p}, q={q} at s0 = {s0:.4g} is below the floor {floor:g}% "
                "(ppdm emask choose lists pairs that meet it); refused",
                python="choose other p, q, lower privacy_floor, or allow_weak=['basic privacy'] (recorded in the manifest)",
                fix="choose other `p`/`q`, lower `privacy_floor`, or `allow_weak` (recorded in the manifest)",
            )
        eps = ldp_epsilon(p, q)
        out = {
            "n_transactions": n,
            "n_items": d,
            "s0": s0,
            "basic_privacy": bp,
            "ldp_epsilon_per_item": eps,
            "privacy_floor": floor,
            "overrides": weak,
            "_input_digest": digest,
            "_people": people,
        }
        if per_person is not None:
            out["person"] = people.describe()
            out["baskets_per_person"] = per_person
            out["basic_privacy_per_person"] = bp_person
            out["epsilon_per_person"] = {q_: json_number(per_person[q_] * eps) for q_ in ("median", "p90", "max")}
            if people.bound is not None:
                out["max_baskets_per_person"] = int(people.bound)
        return out

    def fit(self, X: Any, *, client: Any = None, progress: bool = False) -> Distorter:
        """Measure s0 and BP on ``X`` (a TransactionArray; one pass) and check the floor."""
        from ..data.sources import collection_name

        report = self._assess(X, client=client, progress=progress)
        self._resolve_key()
        self.s0_ = report["s0"]
        self.basic_privacy_ = report["basic_privacy"]
        self.overrides_ = tuple(report["overrides"])
        self._input_digest = report.pop("_input_digest")  # private: never in report_ or any output
        self._people = report.pop("_people")
        self.report_ = report
        self._fitted_on = collection_name(X)
        self._fitted_X = X
        return self

    def release(self, *, client: Any = None, progress: bool = False) -> DistortedRelease:
        """The release of the distortion of the fitted data (lazy; :meth:`DistortedRelease.write`
        writes and verifies it)."""
        check_is_fitted(self)
        return self.transform(self._fitted_X)

    def transform(self, X: Any) -> DistortedRelease:
        """The release of the distortion of ``X`` (lazy; :meth:`DistortedRelease.write` writes
        and verifies it). ``X`` other than the fitted data is assessed (and floored) again."""
        from ..data.sources import collection_name, source_of

        check_is_fitted(self)
        if X is None:
            raise InvalidParameter("Distorter.transform needs the transactions to distort (transform(tx))")
        if collection_name(X) == self._fitted_on:
            report, digest, people = self.report_, self._input_digest, self._people
        else:
            report = self._assess(X)
            digest, people = report.pop("_input_digest"), report.pop("_people")
        p, q = check_pq(self.p, self.q)
        key = self.key_
        eps = report["ldp_epsilon_per_item"]
        # public parameters only: s0 is a figure of the original (with N and n_items, its exact
        # number of ones); it stays in the owner's figures below
        parameters = {"p": p, "q": q, "privacy_floor": report["privacy_floor"], "n_items": report["n_items"]}
        if report.get("max_baskets_per_person") is not None:  # the events' bound: a public parameter
            parameters["max_baskets_per_person"] = int(report["max_baskets_per_person"])
        if self.items is not None:  # a public catalogue: part of the identity, so of the streams
            from .items import catalogue_digest, catalogue_vocabulary

            parameters["item_catalogue"] = catalogue_digest(catalogue_vocabulary(self.items))
        method = "mask" if p == q else "emask"
        # the distortion draws from the release's own streams (key + identity): one key file
        # never gives two releases correlated noise
        data = distort(self._universe(X), p, q, key=DistortedRelease.streams_for(key, method, parameters, digest))
        figures: dict[str, Any] = {
            "records": {"transactions": report["n_transactions"], "items": report["n_items"]},
            # an infinite epsilon (p or q in {0, 1}) is written as "inf": the manifest stays strict JSON
            "privacy": {
                "s0": report["s0"],
                "basic_privacy": report["basic_privacy"],
                "ldp_epsilon_per_item": eps if math.isfinite(eps) else "inf",
                **{
                    k: report[k]
                    for k in ("person", "baskets_per_person", "basic_privacy_per_person", "epsilon_per_person")
                    if k in report
                },
            },
        }
        release = DistortedRelease(
            data,
            method=method,
            parameters=parameters,
            figures=figures,
            key=key,
            source=source_of(X),
            input_info={"rows": report["n_transactions"], "n_items": report["n_items"]},
            overrides=report["overrides"],
            input_digest=digest,
            # the ledger's business, not the release's identity: its write records and budgets it
            ledger=self.ledger,
            epsilon_budget=self._budget(),
            people=people,
        )
        return release
