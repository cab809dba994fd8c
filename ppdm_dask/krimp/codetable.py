"""KRIMP code tables: cover, usages, code lengths and encoded sizes
(docs/krimp.md#krimp-code-tables-and-the-search, docs/krimp.md#quality-dissimilarity-and-pattern-comparison).

A :class:`CodeTable` is kept in *cover order* and in *original* item ids: the non-singleton
elements first (length descending; within a length in insertion = candidate order), then one
singleton for every item of the alphabet, ordered by the item renumbering (frequency
descending, ties: larger original id first; docs/krimp.md#clarification-item-renumbering-decides-every-tie). The mutual order of the singletons does not affect
any cover; it only fixes the order in which ``stdlen(X) = Σ_{i∈X} stdlen(i)`` is summed
(ascending new id, i.e. in that singleton order), so that sizes are reproducible to the bit.

Sizes (docs/krimp.md#krimp-code-tables-and-the-search): with ``U = Σ usage`` and ``l(c) = −log2(usage(c)/U)``

* ``L(D|CT) = fsum(usage(c)·l(c))`` and ``L(CT|D) = fsum(stdlen(c) + l(c))`` over the elements with
  usage > 0 (``math.fsum``; zero-usage elements cost nothing);
* ``L(D|ST) = fsum(fr(i)·stdlen(i))``, ``L(ST) = 2·fsum(stdlen(i))``, ``L% = 100·L(D,CT)/L(D,ST)``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import DataFormatError, InvalidParameter, ItemIdError
from ._kernels import (
    cover_bits,
    cover_lists,
    dedupe_sorted_rows,
    n_words,
    pack_rows,
    rows_as_label_csr,
    std_lengths_from_frequencies,
)

__all__ = ["CodeTable", "cover_usages", "cover", "encoded_length", "std_lengths_from_frequencies"]

_FORMAT = "ppdm-krimp-codetable"


def _as_itemset(x: Any) -> np.ndarray:
    a = np.unique(np.asarray(x, dtype=np.int64).ravel())
    if a.size == 0:
        raise InvalidParameter("code table elements must not be empty")
    return a


@dataclass(eq=False)
class CodeTable:
    """A KRIMP code table in cover order, original item ids.

    Attributes
    ----------
    itemsets : list of int64 arrays
        Cover order; every array sorted ascending. Non-singletons first, then **all**
        singletons of ``alphabet`` (in renumbering order: frequency desc, ties larger id first).
    usages : int64 array
        Usage of every element in the cover of the database the table was built on.
    supports : int64 array
        Support of every element in that database (singletons: the item frequency).
    alphabet : int64 array
        Original item ids covered by the table, sorted ascending.
    n_rows : int
        Number of rows of the database.
    std_lengths : float64 array
        Standard code length of every alphabet item (aligned with ``alphabet``), bits.
    parameters : dict
        Public parameters of the search that built the table (``min_support``, ``closed``,
        ``prune``, ``max_len`` ...), saved with it; never a key or seed.
    """

    itemsets: list
    usages: np.ndarray
    supports: np.ndarray
    alphabet: np.ndarray
    n_rows: int
    std_lengths: np.ndarray = field(default=None)  # type: ignore[arg-type]
    parameters: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.parameters = dict(self.parameters or {})
        self.itemsets = [_as_itemset(x) for x in self.itemsets]
        self.usages = np.asarray(self.usages, dtype=np.int64).ravel()
        self.supports = np.asarray(self.supports, dtype=np.int64).ravel()
        self.alphabet = np.asarray(self.alphabet, dtype=np.int64).ravel()
        self.n_rows = int(self.n_rows)
        m = len(self.itemsets)
        if self.usages.size != m or self.supports.size != m:
            raise InvalidParameter("usages and supports must have one entry per code table element")
        if np.any(self.usages < 0) or np.any(self.supports < 0):
            raise InvalidParameter("usages and supports must be non-negative")
        if self.alphabet.size > 1 and not np.all(self.alphabet[1:] > self.alphabet[:-1]):
            raise InvalidParameter("alphabet must be sorted and unique")
        lens = np.array([x.size for x in self.itemsets], dtype=np.int64)
        n_ns = int(np.sum(lens > 1))
        if np.any(lens[:n_ns] < 2) or np.any(np.diff(lens[:n_ns]) > 0):
            raise InvalidParameter("non-singletons must come first, in cover order (length descending)")
        singles = np.array([x[0] for x in self.itemsets[n_ns:]], dtype=np.int64)
        if singles.size != self.alphabet.size or not np.array_equal(np.sort(singles), self.alphabet):
            raise InvalidParameter("the code table must end with exactly one singleton per alphabet item")
        for x in self.itemsets[:n_ns]:
            if not np.all(np.isin(x, self.alphabet)):
                raise ItemIdError(f"code table element {x.tolist()} has items outside the alphabet")
        self._n_ns = n_ns
        self._single_pos = np.searchsorted(self.alphabet, singles)  # element n_ns+j is alphabet[_single_pos[j]]
        if self.std_lengths is None:
            freq = np.zeros(self.alphabet.size, np.int64)
            freq[self._single_pos] = self.supports[n_ns:]
            self.std_lengths = std_lengths_from_frequencies(freq)
        else:
            if isinstance(self.std_lengths, dict):
                self.std_lengths = np.array([float(self.std_lengths[int(i)]) for i in self.alphabet.tolist()])
            self.std_lengths = np.asarray(self.std_lengths, dtype=np.float64).ravel()
            if self.std_lengths.size != self.alphabet.size:
                raise InvalidParameter("std_lengths must have one entry per alphabet item")

    # ------------------------------------------------------------------ basic properties
    def __len__(self) -> int:
        return len(self.itemsets)

    @property
    def n_nontrivial(self) -> int:
        """|CT ∖ I|: number of non-singleton elements."""
        return self._n_ns

    @property
    def frequencies(self) -> np.ndarray:
        """Item frequency (= singleton support) per alphabet item."""
        fr = np.zeros(self.alphabet.size, np.int64)
        fr[self._single_pos] = self.supports[self._n_ns :]
        return fr

    @property
    def item_rank(self) -> np.ndarray:
        """Renumbered (new) id per alphabet item = position of its singleton in the table."""
        r = np.empty(self.alphabet.size, np.int64)
        r[self._single_pos] = np.arange(self.alphabet.size, dtype=np.int64)
        return r

    def element_std_lengths(self) -> np.ndarray:
        """stdlen(X) per element: sequential sum of item stdlens in ascending new-id order."""
        rank = self.item_rank
        out = np.empty(len(self.itemsets))
        for k, x in enumerate(self.itemsets):
            pos = np.searchsorted(self.alphabet, x)
            s = 0.0
            for p in pos[np.argsort(rank[pos], kind="stable")].tolist():
                s += float(self.std_lengths[p])
            out[k] = s
        return out

    def code_lengths(self, laplace: float = 0.0) -> np.ndarray:
        """−log2((u+λ)/(U+λ·|CT|)) per element (|CT| counts all singletons); inf where u+λ = 0."""
        lam = float(laplace)
        if not (lam >= 0.0 and math.isfinite(lam)):
            raise InvalidParameter(f"laplace must be a finite non-negative number, got {laplace!r}")
        m = len(self.itemsets)
        if lam == 0.0:
            n_total = int(self.usages.sum())
            return np.array([-math.log2(u / n_total) if u > 0 else math.inf for u in self.usages.tolist()], dtype=np.float64)
        total = float(int(self.usages.sum())) + lam * m
        return np.array([-math.log2((u + lam) / total) for u in self.usages.tolist()], dtype=np.float64)

    def sizes(self) -> dict:
        """Encoded sizes in bits (docs/krimp.md#exact-sizes-and-decisions), summed with ``math.fsum`` in CT order.

        Keys: ``L_D_CT``, ``L_CT_D``, ``total``, ``L_D_ST``, ``L_ST``, ``total_ST``, ``L_percent``,
        plus ``sum_usage`` and ``n_used_singletons``.
        """
        us = self.usages.tolist()
        total_u = sum(us)
        st = self.element_std_lengths()
        ld_terms, lct_terms = [], []
        for k, u in enumerate(us):
            if u > 0:
                lg = math.log2(u / total_u)
                ld_terms.append(-u * lg)
                lct_terms.append(float(st[k]) - lg)
        ld = math.fsum(ld_terms)
        lct = math.fsum(lct_terms)
        fr = self.frequencies.tolist()
        sl = self.std_lengths.tolist()
        ldst = math.fsum(f * s for f, s in zip(fr, sl))
        lst = 2 * math.fsum(sl)
        total = ld + lct
        total_st = ldst + lst
        return {
            "L_D_CT": ld,
            "L_CT_D": lct,
            "total": total,
            "L_D_ST": ldst,
            "L_ST": lst,
            "total_ST": total_st,
            "L_percent": 100.0 * total / total_st if total_st > 0 else math.nan,
            "sum_usage": int(total_u),
            "n_used_singletons": int(np.sum(self.usages[self._n_ns :] > 0)),
        }

    def to_pandas(self):
        """One row per element: ``itemset`` (list), ``length``, ``usage``, ``support``, ``code_length``."""
        import pandas as pd

        return pd.DataFrame(
            {
                "itemset": [x.tolist() for x in self.itemsets],
                "length": np.array([x.size for x in self.itemsets], dtype=np.int64),
                "usage": self.usages.copy(),
                "support": self.supports.copy(),
                "code_length": self.code_lengths(),
            }
        )

    def summary(self) -> dict:
        """The table's figures as a dict: element counts and the sizes of :meth:`sizes`."""
        return {
            "n_nontrivial": int(self.n_nontrivial),
            "alphabet": int(self.alphabet.size),
            "n_rows": int(self.n_rows),
            **self.sizes(),
        }

    def __str__(self) -> str:
        s = self.sizes()
        return (
            f"CodeTable: {self.n_nontrivial} non-singleton elements, {s['n_used_singletons']} used singletons "
            f"(alphabet {self.alphabet.size}), {self.n_rows} rows; L(D|CT) = {s['L_D_CT']:.1f}, "
            f"L(CT|D) = {s['L_CT_D']:.1f}, total = {s['total']:.1f} bits; L(D,ST) = {s['total_ST']:.1f}; "
            f"L% = {s['L_percent']:.2f}"
        )

    def __repr__(self) -> str:
        return (
            f"CodeTable(n_nontrivial={self.n_nontrivial}, alphabet={self.alphabet.size}, "
            f"n_rows={self.n_rows}, sum_usage={int(self.usages.sum())})"
        )

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict:
        """The JSON-ready table; ``parameters`` are checked to be public (no key, no seed)."""
        from ..release.manifest import public_parameters

        return {
            "format": _FORMAT,
            "version": 1,
            "parameters": public_parameters(self.parameters),
            "n_rows": self.n_rows,
            "alphabet": self.alphabet.tolist(),
            "std_lengths": [float(x) for x in self.std_lengths.tolist()],
            "itemsets": [x.tolist() for x in self.itemsets],
            "usages": self.usages.tolist(),
            "supports": self.supports.tolist(),
        }

    @classmethod
    def from_dict(cls, d: dict) -> CodeTable:
        if not isinstance(d, dict) or d.get("format") != _FORMAT:
            raise DataFormatError("not a ppdm KRIMP code table")
        if int(d.get("version", 0)) != 1:
            raise DataFormatError(f"unsupported code table version {d.get('version')!r}")
        try:
            return cls(
                itemsets=[np.asarray(x, np.int64) for x in d["itemsets"]],
                usages=d["usages"],
                supports=d["supports"],
                alphabet=d["alphabet"],
                n_rows=d["n_rows"],
                std_lengths=np.asarray(d["std_lengths"], np.float64),
                parameters=d.get("parameters") or {},
            )
        except KeyError as exc:
            raise DataFormatError(f"code table file lacks field {exc}") from None

    def save(self, url: str | os.PathLike, *, storage_options: Mapping[str, Any] | None = None, overwrite: bool = False) -> None:
        """Write the table as JSON (floats round-trip exactly) to a local path or fsspec URL.

        Atomic: the JSON goes to a temporary sibling that replaces ``url`` only when complete,
        so a failure never leaves a partial file (nor touches an existing one).

        Raises
        ------
        DatasetExistsError
            ``url`` exists and ``overwrite`` is false.
        InvalidParameter
            A parameter looks secret (keys are never written).
        """
        from ..data.atomic import atomic_file

        text = json.dumps(self.to_dict())  # encoded before the file is opened: a bad table writes nothing
        with atomic_file(os.fspath(url), storage_options=storage_options, overwrite=overwrite, mode="w") as fh:
            fh.write(text)

    @classmethod
    def load(cls, url: str | os.PathLike, *, storage_options: Mapping[str, Any] | None = None) -> CodeTable:
        """Read a table written by :meth:`save` (local path or fsspec URL)."""
        import fsspec

        from ..errors import DatasetNotFoundError

        url = os.fspath(url)
        try:
            with fsspec.open(url, "r", encoding="utf-8", **dict(storage_options or {})) as fh:
                d = json.load(fh)
        except FileNotFoundError:
            raise DatasetNotFoundError(f"no code table at {url}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DataFormatError(f"{url}: not a JSON code table ({exc})") from None
        try:
            return cls.from_dict(d)
        except DataFormatError as exc:
            raise DataFormatError(f"{url}: {exc}") from None

    @classmethod
    def from_itemsets(cls, db: Any, itemsets: Sequence[Sequence[int]] = (), *, labels: Any = None) -> CodeTable:
        """The table with the given non-singletons (in the given cover order) + all singletons of
        ``db``'s alphabet; usages are those of the cover of ``db``. ``itemsets=()`` gives the
        standard (singleton-only) code table."""
        from ._kernels import as_database

        d = as_database(db, labels)
        ns = [_as_itemset(x) for x in itemsets]
        ns = [x for x in ns if x.size > 1]
        for x in ns:
            d.positions(x)  # raises for unknown items
        singles = [np.array([i], np.int64) for i in d.new_labels.tolist()]
        sup = [_support(d, x) for x in ns] + d.new_frequencies.tolist()
        ct = cls(
            itemsets=ns + singles,
            usages=np.zeros(len(ns) + len(singles), np.int64),
            supports=sup,
            alphabet=d.labels,
            n_rows=d.n_rows,
            std_lengths=d.std_lengths,
        )
        ct.usages = cover_usages(d, ct)
        return ct

    # ------------------------------------------------------------------ alphabet extension
    def with_alphabet(self, items: Sequence[int] | np.ndarray) -> CodeTable:
        """A copy that also holds zero-usage, zero-support singletons for ``items``
        (docs/krimp.md#clarification-laplace-correction-of-foreign-code-tables).

        New items get stdlen 0 (frequency 0) and come after the existing singletons (ties
        among them: larger id first). Existing elements, usages and sizes are unchanged.
        """
        items = np.unique(np.asarray(items, dtype=np.int64).ravel())
        new = np.setdiff1d(items, self.alphabet)
        if new.size == 0:
            return CodeTable(
                itemsets=[x.copy() for x in self.itemsets],
                usages=self.usages.copy(),
                supports=self.supports.copy(),
                alphabet=self.alphabet.copy(),
                n_rows=self.n_rows,
                std_lengths=self.std_lengths.copy(),
            )
        if new.min() < 0:
            raise ItemIdError("item ids must be non-negative")
        alphabet = np.union1d(self.alphabet, new)
        sl = np.zeros(alphabet.size)
        sl[np.searchsorted(alphabet, self.alphabet)] = self.std_lengths
        add = new[::-1]  # frequency 0: larger id first
        return CodeTable(
            itemsets=[x.copy() for x in self.itemsets] + [np.array([i], np.int64) for i in add.tolist()],
            usages=np.concatenate([self.usages, np.zeros(add.size, np.int64)]),
            supports=np.concatenate([self.supports, np.zeros(add.size, np.int64)]),
            alphabet=alphabet,
            n_rows=self.n_rows,
            std_lengths=sl,
        )

    # ------------------------------------------------------------------ internals for covering
    def _element_bits(self) -> np.ndarray:
        """Non-singleton elements as bitsets over alphabet positions."""
        w = n_words(self.alphabet.size)
        out = np.zeros((max(self._n_ns, 1), w), np.uint64)
        for k, x in enumerate(self.itemsets[: self._n_ns]):
            for p in np.searchsorted(self.alphabet, x).tolist():
                out[k, p >> 6] |= np.uint64(1) << np.uint64(p & 63)
        return out

    def _row_bits(self, rows: Any, labels: Any = None) -> np.ndarray:
        indptr, flat = rows_as_label_csr(rows, labels)
        if flat.size:
            pos = np.searchsorted(self.alphabet, flat)
            pc = np.minimum(pos, max(self.alphabet.size - 1, 0))
            ok = (pos < self.alphabet.size) & (self.alphabet[pc] == flat) if self.alphabet.size else np.zeros(flat.size, bool)
            if not np.all(ok):
                raise ItemIdError(
                    f"items not in the code table alphabet: {np.unique(flat[~ok])[:5].tolist()} "
                    "(extend the table with CodeTable.with_alphabet)"
                )
        else:
            pos = flat
        indptr, pos = dedupe_sorted_rows(indptr, pos.astype(np.int64))
        ident = np.arange(self.alphabet.size, dtype=np.int64)
        return pack_rows(indptr, pos, ident, self.alphabet.size)


def _support(d: Any, x: np.ndarray) -> int:
    tb = d.tid_bits
    acc = np.bitwise_and.reduce(tb[d.to_new(x)], axis=0)
    return int(np.bitwise_count(acc).sum())


def cover_usages(rows: Any, ct: CodeTable, *, labels: Any = None) -> np.ndarray:
    """Usage of every element of ``ct`` when covering ``rows`` (the greedy cover of
    docs/krimp.md#krimp-code-tables-and-the-search).

    Parameters
    ----------
    rows : TransactionArray, scipy sparse matrix/array, Database, or iterable of item-id arrays
        Transactions in original item ids (a sparse matrix's column ``j`` is item ``labels[j]``,
        default ``j``; a TransactionArray uses its vocabulary).
    ct : CodeTable

    Returns
    -------
    int64 array aligned with ``ct.itemsets``.

    Raises
    ------
    ItemIdError
        A row holds an item outside ``ct.alphabet``.
    """
    rb = ct._row_bits(rows, labels)
    eb = ct._element_bits()
    u_ns, rem = cover_bits(rb, eb, ct.n_nontrivial)
    na = ct.alphabet.size
    if rem.shape[0]:
        bits = np.unpackbits(rem.view(np.uint8).reshape(rem.shape[0], -1), axis=1, bitorder="little")[:, :na]
        col = bits.sum(axis=0, dtype=np.int64)
    else:
        col = np.zeros(na, np.int64)
    return np.concatenate([u_ns, col[ct._single_pos]]).astype(np.int64)


def cover(rows: Any, ct: CodeTable, *, labels: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Cover of every row as CSR ``(indptr, element indices into ct.itemsets)``, in cover order."""
    rb = ct._row_bits(rows, labels)
    eb = ct._element_bits()
    indptr, el = cover_lists(rb, eb, ct.n_nontrivial, ct.alphabet.size)
    # singleton bit p (alphabet position) -> element index
    elem_of_pos = np.empty(ct.alphabet.size, np.int64)
    elem_of_pos[ct._single_pos] = ct.n_nontrivial + np.arange(ct.alphabet.size)
    s = el >= ct.n_nontrivial
    el = el.copy()
    el[s] = elem_of_pos[el[s] - ct.n_nontrivial]
    return indptr, el


def encoded_length(rows: Any, ct: CodeTable, laplace: float = 0.0, *, labels: Any = None) -> float:
    """L(rows | CT) = Σ_rows Σ_{c ∈ cover(row)} l(c) with ``ct.code_lengths(laplace)``
    (docs/krimp.md#clarification-laplace-correction-of-foreign-code-tables).

    The double sum is exactly rounded (the value ``math.fsum`` gives over all per-occurrence
    terms), computed as the exact rational Σ usage(c)·l(c). ``inf`` if a used element has
    infinite code length (usage 0 in ``ct`` and ``laplace`` = 0).
    """
    return length_from_usages(cover_usages(rows, ct, labels=labels), ct, laplace)


def length_from_usages(usages: np.ndarray, ct: CodeTable, laplace: float = 0.0) -> float:
    """Σ_c usage(c)·l(c) with ``ct.code_lengths(laplace)``, exactly rounded (exact rational
    sum); ``inf`` if a used element has infinite code length."""
    lengths = ct.code_lengths(laplace)
    acc = Fraction(0)
    for uc, lc in zip(np.asarray(usages).tolist(), lengths.tolist()):
        if uc > 0:
            if not math.isfinite(lc):
                return math.inf
            acc += Fraction(lc) * uc
    return float(acc)
