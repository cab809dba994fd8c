"""Dynamic (streaming) maintenance of condensed groups (Aggarwal & Yu §3; stream tag 3;
docs/condensation.md#dynamic-maintenance).

:class:`StreamingCondenser` initialises with the static algorithm on the first records of the
stream, then inserts every further record into the nearest group that can take it
(``insert(x, p)``): eligible groups have ``n >= p − 1`` (after insertion ``n >= p``), the nearest
centroid wins (ties: earliest group), the statistics are updated with Welford's formula and a
group with ``n² >= 2·Ps`` (Eq. 3.2, integer-safe; ``>`` with ``split_strict``) is split along its
principal axis (:meth:`CondensedGroup.split`).

Choices where the paper leaves freedom (all documented on the class):

* **Split placement.** A split group is replaced in place by its first child (size ``n//2``) and
  its second child is appended at the end of the group list. Children are re-checked
  breadth-first (FIFO queue: child 1, then child 2, then their children ...).
* **Pending pool** (docs/condensation.md#addition-the-pending-pool). A record for which no group is eligible waits in a private pool.
  After every insertion into a group the pool is retried: while some pooled record is eligible,
  the earliest-arrived eligible one is inserted (an insertion itself, so it may split groups and
  make others eligible). Whenever the pool changes and ``|pool| >= max level in it``, the pool
  becomes a new group appended at the end (statistics from its records), which is then subject
  to the same split check as any group produced by an insertion.
* **finalize()** turns a remaining pool into one group and applies the static Repair rule to it
  (docs/condensation.md#addition-the-final-repair):
  merge it into the group with the nearest centroid (ties: earliest); if the merged group is
  still smaller than the largest level of the pooled records, merge it in turn into its nearest
  group, and so on. Only the pooled records' levels are checked: a split child may be smaller
  than the inherited ``req`` — the paper accepts this, and so does the library
  (docs/condensation.md#clarification-split-children-may-be-smaller-than-their-members-levels).

Performance: the statistics live in preallocated, growing arrays; one numba kernel processes a
whole block of records (nearest eligible centroid + Welford update) and returns to Python only
for events (a split, a record for the pool, a pooled record becoming eligible).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from ..base import Estimator
from ..constraints import Interval, check
from ..errors import InfeasiblePrivacyError, InvalidParameter, NotFittedError
from ..random import KeyLike, Tag
from ._validate import check_levels, check_records
from .groups import CondensedGroup, GroupTable

__all__ = ["StreamingCondenser"]

# kernel events
_DONE, _POOL, _SPLIT, _RETRY = 0, 1, 2, 3
_NO_POOL = np.iinfo(np.int64).max  # "smallest pooled level" when the pool is empty


# --------------------------------------------------------------------------- kernels
@numba.njit(cache=True, nogil=True)
def _nearest(mean, n, G, x, p):  # pragma: no cover - compiled
    """Index of the nearest centroid among groups with ``n >= p − 1`` (ties: earliest), or −1."""
    d = x.shape[0]
    need = p - 1
    best = np.inf
    bg = -1
    for g in range(G):
        if n[g] < need:
            continue
        s = 0.0
        for a in range(d):
            t = x[a] - mean[g, a]
            s += t * t  # no early exit: the branch-free loop vectorises and is ~2x faster
        if bg < 0 or s < best:
            best = s
            bg = g
    return bg


@numba.njit(cache=True, nogil=True)
def _welford(n, mean, m2, ps, req, g, x, p):  # pragma: no cover - compiled
    """Add record x (level p) to group g; same arithmetic as CondensedGroup.add_point."""
    d = x.shape[0]
    n_old = n[g]
    n_new = n_old + 1
    n[g] = n_new
    r = n_old / n_new
    delta = np.empty(d)
    for a in range(d):
        delta[a] = x[a] - mean[g, a]
        mean[g, a] = mean[g, a] + delta[a] / n_new
    for a in range(d):
        for b in range(d):
            m2[g, a, b] = m2[g, a, b] + (delta[a] * delta[b]) * r
    ps[g] = ps[g] + p
    if p > req[g]:
        req[g] = p


@numba.njit(cache=True, nogil=True)
def _should_split(n, ps, g, strict):  # pragma: no cover - compiled
    lhs = n[g] * n[g]
    rhs = 2.0 * ps[g]
    return lhs > rhs if strict else lhs >= rhs


@numba.njit(cache=True, nogil=True)
def _run(X, P, start, n, mean, m2, ps, req, G, maxn, pool_minp, strict):  # pragma: no cover - compiled
    """Insert records ``start..`` until the block ends or an event needs Python.

    Returns ``(i, event, g)``: the record at which the event happened (already inserted into
    group g for _SPLIT / _RETRY; not inserted for _POOL), or ``(N, _DONE, -1)``.
    ``maxn[0]`` (largest group size) is kept up to date across insertions.
    """
    N = X.shape[0]
    for i in range(start, N):
        x = X[i]
        p = P[i]
        g = _nearest(mean, n, G, x, p)
        if g < 0:
            return i, _POOL, -1
        _welford(n, mean, m2, ps, req, g, x, p)
        if _should_split(n, ps, g, strict):
            return i, _SPLIT, g
        if n[g] > maxn[0]:
            maxn[0] = n[g]
        if pool_minp - 1 <= maxn[0]:  # some pooled record just became eligible
            return i, _RETRY, g
    return N, _DONE, -1


# --------------------------------------------------------------------------- validation
def _check_block(X: Any, privacy: Any, d: int | None) -> tuple[np.ndarray, np.ndarray]:
    X = check_records(X, where=" of the block")
    if d is not None and X.shape[1] != d:
        raise InvalidParameter(f"every block must have {d} attributes (as the first block), got {X.shape[1]}")
    return X, check_levels(privacy, X.shape[0], where=" of the block")


# --------------------------------------------------------------------------- the condenser
class StreamingCondenser(Estimator):
    """Dynamic maintenance of condensed groups (docs/condensation.md#dynamic-maintenance).

    Parameters
    ----------
    init_number : int, optional
        Records used for the static initialisation (the paper's InitNumber). The initialisation
        runs :func:`~.static.construct_groups` (stream ``(Tag.CONDENSE_DYNAMIC, 0)`` of the key)
        on the shortest prefix of the stream of length ``L >= init_number`` that is feasible
        (``L >= max level among its rows``) — exactly ``init_number`` rows whenever those are
        feasible. ``None``: the whole first block given to :meth:`partial_fit`, or, if that block
        is infeasible, the whole blocks buffered until they are feasible; :meth:`fit` uses
        ``ceil(0.1·N)`` (at least 1) with the same feasible-prefix rule.
    split_strict : bool, default False
        Split when ``n² > 2·Ps`` instead of ``>=`` (docs/condensation.md#clarification-the-split-condition).
    key : Key, int or bytes, optional
        Secret key (``None``: a fresh one, drawn when the stream starts: :meth:`fit` or the
        first :meth:`partial_fit`; ``key_``). The static initialisation, and in the release the
        pseudo-data and the row order, are random.
    repair_splits : bool, default True
        The release publishes the groups with the static Repair rule applied to every group
        smaller than the largest privacy level among its contributors — the split children the
        paper accepts (docs/condensation.md#clarification-split-children-may-be-smaller-than-their-members-levels)
        — so that every published group meets its members' levels. False
        publishes the paper's groups; the release then fails its check
        ``"group size >= largest privacy level"`` unless that name is in ``allow_weak``.
    privacy_levels, privacy_column, columns, allow_weak, publish_statistics, ledger
        As :class:`~.condenser.Condenser` (the first three used by :meth:`fit`).

    Attributes
    ----------
    groups_ : GroupTable
        Current groups (without the pending pool).
    n_pending_ : int
        Records in the pending pool (docs/condensation.md#addition-the-pending-pool).
    n_buffered_ : int
        Records waiting for the initialisation.
    n_splits_ : int
        Splits performed so far.
    n_seen_ : int
        Records received so far.
    init_number_ : int or None
        Records the initialisation used (``None`` before it ran).
    key_ : Key
        The key of the stream and its release (resolved when the stream starts).

    Notes
    -----
    A split group is replaced by its first child (size ``n//2``) at its position and its second
    child is appended at the end; children are re-checked breadth-first. Pooled records are
    retried after every insertion into a group (earliest-arrived eligible record first, until
    none is eligible); a pool with ``|pool| >= max level`` becomes a new group at the end (split
    check applied). Split children may be smaller than their inherited requirement (as in the
    paper; docs/condensation.md#clarification-split-children-may-be-smaller-than-their-members-levels); every record inserted by ``insert`` or grouped from the pool or by the static
    initialisation sits in a group of at least its level at that moment.
    Records are never lost: each received record is counted in exactly one group, the pool or
    the initialisation buffer; n, Fs, Sc and Ps of the groups sum to the data totals (splits
    conserve them).

    Randomness (docs/condensation.md#one-key-many-releases). The **input** of a dynamic release
    is the stream as received up to :meth:`release`: every record, and its level when levels
    are given (always with :meth:`partial_fit`), in arrival order; its content digest is kept
    block by block (:class:`~.inputs.StreamDigest`), and the pseudo-data and the files' orders
    draw from the release's stream key. The initialisation must draw before the stream ends:
    it draws from the stream key of the release the stream would make if it ended after the
    initialisation's records (same method and parameters, the digest of those records), so the
    same stream with the same key gives the same release, however it is cut into blocks.
    Levels drawn from a range (``fit``) draw from the release's stream key, the whole data
    being known. To keep no pseudo-record equal to a unique received record, the condenser
    keeps a 16-byte hash of every record received by :meth:`partial_fit` (not the record).
    """

    def __init__(
        self,
        *,
        init_number: int | None = None,
        split_strict: bool = False,
        key: KeyLike = None,
        repair_splits: bool = True,
        privacy_levels: Any = None,
        privacy_column: str | None = None,
        columns: Any = None,
        allow_weak: Any = False,
        publish_statistics: bool = False,
        ledger: Any = "default",
    ) -> None:
        self.init_number = init_number
        self.split_strict = split_strict
        self.key = key
        self.repair_splits = repair_splits
        self.privacy_levels = privacy_levels
        self.privacy_column = privacy_column
        self.columns = columns
        self.allow_weak = allow_weak
        self.publish_statistics = publish_statistics
        self.ledger = ledger

    def _start(self, init_target: Any, key: Any = None) -> None:
        """Validate the parameters and open a new, empty stream (``key``: the fitted key)."""
        init_target = check("init_number", init_target, [None, Interval(int, 1, None)])
        if key is None:  # a new stream: its key resolved once (fit re-opens it with the same key)
            self._resolve_key()
        else:
            self.key_ = key
        self._strict = bool(self.split_strict)
        self._reset(None if init_target is None else int(init_target))
        # the public init_number: the target given (fit: 10 % of the data by default), or, fed by
        # partial_fit without one, the records the initialisation took (set when it runs)
        self._init_param = None if init_target is None else int(init_target)
        self._levels_input = True  # partial_fit: every record comes with its level
        self._keep_keys = True  # partial_fit: the records' hashes, for the copy rule

    def _started(self) -> bool:
        return "_d" in vars(self)

    # ---------------------------------------------------------------- state
    def _reset(self, init_target: int | None) -> None:
        self._init_target = init_target
        self._d: int | None = None
        self._initialised = False
        self._buf_X: list[np.ndarray] = []
        self._buf_p: list[np.ndarray] = []
        self._n_buf = 0
        self._G = 0
        self._n = np.empty(0, np.int64)
        self._mean = np.empty((0, 0))
        self._m2 = np.empty((0, 0, 0))
        self._ps = np.empty(0)
        self._req = np.empty(0, np.int64)
        self._maxn = np.zeros(1, np.int64)
        self._pool_X: list[np.ndarray] = []
        self._pool_p: list[int] = []
        self.n_splits_ = 0
        self.n_seen_ = 0
        self.init_number_: int | None = None
        self._digest = None  # StreamDigest, once the first block fixed d
        self._row_keys: list[np.ndarray] = []

    @property
    def n_pending_(self) -> int:
        """Records in the pending pool."""
        return len(self._pool_p)

    @property
    def n_buffered_(self) -> int:
        """Records buffered for the (not yet run) initialisation."""
        return self._n_buf

    @property
    def groups_(self) -> GroupTable:
        """The current groups (without the pending pool) as a new table."""
        if not self._started() or self._d is None:
            raise NotFittedError("this StreamingCondenser has no data yet: call fit or partial_fit first")
        if not self._initialised:
            return GroupTable.empty(self._d)
        G = self._G
        return GroupTable(
            self._n[:G].copy(), self._mean[:G].copy(), self._m2[:G].copy(), self._ps[:G].copy(), self._req[:G].copy()
        )

    def _load(self, table: GroupTable) -> None:
        G = len(table)
        cap = max(16, 2 * G)
        d = table.d
        self._n = np.zeros(cap, np.int64)
        self._mean = np.zeros((cap, d))
        self._m2 = np.zeros((cap, d, d))
        self._ps = np.zeros(cap)
        self._req = np.zeros(cap, np.int64)
        self._n[:G], self._mean[:G], self._m2[:G], self._ps[:G], self._req[:G] = (
            table.n,
            table.mean,
            table.m2,
            table.ps,
            table.req,
        )
        self._G = G
        self._maxn[0] = int(table.n.max()) if G else 0

    def _group(self, g: int) -> CondensedGroup:
        return CondensedGroup(int(self._n[g]), self._mean[g].copy(), self._m2[g].copy(), float(self._ps[g]), int(self._req[g]))

    def _set(self, g: int, grp: CondensedGroup) -> None:
        self._n[g], self._mean[g], self._m2[g], self._ps[g], self._req[g] = grp.n, grp.mean, grp.m2, grp.ps, grp.req

    def _append(self, grp: CondensedGroup) -> int:
        g = self._G
        if g == self._n.shape[0]:  # grow geometrically
            cap = 2 * g
            self._n = np.concatenate([self._n, np.zeros(cap - g, np.int64)])
            self._mean = np.concatenate([self._mean, np.zeros((cap - g, self._d))])
            self._m2 = np.concatenate([self._m2, np.zeros((cap - g, self._d, self._d))])
            self._ps = np.concatenate([self._ps, np.zeros(cap - g)])
            self._req = np.concatenate([self._req, np.zeros(cap - g, np.int64)])
        self._set(g, grp)
        self._G = g + 1
        return g

    # ---------------------------------------------------------------- public API
    def partial_fit(self, X: Any, privacy: Any) -> StreamingCondenser:
        """Receive the next block of records (rows in arrival order).

        Rows are buffered until the initialisation can run (see ``init_number``); the rows after
        the initialisation are inserted one by one (``insert(x, p)`` of
        docs/condensation.md#dynamic-maintenance). Given the same
        initialisation rows, the result does not depend on how the stream is cut into blocks.

        Parameters
        ----------
        X : array (m, d)
            Finite records; every block must have the same d.
        privacy : int array (m,)
            Privacy level of every record (>= 1).

        Returns
        -------
        self
        """
        if not self._started():
            self._start(self.init_number)
        X, p = _check_block(X, privacy, self._d)
        if self._d is None:
            self._d = X.shape[1]
        if self._digest is None:
            from .inputs import StreamDigest

            self._digest = StreamDigest(self._d, self._levels_input)
        if X.shape[0] == 0:
            return self
        self.n_seen_ += X.shape[0]
        self._digest.update(X, p)
        if self._keep_keys:
            from .copies import row_keys

            self._row_keys.append(row_keys(X))
        if self._initialised:
            self._process(X, p)
            return self
        self._buf_X.append(X)
        self._buf_p.append(p)
        self._n_buf += X.shape[0]
        bp = np.concatenate(self._buf_p)
        if self._init_target is None:  # whole buffered blocks, once feasible
            L = self._n_buf if self._n_buf >= int(bp.max()) else None
        else:  # shortest feasible prefix of length >= init_target
            lengths = np.arange(1, self._n_buf + 1)
            ok = np.flatnonzero((lengths >= self._init_target) & (lengths >= np.maximum.accumulate(bp)))
            L = int(ok[0]) + 1 if ok.size else None
        if L is not None:
            bX = np.concatenate(self._buf_X)
            self._initialise(bX[:L], bp[:L])
            self._process(bX[L:], bp[L:])
        return self

    def fit(self, X: Any, privacy: Any = None, *, client: Any = None, progress: bool = False) -> StreamingCondenser:
        """Condense the whole stream ``X`` (rows in arrival order: a numpy / dask array, the
        blocks of a dask array fetched one at a time, or a table) and :meth:`finalize`.

        Forgets any earlier state. With ``init_number=None`` the initialisation uses the shortest
        prefix of length ``L >= ceil(0.1·N)`` (and >= 1) that is feasible (``L >= max level among
        its rows``), so it never fails unless the whole data set is smaller than its largest
        level (then :class:`InfeasiblePrivacyError`); the result does not depend on how ``X`` is
        cut into blocks. ``privacy`` as in :class:`~.condenser.Condenser`.

        Returns
        -------
        self
        """
        import dask.array as da

        from ..data.digest import content_digest_lazy
        from ..data.sources import source_of
        from ..progress import compute
        from ..release.base import overrides_for, refuse_weak
        from .inputs import records_of
        from .release import FLOORS, SIZE_CHECK, CondensedRelease, level_floor

        self._source = source_of(X)
        self._start(self.init_number)
        rec = records_of(
            X, privacy, spec=self.privacy_levels, privacy_column=self.privacy_column, columns=self.columns, allow_empty=True
        )
        self._overrides = overrides_for(self.allow_weak, list(FLOORS) + ([] if self.repair_splits else [SIZE_CHECK]))

        def floor(top: int) -> None:
            refuse_weak([level_floor(top, self._overrides)])

        if rec.known_max_level() is not None and rec.n:
            floor(rec.known_max_level())
        N = rec.n
        self._init_param = self.init_number if self.init_number is not None else max(1, -(-N // 10))
        self._parameters = {**rec.parameters, **self._stream_parameters()}
        digest = None
        given = rec.given
        if isinstance(given, da.Array) or (given is None and rec.known_max_level() is None):
            # levels in a column, or drawn from the stream key: one pass first (the digest with them)
            digest, given = compute(content_digest_lazy(*rec.digest_pieces()), given, progress=progress, client=client)
        skey = CondensedRelease.streams_for(self.key_, "dynamic", self._parameters, digest) if digest is not None else None
        levels = rec.levels(given, skey) if N else np.zeros(0, np.int64)
        if levels.size:
            floor(int(levels.max()))
        self._start(self._init_param, self.key_)
        self._levels_input = rec.given is not None
        self._keep_keys = False  # the records stay where they are: the copy rule reads them again
        self._records = rec.X
        self._d = int(rec.X.shape[1])
        offsets = np.concatenate([[0], np.cumsum(rec.X.chunks[0])]).astype(int)
        for blk, a, b in zip(rec.X.to_delayed().ravel(), offsets[:-1], offsets[1:]):
            (xb,) = compute(blk, progress=False, client=client)  # one block on the driver at a time
            self.partial_fit(np.asarray(xb), levels[a:b])
        groups = self.finalize()
        if digest is not None and self._digest is not None and self._digest.digest() != digest:  # pragma: no cover - guard
            raise RuntimeError("the stream's digest differs from the input's: the blocks were not read in order")
        self.feature_names_in_ = rec.names
        self.report_ = {
            "n_records": N,
            "n_groups": len(groups),
            "splits": self.n_splits_,
            "ssq": float(groups.total_ssq),
            "split_groups_below_level": int(np.sum(~groups.feasible)),
            "init_number": self.init_number_,
            "max_privacy_level": int(levels.max(initial=0)),
        }
        return self

    def _stream_parameters(self) -> dict[str, Any]:
        """The public parameters of the condenser itself (those of the input come with it):
        ``init_number`` is the initialisation's target — the one given, 10 % of the data in
        :meth:`fit`, or the records it took when :meth:`partial_fit` had none — so that two
        streams initialised differently are two releases."""
        return {
            "init_number": self._init_param,
            "split_strict": bool(self.split_strict),
            "repair_splits": bool(self.repair_splits),
            "publish_statistics": bool(self.publish_statistics),
        }

    def _release_parameters(self) -> dict[str, Any]:
        """The public parameters of the release: those :meth:`fit` recorded, or, for a stream fed
        by :meth:`partial_fit`, levels per record and attributes ``x0, x1, ...``."""
        params = getattr(self, "_parameters", None)
        if params:
            return dict(params)
        return {
            "privacy_levels": "per record (not published)",
            "columns": [f"x{j}" for j in range(int(self._d or 0))],
            **self._stream_parameters(),
        }

    def release(self, *, client: Any = None, progress: bool = False) -> Any:
        """The release of the current groups (after :meth:`finalize`): pseudo-data drawn from
        the release's stream key (none equal to a unique record of the stream), the group sizes
        and, with ``publish_statistics``, the statistics of the groups of more than d + 1
        records; split groups below their level repaired (see ``repair_splits``)."""
        from .condenser import repair_groups
        from .release import condensed_release

        if not self._started() or self._d is None:
            raise NotFittedError("this StreamingCondenser is not fitted yet: call fit() or partial_fit() first")
        groups = self.finalize()
        if len(groups) == 0:
            raise InvalidParameter("no group to release: the stream is empty")
        repaired = int(np.sum(~groups.feasible))
        if self.repair_splits and repaired:
            groups = repair_groups(groups)[0]
        params = self._release_parameters()
        source = getattr(self, "_source", None)  # fit's input; a stream fed by partial_fit has none
        from .copies import RowKeys

        originals = self._records if not self._keep_keys else [RowKeys(k) for k in self._row_keys]
        overrides = getattr(self, "_overrides", None)
        if overrides is None:  # fed by partial_fit: the floors allow_weak covers
            from ..release.base import overrides_for
            from .release import FLOORS, SIZE_CHECK

            overrides = overrides_for(self.allow_weak, list(FLOORS) + ([] if self.repair_splits else [SIZE_CHECK]))
        return condensed_release(
            groups,
            method="dynamic",
            parameters=params,
            key=self.key_,
            input_digest=self._digest.digest(),
            originals=originals,
            source=source,
            overrides=overrides,
            figures={
                "privacy": {"split_groups_repaired": repaired if self.repair_splits else 0},
                "utility": {"splits": int(self.n_splits_)},
            },
            ledger=self.ledger,
            client=client,
            progress=progress,
        )

    def finalize(self) -> GroupTable:
        """Close the stream and return the groups.

        Runs the initialisation on the buffered records if it has not run yet (static
        algorithm with Repair), and merges a remaining pending pool by the Repair rule: the pool
        as one group into the group with the nearest centroid (ties: earliest), repeated on the
        merged group while it is smaller than the largest pooled level. Idempotent; the stream
        may continue afterwards.

        Raises
        ------
        InfeasiblePrivacyError
            The whole stream is smaller than its largest privacy level.
        """
        if not self._started() or self._d is None:
            raise InvalidParameter("no data yet: call partial_fit or fit first")
        if not self._initialised:
            if self._n_buf == 0:
                return GroupTable.empty(self._d)
            bX, bp = np.concatenate(self._buf_X), np.concatenate(self._buf_p)
            self._initialise(bX, bp)  # repair=True: raises only if N < max level
            return self.groups_
        if self._pool_p:
            pool = CondensedGroup.from_points(np.stack(self._pool_X), np.asarray(self._pool_p, np.int64))
            r = max(self._pool_p)
            table = GroupTable.concat([self.groups_, GroupTable.from_groups([pool])])
            src = len(table) - 1
            while table.n[src] < r:
                if len(table) == 1:
                    raise InfeasiblePrivacyError(
                        f"privacy level {r} cannot be met: the stream has only {int(table.n[0])} records"
                    )
                d2 = ((table.mean - table.mean[src]) ** 2).sum(axis=1)
                d2[src] = np.inf
                dst = int(np.argmin(d2))  # first minimum: ties -> earliest
                table = table.merge_into(dst, src)
                src = dst if dst < src else dst - 1
            self._pool_X, self._pool_p = [], []
            self._load(table)
        return self.groups_

    # ---------------------------------------------------------------- internals
    def _init_key(self, X: np.ndarray, p: np.ndarray) -> Any:
        """The stream key of the initialisation: that of the release the stream would make if it
        ended after the records ``X`` (levels ``p``) — see the class notes."""
        from ..data.digest import content_digest
        from .release import CondensedRelease

        if self._init_param is None:
            self._init_param = int(X.shape[0])
        digest = content_digest(X, p if self._levels_input else None)
        return CondensedRelease.streams_for(self.key_, "dynamic", self._release_parameters(), digest)

    def _initialise(self, X: np.ndarray, p: np.ndarray) -> None:
        from .static import construct_groups

        labels = construct_groups(X, p, self._init_key(X, p).generator(Tag.CONDENSE_DYNAMIC, 0), repair=True)
        self._load(GroupTable.from_points(X, p, labels))
        self._initialised = True
        self.init_number_ = int(X.shape[0])
        self._buf_X, self._buf_p, self._n_buf = [], [], 0

    def _pool_minp(self) -> int:
        return min(self._pool_p) if self._pool_p else _NO_POOL

    def _process(self, X: np.ndarray, p: np.ndarray) -> None:
        """insert(x, p) for every row, in order."""
        i, N = 0, X.shape[0]
        while i < N:
            i, event, g = _run(
                X, p, i, self._n, self._mean, self._m2, self._ps, self._req, self._G, self._maxn, self._pool_minp(), self._strict
            )
            if event == _DONE:
                break
            if event == _POOL:
                self._pool_X.append(X[i].copy())
                self._pool_p.append(int(p[i]))
                self._check_pool()
            else:
                if event == _SPLIT:
                    self._cascade(g)
                self._retry_pool()
            i += 1

    def _cascade(self, g: int) -> None:
        """Split g while needed, then its children (breadth-first; child 2 appended)."""
        queue = [g]
        while queue:
            h = queue.pop(0)
            if not self._group(h).should_split(self._strict):
                continue
            c1, c2 = self._group(h).split()
            self._set(h, c1)
            queue += [h, self._append(c2)]
            self.n_splits_ += 1
        self._maxn[0] = int(self._n[: self._G].max())

    def _retry_pool(self) -> None:
        """Insert pooled records while one is eligible (earliest arrival first), then check the pool."""
        changed = False
        while self._pool_p:
            maxn = int(self._maxn[0])
            j = next((k for k, q in enumerate(self._pool_p) if q - 1 <= maxn), None)
            if j is None:
                break
            x, q = self._pool_X.pop(j), self._pool_p.pop(j)
            changed = True
            g = _nearest(self._mean, self._n, self._G, x, q)
            _welford(self._n, self._mean, self._m2, self._ps, self._req, g, x, q)
            self._maxn[0] = max(maxn, int(self._n[g]))
            self._cascade(g)
        if changed:
            self._check_pool()

    def _check_pool(self) -> None:
        """A pool with |pool| >= its largest level becomes a new group (appended, split-checked)."""
        if self._pool_p and len(self._pool_p) >= max(self._pool_p):
            grp = CondensedGroup.from_points(np.stack(self._pool_X), np.asarray(self._pool_p, np.int64))
            self._pool_X, self._pool_p = [], []
            self._cascade(self._append(grp))
