"""k^m-anonymity of set-valued data: count tree, DA, AA and NCP (Terrovitis et al.;
docs/anonymity.md#km-anonymity-of-set-valued-data).

Decomposition (docs/anonymity.md#km-anonymity-of-set-valued-data): the count tree is a tree reduction (per-block counting of the
admissible itemsets of the expanded transactions in a hash table, or with bitsets for very long
transactions, merged by exact integer sums); DA runs sequentially on the driver over the merged
counts (one compiled kernel, whose forward scan with re-examination is proven equivalent to the
literal restart in :func:`._km_kernels._da_run`); AA is ``m`` rounds of (count of the data
recoded by the current cut + DA), as AA is defined. The published database is recoded lazily, block by
block, with the input's partitioning. Nothing depends on the partitioning: counts are exact and the driver steps are
deterministic.

Hierarchy -> node tree. The item hierarchy is a categorical :class:`Hierarchy` whose leaves are
the item labels as strings (``str(label)``) and whose root ``'*'`` is ``ALL``. Node ids: the
items are the leaves ``0..n_items-1`` (their column ids), internal nodes follow in the order
(hierarchy level where the node first appears, first table row under it); these ids fix the
last DA tie-break ("lexicographic list of node ids"). A label that repeats up a single-child
chain (e.g. ``"25-25"`` on two levels of ``Hierarchy.balanced(26, 5)``, or an ARX row
``x;x;*``) is one node; a label naming two different leaf sets is an error. Internal nodes with
no item of the data below them are dropped (they can never be published); extra hierarchy
leaves that never occur are allowed and still count in ``|I|`` and in ``|leaves(n)|`` for the
NCP, which is defined on the hierarchy (docs/anonymity.md#information-loss-of-a-cut).

Published data: item ``i`` becomes its highest ancestor in the cut (or stays itself); the
output vocabulary holds the labels of the published nodes as strings (also for integer items,
since generalised labels such as ``"0-4"`` are strings).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import dask
import numpy as np
import pandas as pd

from ..constraints import check, validate
from ..data.hierarchy import ROOT, Hierarchy, as_keys, missing_error
from ..data.transactions import TransactionArray
from ..data.vocabulary import Vocabulary
from ..errors import DataFormatError, InfeasiblePrivacyError, InvalidParameter
from ..graph import CSR_META, blocks_from_tasks, tree_reduce, unique_name
from ..release import Check, Verdict
from . import _km_kernels as K
from ._diversity import COUNT_CONSTRAINTS

__all__ = [
    "CountTree",
    "KmResult",
    "count_tree",
    "direct_anonymization",
    "apriori_anonymization",
    "km_anonymize",
    "ncp_km",
    "is_km_anonymous",
    "check_km_anonymity",
    "KM_ANONYMITY",
    "as_transactions",
]

_METHODS = ("AA", "DA")
#: name of the check of :func:`check_km_anonymity`
KM_ANONYMITY = "k^m-anonymity"
_EXAMPLES = 10


# ---------------------------------------------------------------------- node tree
@dataclass(frozen=True)
class _Nodes:
    """The item hierarchy as arrays (see module docstring for the numbering)."""

    labels: np.ndarray  # str label of every node, by id
    n_items: int  # nodes 0..n_items-1 are the items (column ids)
    parent: np.ndarray  # int64, -1 at the root
    tin: np.ndarray  # Euler-tour interval: a ancestor-or-self of b iff tin[a] <= tin[b] < tout[a]
    tout: np.ndarray
    under: np.ndarray  # int64 hierarchy leaves below (incl. leaves that never occur)
    n_leaves: int  # |I|: leaves of the hierarchy
    index: dict[str, int] = field(repr=False)  # label -> node id
    pruned: frozenset[str] = field(repr=False)  # hierarchy labels with no item below them

    @property
    def n_nodes(self) -> int:
        return int(self.parent.size)

    @property
    def root(self) -> int:
        return int(np.flatnonzero(self.parent < 0)[0])

    def ancestors_or_self(self, x: int) -> list[int]:
        out = []
        while x >= 0:
            out.append(int(x))
            x = int(self.parent[x])
        return out

    def node_id(self, label: Any) -> int:
        key = as_keys([label])[0]
        if key not in self.index:
            raise InvalidParameter(f"{label!r} is not a node of the item hierarchy (above an item of the data)")
        return self.index[key]


def _node_tree(hierarchy: Hierarchy, vocabulary: Vocabulary) -> _Nodes:
    if not isinstance(hierarchy, Hierarchy):
        raise InvalidParameter(f"hierarchy must be a Hierarchy, got {type(hierarchy).__name__}")
    if hierarchy.kind != "categorical":
        raise InvalidParameter("k^m-anonymity needs a categorical item hierarchy (leaves = item labels)")
    leaves = np.asarray(hierarchy.leaves, dtype=object)
    n_rows, n_levels = leaves.size, hierarchy.levels
    table = [leaves] + [np.asarray(hierarchy.generalize(leaves, j), dtype=object) for j in range(1, n_levels)]
    # items -> hierarchy rows
    item_keys = as_keys(vocabulary.labels) if len(vocabulary) else np.zeros(0, dtype=object)
    row_of_item = pd.Index(leaves).get_indexer(item_keys)
    if np.any(row_of_item < 0):
        bad = pd.unique(item_keys[row_of_item < 0])
        raise missing_error(hierarchy.name or "items", list(bad), getattr(hierarchy, "source", None))
    n_items = int(row_of_item.size)
    leaf_row = {str(lbl): r for r, lbl in enumerate(leaves)}
    item_of_row = np.full(n_rows, -1, np.int64)
    item_of_row[row_of_item] = np.arange(n_items)

    # internal nodes: a key per distinct leaf set; labels must name one leaf set
    seen: dict[str, tuple[tuple[int, ...], Any]] = {}
    created: list[tuple[str, tuple[int, ...]]] = []  # creation order = (first level, first row)
    node_at: list[list[Any]] = [[("leaf", r) for r in range(n_rows)]] + [[None] * n_rows for _ in range(1, n_levels)]
    rows_all = np.arange(n_rows)
    for j in range(1, n_levels):
        col = table[j]
        groups = pd.Series(rows_all).groupby(pd.Series(col, dtype=object), sort=False).indices
        for label, rows in sorted(groups.items(), key=lambda kv: int(kv[1].min())):
            label = str(label)
            rows_t = tuple(int(r) for r in np.sort(rows))
            if label in leaf_row and label not in seen:
                if rows_t != (leaf_row[label],):
                    raise DataFormatError(
                        f"hierarchy {hierarchy.name or ''}: label {label!r} names a leaf and an internal node "
                        f"with {len(rows_t)} leaves"
                    )
                node: Any = ("leaf", leaf_row[label])
                seen[label] = (rows_t, node)
            elif label in seen:
                if seen[label][0] != rows_t:
                    raise DataFormatError(
                        f"hierarchy {hierarchy.name or ''}: label {label!r} names two different nodes "
                        f"(with {len(seen[label][0])} and {len(rows_t)} leaves); internal labels must be unique"
                    )
                node = seen[label][1]
            else:
                node = ("int", label)
                seen[label] = (rows_t, node)
                created.append((label, rows_t))
            for r in rows_t:
                node_at[j][r] = node
    # keep internal nodes above at least one item; number them after the items
    ids: dict[Any, int] = {("leaf", int(r)): int(item_of_row[r]) for r in row_of_item}
    labels = [str(leaves[r]) for r in row_of_item]
    under = [1] * n_items
    pruned = set()
    for label, rows_t in created:
        if np.any(item_of_row[list(rows_t)] >= 0):
            ids[("int", label)] = len(labels)
            labels.append(label)
            under.append(len(rows_t))
        else:
            pruned.add(label)
    n_nodes = len(labels)
    parent = np.full(n_nodes, -2, np.int64)
    for r in row_of_item:
        chain = [ids[node_at[0][r]]]
        for j in range(1, n_levels):
            nid = ids[node_at[j][r]]
            if nid != chain[-1]:
                chain.append(nid)
        for a, b in zip(chain[:-1], chain[1:]):
            if parent[a] not in (-2, b):
                raise DataFormatError(f"hierarchy {hierarchy.name or ''}: node {labels[a]!r} has two parents")
            parent[a] = b
        if parent[chain[-1]] not in (-2, -1):
            raise DataFormatError(f"hierarchy {hierarchy.name or ''}: the root has a parent")
        parent[chain[-1]] = -1
    if n_nodes and np.count_nonzero(parent == -1) != 1:
        raise DataFormatError(f"hierarchy {hierarchy.name or ''}: expected one root")
    tin, tout = _euler(parent)
    return _Nodes(
        labels=np.array(labels, dtype=object),
        n_items=n_items,
        parent=parent,
        tin=tin,
        tout=tout,
        under=np.asarray(under, np.int64),
        n_leaves=n_rows,
        index={lbl: i for i, lbl in enumerate(labels)},
        pruned=frozenset(pruned),
    )


def _euler(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = parent.size
    tin = np.zeros(n, np.int64)
    tout = np.zeros(n, np.int64)
    if n == 0:
        return tin, tout
    children: list[list[int]] = [[] for _ in range(n)]
    for x in range(n):
        if parent[x] >= 0:
            children[int(parent[x])].append(x)
    root = int(np.flatnonzero(parent == -1)[0])
    t = 0
    stack = [(root, False)]
    while stack:
        x, done = stack.pop()
        if done:
            tout[x] = t
            continue
        tin[x] = t
        t += 1
        stack.append((x, True))
        stack.extend((c, False) for c in reversed(children[x]))
    return tin, tout


# ---------------------------------------------------------------------- count tree
@dataclass(frozen=True)
class CountTree:
    """Supports of all admissible itemsets of the expanded transactions (the count tree of
    docs/anonymity.md#km-anonymity-of-set-valued-data).

    An itemset is a set of hierarchy nodes, 1 <= size <= ``m``, no node together with one of its
    ancestors; its support is the number of transactions ``t`` with ``itemset ⊆ exp(t)``.

    Attributes
    ----------
    keys, counts : numpy.ndarray
        Sorted packed keys (see :mod:`._km_kernels`) and int64 supports (all > 0).
    m : int
    n_transactions : int
    """

    keys: np.ndarray
    counts: np.ndarray
    m: int
    n_transactions: int
    nodes: _Nodes = field(repr=False)

    @property
    def bits(self) -> int:
        return K.key_bits(self.m, self.nodes.n_nodes)

    def __len__(self) -> int:
        return int(self.keys.size)

    def itemset_ids(self) -> np.ndarray:
        """``(len, m)`` node ids of every itemset (sorted rows, -1 padded), in key order."""
        return K.unpack_keys(self.keys, self.m, self.bits)

    def support(self, itemset: Iterable[Any]) -> int:
        """Support of a generalised itemset given by node labels (0 if absent).

        A node listed together with one of its descendants is dropped (its presence is implied,
        docs/anonymity.md#correction-the-count-tree-skips-an-item-together-with-its-ancestor); the empty itemset has support ``n_transactions``.
        """
        ids = sorted({self.nodes.node_id(x) for x in itemset})
        tin, tout = self.nodes.tin, self.nodes.tout
        ids = [a for a in ids if not any(b != a and tin[a] <= tin[b] < tout[a] for b in ids)]
        if not ids:
            return self.n_transactions
        if len(ids) > self.m:
            raise InvalidParameter(f"the count tree holds itemsets of size <= {self.m}, got {len(ids)}")
        key = int(K.pack_itemsets(np.array([ids + [-1] * (self.m - len(ids))]), self.bits)[0])
        i = int(np.searchsorted(self.keys, key))
        return int(self.counts[i]) if i < self.keys.size and self.keys[i] == key else 0

    def node_supports(self) -> np.ndarray:
        """Support of every single node (expanded DB), by node id."""
        return self._node_supports.copy()

    @cached_property
    def _node_supports(self) -> np.ndarray:
        # a 1-itemset key has only its top field set
        single = (self.keys & ((1 << (self.bits * (self.m - 1))) - 1)) == 0 if self.m > 1 else np.ones(self.keys.size, bool)
        out = np.zeros(self.nodes.n_nodes, np.int64)
        out[(self.keys[single] >> (self.bits * (self.m - 1))) - 1] = self.counts[single]
        return out

    def to_pandas(self) -> pd.DataFrame:
        """One row per itemset: ``itemset`` (tuple of node labels), ``size``, ``support``."""
        ids = self.itemset_ids()
        labels = self.nodes.labels
        sets = [tuple(labels[x] for x in row if x >= 0) for row in ids.tolist()]
        return pd.DataFrame({"itemset": sets, "size": [len(s) for s in sets], "support": self.counts})


def _count_part(block: Any, arrays: tuple[np.ndarray, ...], m: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    node_map, parent, tin, tout = arrays
    return K.count_block(block, node_map, parent, tin, tout, m, bits)


def _count_lazy(tx: TransactionArray, nodes: _Nodes, node_map: np.ndarray, m: int, split_every: int) -> Any:
    bits = K.key_bits(m, nodes.n_nodes)
    arrays = dask.delayed((np.asarray(node_map, np.int64), nodes.parent, nodes.tin, nodes.tout), pure=True)
    parts = [dask.delayed(_count_part, pure=True)(b, arrays, m, bits) for b in tx.blocks.to_delayed().ravel()]
    return tree_reduce(parts, K.merge_counts, split_every=split_every)


def _compute(lazy: Any, client: Any, progress: bool) -> Any:
    from ..progress import compute

    (out,) = compute(lazy, client=client, progress=progress)
    return out


def _count(
    tx: TransactionArray, nodes: _Nodes, node_map: np.ndarray, m: int, *, client: Any, progress: bool, split_every: int
) -> CountTree:
    keys, counts = _compute(_count_lazy(tx, nodes, node_map, m, split_every), client, progress)
    return CountTree(keys=keys, counts=counts, m=m, n_transactions=tx.n_transactions, nodes=nodes)


def count_tree(
    tx: TransactionArray | Iterable[Iterable[Any]],
    hierarchy: Hierarchy,
    m: int,
    *,
    split_every: int = 8,
    client: Any = None,
    progress: bool = False,
) -> CountTree:
    """Count tree of ``tx`` (PopulateTree as corrected in
    docs/anonymity.md#correction-the-count-tree-skips-an-item-together-with-its-ancestor), computed in a
    tree reduction.

    Parameters
    ----------
    tx : TransactionArray or iterable of item lists
    hierarchy : Hierarchy
        Categorical item hierarchy; its leaves include ``str(label)`` of every item.
    m : int
        Largest itemset size (>= 1).
    split_every : int
        Fan-in of the tree reduction.
    client : distributed.Client, optional
        Compute there (default: the active client, else dask's default scheduler).
    progress : bool
        Progress on stderr.

    Returns
    -------
    CountTree
    """
    tx = as_transactions(tx)
    check("m", m, COUNT_CONSTRAINTS["m"])
    nodes = _node_tree(hierarchy, tx.vocabulary)
    return _count(tx, nodes, np.arange(nodes.n_items), int(m), client=client, progress=progress, split_every=split_every)


# ---------------------------------------------------------------------- cut helpers
def _images(nodes: _Nodes, in_cut: np.ndarray) -> np.ndarray:
    """Published node of every item under the cut (highest cut ancestor, else the item)."""
    img = np.arange(nodes.n_items, dtype=np.int64)
    for i in range(nodes.n_items):
        for a in nodes.ancestors_or_self(i)[1:]:
            if in_cut[a]:
                img[i] = a  # no break: the highest cut ancestor wins (normalisation)
    return img


def _occ_under(nodes: _Nodes, item_counts: np.ndarray) -> np.ndarray:
    """Per internal node: (leaf occurrences below it) x (hierarchy leaves below it) — the
    integer NCP numerator of publishing it; 0 for leaves (NCP(leaf) = 0)."""
    occ = np.zeros(nodes.n_nodes, np.int64)
    for i in range(nodes.n_items):
        for a in nodes.ancestors_or_self(i):
            occ[a] += int(item_counts[i])
    out = occ * nodes.under
    out[: nodes.n_items] = 0
    return out


def _ncp(nodes: _Nodes, in_cut: np.ndarray, item_counts: np.ndarray) -> float:
    total = int(np.sum(item_counts))
    if total == 0:
        return 0.0
    num = int(_occ_under(nodes, item_counts)[in_cut].sum())
    return num / (nodes.n_leaves * total)


def _run_da(tree: CountTree, k: int, in_cut: np.ndarray, item_counts: np.ndarray) -> tuple[np.ndarray, int]:
    """DA over ``tree`` (itemsets of size <= tree.m) from the cut ``in_cut``."""
    nodes = tree.nodes
    bits = tree.bits
    supp = tree.node_supports()
    present = supp > 0
    # item order: descending expanded support, ties by node id
    # (docs/anonymity.md#clarification-item-order-of-the-count-tree)
    order = np.lexsort((np.arange(nodes.n_nodes), -supp))
    rank = np.empty(nodes.n_nodes, np.int64)
    rank[order] = np.arange(nodes.n_nodes)
    rank[~present] = nodes.n_nodes - 1  # never traversed
    small = tree.counts < k
    return K.direct_anonymization(
        tree.keys[small],
        tree.m,
        rank,
        tree.keys[~small],
        nodes.parent,
        nodes.tin,
        nodes.tout,
        nodes.n_items,
        _occ_under(nodes, item_counts),
        nodes.under,
        in_cut,
        bits,
    )


def _item_counts(tree: CountTree) -> np.ndarray:
    """Occurrences of every item in the original DB (= its support; rows are sets)."""
    return tree.node_supports()[: tree.nodes.n_items].copy()


def _nonempty(tree: CountTree) -> int:
    return int(tree.node_supports()[tree.nodes.root]) if tree.nodes.n_nodes else 0


def _check_feasible(k: int, tree: CountTree) -> None:
    n = _nonempty(tree)
    if k > n:
        raise InfeasiblePrivacyError(
            f"k={k} exceeds the number of non-empty transactions ({n}): no generalisation "
            "(not even every item to '*') makes the data k^m-anonymous"
        )


# ---------------------------------------------------------------------- DA / AA
def _da(
    tx: TransactionArray, nodes: _Nodes, k: int, m: int, *, tree: CountTree | None, client: Any, progress: bool, split_every: int
) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]:
    t0 = time.perf_counter()
    if tree is None:
        tree = _count(tx, nodes, np.arange(nodes.n_items), m, client=client, progress=progress, split_every=split_every)
    elif m < tree.m:  # keep itemsets of size <= m (keys of a larger-m tree use the same packing)
        keep = K.key_sizes(tree.keys, tree.m, tree.bits) <= m
        tree = CountTree(tree.keys[keep], tree.counts[keep], tree.m, tree.n_transactions, tree.nodes)
    t1 = time.perf_counter()
    _check_feasible(k, tree)
    counts = _item_counts(tree)
    in_cut, changes = _run_da(tree, k, np.zeros(nodes.n_nodes, bool), counts)
    stats = [
        {"round": m, "itemsets": len(tree), "changes": changes, "count_seconds": t1 - t0, "da_seconds": time.perf_counter() - t1}
    ]
    return in_cut, counts, stats


def _aa(
    tx: TransactionArray, nodes: _Nodes, k: int, m: int, *, client: Any, progress: bool, split_every: int
) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]:
    in_cut = np.zeros(nodes.n_nodes, bool)
    counts = np.zeros(nodes.n_items, np.int64)
    stats = []
    for i in range(1, m + 1):
        t0 = time.perf_counter()
        # the count tree of round i is built from the data recoded by the current cut: it holds
        # exactly the itemsets of published-or-higher nodes, with their original supports
        tree = _count(tx, nodes, _images(nodes, in_cut), i, client=client, progress=progress, split_every=split_every)
        t1 = time.perf_counter()
        if i == 1:
            _check_feasible(k, tree)
            counts = _item_counts(tree)
        in_cut, changes = _run_da(tree, k, in_cut, counts)
        stats.append(
            {
                "round": i,
                "itemsets": len(tree),
                "changes": changes,
                "count_seconds": t1 - t0,
                "da_seconds": time.perf_counter() - t1,
            }
        )
    return in_cut, counts, stats


def _cut_labels(nodes: _Nodes, in_cut: np.ndarray) -> list[str]:
    return sorted(str(x) for x in nodes.labels[np.flatnonzero(in_cut)])


def direct_anonymization(
    tx: TransactionArray | Iterable[Iterable[Any]],
    hierarchy: Hierarchy,
    k: int,
    m: int,
    *,
    tree: CountTree | None = None,
    client: Any = None,
    progress: bool = False,
    split_every: int = 8,
) -> list[str]:
    """DA: the global-recoding cut of direct anonymization (docs/anonymity.md#km-anonymity-of-set-valued-data,
    corrected as in docs/anonymity.md#correction-da-checks-every-published-itemset-until-nothing-changes).

    Parameters
    ----------
    tx : TransactionArray or iterable of item lists
    hierarchy : Hierarchy
        Categorical item hierarchy (leaves = item labels as strings, root ``'*'`` = ALL).
    k, m : int
        Every itemset of at most ``m`` published items must have support 0 or >= ``k``.
    tree : CountTree, optional
        A count tree of the same ``tx`` and ``hierarchy`` with ``tree.m >= m`` (reused).
    client, progress, split_every
        See :func:`count_tree`.

    Returns
    -------
    list of str
        The cut: labels of the generalised hierarchy nodes, sorted (empty = no generalisation).
    """
    tx, nodes, k, m = _prepare(tx, hierarchy, k, m)
    if tree is not None and (tree.m < m or tree.nodes.n_nodes != nodes.n_nodes or list(tree.nodes.labels) != list(nodes.labels)):
        raise InvalidParameter("tree was not built for this data and hierarchy with m >= the requested m")
    in_cut, _, _ = _da(tx, nodes, k, m, tree=tree, client=client, progress=progress, split_every=split_every)
    return _cut_labels(nodes, in_cut)


def apriori_anonymization(
    tx: TransactionArray | Iterable[Iterable[Any]],
    hierarchy: Hierarchy,
    k: int,
    m: int,
    *,
    client: Any = None,
    progress: bool = False,
    split_every: int = 8,
) -> list[str]:
    """AA (docs/anonymity.md#km-anonymity-of-set-valued-data): DA for i = 1..m on count trees of the data recoded by the current cut.

    Parameters and result as in :func:`direct_anonymization`.
    """
    tx, nodes, k, m = _prepare(tx, hierarchy, k, m)
    in_cut, _, _ = _aa(tx, nodes, k, m, client=client, progress=progress, split_every=split_every)
    return _cut_labels(nodes, in_cut)


# ---------------------------------------------------------------------- public driver
@dataclass
class KmResult:
    """Result of :func:`km_anonymize`.

    Attributes
    ----------
    cut : list of str
        Generalised hierarchy nodes (labels, sorted); every item below one of them is published
        as that node, every other item as itself.
    transactions : TransactionArray
        The published database (lazy; same partitioning as the input; vocabulary = labels of
        the published nodes, as strings).
    ncp : float
        Terrovitis NCP of the recoding (docs/anonymity.md#information-loss-of-a-cut).
    n_generalized_items : int
        Items (vocabulary entries) published as an ancestor rather than as themselves.
    k, m : int
    method : str
        ``"AA"`` or ``"DA"``.
    rounds : list of dict
        Per count/DA round: ``round``, ``itemsets`` (count-tree size), ``changes`` (cut
        updates), ``count_seconds``, ``da_seconds``.
    """

    cut: list[str]
    transactions: TransactionArray
    ncp: float
    n_generalized_items: int
    k: int
    m: int
    method: str
    rounds: list[dict[str, Any]] = field(default_factory=list)
    #: the owner's generalisation: every input item label -> the label it is published as
    item_images: dict[str, str] = field(default_factory=dict, repr=False)

    def summary(self) -> dict[str, Any]:
        """Privacy and utility figures as a JSON-friendly dict."""
        return {
            "method": self.method,
            "k": self.k,
            "m": self.m,
            "n_transactions": self.transactions.n_transactions,
            "n_published_items": self.transactions.n_items,
            "cut_size": len(self.cut),
            "cut": list(self.cut),
            "n_generalized_items": self.n_generalized_items,
            "ncp": self.ncp,
            "changes": int(sum(r["changes"] for r in self.rounds)),
        }


def km_anonymize(
    tx: TransactionArray | Iterable[Iterable[Any]],
    hierarchy: Hierarchy,
    k: int,
    m: int,
    *,
    method: str = "AA",
    client: Any = None,
    progress: bool = False,
    split_every: int = 8,
) -> KmResult:
    """Make set-valued data k^m-anonymous by global generalisation
    (docs/anonymity.md#km-anonymity-of-set-valued-data).

    Parameters
    ----------
    tx : TransactionArray or iterable of item lists
        Transactions (lists are converted with :meth:`TransactionArray.from_lists`).
    hierarchy : Hierarchy
        Categorical item hierarchy: every item label ``str(label)`` is a leaf; the root ``'*'``
        plays ALL. Extra leaves are allowed.
    k : int
        Anonymity size, 1 <= k <= number of non-empty transactions.
    m : int
        Adversary knowledge: itemsets of up to ``m`` items (>= 1).
    method : {"AA", "DA"}
        Apriori-based (m rounds) or direct anonymization; both return a k^m-anonymous cut.
    client : distributed.Client, optional
        Compute there (default: the active client, else dask's default scheduler).
    progress : bool
        Progress on stderr.
    split_every : int
        Fan-in of the count-tree reductions.

    Returns
    -------
    KmResult

    Raises
    ------
    InvalidParameter
        ``k`` or ``m`` not an integer >= 1, unknown method, non-categorical hierarchy.
    InfeasiblePrivacyError
        ``k`` exceeds the number of non-empty transactions.
    DataFormatError
        An item is not a leaf of the hierarchy (the message names it).
    """
    meth = str(method).upper()
    if meth not in _METHODS:
        raise InvalidParameter(f"method must be 'AA' or 'DA', got {method!r}")
    tx, nodes, k, m = _prepare(tx, hierarchy, k, m)
    run = _aa if meth == "AA" else _da
    kwargs: dict[str, Any] = {"client": client, "progress": progress, "split_every": split_every}
    if meth == "DA":
        kwargs["tree"] = None
    in_cut, item_counts, rounds = run(tx, nodes, k, m, **kwargs)
    images = _images(nodes, in_cut)
    published = _recode(tx, nodes, images, metadata={"anonymization": "km", "k": k, "m": m, "method": meth})
    return KmResult(
        cut=_cut_labels(nodes, in_cut),
        transactions=published,
        ncp=_ncp(nodes, in_cut, item_counts),
        n_generalized_items=int(np.count_nonzero(images != np.arange(nodes.n_items))),
        k=k,
        m=m,
        method=meth,
        rounds=rounds,
        item_images={str(nodes.labels[i]): str(nodes.labels[images[i]]) for i in range(nodes.n_items)},
    )


def _recode(
    tx: TransactionArray, nodes: _Nodes, images: np.ndarray, *, metadata: Mapping[str, Any] | None = None
) -> TransactionArray:
    """The published database: item ``i`` -> node ``images[i]``, built lazily per block."""
    published = np.unique(images)
    vocab = Vocabulary(np.array([str(x) for x in nodes.labels[published]], dtype=object))
    col_map = (
        vocab.encode(np.array([str(x) for x in nodes.labels[images]], dtype=object)).astype(np.int64)
        if images.size
        else np.zeros(0, np.int64)
    )
    n_cols = len(vocab)
    keys = [b.key for b in tx.blocks.to_delayed().ravel()]
    name = unique_name("km-recode", tx.blocks.name, col_map, n_cols)
    tasks = [(K.recode_block, key, col_map, n_cols) for key in keys]
    blocks = blocks_from_tasks(name, tasks, tx.partition_rows, n_cols, meta=CSR_META, dependencies=[tx.blocks])
    meta = dict(tx.metadata)
    meta.update(metadata or {})
    return TransactionArray(blocks, vocab, metadata=meta, columns=tx.columns)


# ---------------------------------------------------------------------- NCP and verification
def ncp_km(
    cut: Iterable[Any],
    hierarchy: Hierarchy,
    tx: TransactionArray | Iterable[Iterable[Any]] | Mapping[Any, int],
    *,
    client: Any = None,
) -> float:
    """Terrovitis NCP of the global recoding by ``cut`` (docs/anonymity.md#information-loss-of-a-cut).

    NCP(D') = sum_i c_i NCP(g(i)) / sum_i c_i with c_i the occurrences of item i,
    NCP(n) = |leaves(n)| / |I| for an internal node (|I| = leaves of the hierarchy), 0 for a leaf.

    Parameters
    ----------
    cut : iterable of node labels
        Generalised nodes (members below another member are ignored: normalise).
    hierarchy : Hierarchy
    tx : TransactionArray, iterable of item lists, or mapping item label -> occurrence count
    client : distributed.Client, optional
        Where to count item occurrences of a TransactionArray.

    Returns
    -------
    float
    """
    if isinstance(tx, Mapping):
        labels = list(tx.keys())
        vocab = Vocabulary(np.array(labels, dtype=object if any(isinstance(x, str) for x in labels) else np.int64))
        counts = np.zeros(len(vocab), np.int64)
        counts[vocab.encode(np.array(labels, dtype=vocab.labels.dtype))] = [int(v) for v in tx.values()]
    else:
        txa = as_transactions(tx)
        vocab = txa.vocabulary
        counts = _compute(txa.item_supports_lazy(), client, False)
    nodes = _node_tree(hierarchy, vocab)
    in_cut = np.zeros(nodes.n_nodes, bool)
    for lbl in cut:
        key = as_keys([lbl])[0]
        if key in nodes.index:
            in_cut[nodes.index[key]] = True
        elif key not in nodes.pruned and not (key == ROOT and nodes.n_nodes == 0):
            raise InvalidParameter(f"{lbl!r} is not a node of the hierarchy")
    # normalise: drop members that have an ancestor in the cut; leaves publish themselves
    norm = np.zeros_like(in_cut)
    for x in np.flatnonzero(in_cut):
        if x >= nodes.n_items and not any(in_cut[a] for a in nodes.ancestors_or_self(int(x))[1:]):
            norm[x] = True
    return _ncp(nodes, norm, counts)


def _plain_part(block: Any, m: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    return K.count_plain_block(block, m, bits)


def check_km_anonymity(
    tx: TransactionArray | Iterable[Iterable[Any]],
    k: int,
    m: int,
    *,
    client: Any = None,
    progress: bool = False,
    split_every: int = 8,
) -> Verdict:
    """Check k^m-anonymity by counting every itemset of size <= m of the (published) data.

    Independent of any hierarchy or count tree: items are taken as they are published.

    Parameters
    ----------
    tx : TransactionArray or iterable of item lists
    k, m : int
    client, progress, split_every
        See :func:`count_tree`.

    Returns
    -------
    Verdict
        One check ``"k^m-anonymity"``: figure = the smallest non-zero support of an itemset
        of at most ``m`` items (None without items), threshold = k, ``where`` = a violating
        itemset; ``stats``: ``km_anonymous``, ``violations`` (itemsets with 0 < support < k),
        ``min_support``, ``examples`` (up to 10 violating itemsets as lists of labels, in
        lexicographic order of column ids), ``n_itemsets`` (distinct itemsets of size <= m).
    """
    tx = as_transactions(tx)
    k, m = validate(COUNT_CONSTRAINTS, {"k": k, "m": m}).values()
    bits = K.key_bits(m, tx.n_items)
    parts = [dask.delayed(_plain_part, pure=True)(b, m, bits) for b in tx.blocks.to_delayed().ravel()]
    keys, counts = _compute(tree_reduce(parts, K.merge_counts, split_every=split_every), client, progress)
    bad = np.flatnonzero(counts < k)
    examples = []
    if bad.size:
        ids = K.unpack_keys(keys[bad[:_EXAMPLES]], m, bits)
        labels = tx.vocabulary.labels
        examples = [[labels[x].item() if hasattr(labels[x], "item") else labels[x] for x in row if x >= 0] for row in ids]
    stats = {
        "km_anonymous": bool(bad.size == 0),
        "violations": int(bad.size),
        "min_support": int(counts.min()) if counts.size else None,
        "examples": examples,
        "n_itemsets": int(keys.size),
    }
    where = f"itemset {examples[0]} (support {int(counts[bad[0]])})" if examples else None
    detail = (
        f"{int(bad.size):,} of {int(keys.size):,} itemsets of <= {m} items are supported by 1 to {k - 1} transactions"
        if bad.size
        else f"{int(keys.size):,} itemsets of <= {m} items, each supported 0 or >= {k} times"
    )
    return Verdict([Check(KM_ANONYMITY, stats["km_anonymous"], stats["min_support"], k, where=where, detail=detail, stats=stats)])


def is_km_anonymous(
    tx: TransactionArray | Iterable[Iterable[Any]],
    k: int,
    m: int,
    *,
    client: Any = None,
    progress: bool = False,
    split_every: int = 8,
) -> bool:
    """Whether every itemset of at most ``m`` items is supported 0 or >= ``k`` times (see
    :func:`check_km_anonymity`)."""
    return check_km_anonymity(tx, k, m, client=client, progress=progress, split_every=split_every).ok


# ---------------------------------------------------------------------- validation
def as_transactions(tx: Any) -> TransactionArray:
    """``tx`` as a TransactionArray (a list of item lists is read into one)."""
    if isinstance(tx, TransactionArray):
        return tx
    if isinstance(tx, (str, bytes)) or not isinstance(tx, Iterable):
        raise InvalidParameter(f"expected a TransactionArray or a list of item lists, got {type(tx).__name__}")
    return TransactionArray.from_lists(tx)


def _prepare(tx: Any, hierarchy: Hierarchy, k: Any, m: Any) -> tuple[TransactionArray, _Nodes, int, int]:
    k, m = validate(COUNT_CONSTRAINTS, {"k": k, "m": m}).values()
    tx = as_transactions(tx)
    nodes = _node_tree(hierarchy, tx.vocabulary)
    K.key_bits(m, nodes.n_nodes)
    if k > tx.n_transactions:
        raise InfeasiblePrivacyError(f"k={k} exceeds the number of transactions ({tx.n_transactions})")
    return tx, nodes, k, m
