"""Privacy and quality scores of generated data (docs/krimp.md#privacy-the-anonymity-score,
docs/krimp.md#quality-dissimilarity-and-pattern-comparison).

* :func:`anonymity_score` (AS, Def. 1) and :func:`normalized_anonymity_score` (NAS, Def. 2):
  how many original transactions of each support level reappear in the generated data.
  For TransactionArrays the row multiplicities are a distributed hash count: every block maps
  its rows to 128-bit fingerprints of their item-label sets (two independent 64-bit sums of
  per-item hashes, plus the row length) and counts them (:func:`row_fingerprint_counts`, a pure
  one-block kernel); the counts are merged in a tree reduction. Distinct rows collide with
  probability below ``n²·2⁻¹²⁸``. Python lists are counted exactly (``frozenset`` keys).
* :func:`dissimilarity` (DS, Def. 3) and :func:`ds_from_tables`: both code tables extended to
  the union alphabet and Laplace-corrected (+λ on every element, unused singletons included,
  λ = 1), data parts only (docs/krimp.md#clarification-laplace-correction-of-foreign-code-tables);
  foreign covers are MAP (per-block cover usages) + tree sums.
* :func:`pattern_comparison` (Table 2 / Eq. 3) and :func:`avg_patterns_per_row` (Fig. 5).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

import numpy as np

from ..data.fingerprints import fingerprint_counts, label_hashes, merge_fingerprint_counts, row_fingerprints
from ..errors import DataFormatError, InvalidParameter
from .codetable import length_from_usages

__all__ = [
    "anonymity_score",
    "normalized_anonymity_score",
    "anonymity_levels",
    "row_fingerprint_counts",
    "merge_fingerprint_counts",
    "dissimilarity",
    "ds_from_tables",
    "pattern_comparison",
    "avg_patterns_per_row",
    "fingerprint_counts_lazy",
]


# ====================================================================== row fingerprints
# the kernels live in data.fingerprints (shared with the unique-basket share of the report)


def row_fingerprint_counts(block: Any, h1: np.ndarray, h2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct-row counts of one CSR block (pure kernel, no Dask).

    Parameters
    ----------
    block : scipy.sparse CSR
        Rows of item column ids (sorted, unique per row).
    h1, h2 : uint64 arrays
        Per-column hashes of the item labels (:func:`~ppdm_dask.data.fingerprints.label_hashes` of the vocabulary).

    Returns
    -------
    fingerprints : (k, 2) uint64, lexicographically sorted and unique
    counts : (k,) int64
    """
    return fingerprint_counts(row_fingerprints(block, h1, h2), np.ones(block.shape[0], np.int64))


def fingerprint_counts_lazy(tx: Any):
    """A delayed count of every row fingerprint of ``tx`` (one tree-summed pass; see
    :func:`row_fingerprint_counts`)."""
    import dask

    from ..graph import tree_reduce

    h1, h2 = label_hashes(tx.vocabulary.labels)
    parts = [dask.delayed(row_fingerprint_counts, pure=True)(b, h1, h2) for b in tx.blocks.to_delayed().ravel()]
    return tree_reduce(parts, merge_fingerprint_counts)


def _is_transaction_array(x: Any) -> bool:
    from ..data.transactions import TransactionArray

    return isinstance(x, TransactionArray)


def _as_list_rows(x: Any) -> list[frozenset]:
    if isinstance(x, (str, bytes)) or not isinstance(x, Iterable):
        raise InvalidParameter(f"expected a TransactionArray or a list of transactions, got {type(x).__name__}")
    out = []
    for r in x:
        if isinstance(r, (str, bytes)):
            raise DataFormatError("every transaction must be a collection of items, not a string")
        out.append(frozenset(np.asarray(list(r)).tolist()))
    return out


def _level_table(db_p: Any, db_o: Any, **compute_kwargs: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(levels s, distinct rows of db_o at level s, of those present in db_p)``."""
    if _is_transaction_array(db_o) or _is_transaction_array(db_p):
        from ..data.transactions import TransactionArray
        from ..progress import compute

        to = db_o if _is_transaction_array(db_o) else TransactionArray.from_lists([list(r) for r in _as_list_rows(db_o)])
        tp = db_p if _is_transaction_array(db_p) else TransactionArray.from_lists([list(r) for r in _as_list_rows(db_p)])
        compute_kwargs.setdefault("progress", False)
        (fo, co), (fp, _) = compute(fingerprint_counts_lazy(to), fingerprint_counts_lazy(tp), **compute_kwargs)
        if fo.shape[0] == 0:
            raise DataFormatError("the original database is empty")
        present = _rows_in(fo, fp)
    else:
        ro = Counter(_as_list_rows(db_o))
        if not ro:
            raise DataFormatError("the original database is empty")
        rp = set(_as_list_rows(db_p))
        co = np.fromiter(ro.values(), np.int64, len(ro))
        present = np.fromiter((t in rp for t in ro), bool, len(ro))
    levels, inv = np.unique(co, return_inverse=True)
    n_level = np.bincount(inv, minlength=levels.size)
    n_present = np.bincount(inv, weights=present.astype(np.int64), minlength=levels.size).astype(np.int64)
    return levels, n_level, n_present


def _rows_in(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Which rows (fingerprints) of sorted unique ``a`` occur in sorted unique ``b``."""
    if b.shape[0] == 0 or a.shape[0] == 0:
        return np.zeros(a.shape[0], bool)
    va = a.copy().view([("h", np.uint64), ("l", np.uint64)]).ravel()
    vb = b.copy().view([("h", np.uint64), ("l", np.uint64)]).ravel()
    return np.isin(va, vb)


def anonymity_levels(db_p: Any, db_o: Any, **compute_kwargs: Any):
    """Per support level ``s`` of the original rows: ``n_distinct`` rows of db_o with
    multiplicity ``s``, ``n_in_generated`` of those that occur in db_p, and the AS term
    ``(1/s)·n_in_generated/n_distinct``. A pandas DataFrame."""
    import pandas as pd

    levels, n_level, n_present = _level_table(db_p, db_o, **compute_kwargs)
    return pd.DataFrame(
        {
            "support": levels,
            "n_distinct": n_level,
            "n_in_generated": n_present,
            "term": n_present / (n_level * levels.astype(np.float64)),
        }
    )


def anonymity_score(db_p: Any, db_o: Any, *, exact: bool = False, **compute_kwargs: Any) -> float | Fraction:
    """Anonymity Score AS(db_p, db_o) (the paper's Def. 1; docs/krimp.md#privacy-the-anonymity-score).

    ``Σ_s (1/s)·|{τ : s(τ) = s, τ ∈ db_p}| / |{τ : s(τ) = s}|`` over the support levels ``s`` of
    the distinct transactions τ of ``db_o``. Lower is more private.

    Parameters
    ----------
    db_p, db_o : TransactionArray or list of transactions
        Generated (published) and original data; rows compare as sets of item labels.
    exact : bool
        Return a :class:`fractions.Fraction` instead of a float.
    """
    levels, n_level, n_present = _level_table(db_p, db_o, **compute_kwargs)
    terms = [Fraction(int(p), int(n) * int(s)) for s, n, p in zip(levels, n_level, n_present)]
    total = sum(terms, Fraction(0))
    return total if exact else float(total)


def normalized_anonymity_score(db_p: Any, db_o: Any, *, exact: bool = False, **compute_kwargs: Any) -> float | Fraction:
    """NAS = AS(db_p, db_o) / AS(db_o, db_o) ∈ [0, 1] (P4 Def. 2); ``AS(db_o, db_o) = Σ_s 1/s``.
    0 is the best privacy (no original transaction reappears), 1 the worst."""
    levels, n_level, n_present = _level_table(db_p, db_o, **compute_kwargs)
    num = sum((Fraction(int(p), int(n) * int(s)) for s, n, p in zip(levels, n_level, n_present)), Fraction(0))
    den = sum((Fraction(1, int(s)) for s in levels), Fraction(0))
    nas = num / den
    return nas if exact else float(nas)


# ====================================================================== dissimilarity
def _alphabet_of(db: Any) -> np.ndarray:
    if _is_transaction_array(db):
        lab = np.asarray(db.vocabulary.labels)
        if lab.size and lab.dtype.kind not in "iu":
            raise DataFormatError("KRIMP needs integer item labels (original ids)")
        return lab.astype(np.int64)
    if hasattr(db, "labels") and hasattr(db, "indptr"):  # krimp Database
        return np.unique(np.asarray(db.labels, np.int64))
    vals = [int(i) for r in db for i in r]
    return np.unique(np.asarray(vals, np.int64))


def cover_usages_dask(db: Any, ct: Any, **compute_kwargs: Any) -> np.ndarray:
    """Usage of every element of ``ct`` over ``db``, covered on the cluster.

    Covers are per transaction, so for a TransactionArray every partition covers its own rows
    (MAP) and the integer usage vectors are added in a tree reduction: exactly
    :func:`~ppdm_dask.krimp.codetable.cover_usages` for any partitioning. This applies a code
    table (found on the driver or on a sample) to a database that does not fit on one machine:
    final usages, L(D|CT), the foreign-table lengths of DS. ``compute_kwargs`` go to
    :func:`ppdm_dask.progress.compute` (``client=``, ``progress=``). Other inputs are covered
    in memory.
    """
    from .codetable import cover_usages

    if _is_transaction_array(db):
        import dask

        from ..graph import tree_reduce
        from ..progress import compute

        labels = np.asarray(db.vocabulary.labels).astype(np.int64)
        # one shared (code table, labels) node: shipped once per worker, not embedded per task
        shared = dask.delayed((ct, labels), pure=True)
        parts = [dask.delayed(_block_usages_shared, pure=True)(b, shared) for b in db.blocks.to_delayed().ravel()]
        lazy = tree_reduce(parts, _sum_usages)
        compute_kwargs.setdefault("progress", False)
        (u,) = compute(lazy, **compute_kwargs)
        return np.asarray(u, np.int64)
    return np.asarray(cover_usages(db, ct), np.int64)


def _block_usages_shared(block: Any, shared: tuple) -> np.ndarray:
    return _block_usages(block, *shared)


def _sum_usages(parts: list[np.ndarray]) -> np.ndarray:
    return np.sum(parts, axis=0, dtype=np.int64)


def _block_usages(block: Any, ct: Any, labels: np.ndarray) -> np.ndarray:
    from .codetable import cover_usages

    if block.shape[0] == 0:
        return np.zeros(len(ct.itemsets), np.int64)
    return cover_usages(block, ct, labels=labels)


def _n_rows(db: Any) -> int:
    if _is_transaction_array(db) or hasattr(db, "n_rows"):
        return int(db.n_transactions if _is_transaction_array(db) else db.n_rows)
    return len(db)


def ds_from_tables(
    x: Any, y: Any, ct_x: Any, ct_y: Any, laplace: float = 1.0, *, details: bool = False, **compute_kwargs: Any
) -> float | dict:
    """DS(x, y) from given code tables (the paper's Def. 3 with the Laplace correction of
    docs/krimp.md#clarification-laplace-correction-of-foreign-code-tables).

    Both tables are extended to the union alphabet of ``x``, ``y`` and both tables, then every
    element gets ``+laplace`` (unused singletons included):
    ``DS = max{(L(x|CT_y) − L(x|CT_x)) / L(x|CT_x), (L(y|CT_x) − L(y|CT_y)) / L(y|CT_y)}``.
    ``details=True`` returns a dict with the four lengths and both ratios.
    """
    if isinstance(laplace, bool) or not isinstance(laplace, (int, float)) or not math.isfinite(laplace) or laplace < 0:
        raise InvalidParameter(f"laplace must be a finite number >= 0, got {laplace!r}")
    union = np.union1d(np.union1d(ct_x.alphabet, ct_y.alphabet), np.union1d(_alphabet_of(x), _alphabet_of(y)))
    cx = ct_x.with_alphabet(union)
    cy = ct_y.with_alphabet(union)
    L = {}
    for name, data, ct in (("x_x", x, cx), ("x_y", x, cy), ("y_y", y, cy), ("y_x", y, cx)):
        L[name] = length_from_usages(cover_usages_dask(data, ct, **compute_kwargs), ct, float(laplace))
    if L["x_x"] <= 0 or L["y_y"] <= 0:
        raise DataFormatError("DS is undefined for an empty database (encoded length 0)")
    r1 = (L["x_y"] - L["x_x"]) / L["x_x"]
    r2 = (L["y_x"] - L["y_y"]) / L["y_y"]
    ds = max(r1, r2)
    if details:
        return {
            "ds": ds,
            "ratio_x": r1,
            "ratio_y": r2,
            "L_x_CTx": L["x_x"],
            "L_x_CTy": L["x_y"],
            "L_y_CTy": L["y_y"],
            "L_y_CTx": L["y_x"],
        }
    return ds


def dissimilarity(
    x: Any,
    y: Any,
    *,
    min_support: int | float,
    closed: bool = False,
    prune: bool = True,
    ds_laplace: float = 1.0,
    max_len: int | None = None,
    details: bool = False,
    progress: bool = False,
    max_candidates: int | None = 20_000_000,
) -> float | dict:
    """DS(x, y): run KRIMP on both (same ``min_support``, ``closed``, ``prune``, ``max_candidates``)
    and compare with :func:`ds_from_tables`. DS(x, x) = 0 exactly; DS is symmetric and finite for disjoint
    alphabets. The paper's "internal" reference value is DS(db, random half of db)."""
    from ..mining import min_count_of
    from .search import krimp

    kw: dict[str, Any] = dict(closed=closed, prune=prune, max_len=max_len, progress=progress, max_candidates=max_candidates)
    ct_x = krimp(x, min_support=min_count_of(min_support, _n_rows(x)), **kw).code_table
    ct_y = krimp(y, min_support=min_count_of(min_support, _n_rows(y)), **kw).code_table
    return ds_from_tables(x, y, ct_x, ct_y, ds_laplace, details=details)


# ====================================================================== patterns
def _frequent(db: Any, min_support: float, max_length: int | None) -> tuple[dict, int]:
    from ..data.transactions import TransactionArray
    from ..mining import apriori

    tx = db if _is_transaction_array(db) else TransactionArray.from_lists([list(r) for r in db])
    fi = apriori(tx, min_support=min_support, max_length=max_length, progress=False)
    return fi.as_dict(), tx.n_transactions


def pattern_comparison(
    db_o: Any,
    db_p: Any,
    min_support_rel: float,
    *,
    max_length: int | None = None,
    delta: float | None = None,
) -> dict[str, Any]:
    """Compare the frequent itemsets of the original and the generated data (P4 Table 2, Eq. 3).

    Both are mined at the same relative support ``min_support_rel`` ∈ (0, 1] (threshold
    ``ceil(s·|db|)`` in each); an int is an absolute count used in both (P4 Table 2 mines the
    generated data "with the same parameters" as the candidates, e.g. count 1, on equally large
    databases). Returns a dict:

    * ``n_original``, ``n_generated``, ``n_equal`` (in both), ``n_new`` (only generated),
      ``n_missing`` (only original);
    * ``pct_equal`` = 100·|F_o ∩ F_p| / |F_o|;
    * ``avg_sup_diff_equal`` = mean over F_o ∩ F_p of 100·|supp_p/|db_p| − supp_o/|db_o||
      (percentage points);
    * ``avg_sup_new`` = mean over F_p ∖ F_o of 100·supp_p/|db_p| (percent);
    * with ``delta``: ``frac_diff_gt_delta`` = fraction of F_o ∩ F_p whose relative supports
      differ by more than ``delta`` (the empirical side of Eq. 3).

    Means over empty sets are NaN.
    """
    if isinstance(min_support_rel, bool) or not isinstance(min_support_rel, (int, float, np.integer, np.floating)):
        raise InvalidParameter(f"min_support_rel must be a fraction in (0, 1] or a count >= 1, got {min_support_rel!r}")
    fo, no = _frequent(db_o, min_support_rel, max_length)
    fp, npp = _frequent(db_p, min_support_rel, max_length)
    equal = [s for s in fo if s in fp]
    new = [s for s in fp if s not in fo]
    diffs = np.array([abs(fp[s] / npp - fo[s] / no) for s in equal], np.float64)
    out: dict[str, Any] = {
        "min_support_rel": min_support_rel,
        "n_original": len(fo),
        "n_generated": len(fp),
        "n_equal": len(equal),
        "n_new": len(new),
        "n_missing": len(fo) - len(equal),
        "pct_equal": 100.0 * len(equal) / len(fo) if fo else math.nan,
        "avg_sup_diff_equal": 100.0 * float(diffs.mean()) if diffs.size else math.nan,
        "avg_sup_new": 100.0 * float(np.mean([fp[s] / npp for s in new])) if new else math.nan,
    }
    if delta is not None:
        if not isinstance(delta, (int, float)) or isinstance(delta, bool) or delta < 0:
            raise InvalidParameter(f"delta must be a number >= 0, got {delta!r}")
        out["delta"] = float(delta)
        out["frac_diff_gt_delta"] = float(np.mean(diffs > delta)) if diffs.size else math.nan
    return out


def avg_patterns_per_row(x: Any, **compute_kwargs: Any) -> float:
    """Mean number of code-table elements used per generated row (P4 Fig. 5 privacy indicator).

    ``x``: a TransactionArray from :meth:`KrimpGenerator.sample` (its ``n_patterns`` column), a
    fitted-and-sampled :class:`KrimpGenerator`, or an array of per-row pattern counts.
    """
    from .generator import KrimpGenerator

    if isinstance(x, KrimpGenerator):
        return x.avg_patterns_per_row_
    if _is_transaction_array(x):
        if "n_patterns" not in x.columns:
            raise DataFormatError("this TransactionArray has no 'n_patterns' column (use KrimpGenerator.sample)")
        from ..progress import compute

        compute_kwargs.setdefault("progress", False)
        (v,) = compute(x.columns["n_patterns"], **compute_kwargs)
    else:
        v = np.asarray(x)
    if v.size == 0:
        return math.nan
    return float(np.mean(v))
