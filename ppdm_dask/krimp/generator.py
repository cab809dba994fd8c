"""KRIMP-based privacy-preserving data generation (Vreeken, van Leeuwen & Siebes; stream tag 5; docs/krimp.md#the-generator).

A :class:`KrimpGenerator` compresses a categorical database with KRIMP and then generates new
transactions from the code table: for each output row, a not-yet-assigned attribute (domain) is
picked uniformly at random, one code-table element covering an item of that domain is drawn with
probability proportional to its Laplace-corrected usage ``w(c) = usage(c) + laplace`` among the
elements that only touch unassigned domains, and its items are added; until every domain holds
exactly one item.

Randomness (docs/randomness.md#block-seeding): output rows are cut into blocks of ``block_rows`` (4096)
consecutive global indices; block ``b`` draws everything from ``key.generator(Tag.KRIMP_GENERATE,
b)`` in index order, exactly as the literal procedure of docs/krimp.md#the-generator does (``rng_b.integers(len(open))``
for the domain, ``rng_b.choice(len(S), p=w/Σw)`` for the element, ``Σw`` summed left to right in
code-table order). The compiled kernel reproduces those numpy calls bit for bit from the raw
64-bit words of the block's bit generator (Lemire's bounded integers with PCG64's 32-bit
buffering, ``(word >> 11) · 2⁻⁵³`` doubles, cumulative-sum search), so the output equals the
literal Python procedure (tested) and does not depend on the Dask partitioning, the scheduler or
the number of workers: partitions are whole numbers of blocks. A release (:meth:`KrimpGenerator.release`)
passes its own stream key, derived from the owner's key and the release's identity (method,
public parameters, content digest of the fitted data); :meth:`KrimpGenerator.sample` uses the key
it is given.

Unique records (docs/krimp.md#unique-records-are-never-copied): a generated row equal to a record
that occurs once in the fitted data is redrawn — round ``r`` redraws a block's remaining copies in
row order from stream ``(Tag.KRIMP_GENERATE, b, r)`` — unless ``allow_weak`` names
``"unique copies"``. The fitted generator holds the sorted 128-bit fingerprints of those records
(16 bytes each, :mod:`.uniques`).

Domains. Given explicitly (one list of item labels per attribute, in attribute order) or inferred
from categorical data with :func:`infer_domains`: items are scanned in ascending label order and
a domain is a maximal run of consecutive items whose supports add up to exactly ``|db|``; the
result is accepted only if every row then holds exactly one item of every domain (which also
means that the items of one domain never co-occur). This is how the LUCS/KRIMP ``.dat`` files
(and any data set numbered attribute by attribute) are laid out; anything else must pass
``domains=`` explicitly.

Privacy knobs (the paper's §5 discussion): ``min_support`` (no pattern rarer than this is used, a
k-anonymity-like guarantee on the patterns), ``laplace`` (every value of every domain keeps a
positive probability: diversity), ``max_len`` (no pattern longer than this) and ``exclude``
(sensitive item combinations that no pattern may contain); all except ``laplace`` act on the
KRIMP candidates.
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numba
import numpy as np

from ..base import Estimator
from ..constraints import Interval, Options, validate
from ..errors import DataFormatError, InvalidParameter, NotFittedError, PPDMError, WeakParameterError
from ..random import KeyLike, Tag, as_key
from .candidates import DEFAULT_MAX_CANDIDATES

__all__ = [
    "KrimpGenerator",
    "GenerationError",
    "infer_domains",
    "check_domains",
    "generate_rows",
    "step_distribution",
    "admissible_elements",
    "transaction_distribution",
    "BLOCK_ROWS",
    "DOMAIN_ORDERS",
]

#: Output rows per randomness block (docs/krimp.md#the-generator): block ``b`` uses stream ``(Tag.KRIMP_GENERATE, b)``.
BLOCK_ROWS = 4096
#: Supported domain orders (docs/krimp.md#clarification-the-random-choice-of-a-domain).
DOMAIN_ORDERS = ("random", "columns")
#: ``domain_order="columns"``: restarts of one row before giving up (only with zero weights).
MAX_RESTARTS = 10_000
#: Default number of randomness blocks per Dask partition (16 × 4096 = 65,536 rows).
BLOCKS_PER_PARTITION = 16
#: Redraw rounds of one block before a row that keeps copying a unique original record is an error.
MAX_REDRAWS = 10_000

_MODE = {"random": 0, "columns": 1}
_OK, _NEED_WORDS, _ZERO_WEIGHT, _TOO_MANY_RESTARTS = 0, 1, 2, 3


class GenerationError(PPDMError, RuntimeError):
    """No transaction can be generated (all admissible code-table elements have weight 0)."""


# ====================================================================== code-table tables
@dataclass(frozen=True)
class _Tables:
    """Everything the kernel needs, as flat numpy arrays (picklable, sent once per task)."""

    alphabet: np.ndarray  # sorted labels of all domain items; position = output column id
    item_domain: np.ndarray  # int32, domain index of each alphabet position
    n_domains: int
    elem_ptr: np.ndarray  # int64 (n_elem + 1,)
    elem_items: np.ndarray  # int32 alphabet positions of each element's items
    elem_mask: np.ndarray  # uint64 (n_elem, n_words): domains each element touches
    dom_ptr: np.ndarray  # int64 (n_domains + 1,)
    dom_elems: np.ndarray  # int32: elements touching each domain, in code-table order
    usages: np.ndarray  # float64 raw usages per element (appended singletons: 0)
    n_ct: int  # elements that came from the code table (the rest are appended singletons)

    @property
    def n_elements(self) -> int:
        return int(self.elem_ptr.size - 1)

    def weights(self, laplace: float, lp_factor: float = 1.0) -> np.ndarray:
        return self.usages * float(lp_factor) + float(laplace)

    def element_labels(self, e: int) -> tuple:
        return tuple(self.alphabet[self.elem_items[self.elem_ptr[e] : self.elem_ptr[e + 1]]].tolist())

    def __dask_tokenize__(self):
        return (
            "krimp-tables",
            self.alphabet.tobytes() if self.alphabet.dtype.kind == "i" else tuple(self.alphabet.tolist()),
            self.item_domain.tobytes(),
            self.elem_ptr.tobytes(),
            self.elem_items.tobytes(),
            self.usages.tobytes(),
        )


def _code_table_pairs(code_table: Any) -> tuple[list[np.ndarray], np.ndarray]:
    """``(itemsets, usages)`` from a CodeTable-like object or a sequence of ``(items, usage)``."""
    if hasattr(code_table, "itemsets") and hasattr(code_table, "usages"):
        sets = [np.asarray(s) for s in code_table.itemsets]
        usages = np.asarray(code_table.usages, dtype=np.float64)
    else:
        try:
            pairs = list(code_table)
            sets = [np.asarray(list(s)) for s, _ in pairs]
            usages = np.asarray([u for _, u in pairs], dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidParameter(
                "code_table must be a CodeTable (itemsets, usages) or a sequence of (itemset, usage) pairs"
            ) from None
    if usages.shape != (len(sets),):
        raise InvalidParameter(f"code table has {len(sets)} itemsets but {usages.size} usages")
    if usages.size and (not np.all(np.isfinite(usages)) or usages.min() < 0):
        raise InvalidParameter("code-table usages must be finite and non-negative")
    return sets, usages


def _normalize_domains(domains: Sequence[Iterable[Any]]) -> list[np.ndarray]:
    if isinstance(domains, (str, bytes)) or not hasattr(domains, "__iter__"):
        raise InvalidParameter("domains must be a sequence of item-label lists, one per attribute")
    out = []
    for i, d in enumerate(domains):
        if isinstance(d, (str, bytes)):
            raise InvalidParameter(f"domain {i} must be a list of item labels, got a string")
        arr = np.asarray(list(d))
        if arr.ndim != 1 or arr.size == 0:
            raise InvalidParameter(f"domain {i} is empty; every attribute needs at least one value")
        if arr.dtype.kind in "iu":
            arr = arr.astype(np.int64)
        elif arr.dtype.kind in "UO":
            arr = arr.astype(str)
        else:
            raise InvalidParameter(f"domain {i}: item labels must be integers or strings")
        if np.unique(arr).size != arr.size:
            raise InvalidParameter(f"domain {i} lists an item twice")
        out.append(arr)
    if not out:
        raise InvalidParameter("at least one domain is needed")
    kinds = {a.dtype.kind for a in out}
    if len(kinds) > 1:
        raise InvalidParameter("domain labels must be all integers or all strings")
    allv = np.concatenate(out)
    uniq, cnt = np.unique(allv, return_counts=True)
    if np.any(cnt > 1):
        raise InvalidParameter(f"items in more than one domain: {uniq[cnt > 1][:5].tolist()}")
    return out


def _build_tables(code_table: Any, domains: Sequence[Iterable[Any]]) -> _Tables:
    doms = _normalize_domains(domains)
    alphabet = np.sort(np.concatenate(doms))
    n_dom = len(doms)
    item_domain = np.empty(alphabet.size, np.int32)
    for d, arr in enumerate(doms):
        item_domain[np.searchsorted(alphabet, arr)] = d
    sets, usages = _code_table_pairs(code_table)
    elem_lists: list[np.ndarray] = []
    have_single = np.zeros(alphabet.size, bool)
    for k, s in enumerate(sets):
        s = np.asarray(s)
        if s.size == 0:
            raise InvalidParameter(f"code-table element {k} is empty")
        if alphabet.dtype.kind == "U":
            s = s.astype(str)
        elif s.dtype.kind not in "iu":
            raise InvalidParameter(f"code-table element {k} has non-integer items {s[:3].tolist()}")
        pos = np.searchsorted(alphabet, s)
        pos_c = np.minimum(pos, alphabet.size - 1)
        bad = alphabet[pos_c] != s
        if np.any(bad):
            raise InvalidParameter(f"code-table element {s.tolist()} holds items outside every domain: {s[bad][:5].tolist()}")
        pos = np.unique(pos).astype(np.int32)
        dd = item_domain[pos]
        if np.unique(dd).size != dd.size:
            raise InvalidParameter(
                f"code-table element {s.tolist()} holds two items of one domain; no categorical transaction contains it"
            )
        if pos.size == 1:
            have_single[pos[0]] = True
        elem_lists.append(pos)
    n_ct = len(elem_lists)
    # every value of every domain gets a singleton (usage 0 when unused or only declared)
    missing = np.flatnonzero(~have_single)
    elem_lists.extend(np.array([m], np.int32) for m in missing)
    usages = np.concatenate([usages, np.zeros(missing.size)])
    lens = np.array([e.size for e in elem_lists], np.int64)
    elem_ptr = np.zeros(len(elem_lists) + 1, np.int64)
    np.cumsum(lens, out=elem_ptr[1:])
    elem_items = np.concatenate(elem_lists).astype(np.int32) if elem_lists else np.zeros(0, np.int32)
    n_words = (n_dom + 63) // 64
    elem_mask = np.zeros((len(elem_lists), n_words), np.uint64)
    elem_of_item = np.repeat(np.arange(len(elem_lists)), lens)
    dom_of_item = item_domain[elem_items].astype(np.int64)
    np.bitwise_or.at(
        elem_mask, (elem_of_item, dom_of_item // 64), np.left_shift(np.uint64(1), (dom_of_item % 64).astype(np.uint64))
    )
    # elements per domain in code-table order (element index order)
    order = np.lexsort((elem_of_item, dom_of_item))
    dom_elems = elem_of_item[order].astype(np.int32)
    dom_ptr = np.zeros(n_dom + 1, np.int64)
    np.cumsum(np.bincount(dom_of_item, minlength=n_dom), out=dom_ptr[1:])
    return _Tables(alphabet, item_domain, n_dom, elem_ptr, elem_items, elem_mask, dom_ptr, dom_elems, usages, n_ct)


# ====================================================================== compiled kernel
@numba.njit(cache=True, nogil=True)
def _gen_kernel(
    mode,
    n_rows,
    row0,
    words,
    pos,
    has32,
    buf32,
    weights,
    elem_ptr,
    elem_items,
    elem_mask,
    dom_ptr,
    dom_elems,
    item_domain,
    n_dom,
    max_restarts,
    out_items,
    out_npat,
):  # pragma: no cover - compiled
    """Generate rows ``row0..n_rows-1`` into ``out_items`` (row, domain) -> alphabet position.

    Consumes the raw 64-bit words exactly like numpy's ``Generator.integers(n)`` (Lemire, with
    PCG64's buffered 32-bit halves: state ``has32``/``buf32``) and ``Generator.random()``.
    Returns ``(next_row, pos, has32, buf32, status)``; on ``_NEED_WORDS`` the state is rolled back
    to the start of ``next_row`` so the caller can append words and call again.
    """
    n_words_avail = words.size
    n_elem = elem_ptr.size - 1
    n_w = elem_mask.shape[1]
    open_list = np.empty(n_dom, np.int64)
    assigned = np.zeros(n_w, np.uint64)
    sidx = np.empty(max(n_elem, 1), np.int64)
    cdf = np.empty(max(n_elem, 1), np.float64)
    mask32 = np.uint64(0xFFFFFFFF)
    inv53 = 1.0 / 9007199254740992.0
    r = row0
    while r < n_rows:
        if n_words_avail - pos < 2 * n_dom + 2:
            return r, pos, has32, buf32, 1
        p0, h0, b0 = pos, has32, buf32
        restarts = 0
        need = False
        while True:  # one attempt at row r (columns mode may restart)
            for w in range(n_w):
                assigned[w] = np.uint64(0)
            for d in range(n_dom):
                open_list[d] = d
            n_open = n_dom
            npat = 0
            failed = False
            di = 0  # columns mode: next domain to look at
            while n_open > 0:
                if mode == 0:
                    # D = open[integers(n_open)]
                    if n_open == 1:
                        k = 0
                    else:
                        rng_excl = np.uint64(n_open)
                        while True:
                            if has32:
                                x = buf32
                                has32 = False
                            else:
                                if pos >= n_words_avail:
                                    need = True
                                    break
                                wd = words[pos]
                                pos += 1
                                has32 = True
                                buf32 = wd >> np.uint64(32)
                                x = wd & mask32
                            m = x * rng_excl
                            left = m & mask32
                            if left >= rng_excl:
                                break
                            thr = np.uint64((4294967296 - n_open) % n_open)
                            if left >= thr:
                                break
                        if need:
                            break
                        k = np.int64(m >> np.uint64(32))
                    D = open_list[k]
                else:
                    while True:
                        dd = di
                        if (assigned[dd // 64] >> np.uint64(dd % 64)) & np.uint64(1):
                            di += 1
                        else:
                            break
                    D = di
                # admissible elements touching D, in code-table order
                cnt = 0
                s = 0.0
                for j in range(dom_ptr[D], dom_ptr[D + 1]):
                    e = dom_elems[j]
                    ok = True
                    for w in range(n_w):
                        if elem_mask[e, w] & assigned[w]:
                            ok = False
                            break
                    if ok:
                        sidx[cnt] = e
                        s += weights[e]
                        cnt += 1
                if cnt == 0 or not (s > 0.0):
                    if mode == 0:
                        return r, pos, has32, buf32, 2
                    failed = True
                    break
                if pos >= n_words_avail:
                    need = True
                    break
                u = np.float64(words[pos] >> np.uint64(11)) * inv53
                pos += 1
                # rng.choice(cnt, p=w/s): cdf = cumsum(p); cdf /= cdf[-1]; searchsorted(right)
                c = 0.0
                for i in range(cnt):
                    c += weights[sidx[i]] / s
                    cdf[i] = c
                last = cdf[cnt - 1]
                pick = cnt - 1
                for i in range(cnt):
                    if cdf[i] / last > u:
                        pick = i
                        break
                e = sidx[pick]
                for t in range(elem_ptr[e], elem_ptr[e + 1]):
                    it = elem_items[t]
                    out_items[r, item_domain[it]] = it
                for w in range(n_w):
                    assigned[w] |= elem_mask[e, w]
                # drop the assigned domains from the open list, keeping it sorted
                nn = 0
                for q in range(n_open):
                    dq = open_list[q]
                    if not ((assigned[dq // 64] >> np.uint64(dq % 64)) & np.uint64(1)):
                        open_list[nn] = dq
                        nn += 1
                n_open = nn
                npat += 1
            if need:
                return r, p0, h0, b0, 1
            if failed:
                restarts += 1
                if restarts > max_restarts:
                    return r, pos, has32, buf32, 3
                continue
            break
        out_npat[r] = npat
        r += 1
    return r, pos, has32, buf32, 0


def _generate_block(
    tables: _Tables, weights: np.ndarray, mode: int, rng: np.random.Generator, n_rows: int
) -> tuple[np.ndarray, np.ndarray]:
    """Rows of one randomness block: ``(items (n_rows, n_domains) int32, patterns per row)``."""
    nd = tables.n_domains
    out = np.zeros((n_rows, nd), np.int32)
    npat = np.zeros(n_rows, np.int32)
    if n_rows == 0:
        return out, npat
    bg = rng.bit_generator
    words = bg.random_raw(n_rows * (2 * nd + 1) + 64)
    row, pos, has32, buf32 = 0, 0, False, np.uint64(0)
    while True:
        row, pos, has32, buf32, status = _gen_kernel(
            mode,
            n_rows,
            row,
            words,
            pos,
            has32,
            np.uint64(buf32),
            weights,
            tables.elem_ptr,
            tables.elem_items,
            tables.elem_mask,
            tables.dom_ptr,
            tables.dom_elems,
            tables.item_domain,
            nd,
            MAX_RESTARTS,
            out,
            npat,
        )
        if status == _OK:
            return out, npat
        if status == _NEED_WORDS:
            more = max(1024, (n_rows - row) * (2 * nd + 1))
            words = np.concatenate([words[pos:], bg.random_raw(more)])
            pos = 0
            continue
        if status == _ZERO_WEIGHT:
            raise GenerationError(
                "all code-table elements admissible for a domain have weight 0 (usage 0 and laplace = 0)",
                python="laplace > 0",
                fix="`laplace` > 0",
            )
        raise GenerationError(
            f"domain_order='columns': no admissible element after {MAX_RESTARTS} restarts of one row (zero weights)",
            python="laplace > 0",
            fix="`laplace` > 0",
        )


def _rows_to_csr(items: np.ndarray, n_items: int):
    import scipy.sparse as sp

    n, nd = items.shape
    idx = np.sort(items, axis=1).ravel().astype(np.int32)
    indptr = (np.arange(n + 1, dtype=np.int64) * nd).astype(np.int32)
    return sp.csr_array((np.ones(idx.size, np.int32), idx, indptr), shape=(n, n_items))


def _block_layout(n: int, block_rows: int) -> list[int]:
    nb = -(-n // block_rows) if n else 0
    return [min(block_rows, n - b * block_rows) for b in range(nb)]


@dataclass(frozen=True)
class _Forbidden:
    """The rows the generator must not emit: fingerprints of the original's unique records
    (sorted, :mod:`.uniques`) and the label hashes of the generator's alphabet."""

    fingerprints: np.ndarray  # (k, 2) uint64, sorted, unique
    h1: np.ndarray
    h2: np.ndarray

    def hits(self, tables: _Tables, items: np.ndarray) -> np.ndarray:
        """Which generated rows (alphabet positions, one per domain) are forbidden."""
        from ..data.fingerprints import row_fingerprints
        from .uniques import in_sorted

        if items.shape[0] == 0 or self.fingerprints.shape[0] == 0:
            return np.zeros(items.shape[0], bool)
        return in_sorted(self.fingerprints, row_fingerprints(_rows_to_csr(items, tables.alphabet.size), self.h1, self.h2))

    def __dask_tokenize__(self):
        return ("krimp-forbidden", self.fingerprints.tobytes())


def _forbidden(tables: _Tables, fingerprints: np.ndarray | None) -> _Forbidden | None:
    from ..data.fingerprints import label_hashes

    if fingerprints is None:
        return None
    h1, h2 = label_hashes(tables.alphabet)
    return _Forbidden(np.ascontiguousarray(fingerprints, np.uint64), h1, h2)


def _generate_checked(
    tables: _Tables, weights: np.ndarray, mode: int, key: Any, b: int, n_rows: int, forbid: _Forbidden | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of randomness block ``b``; with ``forbid``, every row equal to a unique original
    record is redrawn (docs/krimp.md#unique-records-are-never-copied).

    Round ``r = 1, 2, ...`` redraws the rows of the block still forbidden, in row order, from
    stream ``(KRIMP_GENERATE, b, r)``: the output depends only on the key, the block and the
    fitted generator, never on the partitioning. Returns ``(items, patterns per row, [rows
    whose first draw was forbidden, redraws])``.
    """
    items, npat = _generate_block(tables, weights, mode, key.generator(Tag.KRIMP_GENERATE, b), n_rows)
    stats = np.zeros(2, np.int64)
    if forbid is None:
        return items, npat, stats
    bad = np.flatnonzero(forbid.hits(tables, items))
    stats[0] = bad.size
    rnd = 0
    while bad.size:
        rnd += 1
        if rnd > MAX_REDRAWS:
            raise GenerationError(
                f"{bad.size} generated row(s) copied a record that is unique in the original in {MAX_REDRAWS:,} draws in a "
                "row: the code table leaves (almost) nothing but unique original records to generate (a min-support "
                "too low for the data?)",
                python="a higher min_support, or allow_weak=['unique copies'] to publish such copies (recorded in the manifest)",
                fix="a higher `min_count`, or `allow_unique_copies` to publish such copies (recorded in the manifest)",
            )
        new, new_pat = _generate_block(tables, weights, mode, key.generator(Tag.KRIMP_GENERATE, b, rnd), bad.size)
        items[bad] = new
        npat[bad] = new_pat
        stats[1] += bad.size
        bad = bad[forbid.hits(tables, new)]
    return items, npat, stats


def _generate_range(
    tables: _Tables,
    weights: np.ndarray,
    mode: int,
    key: Any,
    first_block: int,
    rows: Sequence[int],
    forbid: _Forbidden | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of consecutive randomness blocks ``first_block, first_block+1, ...`` (``rows`` each):
    ``(items, patterns per row, redraw statistics)`` (see :func:`_generate_checked`)."""
    parts, pats = [], []
    stats = np.zeros(2, np.int64)
    for i, r in enumerate(rows):
        it, npat, st = _generate_checked(tables, weights, mode, key, first_block + i, int(r), forbid)
        parts.append(it)
        pats.append(npat)
        stats += st
    if not parts:
        return np.zeros((0, tables.n_domains), np.int32), np.zeros(0, np.int32), stats
    return np.concatenate(parts), np.concatenate(pats), stats


def _partition_task(
    tables: _Tables,
    weights: np.ndarray,
    mode: int,
    key: Any,
    first_block: int,
    rows: Sequence[int],
    forbid: _Forbidden | None = None,
):
    items, npat, stats = _generate_range(tables, weights, mode, key, first_block, rows, forbid)
    return _rows_to_csr(items, tables.alphabet.size), npat.astype(np.int64), stats


def _sum_stats(parts: list[np.ndarray]) -> dict[str, int]:
    total = np.sum(np.asarray(parts, np.int64).reshape(-1, 2), axis=0)
    return {"rows_redrawn": int(total[0]), "redraws": int(total[1])}


def generate_rows(
    code_table: Any,
    domains: Sequence[Iterable[Any]],
    n: int,
    *,
    key: KeyLike = None,
    laplace: float = 0.001,
    lp_factor: float = 1.0,
    domain_order: str = "random",
    block_rows: int = BLOCK_ROWS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Generate ``n`` rows in memory from a code table (no Dask).

    Returns
    -------
    items : ndarray (n, n_domains)
        Row ``g``, domain ``d`` -> the label of its item.
    n_patterns : ndarray (n,)
        Code-table elements used for each row.
    alphabet : ndarray
        Sorted labels of all domain items.
    """
    tables = _build_tables(code_table, domains)
    mode, weights = _mode_and_weights(tables, laplace, lp_factor, domain_order)
    validate(GENERATION_CONSTRAINTS, {"n": n, "block_rows": block_rows})
    key = as_key(key)
    items, npat, _ = _generate_range(tables, weights, mode, key, 0, _block_layout(int(n), int(block_rows)))
    return tables.alphabet[items], npat, tables.alphabet


def _mode_and_weights(tables: _Tables, laplace: float, lp_factor: float, domain_order: str) -> tuple[int, np.ndarray]:
    validate(GENERATION_CONSTRAINTS, {"laplace": laplace, "lp_factor": lp_factor, "domain_order": domain_order})
    return _MODE[domain_order], tables.weights(laplace, lp_factor)


#: the parameters of generation (:mod:`ppdm_dask.constraints`)
GENERATION_CONSTRAINTS: dict[str, list[Any]] = {
    "n": [Interval(int, 0, None)],
    "block_rows": [Interval(int, 1, None)],
    "blocks_per_partition": [Interval(int, 1, None)],
    "laplace": [Interval(float, 0, None)],
    "lp_factor": [Interval(float, 0, None)],
    "domain_order": [Options(DOMAIN_ORDERS)],
}


# ====================================================================== exact distributions
def _as_fraction(x: Any) -> Fraction:
    return x if isinstance(x, Fraction) else Fraction(x)


def _exact_weights(tables: _Tables, laplace: Any, lp_factor: Any) -> list[Fraction]:
    lf, la = _as_fraction(lp_factor), _as_fraction(laplace)
    return [_as_fraction(float(u)) * lf + la for u in tables.usages]


def _touches(tables: _Tables, e: int, dom: int) -> bool:
    return bool((int(tables.elem_mask[e, dom // 64]) >> (dom % 64)) & 1)


def _elem_domains(tables: _Tables, e: int) -> frozenset:
    return frozenset(int(d) for d in tables.item_domain[tables.elem_items[tables.elem_ptr[e] : tables.elem_ptr[e + 1]]])


def _assigned_domains(tables: _Tables, assigned: Iterable[Any]) -> frozenset:
    items = np.asarray(list(assigned))
    if items.size == 0:
        return frozenset()
    if tables.alphabet.dtype.kind == "U":
        items = items.astype(str)
    pos = np.searchsorted(tables.alphabet, items)
    pos_c = np.minimum(pos, tables.alphabet.size - 1)
    if np.any(tables.alphabet[pos_c] != items):
        raise InvalidParameter(f"assigned items outside every domain: {items[tables.alphabet[pos_c] != items].tolist()}")
    return frozenset(int(d) for d in tables.item_domain[pos])


def admissible_elements(code_table: Any, domains: Sequence[Iterable[Any]], assigned: Iterable[Any] = ()) -> list[tuple]:
    """Code-table elements still usable once the items ``assigned`` are in the row: those with
    no item in an assigned domain (``cands`` of docs/krimp.md#the-generator), in code-table order, as label tuples
    (missing singletons of the domains are appended at the end)."""
    t = _build_tables(code_table, domains)
    done = _assigned_domains(t, assigned)
    return [t.element_labels(e) for e in range(t.n_elements) if not (_elem_domains(t, e) & done)]


def step_distribution(
    code_table: Any,
    domains: Sequence[Iterable[Any]],
    domain: int,
    *,
    assigned: Iterable[Any] = (),
    laplace: Any = 0.001,
    lp_factor: Any = 1.0,
) -> dict[tuple, Fraction]:
    """Exact probability of each element drawn for ``domain`` (an index into ``domains``) given
    the items already ``assigned`` to the row: ``w(c) / Σ_{S} w`` over ``S = CT^D`` restricted to
    admissible elements (docs/krimp.md#the-generator). Weights ``usage·lp_factor + laplace`` as exact fractions of
    the given numbers (pass ``Fraction`` for decimal-exact values)."""
    t = _build_tables(code_table, domains)
    if isinstance(domain, bool) or not isinstance(domain, numbers.Integral) or not 0 <= domain < t.n_domains:
        raise InvalidParameter(f"domain must be an index in 0..{t.n_domains - 1}, got {domain!r}")
    done = _assigned_domains(t, assigned)
    if domain in done:
        raise InvalidParameter(f"domain {domain} is already assigned")
    w = _exact_weights(t, laplace, lp_factor)
    S = [e for e in range(t.n_elements) if _touches(t, e, domain) and not (_elem_domains(t, e) & done)]
    total = sum((w[e] for e in S), Fraction(0))
    if total == 0:
        raise GenerationError(f"all admissible elements of domain {domain} have weight 0")
    return {t.element_labels(e): w[e] / total for e in S}


def transaction_distribution(
    code_table: Any,
    domains: Sequence[Iterable[Any]],
    *,
    laplace: Any = 0.001,
    lp_factor: Any = 1.0,
    domain_order: str = "random",
) -> dict[tuple, Fraction]:
    """Exact output distribution of one generated transaction (sorted label tuple -> probability),
    by exhaustive enumeration over domain orders and element choices in rational arithmetic.

    Exponential in the number of domains: for small code tables (tests: the exact distribution of the corrected Figure 1 table, docs/krimp.md#correction-the-code-table-of-figure-1).
    ``domain_order="columns"`` conditions on success (rows restarted on dead ends).
    """
    t = _build_tables(code_table, domains)
    if domain_order not in _MODE:
        raise InvalidParameter(f"domain_order must be one of {DOMAIN_ORDERS}, got {domain_order!r}")
    w = _exact_weights(t, laplace, lp_factor)
    edoms = [_elem_domains(t, e) for e in range(t.n_elements)]
    items_of = [frozenset(t.elem_items[t.elem_ptr[e] : t.elem_ptr[e + 1]].tolist()) for e in range(t.n_elements)]
    memo: dict[frozenset, dict[frozenset, Fraction]] = {}

    def choose(open_: frozenset, D: int) -> list[tuple[int, Fraction]]:
        S = [e for e in range(t.n_elements) if D in edoms[e] and edoms[e] <= open_]
        total = sum((w[e] for e in S), Fraction(0))
        if total == 0:
            return []
        return [(e, w[e] / total) for e in S if w[e]]

    def dist(open_: frozenset) -> dict[frozenset, Fraction]:
        if not open_:
            return {frozenset(): Fraction(1)}
        if open_ in memo:
            return memo[open_]
        out: dict[frozenset, Fraction] = {}
        Ds = sorted(open_) if domain_order == "random" else [min(open_)]
        pd = Fraction(1, len(Ds))
        for D in Ds:
            opts = choose(open_, D)
            if not opts and domain_order == "random":
                raise GenerationError(f"all admissible elements of domain {D} have weight 0")
            for e, pe in opts:
                for rest, pr in dist(open_ - edoms[e]).items():
                    key = rest | items_of[e]
                    out[key] = out.get(key, Fraction(0)) + pd * pe * pr
        memo[open_] = out
        return out

    res = dist(frozenset(range(t.n_domains)))
    total = sum(res.values(), Fraction(0))
    if total == 0:
        raise GenerationError("no transaction can be generated")
    labels = t.alphabet
    return {tuple(labels[sorted(k)].tolist()): v / total for k, v in res.items()}


# ====================================================================== domains
def _as_transactions(db: Any):
    from ..data.transactions import TransactionArray

    if isinstance(db, TransactionArray):
        return db
    if isinstance(db, (str, bytes)):
        raise InvalidParameter("expected a TransactionArray or a list of transactions, got a string")
    try:
        return TransactionArray.from_lists(db)
    except TypeError:
        raise InvalidParameter(f"expected a TransactionArray or a list of transactions, got {type(db).__name__}") from None


def _bad_rows_kernel(block: Any, item_domain: np.ndarray, n_dom: int) -> np.ndarray:
    """Rows of a CSR block that do not hold exactly one item of every domain (count), and
    occurrences of items outside every domain (``item_domain < 0``)."""
    n = block.shape[0]
    if n == 0:
        return np.zeros(2, np.int64)
    dom = item_domain[block.indices]
    outside = int(np.count_nonzero(dom < 0))
    row = np.repeat(np.arange(n, dtype=np.int64), np.diff(block.indptr))
    ok = dom >= 0
    counts = np.bincount(row[ok] * n_dom + dom[ok], minlength=n * n_dom).reshape(n, n_dom)
    bad = int(np.count_nonzero(np.any(counts != 1, axis=1)))
    return np.array([bad, outside], np.int64)


def _domain_check_lazy(tx: Any, doms: list[np.ndarray]) -> tuple[Any, np.ndarray, np.ndarray]:
    """The delayed ``[bad rows, items outside every domain]`` of :func:`check_domains` (one
    pass, to compute with others), the labels and their domain index."""
    from ..graph import tree_sum

    labels = tx.vocabulary.labels
    item_domain = np.full(labels.size, -1, np.int32)
    for d, arr in enumerate(doms):
        if labels.dtype.kind != arr.dtype.kind and labels.size:
            raise DataFormatError("domain labels and data labels differ in type (integers vs strings)")
        pos = np.searchsorted(labels, arr)
        pos_c = np.minimum(pos, max(labels.size - 1, 0))
        hit = (pos < labels.size) & (labels[pos_c] == arr) if labels.size else np.zeros(arr.size, bool)
        item_domain[pos[hit]] = d
    return tree_sum(tx.blocks, _bad_rows_kernel, (2,), np.int64, item_domain, len(doms)), labels, item_domain


def _domain_errors(res: np.ndarray, labels: np.ndarray, item_domain: np.ndarray, n_rows: int) -> None:
    bad, outside = int(res[0]), int(res[1])
    if outside:
        missing = labels[item_domain < 0][:5].tolist()
        raise DataFormatError(f"{outside} item occurrence(s) belong to no domain (items {missing} ...)")
    if bad:
        raise DataFormatError(
            f"{bad} of {n_rows} rows do not hold exactly one item of every domain; KRIMP "
            "generation needs categorical data (for missing values add one 'missing' item per attribute)"
        )


def _inference_error(exc: DataFormatError) -> DataFormatError:
    return DataFormatError(
        f"cannot infer attribute domains: {exc}",
        python="domains=[[items of attribute 1], ...]",
        cli="the input must hold one item per attribute in every row",
    )


def check_domains(db: Any, domains: Sequence[Iterable[Any]], **compute_kwargs: Any) -> None:
    """Raise :class:`DataFormatError` unless every row of ``db`` holds exactly one item of every
    domain and every item of ``db`` is in a domain (one Dask pass: MAP + tree sum)."""
    from ..progress import compute

    tx = _as_transactions(db)
    lazy, labels, item_domain = _domain_check_lazy(tx, _normalize_domains(domains))
    compute_kwargs.setdefault("progress", False)
    (res,) = compute(lazy, **compute_kwargs)
    _domain_errors(res, labels, item_domain, tx.n_transactions)


def _domains_from_supports(labels: np.ndarray, supports: np.ndarray, n: int) -> list[np.ndarray]:
    """The candidate domains of :func:`infer_domains` (runs of items whose supports add up to
    ``n``), before the verification pass."""
    domains: list[np.ndarray] = []
    start, acc = 0, 0
    for j in range(labels.size):
        acc += int(supports[j])
        if acc == n:
            domains.append(labels[start : j + 1])
            start, acc = j + 1, 0
        elif acc > n:
            raise DataFormatError(
                f"cannot infer attribute domains: the supports of items {labels[start]}..{labels[j]} "
                f"exceed |db| = {n} before adding up to it; rows do not hold exactly one item per "
                "attribute with attributes numbered consecutively; pass domains= explicitly"
            )
    if start < labels.size:
        if not domains:
            raise DataFormatError("cannot infer attribute domains: the item supports never add up to |db|")
        # trailing zero-support items join the last domain (declared but unobserved values)
        if acc == 0:
            domains[-1] = np.concatenate([domains[-1], labels[start:]])
        else:
            raise DataFormatError(
                f"cannot infer attribute domains: items {labels[start]}..{labels[-1]} have supports adding "
                f"up to {acc}, not |db| = {n}; pass domains= explicitly"
            )
    return domains


def infer_domains(db: Any, **compute_kwargs: Any) -> list[np.ndarray]:
    """Attribute domains of categorical data where every row holds one item per attribute.

    Rule: items are scanned in ascending label order; a domain is a maximal run of consecutive
    items whose supports add up to exactly ``|db|`` (``supp(run) == |db|`` closes the domain).
    The partition is accepted only if every row holds exactly one item of every domain (one
    verification pass), which also implies that items of one domain never co-occur. This
    recovers the attributes of data numbered attribute by attribute, as the LUCS/KRIMP ``.dat``
    files are; otherwise pass the domains explicitly.

    Returns
    -------
    list of ndarray
        Item labels of each domain, in attribute (label) order.

    Raises
    ------
    DataFormatError
        Empty data, or no such partition exists (e.g. rows of different lengths).
    """
    tx = _as_transactions(db)
    n = tx.n_transactions
    if n == 0:
        raise DataFormatError("cannot infer domains from an empty database")
    kw = dict(compute_kwargs)
    kw.setdefault("progress", False)
    domains = _domains_from_supports(tx.vocabulary.labels, tx.item_supports(**kw), n)
    try:
        check_domains(tx, domains, **kw)
    except DataFormatError as exc:
        raise _inference_error(exc) from None
    return domains


# ====================================================================== estimator
class KrimpGenerator(Estimator):
    """Generate privacy-preserving categorical data from a KRIMP code table (docs/krimp.md#the-generator).

    Follows the estimator contract (:mod:`ppdm_dask.base`): ``fit`` compresses the data with
    KRIMP, :meth:`release` returns a :class:`~ppdm_dask.krimp.release.GeneratedRelease` (written
    and verified by its ``write``); :meth:`sample` stays for library users who want the rows only.

    Parameters
    ----------
    min_support : int or float, default 2
        Candidate itemsets for KRIMP: absolute count >= 1 or fraction in (0, 1]. No pattern
        rarer than this is used, so no generated row copies a pattern seen in fewer records.
        Below 2 (the paper's Table 1 mostly used 1) a pattern can be a whole unique record: refused
        unless ``allow_weak`` (floor ``"min-support"``).
    laplace : float, default 0.001
        Added to every element's usage (including unused singletons) before drawing.
    closed : bool, default False
        Closed candidates only.
    prune : bool, default False
        KRIMP post-acceptance pruning (the paper ran without pruning; docs/krimp.md#clarification-pruning).
    max_len : int, optional
        Longest candidate pattern.
    exclude : iterable of item combinations
        Sensitive combinations: no candidate contains all items of one of them.
    domains : list of lists of labels, optional
        Attribute domains in attribute order; inferred with :func:`infer_domains` if omitted.
    domain_order : {"random", "columns"}
        ``"random"``: uniform over unassigned domains (the paper, default); ``"columns"``: the authors'
        reference generator (docs/krimp.md#clarification-the-random-choice-of-a-domain).
    lp_factor : float, default 1.0
        Weight ``usage·lp_factor + laplace`` (the reference generator's factor; 1 = the paper).
    key : Key, int or bytes, optional
        Secret key of the generation and of the release's row order (a fresh secret key drawn
        at :meth:`fit` when omitted: ``key_``, used by :meth:`release` and by :meth:`sample`
        without a key of its own). Never shown or written. A release draws from a stream key
        derived from it and the release's identity.
    n_rows : int, optional
        Rows to generate in :meth:`release` (default: as many as the fitted data).
    allow_weak : bool or sequence of str, default False
        Accept ``min_support`` below the floor (``True`` or ``["min-support"]``); release rows
        equal to a record unique in the fitted data (only when named: ``["unique copies"]``;
        otherwise they are redrawn). Recorded in the release manifest.
    max_candidates : int or None, default 20,000,000
        Refuse (:class:`~ppdm_dask.errors.ResultTooLargeError`) as soon as the candidate miner
        finds more itemsets: low min-support on dense data explodes (all itemsets of mushroom at
        min-support 1 do not fit in memory); None for no bound.
    distributed : bool, default False
        Find the code table with the cover kept on the cluster's workers (one block per
        partition of the data, docs/krimp.md#distributed-search): the same table, for data whose
        rows do not fit the driver.
    ledger : Ledger, str or None, default "default"
        Where :meth:`~ppdm_dask.release.Release.write` records the release (docs/ledger.md): the
        user's ledger (``"default"``), a :class:`~ppdm_dask.ledger.Ledger` or its location, or
        None to opt out (said in the manifest). Repeated releases of one input are counted there
        and their union measured in the owner's report (docs/krimp.md#repeated-releases).

    Attributes
    ----------
    code_table_ : CodeTable
    domains_ : list of ndarray
    n_rows_ : int
        Rows of the fitted database (default output size).
    min_support_ : int or None
        The absolute candidate min-support.
    overrides_ : tuple of str
        Floors that fail and were overridden.
    krimp_result_ : KrimpResult
    report_ : dict
        ``n_rows``, ``n_domains``, ``min_support``, ``code_table_itemsets``, ``n_candidates``,
        ``seconds_mining``, ``seconds_search``, ``overrides``, ``unique_records`` (records
        that occur once in the fitted data; None when copies are allowed).
    avg_patterns_per_row_ : float
        Mean number of code-table elements used per generated row in the last
        :meth:`sample_lists` call, or (computed on first access) of the last :meth:`sample`.
    redraws_ : dict
        ``rows_redrawn`` and ``redraws`` of the last :meth:`sample` / :meth:`sample_lists`.
    """

    def __init__(
        self,
        min_support: int | float = 2,
        laplace: float = 0.001,
        *,
        closed: bool = False,
        prune: bool = False,
        max_len: int | None = None,
        exclude: Iterable[Iterable[Any]] = (),
        domains: Sequence[Iterable[Any]] | None = None,
        domain_order: str = "random",
        lp_factor: float = 1.0,
        key: KeyLike = None,
        n_rows: int | None = None,
        allow_weak: bool | Sequence[str] = False,
        max_candidates: int | None = DEFAULT_MAX_CANDIDATES,
        distributed: bool = False,
        ledger: Any = "default",
    ) -> None:
        self.min_support = min_support
        self.laplace = laplace
        self.closed = closed
        self.prune = prune
        self.max_len = max_len
        self.exclude = exclude
        self.domains = domains
        self.domain_order = domain_order
        self.lp_factor = lp_factor
        self.key = key
        self.n_rows = n_rows
        self.allow_weak = allow_weak
        self.max_candidates = max_candidates
        self.distributed = distributed
        self.ledger = ledger

    # ------------------------------------------------------------------ fitting
    _parameter_constraints = {
        "laplace": GENERATION_CONSTRAINTS["laplace"],
        "domain_order": GENERATION_CONSTRAINTS["domain_order"],
        "max_len": [None, Interval(int, 1, None)],
        "n_rows": [None, Interval(int, 0, None)],
    }

    def _allowed(self) -> tuple[str, ...]:
        from .release import allowed_overrides

        return allowed_overrides(self.allow_weak)

    def _floor(self, min_support: int | None) -> tuple[str, ...]:
        """Overrides of the ``min-support`` floor and of the unique-copy rule; raises
        :class:`WeakParameterError` when the floor fails and ``allow_weak`` does not cover it."""
        from .release import MIN_SUPPORT, MIN_SUPPORT_FLOOR, UNIQUE_COPIES

        allowed = self._allowed()
        out = (UNIQUE_COPIES,) if UNIQUE_COPIES in allowed else ()
        if min_support is None or min_support >= MIN_SUPPORT_FLOOR:
            return out
        if MIN_SUPPORT not in allowed:
            raise WeakParameterError(
                f"min-support {min_support} is below the floor {MIN_SUPPORT_FLOOR}: a pattern seen in a single record can "
                "copy that record into the generated data; refused",
                python="min_support >= 2, or allow_weak=['min-support'] (recorded in the manifest)",
                fix="`min_count` 2 or more, or `allow_weak` (recorded in the manifest)",
            )
        return (MIN_SUPPORT, *out)

    def _copies_allowed(self) -> bool:
        from .release import UNIQUE_COPIES

        return UNIQUE_COPIES in self._allowed()

    def fit(self, X: Any, *, client: Any = None, progress: bool = False) -> KrimpGenerator:
        """Compress ``X`` with KRIMP and prepare generation.

        ``X``: a TransactionArray or a list of transactions (item labels) of categorical data.
        The ``min-support`` floor is checked before the search. One pass over ``X`` checks the
        domains and computes, together, the content digest that names the input in the
        release's identity and the fingerprints of the records unique in ``X`` (never
        generated, unless ``allow_weak`` names ``"unique copies"``; 16 bytes per unique record
        are kept in memory, see :mod:`.uniques`).
        """
        from ..data.digest import content_digest_lazy
        from ..data.persons import transaction_people
        from ..data.sources import source_of
        from ..mining import min_count_of
        from ..progress import compute
        from .search import krimp
        from .uniques import unique_fingerprints_lazy

        self.validate_params()
        self._resolve_key()
        tx = _as_transactions(X)
        if tx.n_transactions == 0:
            raise DataFormatError("cannot fit a generator on an empty database")
        min_support = min_count_of(self.min_support, tx.n_transactions)
        overrides = self._floor(min_support)
        ckw = {"client": client, "progress": progress}
        inferred = self.domains is None
        if inferred:
            domains = _domains_from_supports(tx.vocabulary.labels, tx.item_supports(**ckw), tx.n_transactions)
        else:
            domains = _normalize_domains(self.domains)
        try:
            check, labels, item_domain = _domain_check_lazy(tx, domains)
        except DataFormatError as exc:
            raise (_inference_error(exc) if inferred else exc) from None
        uniques = None if self._copies_allowed() else unique_fingerprints_lazy(tx)
        res, digest, uniques = compute(check, content_digest_lazy(tx), uniques, **ckw)
        try:
            _domain_errors(res, labels, item_domain, tx.n_transactions)
        except DataFormatError as exc:
            raise (_inference_error(exc) if inferred else exc) from None
        exclude = tuple(tuple(x) for x in self.exclude)
        result = krimp(
            tx,
            min_support=min_support,
            closed=self.closed,
            prune=self.prune,
            max_len=self.max_len,
            exclude=exclude,
            progress=progress,
            max_candidates=self.max_candidates,
            distributed=bool(self.distributed),
            client=client,
        )
        self.krimp_result_ = result
        self._set_table(result.code_table, domains, tx.n_transactions)
        self.min_support_ = min_support
        self.overrides_ = overrides
        self._search = {
            "closed": bool(self.closed),
            "prune": bool(self.prune),
            "max_len": self.max_len,
            "exclude": [np.asarray(list(x)).tolist() for x in exclude],
        }
        self._source = source_of(X)
        # private: the input's content digest (release identity), its unique records and whose
        # its records are (each its own person, or its record_id: the ledger's joins)
        self._input_digest = digest
        self._uniques = uniques
        self._people = transaction_people(tx)
        self.report_ = {
            "n_rows": tx.n_transactions,
            "n_domains": len(domains),
            "min_support": min_support,
            "code_table_itemsets": result.code_table.n_nontrivial,
            "n_candidates": result.n_candidates,
            "seconds_mining": result.seconds_mining,
            "seconds_search": result.seconds_search,
            "overrides": list(overrides),
            "unique_records": None if uniques is None else int(uniques.shape[0]),
        }
        return self

    @classmethod
    def from_code_table(
        cls,
        code_table: Any,
        domains: Sequence[Iterable[Any]],
        *,
        n_rows: int | None = None,
        laplace: float = 0.001,
        domain_order: str = "random",
        lp_factor: float = 1.0,
        min_support: int | None = None,
        key: KeyLike = None,
        allow_weak: bool | Sequence[str] = False,
        data: Any = None,
    ) -> KrimpGenerator:
        """A fitted generator from a given code table (CodeTable or ``[(itemset, usage), ...]``).

        ``min_support`` (for releases): default the one recorded in a saved CodeTable's
        parameters, else the smallest support of its non-singleton elements. ``data``: the data
        the table was found on (a TransactionArray or lists of labels; one pass): its content
        digest names the input of a release, whose rows never copy its unique records.
        Without it the generator does not know that data: :meth:`sample` cannot avoid its
        unique records, and :meth:`release` is refused unless ``allow_weak`` names ``"unique
        copies"``. The key is resolved here, as by :meth:`fit` (``key_``).
        """
        params = dict(getattr(code_table, "parameters", None) or {})
        if min_support is None:
            min_support = params.get("min_support")
        if min_support is None and hasattr(code_table, "supports") and getattr(code_table, "n_nontrivial", 0):
            min_support = int(np.min(np.asarray(code_table.supports)[: code_table.n_nontrivial]))
        gen = cls(
            min_support=min_support if min_support is not None else 2,
            laplace=laplace,
            domains=domains,
            domain_order=domain_order,
            lp_factor=lp_factor,
            key=key,
            allow_weak=allow_weak,
        )
        gen.validate_params()
        gen._resolve_key()
        if n_rows is None:
            n_rows = int(getattr(code_table, "n_rows", 0) or 0)
        gen._set_table(code_table, _normalize_domains(domains), int(n_rows))
        gen.min_support_ = None if min_support is None else int(min_support)
        gen.overrides_ = ()
        gen._search = {k: params.get(k) for k in ("closed", "prune", "max_len", "exclude")}
        gen._source = None
        gen._input_digest = None
        gen._uniques = None
        gen._people = None
        if data is not None:
            from ..data.persons import transaction_people
            from ..data.sources import source_of

            gen._source = source_of(data)
            gen._input_digest, gen._uniques = gen._input_facts(data)
            gen._people = transaction_people(_as_transactions(data))
        gen.report_ = {
            "n_rows": gen.n_rows_,
            "n_domains": len(gen.domains_),
            "min_support": gen.min_support_,
            "code_table_itemsets": getattr(code_table, "n_nontrivial", None),
            "overrides": [],
            "unique_records": None if gen._uniques is None else int(gen._uniques.shape[0]),
        }
        return gen

    def _set_table(self, code_table: Any, domains: list[np.ndarray], n_rows: int) -> None:
        self.code_table_ = code_table
        self.domains_ = [np.asarray(d) for d in domains]
        self.n_rows_ = int(n_rows)
        self._tables = _build_tables(code_table, self.domains_)
        self._last_npat = None
        self._avg = None
        self._last_stats = None

    def _fitted(self) -> _Tables:
        t = getattr(self, "_tables", None)
        if t is None:
            raise NotFittedError("this KrimpGenerator is not fitted yet; call fit(db) first")
        return t

    def _mode_weights(self) -> tuple[int, np.ndarray]:
        return _mode_and_weights(self._fitted(), self.laplace, self.lp_factor, self.domain_order)

    def _n(self, n: int | None) -> int:
        if n is None:
            n = self.n_rows_
        return validate(GENERATION_CONSTRAINTS, {"n": n})["n"]

    def _sample_key(self, key: KeyLike) -> Any:
        """The key of a :meth:`sample` call: its own, else the fitted ``key_``."""
        return as_key(key) if key is not None else self.key_

    def _forbid(self, uniques: np.ndarray | None = None) -> _Forbidden | None:
        """What generation must avoid: the unique records of the fitted data (or ``uniques``),
        unless the estimator allows copies."""
        if self._copies_allowed():
            return None
        u = uniques if uniques is not None else getattr(self, "_uniques", None)
        return _forbidden(self._fitted(), u)

    # ------------------------------------------------------------------ release
    def release(self, *, client: Any = None, progress: bool = False) -> Any:
        """The release of ``n_rows`` generated rows (lazy; ``write`` writes and verifies it).

        The rows come from the code table; a generator built :meth:`from_code_table` needs the
        data the table was found on (its ``data=``) unless ``allow_weak`` names ``"unique
        copies"``.

        Every random step draws from the release's own streams, derived from the key and the
        release's identity (method, public parameters, the input's content digest;
        :meth:`GeneratedRelease.streams_for`): one key gives unrelated rows for other
        parameters or another input, and the same rows for the same ones.
        """
        from .release import METHOD, GeneratedRelease

        self._fitted()
        min_support = self.min_support_
        if min_support is None:
            raise InvalidParameter(
                "this code table records no supports: its min-support is unknown, it cannot be released",
                python="KrimpGenerator.from_code_table(..., min_support=N)",
            )
        overrides = tuple(dict.fromkeys((*self.overrides_, *self._floor(min_support))))
        digest, uniques = getattr(self, "_input_digest", None), getattr(self, "_uniques", None)
        if uniques is None and not self._copies_allowed():
            raise InvalidParameter(
                "this generator does not know the data its code table was found on, so it cannot keep the records unique "
                "in that data out of the release",
                python="from_code_table(..., data=db) with the data, or allow_weak=['unique copies'] (recorded in the manifest)",
            )
        key = self.key_
        n = self._n(self.n_rows)
        params, figures, patterns = _release_parts(self, n, min_support)
        if uniques is not None:
            figures["privacy"]["unique_records_in_input"] = int(uniques.shape[0])
        skey = GeneratedRelease.streams_for(key, METHOD, params, digest)
        data, stats = self._generate(n, skey, forbid=self._forbid(uniques))
        return GeneratedRelease(
            data,
            method=METHOD,
            parameters=params,
            figures=figures,
            key=key,
            source=getattr(self, "_source", None),
            input_info={"rows": self.n_rows_, "n_items": int(self._tables.alphabet.size)},
            overrides=overrides,
            patterns=patterns,
            input_digest=digest,
            redraws=stats,
            ledger=self.ledger,
            people=getattr(self, "_people", None),
        )

    def _input_facts(self, X: Any) -> tuple[bytes, np.ndarray | None]:
        """Content digest and unique records of ``X`` (one pass), for a generator built from a
        code table."""
        from ..data.digest import content_digest_lazy
        from ..progress import compute
        from .uniques import unique_fingerprints_lazy

        tx = _as_transactions(X)
        uniques = None if self._copies_allowed() else unique_fingerprints_lazy(tx)
        digest, uniques = compute(content_digest_lazy(tx), uniques, progress=False)
        return digest, uniques

    def __getattr__(self, name: str) -> Any:
        if name == "avg_patterns_per_row_" and "_tables" in vars(self):
            raise AttributeError("avg_patterns_per_row_ is set by sample_lists() or sample(pattern_counts=True)")
        return super().__getattr__(name)

    # ------------------------------------------------------------------ generation
    def sample_lists(self, n: int | None = None, key: KeyLike = None, *, block_rows: int = BLOCK_ROWS) -> list[list[Any]]:
        """``n`` generated transactions (default ``|db|``) as sorted lists of labels, in memory.

        Equal to ``sample(n, key=key, block_rows=block_rows).to_lists()``.
        """
        tables = self._fitted()
        mode, weights = self._mode_weights()
        n = self._n(n)
        validate(GENERATION_CONSTRAINTS, {"block_rows": block_rows})
        items, npat, stats = _generate_range(
            tables, weights, mode, self._sample_key(key), 0, _block_layout(n, int(block_rows)), self._forbid()
        )
        self._last_npat = None
        self._avg = float(npat.mean()) if n else float("nan")
        self._last_stats = _sum_stats([stats])
        labels = tables.alphabet[np.sort(items, axis=1)]
        return labels.tolist()

    def sample(
        self,
        n: int | None = None,
        *,
        key: KeyLike = None,
        block_rows: int = BLOCK_ROWS,
        blocks_per_partition: int = BLOCKS_PER_PARTITION,
        pattern_counts: bool = True,
    ):
        """``n`` generated transactions (default ``|db|``) as a lazy TransactionArray.

        Each Dask partition generates ``blocks_per_partition`` consecutive randomness blocks of
        ``block_rows`` rows; block ``b`` uses ``key.generator(Tag.KRIMP_GENERATE, b)``, so the
        rows depend only on ``(code table, domains, parameters, key, block_rows)``, not on the
        partitioning or the workers. ``key=None`` uses the fitted ``key_`` (the estimator's
        ``key``, or the fresh secret key drawn at :meth:`fit`).

        The streams derive from ``key`` as given (the literal procedure of
        docs/krimp.md#the-generator): two fitted generators sampled with one key draw the same
        random numbers. A release (:meth:`release`) instead derives its streams from the key
        and its identity, so its rows are not ``sample(n, key)``. Rows equal to a record unique
        in the fitted data are redrawn, as in a release (statistics: :attr:`redraws_`).
        With ``pattern_counts`` the result has a row column ``n_patterns`` (code-table elements
        used per row; the paper's Fig. 5). The vocabulary is the union of the domains.
        """
        data, stats = self._generate(
            self._n(n),
            self._sample_key(key),
            forbid=self._forbid(),
            block_rows=block_rows,
            blocks_per_partition=blocks_per_partition,
            pattern_counts=pattern_counts,
        )
        self._last_stats = stats
        return data

    @property
    def redraws_(self) -> dict[str, int]:
        """Of the last :meth:`sample` / :meth:`sample_lists`: ``rows_redrawn`` (rows whose first
        draw copied a record unique in the fitted data) and ``redraws`` (draws it took to
        replace them). Computed on first access after :meth:`sample` (generates again)."""
        st = getattr(self, "_last_stats", None)
        if st is None:
            raise AttributeError("redraws_ is set by sample() or sample_lists()")
        if not isinstance(st, dict):
            from ..progress import compute

            (st,) = compute(st, progress=False)
            self._last_stats = st
        return dict(st)

    def _generate(
        self,
        n: int,
        key: Any,
        *,
        forbid: _Forbidden | None,
        block_rows: int = BLOCK_ROWS,
        blocks_per_partition: int = BLOCKS_PER_PARTITION,
        pattern_counts: bool = True,
    ) -> tuple[Any, Any]:
        """``(TransactionArray of n generated rows, delayed redraw statistics)`` from the
        streams of ``key`` (see :meth:`sample`)."""
        import dask
        import dask.array as da
        from dask.base import tokenize

        from ..data.transactions import TransactionArray
        from ..data.vocabulary import Vocabulary
        from ..graph import blocks_from_tasks, check_partition_count, concat_rows, partitions_of

        tables = self._fitted()
        mode, weights = self._mode_weights()
        validate(GENERATION_CONSTRAINTS, {"block_rows": block_rows, "blocks_per_partition": blocks_per_partition})
        check_partition_count(
            partitions_of(n, block_rows, blocks_per_partition),
            f"generating {n:,} rows",
            python="a smaller n",
            fix="a smaller `n_rows`",
        )
        layout = _block_layout(n, int(block_rows))
        groups = [list(range(i, min(i + blocks_per_partition, len(layout)))) for i in range(0, len(layout), blocks_per_partition)]
        # graph names must not reveal the key: only its one-way digest enters the token
        token = tokenize(
            key.digest("krimp-generate"), tables, weights, mode, n, int(block_rows), int(blocks_per_partition), forbid
        )
        # the unique records go into the graph once (one key), not once per task
        forbid_d = dask.delayed(forbid, name=f"krimp-forbidden-{token}", pure=True) if forbid is not None else None
        parts = []
        rows = []
        for i, g in enumerate(groups):
            brows = [layout[b] for b in g]
            parts.append(
                dask.delayed(_partition_task, pure=True)(
                    tables, weights, mode, key, g[0], brows, forbid_d, dask_key_name=f"krimp-generate-task-{token}-{i}"
                )
            )
            rows.append(sum(brows))
        vocab = Vocabulary(tables.alphabet, assume_sorted=True)
        tasks = [(operator.getitem, p.key, 0) for p in parts]
        blocks = blocks_from_tasks(f"krimp-generate-{token}", tasks, rows, tables.alphabet.size, dependencies=parts)
        stats = dask.delayed(_sum_stats, pure=True)([dask.delayed(operator.getitem, pure=True)(p, 2) for p in parts])
        columns = {}
        if pattern_counts:
            cols = [
                da.from_delayed(
                    dask.delayed(operator.getitem, pure=True)(p, 1), shape=(r,), dtype=np.int64, meta=np.empty(0, np.int64)
                )
                for p, r in zip(parts, rows)
            ]
            columns["n_patterns"] = concat_rows(cols, rows) if cols else da.zeros(0, dtype=np.int64, chunks=((0,),))
            self._last_npat = columns["n_patterns"]
        else:
            self._last_npat = None
        self._avg = None
        metadata = {
            "generator": "krimp",
            # the absolute count, as the release records it (a fraction with it would tell |db|)
            "min_support": getattr(self, "min_support_", None) or self.min_support,
            "laplace": float(self.laplace),
            "lp_factor": float(self.lp_factor),
            "closed": bool(self.closed),
            "prune": bool(self.prune),
            "max_len": self.max_len,
            "domain_order": self.domain_order,
            "block_rows": int(block_rows),
            "n_domains": tables.n_domains,
        }
        if columns and not rows:
            columns = {}
        return TransactionArray(blocks, vocab, metadata=metadata, columns=columns), stats

    @property
    def avg_patterns_per_row_(self) -> float:
        if getattr(self, "_avg", None) is not None:
            return self._avg
        if getattr(self, "_last_npat", None) is not None:
            from ..progress import compute

            (v,) = compute(self._last_npat, progress=False)
            self._avg = float(np.mean(v)) if v.size else float("nan")
            return self._avg
        raise AttributeError("avg_patterns_per_row_ is set by sample_lists() or sample(pattern_counts=True)")

    # ------------------------------------------------------------------ exact (small tables)
    def exact_distribution(self) -> dict[tuple, Fraction]:
        """Exact distribution of one generated transaction (see :func:`transaction_distribution`)."""
        self._fitted()
        return transaction_distribution(
            self.code_table_, self.domains_, laplace=self.laplace, lp_factor=self.lp_factor, domain_order=self.domain_order
        )


def _release_parts(gen: Any, n_rows: int, min_support: int) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """``(parameters, figures, patterns)`` of the release of a fitted KrimpGenerator.

    The public patterns are the non-singleton elements the generator may draw (positive
    weight) whose support in the fitted data is at least ``max(min_support, 2)``: a pattern of
    one record is never published, even when the floor is overridden (it may be that whole
    record). Their supports and usages are exact counts of the fitted data: they stay in the
    owner's figures, never in the public file.
    """
    from .release import MIN_SUPPORT_FLOOR, as_list, patterns_table, unique_copies_parameter

    ct = gen.code_table_
    tables = gen._tables
    m = tables.n_ct
    weights = tables.usages[:m] * float(gen.lp_factor) + float(gen.laplace)
    supports = np.asarray(getattr(ct, "supports", np.zeros(0)), np.int64)
    if supports.size != m:
        raise InvalidParameter("this code table records no supports: it cannot be released (use a CodeTable)")
    drawn = [e for e in range(m) if tables.elem_ptr[e + 1] - tables.elem_ptr[e] > 1 and weights[e] > 0]
    floor = max(int(min_support), MIN_SUPPORT_FLOOR)
    public = [e for e in drawn if supports[e] >= floor]
    patterns = patterns_table([tables.element_labels(e) for e in public])
    search = gen._search
    params = {
        "min_support": int(min_support),
        "laplace": float(gen.laplace),
        "lp_factor": float(gen.lp_factor),
        "domain_order": gen.domain_order,
        "closed": search.get("closed"),
        "prune": search.get("prune"),
        "max_len": search.get("max_len"),
        "exclude": search.get("exclude"),
        "n_rows": int(n_rows),
        "block_rows": BLOCK_ROWS,
        "n_domains": len(gen.domains_),
        "domains": [as_list(d) for d in gen.domains_],
        "unique_copies": unique_copies_parameter(gen._copies_allowed()),
    }
    sup = supports[drawn]
    figures = {
        "records": {
            "rows": int(n_rows),
            "fitted_rows": int(gen.n_rows_),
            "domains": len(gen.domains_),
            "items": int(tables.alphabet.size),
        },
        "privacy": {
            "min_support": int(min_support),
            "patterns_published": len(public),
            "patterns_withheld": len(drawn) - len(public),
            "smallest_pattern_support": int(sup.min()) if sup.size else None,
        },
        "utility": {"code_table_itemsets": int(getattr(ct, "n_nontrivial", len(drawn)))},
    }
    if hasattr(ct, "sizes"):
        figures["utility"]["L_percent"] = float(ct.sizes()["L_percent"])
    return params, figures, patterns
