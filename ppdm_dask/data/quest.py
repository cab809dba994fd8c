"""IBM Almaden Quest-style synthetic market-basket data (``T10.I4.D100K`` notation).

The generator of Agrawal & Srikant, *Fast Algorithms for Mining Association Rules* (VLDB 1994),
section "Synthetic data", on Dask:

1. **Patterns** (the "potentially large itemsets"), drawn once on the client from stream
   ``(Tag.QUEST, 0)``: ``L`` itemsets over ``N`` items, sizes ``1 + Poisson(I - 1)`` (so the mean
   is exactly ``I`` and no pattern is empty; clipped to ``N``). The first pattern's items are
   uniform; each later one takes a fraction ``~ Exponential(mean = correlation)`` (clipped to
   [0, 1]) of its items from the previous pattern and the rest uniformly among the other items.
   Each pattern has a weight ``~ Exponential(1)`` (normalised) and a corruption level
   ``~ Normal(corruption_mean, variance corruption_var)`` clipped to [0, 1].
2. **Transactions**, in fixed blocks of ``block_rows`` global rows, block ``b`` from stream
   ``(Tag.QUEST, 1, b)``, so the data do not depend on the partitioning. A transaction has a
   target size ``1 + Poisson(T - 1)`` distinct items and is filled with corrupted pattern
   instances (see :func:`ppdm_dask.data._quest_kernels.generate_block`).

Where the library departs from the paper
-----------------------------------------
The paper adds a pattern that does not fit "in half the cases" and otherwise carries it over to
the next transaction. Implemented literally (size counted in distinct items, a carried-over
pattern always accepted by the next, still empty, transaction), the mean transaction length
overshoots ``T`` as soon as patterns are not small against ``T``; measured on 32K rows:
T10.I4 +1.4%, T5.I2 +1.9%, T10.I6 +5.1%, T5.I4 +14%, T10.I10 +20%, T3.I4 +47% (IBM's own
T10I4D100K.dat has mean length 10.10, +1.0%). The library therefore uses *randomised rounding*:
a pattern that would bring ``s`` new items into a transaction with ``r < s`` free slots is added
(completing the transaction) with probability ``r / s``, otherwise carried over (completing it
too), so the expected final length equals the target size at every such step; and a pattern
larger than a still *empty* transaction is dropped instead of being forced in. Measured means
are then within 0.6% of ``T`` for all the configurations above (T10.I4 +0.4%, T20.I6 +0.2%,
T10.I6 +0.3%, T5.I4 -0.3%, T3.I4 +0.04%, T10.I10 +0.6%), with length variances close to the
literal rule's (T10.I4: 12.7 against 13.6; IBM's file: 13.4).

Item supports: items enter patterns uniformly, so their skew comes only from the pattern
weights and the correlation chains: on T10.I4 the top 10% of items hold ~24% of the occurrences
(coefficient of variation of the supports ~0.65), less than in IBM's T10I4D100K.dat (35%, 1.1,
only 870 of the 1000 items used).

Two-class data (``C20.I4.D200K``, Aggarwal & Yu's sketch paper): ``n_classes`` independent
instances with their own patterns (streams ``(Tag.QUEST, 0, c)`` and ``(Tag.QUEST, 1, c, b)``),
stacked class after class and labelled ``0..n_classes-1`` in the ``label`` column.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np
import scipy.sparse as sp
from dask.highlevelgraph import HighLevelGraph

from ..errors import InvalidParameter
from ..graph import blocks_from_tasks, check_partition_count, partitions_of, unique_name
from ..random import Key, KeyLike, Tag, as_key
from . import _quest_kernels as QK
from .vocabulary import Vocabulary

if TYPE_CHECKING:  # pragma: no cover
    from .transactions import TransactionArray

__all__ = [
    "QuestSpec",
    "QuestPatterns",
    "parse_spec",
    "make_patterns",
    "quest",
    "DEFAULT_BLOCK_ROWS",
]

#: Rows per randomness block: the output depends on it (not on the partitioning).
DEFAULT_BLOCK_ROWS = 16384
#: Blocks per partition when ``rows_per_partition`` is not given.
_DEFAULT_BLOCKS_PER_PARTITION = 8


# ---------------------------------------------------------------------------------- spec
def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _fmt_count(x: float) -> str:
    """``100000 -> '100K'``, ``2500000 -> '2.5M'``, ``2.5 -> '2.5'`` (parseable back)."""
    for mult, suffix in ((10**6, "M"), (10**3, "K")):
        q = Fraction(x) / mult
        if x >= mult and (q * 10).denominator == 1:  # short and exact: 1.5K, not 1.234K
            return _fmt_plain(float(q)) + suffix
    return _fmt_plain(x)


def _fmt_plain(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)


@dataclass(frozen=True)
class QuestSpec:
    """Public parameters of a Quest data set.

    Parameters
    ----------
    T : float
        Average transaction size, ``1 <= T <= N``.
    I : float
        Average size of the potentially-large itemsets (patterns), ``1 <= I <= N``.
    D : int
        Number of transactions (all classes together).
    N : int
        Number of items.
    L : int
        Number of patterns (per class).
    correlation : float
        Mean fraction of a pattern's items taken from the previous pattern, in [0, 1].
    corruption_mean, corruption_var : float
        Mean (in [0, 1]) and variance (>= 0) of the per-pattern corruption level.
    n_classes : int
        1, or 2 for the two-class construction ``C..`` (two independent instances).
    """

    T: float
    I: float  # noqa: E741 - the notation of the paper
    D: int
    N: int = 1000
    L: int = 2000
    correlation: float = 0.5
    corruption_mean: float = 0.5
    corruption_var: float = 0.1
    n_classes: int = 1

    def __post_init__(self) -> None:
        for name in ("D", "N", "L", "n_classes"):
            v = getattr(self, name)
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            if not _is_int(v):
                raise InvalidParameter(f"Quest parameter {name} must be an integer, got {v!r}")
            object.__setattr__(self, name, int(v))
        for name in ("T", "I", "correlation", "corruption_mean", "corruption_var"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise InvalidParameter(f"Quest parameter {name} must be a number, got {v!r}")
            if not math.isfinite(float(v)):
                raise InvalidParameter(f"Quest parameter {name} must be finite, got {v!r}")
            object.__setattr__(self, name, float(v))
        if self.N < 1:
            raise InvalidParameter(f"N (number of items) must be >= 1, got {self.N}")
        if self.L < 1:
            raise InvalidParameter(f"L (number of patterns) must be >= 1, got {self.L}")
        if self.D < 0:
            raise InvalidParameter(f"D (number of transactions) must be >= 0, got {self.D}")
        if not 1 <= self.T <= self.N:
            raise InvalidParameter(f"T (average transaction size) must be >= 1 and <= N = {self.N}, got {self.T}")
        if not 1 <= self.I <= self.N:
            raise InvalidParameter(f"I (average pattern size) must be between 1 and N = {self.N}, got {self.I}")
        if not 0 <= self.correlation <= 1:
            raise InvalidParameter(f"correlation must be in [0, 1], got {self.correlation}")
        if not 0 <= self.corruption_mean <= 1:
            raise InvalidParameter(f"corruption_mean must be in [0, 1], got {self.corruption_mean}")
        if self.corruption_var < 0:
            raise InvalidParameter(f"corruption_var must be >= 0, got {self.corruption_var}")
        if self.n_classes not in (1, 2):
            raise InvalidParameter(f"n_classes must be 1 or 2 (the C.. notation), got {self.n_classes}")

    @property
    def name(self) -> str:
        """The canonical notation, e.g. ``'T10.I4.D100K.N1K'`` (``N`` always, ``L`` if not 2000)."""
        head = "C" if self.n_classes == 2 else "T"
        parts = [
            f"{head}{_fmt_count(self.T)}",
            f"I{_fmt_count(self.I)}",
            f"D{_fmt_count(self.D)}",
            f"N{_fmt_count(self.N)}",
        ]
        if self.L != 2000:
            parts.append(f"L{_fmt_count(self.L)}")
        return ".".join(parts)

    def class_rows(self) -> list[int]:
        """Rows of every class (``D`` split as evenly as possible, the first class first)."""
        base, extra = divmod(self.D, self.n_classes)
        return [base + (1 if c < extra else 0) for c in range(self.n_classes)]

    def public_parameters(self) -> dict[str, Any]:
        """The parameters written into output metadata (JSON-serialisable)."""
        return {
            "T": self.T,
            "I": self.I,
            "D": self.D,
            "N": self.N,
            "L": self.L,
            "correlation": self.correlation,
            "corruption_mean": self.corruption_mean,
            "corruption_var": self.corruption_var,
            "n_classes": self.n_classes,
        }


_FIELD = re.compile(r"(\.?)([A-Za-z])(\d+(?:\.\d+)?|\.\d+)([KkMm])?")
_MULT = {"": 1, "k": 10**3, "m": 10**6}
_LETTERS = {"T": "T", "C": "T", "I": "I", "D": "D", "N": "N", "L": "L"}


def parse_spec(text: str) -> QuestSpec:
    """Parse the Quest notation, e.g. ``"T10.I4.D100K"``, ``"T10I4D100K.N1K"``, ``"C20.I4.D200K"``.

    Parameters
    ----------
    text : str
        Fields are a letter and a number with an optional ``K`` (1e3) or ``M`` (1e6) suffix,
        optionally separated by dots; case-insensitive; decimals allowed (``T2.5I1.5D10K``).
        ``T`` average transaction size, ``I`` average pattern size, ``D`` transactions, ``N``
        items (default 1000), ``L`` patterns (default 2000). ``C`` instead of ``T`` asks for the
        two-class construction: two independent ``T``-instances of ``D/2`` rows each.

    Returns
    -------
    QuestSpec

    Raises
    ------
    InvalidParameter
        For a malformed string (the message names the problem) or invalid values.
    """
    if not isinstance(text, str):
        raise InvalidParameter(f"a Quest spec must be a string, got {type(text).__name__}")
    s = text.strip()
    if not s:
        raise InvalidParameter("empty Quest spec; expected e.g. 'T10.I4.D100K'")
    fields: dict[str, Fraction] = {}
    head = None
    pos = 0
    while pos < len(s):
        m = _FIELD.match(s, pos)
        if m is None or (pos == 0 and m.group(1)):
            raise InvalidParameter(
                f"cannot read Quest spec {text!r} at position {pos} ({s[pos:]!r}): "
                "expected fields like 'T10', 'I4', 'D100K' (a letter, a number, optional K/M)"
            )
        dot, letter, number, suffix = m.groups()
        letter = letter.upper()
        if letter not in _LETTERS:
            raise InvalidParameter(f"unknown field {letter!r} in Quest spec {text!r}; known fields: T (or C), I, D, N, L")
        key = _LETTERS[letter]
        if key in fields:
            shown = key if letter != "C" else "T/C"
            raise InvalidParameter(f"field {shown} given twice in {text!r}")
        fields[key] = Fraction(number) * _MULT[(suffix or "").lower()]
        if key == "T":
            head = letter
        pos = m.end()
    missing = [k for k in ("T", "I", "D") if k not in fields]
    if missing:
        names = {"T": "T (or C)", "I": "I", "D": "D"}
        raise InvalidParameter(f"Quest spec {text!r} lacks field(s) {', '.join(names[k] for k in missing)}")
    kwargs: dict[str, Any] = {}
    for k, v in fields.items():
        if k in ("D", "N", "L"):
            if v.denominator != 1:
                raise InvalidParameter(f"{k} must be a whole number in {text!r}, got {float(v)}")
            kwargs[k] = int(v)
        else:
            kwargs[k] = float(v)
    return QuestSpec(**kwargs, n_classes=2 if head == "C" else 1)


def _as_spec(spec: QuestSpec | str) -> QuestSpec:
    if isinstance(spec, QuestSpec):
        return spec
    if isinstance(spec, str):
        return parse_spec(spec)
    raise InvalidParameter(f"spec must be a QuestSpec or a string, got {type(spec).__name__}")


# ---------------------------------------------------------------------------------- patterns
@dataclass(frozen=True, eq=False)
class QuestPatterns:
    """The potentially-large itemsets of one Quest instance (CSR-like layout).

    Attributes
    ----------
    indptr : ndarray of int64, shape (L + 1,)
    items : ndarray of int32
        Items of pattern ``p``: ``items[indptr[p]:indptr[p + 1]]`` (distinct; the items taken from
        the previous pattern come first).
    weights : ndarray of float64, shape (L,)
        Selection probabilities (sum to 1).
    corruption : ndarray of float64, shape (L,)
        Corruption levels in [0, 1].
    """

    indptr: np.ndarray
    items: np.ndarray
    weights: np.ndarray
    corruption: np.ndarray

    def __len__(self) -> int:
        return int(self.weights.size)

    @property
    def sizes(self) -> np.ndarray:
        """Size of every pattern."""
        return np.diff(self.indptr)

    def pattern(self, p: int) -> np.ndarray:
        """Items of pattern ``p``."""
        return self.items[self.indptr[p] : self.indptr[p + 1]]

    def __dask_tokenize__(self) -> tuple:
        return ("QuestPatterns", self.indptr.tobytes(), self.items.tobytes(), self.weights.tobytes(), self.corruption.tobytes())


def _pattern_unit(spec: QuestSpec, class_index: int) -> tuple[int, ...]:
    return (0,) if spec.n_classes == 1 else (0, class_index)


def _block_unit(spec: QuestSpec, class_index: int) -> tuple[int, ...]:
    return (1,) if spec.n_classes == 1 else (1, class_index)


def make_patterns(spec: QuestSpec | str, key: KeyLike, *, class_index: int = 0) -> QuestPatterns:
    """Draw the patterns of one Quest instance.

    Parameters
    ----------
    spec : QuestSpec or str
    key : Key or int or bytes
        The secret key (``None`` draws a fresh one, which is rarely useful here).
    class_index : int
        Class ``c`` of a two-class spec (stream ``(Tag.QUEST, 0, c)``); single-class specs use
        stream ``(Tag.QUEST, 0)`` and only accept ``class_index=0``.

    Returns
    -------
    QuestPatterns
    """
    spec = _as_spec(spec)
    if not 0 <= int(class_index) < spec.n_classes:
        raise InvalidParameter(f"class_index must be in 0..{spec.n_classes - 1}, got {class_index}")
    rng = as_key(key).generator(Tag.QUEST, *_pattern_unit(spec, int(class_index)))
    indptr, items, weights, corruption = QK.generate_patterns(
        rng, spec.L, spec.I, spec.N, spec.correlation, spec.corruption_mean, spec.corruption_var
    )
    return QuestPatterns(indptr, items, weights, corruption)


# ---------------------------------------------------------------------------------- dask layer
def _partition(
    key: Key,
    unit: tuple[int, ...],
    patterns: QuestPatterns,
    first_block: int,
    stop_block: int,
    class_rows: int,
    block_rows: int,
    n_items: int,
    avg_size: float,
    max_distinct: int,
) -> sp.csr_array:
    """Blocks ``first_block..stop_block-1`` of one class, stacked (runs on a worker)."""
    parts = []
    for b in range(first_block, stop_block):
        n = min(block_rows, class_rows - b * block_rows)
        rng = key.generator(Tag.QUEST, *unit, b)
        parts.append(
            QK.generate_block(
                rng,
                patterns.indptr,
                patterns.items,
                patterns.weights,
                patterns.corruption,
                n,
                n_items,
                avg_size,
                max_distinct=max_distinct,
            )
        )
    return QK.vstack_csr(parts, n_items)


def _labels_array(name: str, rows: list[int], labels: list[int]) -> da.Array:
    dsk = {(name, i): (np.full, r, lab, np.int32) for i, (r, lab) in enumerate(zip(rows, labels))}
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[])
    return da.Array(graph, name, (tuple(rows),), dtype=np.int32, meta=np.empty(0, np.int32))


def quest(
    spec: QuestSpec | str,
    *,
    key: KeyLike = None,
    rows_per_partition: int | None = None,
    block_rows: int = DEFAULT_BLOCK_ROWS,
) -> TransactionArray:
    """Lazy Quest synthetic market-basket data.

    Parameters
    ----------
    spec : QuestSpec or str
        The parameters, or their notation (``"T10.I4.D100K"``, ``"C20.I4.D200K"``; see
        :func:`parse_spec`).
    key : Key or int or bytes, optional
        Secret key of all random streams; ``None`` draws a fresh one (pass a key to reproduce).
        The key is never written into the metadata.
    rows_per_partition : int, optional
        Rows per partition, rounded up to a whole number of blocks; default
        ``8 * block_rows``. Does not change the data.
    block_rows : int
        Rows per randomness block (16384). Changes the data: keep it fixed to reproduce a run.

    Returns
    -------
    TransactionArray
        ``D`` transactions over ``Vocabulary.range(N)``; metadata holds ``generator="quest"``,
        ``spec`` (the notation), the public parameters and ``block_rows``. Two-class specs add a
        ``label`` column (int32): the first half of the rows is class 0, the rest class 1.

    Notes
    -----
    Patterns are drawn on the client (small); each partition task generates its blocks from
    their own streams, so the result is the same for every partitioning, scheduler and retry.
    """
    from .transactions import TransactionArray

    spec = _as_spec(spec)
    key = as_key(key)
    if not _is_int(block_rows) or block_rows < 1:
        raise InvalidParameter(f"block_rows must be a positive integer, got {block_rows!r}")
    block_rows = int(block_rows)
    if rows_per_partition is None:
        bpp = _DEFAULT_BLOCKS_PER_PARTITION
    else:
        if not _is_int(rows_per_partition) or rows_per_partition < 1:
            raise InvalidParameter(f"rows_per_partition must be a positive integer, got {rows_per_partition!r}")
        bpp = -(-int(rows_per_partition) // block_rows)

    # graph names are visible (dashboard, logs): tokenize a one-way digest, not the key itself
    key_digest = key.digest("ppdm-quest-graph")
    name = unique_name("quest", spec, key_digest, block_rows, bpp)
    check_partition_count(
        sum(partitions_of(d_c, block_rows, bpp) for d_c in spec.class_rows()),
        f"{spec.name} (D={spec.D:,} rows)",
        python="a smaller D or larger rows_per_partition",
        fix="a smaller D or a larger `partition_rows`",
    )
    tasks: list[tuple] = []
    rows: list[int] = []
    labels: list[int] = []
    for c, d_c in enumerate(spec.class_rows()):
        if d_c == 0:
            continue
        patterns = make_patterns(spec, key, class_index=c)
        max_distinct = QK.pattern_union_size(patterns.indptr, patterns.items, patterns.corruption)
        n_blocks = -(-d_c // block_rows)
        unit = _block_unit(spec, c)
        for first in range(0, n_blocks, bpp):
            stop = min(first + bpp, n_blocks)
            tasks.append((_partition, key, unit, patterns, first, stop, d_c, block_rows, spec.N, spec.T, max_distinct))
            rows.append(min(stop * block_rows, d_c) - first * block_rows)
            labels.append(c)
    blocks = blocks_from_tasks(name, tasks, rows, spec.N)
    metadata = {"generator": "quest", "spec": spec.name, **spec.public_parameters(), "block_rows": block_rows}
    columns = None
    if spec.n_classes > 1:
        if not rows:  # D == 0: match the single empty block of blocks_from_tasks
            rows, labels = [0], [0]
        columns = {"label": _labels_array(name.replace("quest-", "quest-label-", 1), rows, labels)}
    return TransactionArray(blocks, Vocabulary.range(spec.N), metadata=metadata, columns=columns)
