"""Frequent itemsets and association rules in the layouts other tools read, and back.

Four layouts (docs/mining.md#results-in-other-tools-formats):

``ppdm``
    Our own Parquet layout (:meth:`FrequentItemsets.to_parquet`, :meth:`AssociationRules.to_parquet`).
``mlxtend``
    The DataFrames of ``mlxtend.frequent_patterns.apriori(..., use_colnames=True)`` and
    ``association_rules``; in a file, CSV (item sets as one text cell, labels joined by ``,``)
    or Parquet (item sets as lists).
``spmf``
    The text the SPMF library's miners write: ``1 2 3 #SUP: 5`` and
    ``1 2 ==> 3 #SUP: 5 #CONF: 0.8 #LIFT: 1.2``; string labels through SPMF's text conversion
    (``@CONVERTED_FROM_TEXT`` and ``@ITEM=id=label`` lines, ids 1..n in label order), and the
    number of transactions in a ``@PPDM n_transactions=N`` line so supports survive.
``spark``
    Spark ML's ``FPGrowthModel``: ``freqItemsets`` (``items`` array, ``freq`` long) and
    ``associationRules`` (``antecedent``, ``consequent`` arrays, ``confidence``, ``lift``,
    ``support`` doubles), one Parquet file.

Formats that carry integer counts (SPMF, Spark) round the float estimates of EMASK-Apriori to
the nearest integer; the ``ppdm`` and ``mlxtend`` layouts keep them.
"""

from __future__ import annotations

import json
import math
import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..data.vocabulary import Vocabulary
from ..errors import DataFormatError, InvalidParameter
from .results import FrequentItemsets, write_table
from .rules import METRICS, AssociationRules, rule_measures

__all__ = [
    "FORMATS",
    "MLXTEND_RULE_COLUMNS",
    "format_of",
    "itemsets_to_mlxtend",
    "rules_to_mlxtend",
    "itemsets_from_mlxtend",
    "rules_from_mlxtend",
    "write_itemsets",
    "write_rules",
    "read_itemsets",
    "read_rules",
]

#: the output layouts
FORMATS = ("ppdm", "mlxtend", "spmf", "spark")

#: the metric columns of ``mlxtend.frequent_patterns.association_rules`` (mlxtend >= 0.23.2,
#: checked against 0.25), after ``antecedents`` and ``consequents``
MLXTEND_RULE_COLUMNS = (
    "antecedent support",
    "consequent support",
    "support",
    "confidence",
    "lift",
    "representativity",
    "leverage",
    "conviction",
    "zhangs_metric",
    "jaccard",
    "certainty",
    "kulczynski",
)

# file container of each extension, and the containers each layout can be written in
_CONTAINER = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".txt": "txt"}
_BY_EXTENSION = {"": "ppdm", ".parquet": "ppdm", ".pq": "ppdm", ".csv": "mlxtend", ".txt": "spmf"}  # none: as before
_CONTAINERS = {"ppdm": {"parquet"}, "mlxtend": {"csv", "parquet"}, "spmf": {"txt"}, "spark": {"parquet"}}
_ITEM_SEP = ","  # joins the labels of an item set in one CSV cell
_SPMF_HEADER = "@PPDM"


def _extension(url: str) -> str:
    return posixpath.splitext(url.rstrip("/").split("?", 1)[0])[1].lower()


def format_of(url: str, format: str | None = None) -> str:
    """The layout to write ``url`` in: ``format`` if given, else by extension (``.parquet`` or
    none -> ``ppdm``, ``.csv`` -> ``mlxtend``, ``.txt`` -> ``spmf``).

    Raises
    ------
    InvalidParameter
        Unknown ``format``; an extension that names no layout, without ``format``; or a known
        extension another container than ``format`` writes (``spark`` to ``x.csv``).
    """
    ext = _extension(url)
    if format is None:
        if ext not in _BY_EXTENSION:
            raise InvalidParameter(
                f"{url}: cannot tell the output format from the extension {ext!r}; "
                "name the file .parquet, .csv or .txt, or choose a format",
                parameter="format",
                python=f"format= one of {FORMATS}",
            )
        return _BY_EXTENSION[ext]
    if format not in FORMATS:
        raise InvalidParameter(f"unknown output format {format!r}; choose from {FORMATS}", parameter="format")
    container = _CONTAINER.get(ext)
    if container is not None and container not in _CONTAINERS[format]:
        raise InvalidParameter(
            f"{url}: the {format} layout is not written as {ext} (it is {' or '.join(sorted(_CONTAINERS[format]))})",
            parameter="format",
        )
    return format


def _container(url: str, fmt: str) -> str:
    container = _CONTAINER.get(_extension(url))
    return container if container in _CONTAINERS[fmt] else sorted(_CONTAINERS[fmt])[0]


# --- mlxtend layout -------------------------------------------------------------------------


def itemsets_to_mlxtend(itemsets: FrequentItemsets) -> Any:
    """``support`` (float64, count / n) and ``itemsets`` (frozensets of labels), as
    ``mlxtend.frequent_patterns.apriori(df, min_support, use_colnames=True)`` returns them.

    Rows follow :attr:`FrequentItemsets.counts` (by length, then by column ids), which is
    mlxtend's own order when the one-hot DataFrame's columns are in label order.
    """
    import pandas as pd

    counts = itemsets.counts
    return pd.DataFrame(
        {
            "support": np.asarray(counts / max(itemsets.n_transactions, 1), np.float64),
            "itemsets": pd.Series([frozenset(s) for s in itemsets.itemsets], dtype=object),
        }
    )


def _side_counts(rules: AssociationRules) -> tuple[np.ndarray, np.ndarray]:
    """Support counts of the antecedents and the consequents: kept by :func:`association_rules`,
    otherwise derived from confidence (c_A = c_AC / conf) and lift (c_C = conf n / lift)."""
    if rules.antecedent_counts is not None and rules.consequent_counts is not None:
        return np.asarray(rules.antecedent_counts, np.float64), np.asarray(rules.consequent_counts, np.float64)
    if not {"confidence", "lift"} <= set(rules.measures):
        raise DataFormatError(
            "these rules carry neither the support counts of their antecedents and consequents "
            "nor confidence and lift to derive them from; derive them again with association_rules()"
        )
    counts = np.asarray(rules.counts, np.float64)
    conf = np.asarray(rules.measures["confidence"], np.float64)
    lift = np.asarray(rules.measures["lift"], np.float64)
    return _derived_side_counts(counts, conf, lift, rules.n_transactions, integer=rules.counts.dtype.kind in "iu")


def _derived_side_counts(
    counts: np.ndarray, conf: np.ndarray, lift: np.ndarray, n: int, *, integer: bool
) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(divide="ignore", invalid="ignore"):
        a = counts / conf
        c = conf * max(n, 1) / lift
    # integer counts come back exactly from the rounding errors of conf and lift
    return (np.rint(a), np.rint(c)) if integer else (a, c)


def rules_to_mlxtend(rules: AssociationRules) -> Any:
    """The rules as ``mlxtend.frequent_patterns.association_rules`` returns them (no null values).

    Every metric is computed from the support counts c_AC, c_A, c_C and n (s = c / n):
    confidence c_AC / c_A; lift c_AC n / (c_A c_C); representativity 1 (no missing values);
    leverage s_AC − s_A s_C; conviction (1 − s_C) / (1 − confidence), ``inf`` at confidence 1;
    Zhang's metric leverage / max(s_AC (1 − s_A), s_A (s_C − s_AC)), 0 where that is 0;
    Jaccard c_AC / (c_A + c_C − c_AC); certainty (confidence − s_C) / (1 − s_C), 0 where s_C = 1;
    Kulczynski (c_AC / c_A + c_AC / c_C) / 2. Rows keep the order of ``rules`` (mlxtend's own
    order depends on how Python hashes the labels).
    """
    import pandas as pd

    cols = ["antecedents", "consequents", *MLXTEND_RULE_COLUMNS]
    if not len(rules):
        return pd.DataFrame(columns=cols)  # mlxtend's empty result: these columns, no rows
    n = float(max(rules.n_transactions, 1))
    c_ac = np.asarray(rules.counts, np.float64)
    c_a, c_c = _side_counts(rules)
    s_ac, s_a, s_c = c_ac / n, c_a / n, c_c / n
    conf = c_ac / c_a
    leverage = s_ac - s_a * s_c
    with np.errstate(divide="ignore", invalid="ignore"):
        conviction = np.where(conf < 1.0, (1.0 - s_c) / (1.0 - conf), math.inf)
        zhang_den = np.maximum(s_ac * (1.0 - s_a), s_a * (s_c - s_ac))
        zhang = np.where(zhang_den == 0, 0.0, leverage / zhang_den)
        certainty = np.where(s_c == 1.0, 0.0, (conf - s_c) / (1.0 - s_c))
    df = pd.DataFrame(
        {
            "antecedents": pd.Series([frozenset(a) for a in rules.antecedents], dtype=object),
            "consequents": pd.Series([frozenset(c) for c in rules.consequents], dtype=object),
            "antecedent support": s_a,
            "consequent support": s_c,
            "support": s_ac,
            "confidence": conf,
            "lift": c_ac * n / (c_a * c_c),
            "representativity": np.ones(c_ac.size),
            "leverage": leverage,
            "conviction": conviction,
            "zhangs_metric": zhang,
            "jaccard": c_ac / (c_a + c_c - c_ac),
            "certainty": certainty,
            "kulczynski": (c_ac / c_a + c_ac / c_c) / 2.0,
        }
    )
    return df[cols]


def _as_label_rows(values: Any, where: str) -> list[tuple]:
    """Item sets (frozensets, lists, arrays, or CSV cells of joined labels) as tuples of labels
    in sorted order; CSV cells of decimal integers only give integer labels (text has no types)."""
    rows = []
    cells = False
    for v in values:
        if isinstance(v, str):
            cells = True
            v = [t for t in v.split(_ITEM_SEP) if t != ""]
        elif v is None or (isinstance(v, float) and math.isnan(v)):
            raise DataFormatError(f"{where}: an empty item set")
        rows.append(tuple(v))
    if cells and all(isinstance(x, str) and _is_int(x) for r in rows for x in r):
        rows = [tuple(int(x) for x in r) for r in rows]
    out = []
    for r in rows:
        r = tuple(x.item() if isinstance(x, np.generic) else x for x in r)
        try:
            out.append(tuple(sorted(r)))
        except TypeError:
            raise DataFormatError(f"{where}: item labels must be all integers or all strings, got {r!r}") from None
    return out


def _is_int(text: str) -> bool:
    return text.isdigit() and (text == "0" or not text.startswith("0"))


def itemsets_from_mlxtend(df: Any, n_transactions: int, *, min_count: int | None = None) -> FrequentItemsets:
    """FrequentItemsets from an mlxtend ``apriori`` DataFrame (``support``, ``itemsets``):
    counts = support × ``n_transactions``, rounded (supports are count / n)."""
    _check_n(n_transactions, "an mlxtend DataFrame")
    for col in ("support", "itemsets"):
        if col not in df.columns:
            raise DataFormatError(f"mlxtend itemsets need a column {col!r}; found {list(df.columns)}")
    sets = _as_label_rows(df["itemsets"], "itemsets")
    counts = np.rint(np.asarray(df["support"], np.float64) * n_transactions).astype(np.int64)
    return _itemsets(sets, counts, n_transactions, min_count)


def rules_from_mlxtend(df: Any, n_transactions: int, *, min_confidence: float | None = None) -> AssociationRules:
    """AssociationRules from an mlxtend ``association_rules`` DataFrame; counts from the supports."""
    _check_n(n_transactions, "an mlxtend DataFrame")
    need = ("antecedents", "consequents", "support", "antecedent support", "consequent support")
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise DataFormatError(f"mlxtend rules need the columns {missing}; found {list(df.columns)}")
    to_counts = lambda col: np.rint(np.asarray(df[col], np.float64) * n_transactions)  # noqa: E731
    return _rules(
        _as_label_rows(df["antecedents"], "antecedents"),
        _as_label_rows(df["consequents"], "consequents"),
        to_counts("support").astype(np.int64),
        to_counts("antecedent support"),
        to_counts("consequent support"),
        n_transactions,
        min_confidence,
    )


# --- building results from label rows --------------------------------------------------------


def _check_n(n_transactions: int | None, what: str) -> int:
    if n_transactions is None or int(n_transactions) < 1:
        raise InvalidParameter(
            f"{what} records no number of transactions, which the supports need; give n_transactions",
            parameter="n_transactions",
        )
    return int(n_transactions)


def _itemsets(sets: list[tuple], counts: np.ndarray, n_transactions: int, min_count: int | None) -> FrequentItemsets:
    """FrequentItemsets from label tuples: levels of column ids, rows in lexicographic order."""
    labels = [x for s in sets for x in s]
    vocab = Vocabulary(np.asarray(labels) if labels else np.zeros(0, np.int64))
    levels: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    lengths = np.array([len(s) for s in sets], dtype=np.int64)
    for k in sorted(set(lengths.tolist())):
        if k == 0:
            raise DataFormatError("an empty item set")
        pick = np.flatnonzero(lengths == k)
        ids = np.sort(vocab.encode(np.array([sets[i] for i in pick])).reshape(-1, k), axis=1).astype(np.int32)
        order = np.lexsort(ids.T[::-1])
        levels[k] = (ids[order], np.asarray(counts)[pick][order])
    if min_count is None:  # not recorded: the least count present (the threshold was at most this)
        min_count = int(np.ceil(np.min(counts))) if len(counts) else 0
    return FrequentItemsets(levels, vocab, int(n_transactions), int(min_count))


def _rules(
    ante: list[tuple],
    cons: list[tuple],
    counts: np.ndarray,
    ante_counts: np.ndarray,
    cons_counts: np.ndarray,
    n_transactions: int,
    min_confidence: float | None,
) -> AssociationRules:
    measures = rule_measures(counts, ante_counts, cons_counts, n_transactions, METRICS)
    if min_confidence is None:
        min_confidence = float(np.min(measures["confidence"])) if len(counts) else 0.0
    return AssociationRules(
        ante,
        cons,
        np.asarray(counts),
        measures,
        int(n_transactions),
        float(min_confidence),
        antecedent_counts=np.asarray(ante_counts, np.float64),
        consequent_counts=np.asarray(cons_counts, np.float64),
    )


# --- writers -------------------------------------------------------------------------------


def _integer_counts(counts: np.ndarray) -> np.ndarray:
    """Counts as int64 (reconstructed float estimates rounded: these layouts carry integers)."""
    return np.asarray(counts) if np.asarray(counts).dtype.kind in "iu" else np.rint(counts).astype(np.int64)


def _write_text(url: str, text: str, storage_options: Mapping[str, Any] | None, overwrite: bool) -> None:
    from ..data.atomic import atomic_file

    with atomic_file(url, storage_options=storage_options, overwrite=overwrite) as fh:
        fh.write(text.encode("utf-8"))


def _csv_cell(items: Sequence[Any], url: str) -> str:
    for x in items:
        if isinstance(x, str) and (_ITEM_SEP in x or "\n" in x or x == ""):
            raise DataFormatError(
                f"cannot write {url}: the item label {x!r} contains {_ITEM_SEP!r} or a line break "
                "(or is empty), which the CSV layout joins labels with; write a .parquet file instead"
            )
    return _ITEM_SEP.join(str(x) for x in sorted(items))


def _write_mlxtend(df: Any, set_columns: Sequence[str], url: str, meta: Mapping[str, Any], so: Any, overwrite: bool) -> None:
    if _container(url, "mlxtend") == "csv":
        out = df.copy()
        for col in set_columns:
            out[col] = [_csv_cell(tuple(s), url) for s in df[col]]
        _write_text(url, out.to_csv(index=False), so, overwrite)
        return
    import pyarrow as pa

    data = {c: pa.array([sorted(s) for s in df[c]]) if c in set_columns else pa.array(df[c]) for c in df.columns}
    write_table(pa.table(data), url, meta, so, overwrite)


class _SpmfItems:
    """SPMF's item ids: integer labels as they are; string labels as ids 1..n in label order,
    named in ``@CONVERTED_FROM_TEXT`` / ``@ITEM=id=label`` header lines."""

    def __init__(self, labels: Sequence[Any], url: str) -> None:
        uniq = sorted(set(labels))
        self.text = bool(uniq) and isinstance(uniq[0], str)
        self.ids = {x: i + 1 for i, x in enumerate(uniq)} if self.text else {}
        for x in uniq if self.text else ():
            if "\n" in x or "\r" in x:
                raise DataFormatError(f"cannot write {url}: the item label {x!r} contains a line break")

    def header(self) -> list[str]:
        if not self.text:
            return []
        return ["@CONVERTED_FROM_TEXT", *(f"@ITEM={i}={x}" for x, i in self.ids.items())]

    def line(self, items: Sequence[Any]) -> str:
        return " ".join(str(self.ids[x]) if self.text else str(x) for x in items)


def _spmf_meta(**fields: Any) -> str:
    return " ".join([_SPMF_HEADER, *(f"{k}={v}" for k, v in fields.items())])


def write_itemsets(
    itemsets: FrequentItemsets,
    url: str,
    *,
    format: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    overwrite: bool = False,
) -> str:
    """Write ``itemsets`` to one file at ``url`` (any fsspec URL), atomically.

    Parameters
    ----------
    itemsets : FrequentItemsets
    url : str
    format : {"ppdm", "mlxtend", "spmf", "spark"}, optional
        Default: by the extension of ``url`` (see :func:`format_of`).
    storage_options : mapping, optional
    overwrite : bool
        Replace an existing file.

    Returns
    -------
    str
        The layout written.
    """
    fmt = format_of(url, format)
    meta = {"n_transactions": itemsets.n_transactions, "min_count": itemsets.min_count}
    if fmt == "ppdm":
        itemsets.to_parquet(url, storage_options=storage_options, overwrite=overwrite)
    elif fmt == "mlxtend":
        _write_mlxtend(itemsets.to_mlxtend(), ["itemsets"], url, meta, storage_options, overwrite)
    elif fmt == "spmf":
        sets = itemsets.itemsets
        ids = _SpmfItems([x for s in sets for x in s], url)
        counts = _integer_counts(itemsets.counts).tolist()
        lines = [*ids.header(), _spmf_meta(**meta)]
        lines += [f"{ids.line(s)} #SUP: {c}" for s, c in zip(sets, counts)]
        _write_text(url, "\n".join(lines) + "\n", storage_options, overwrite)
    else:
        import pyarrow as pa

        table = pa.table(
            {
                "items": pa.array([list(s) for s in itemsets.itemsets]),
                "freq": pa.array(_integer_counts(itemsets.counts), pa.int64()),
            }
        )
        write_table(_label_lists(table, ["items"], itemsets.vocabulary), url, meta, storage_options, overwrite)
    return fmt


def _label_lists(table: Any, columns: Sequence[str], vocabulary: Vocabulary | None) -> Any:
    """Give empty tables their list type (pyarrow infers ``list<null>`` from no rows)."""
    import pyarrow as pa

    if table.num_rows:
        return table
    value = pa.string() if vocabulary is not None and not vocabulary.is_integer else pa.int64()
    for name in columns:
        table = table.set_column(table.schema.get_field_index(name), name, pa.array([], pa.list_(value)))
    return table


def write_rules(
    rules: AssociationRules,
    url: str,
    *,
    format: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    overwrite: bool = False,
) -> str:
    """Write ``rules`` to one file at ``url``, atomically, in ``format`` (default: by extension;
    see :func:`write_itemsets`). SPMF lines carry ``#SUP:`` (count), ``#CONF:`` and ``#LIFT:``
    (as SPMF's lift-enabled rule miners write them). Returns the layout written."""
    fmt = format_of(url, format)
    meta = {"n_transactions": rules.n_transactions, "min_confidence": rules.min_confidence}
    if fmt == "ppdm":
        rules.to_parquet(url, storage_options=storage_options, overwrite=overwrite)
        return fmt
    if fmt == "mlxtend":
        _write_mlxtend(rules.to_mlxtend(), ["antecedents", "consequents"], url, meta, storage_options, overwrite)
        return fmt
    c_a, c_c = _side_counts(rules)
    n = max(rules.n_transactions, 1)
    counts = _integer_counts(rules.counts)
    conf = np.asarray(rules.counts, np.float64) / c_a
    lift = np.asarray(rules.counts, np.float64) * n / (c_a * c_c)
    if fmt == "spmf":
        ids = _SpmfItems([x for r in (*rules.antecedents, *rules.consequents) for x in r], url)
        lines = [*ids.header(), _spmf_meta(**meta)]
        lines += [
            f"{ids.line(a)} ==> {ids.line(c)} #SUP: {s} #CONF: {cf!r} #LIFT: {lf!r}"
            for a, c, s, cf, lf in zip(rules.antecedents, rules.consequents, counts.tolist(), conf.tolist(), lift.tolist())
        ]
        _write_text(url, "\n".join(lines) + "\n", storage_options, overwrite)
        return fmt
    import pyarrow as pa

    table = pa.table(
        {
            "antecedent": pa.array([list(a) for a in rules.antecedents]),
            "consequent": pa.array([list(c) for c in rules.consequents]),
            "confidence": pa.array(conf, pa.float64()),
            "lift": pa.array(lift, pa.float64()),
            "support": pa.array(np.asarray(rules.counts, np.float64) / n, pa.float64()),
        }
    )
    labels = [x for r in rules.antecedents for x in r]
    vocab = Vocabulary(labels) if labels else None
    write_table(_label_lists(table, ["antecedent", "consequent"], vocab), url, meta, storage_options, overwrite)
    return fmt


# --- readers -------------------------------------------------------------------------------


def _read_format(url: str, format: str | None) -> str:
    if format is not None:
        if format not in FORMATS:
            raise InvalidParameter(f"unknown format {format!r}; choose from {FORMATS}", parameter="format")
        return format
    ext = _extension(url)
    return {".txt": "spmf", ".csv": "mlxtend"}.get(ext, "parquet")  # Parquet: told apart by its columns


def _read_text(url: str, storage_options: Mapping[str, Any] | None) -> str:
    from ..data.folder import open_fs

    fs, path = open_fs(url, storage_options)
    try:
        with fs.open(path, "rb") as fh:
            return fh.read().decode("utf-8")
    except FileNotFoundError:
        from ..errors import DatasetNotFoundError

        raise DatasetNotFoundError(f"no file {url}") from None


def _read_parquet(url: str, storage_options: Mapping[str, Any] | None) -> tuple[Any, dict[str, Any]]:
    """The table (one file or a folder of part files, as Spark writes) and our footer metadata."""
    import pyarrow.parquet as pq

    from ..data.folder import open_fs

    fs, path = open_fs(url, storage_options)
    if not fs.exists(path):
        from ..errors import DatasetNotFoundError

        raise DatasetNotFoundError(f"no file or folder {url}")
    try:
        table = pq.read_table(path, filesystem=fs)
    except Exception as exc:  # pyarrow's errors name no file: one that does
        raise DataFormatError(f"{url}: not a readable Parquet file or folder ({exc})") from None
    raw = (table.schema.metadata or {}).get(b"ppdm")
    return table, (json.loads(raw) if raw else {})


def _layout_error(url: str, columns: Sequence[str], what: str) -> DataFormatError:
    return DataFormatError(
        f"{url}: no {what} layout has the columns {list(columns)} (ppdm: items, count; "
        "spark: items, freq / antecedent, consequent, confidence, lift, support; "
        "mlxtend: itemsets, support / antecedents, consequents, ...)"
    )


def _n_of(n_transactions: int | None, meta: Mapping[str, Any], url: str) -> int:
    return _check_n(n_transactions if n_transactions is not None else meta.get("n_transactions"), url)


def read_itemsets(
    url: str,
    *,
    format: str | None = None,
    n_transactions: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> FrequentItemsets:
    """Frequent itemsets from a file in any layout :func:`write_itemsets` writes.

    Parameters
    ----------
    url : str
        One file (or a folder of Parquet part files, as Spark's ``freqItemsets.write`` makes).
    format : {"ppdm", "mlxtend", "spmf", "spark"}, optional
        Default: ``.txt`` -> SPMF, ``.csv`` -> mlxtend, anything else is Parquet told apart by
        its columns.
    n_transactions : int, optional
        The number of transactions mined; needed where the file does not record it (files of
        SPMF, Spark or mlxtend themselves; every file we write records it).
    storage_options : mapping, optional

    Raises
    ------
    DataFormatError
        A file in none of the layouts, naming the file.
    InvalidParameter
        No number of transactions in the file and no ``n_transactions``.
    """
    fmt = _read_format(url, format)
    if fmt == "spmf":
        return _read_spmf_itemsets(url, _read_text(url, storage_options), n_transactions)
    if fmt == "mlxtend" and _extension(url) == ".csv":
        import io

        import pandas as pd

        # labels are text: no "NA" or "null" label may become a missing value
        df = pd.read_csv(io.StringIO(_read_text(url, storage_options)), dtype={"itemsets": str}, keep_default_na=False)
        return itemsets_from_mlxtend(df, _check_n(n_transactions, url))
    table, meta = _read_parquet(url, storage_options)
    cols = table.column_names
    n = _n_of(n_transactions, meta, url)
    min_count = meta.get("min_count")
    if fmt in ("ppdm", "parquet") and {"items", "count"} <= set(cols):
        sets = _as_label_rows(table.column("items").to_pylist(), url)
        return _itemsets(sets, table.column("count").to_numpy(), n, min_count)
    if fmt in ("spark", "parquet") and {"items", "freq"} <= set(cols):
        sets = _as_label_rows(table.column("items").to_pylist(), url)
        return _itemsets(sets, table.column("freq").to_numpy().astype(np.int64), n, min_count)
    if fmt in ("mlxtend", "parquet") and {"itemsets", "support"} <= set(cols):
        return itemsets_from_mlxtend(table.to_pandas(), n, min_count=min_count)
    raise _layout_error(url, cols, "itemsets" if fmt == "parquet" else f"{fmt} itemsets")


def _spmf_lines(url: str, text: str) -> tuple[dict[int, str], dict[str, str], list[tuple[int, str]]]:
    """``@ITEM`` names, our ``@PPDM`` fields and the numbered pattern lines of an SPMF file."""
    names: dict[int, str] = {}
    fields: dict[str, str] = {}
    body = []
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("@ITEM="):
            # the label is the rest of the raw line after the second '=' (spaces and '=' kept)
            ident, _, label = raw.rstrip("\r\n").lstrip()[len("@ITEM=") :].partition("=")
            if not ident.strip().isdigit():
                raise DataFormatError(f"{url}, line {no}: expected @ITEM=<id>=<label>, got {line!r}")
            names[int(ident)] = label
        elif line.startswith(_SPMF_HEADER + " "):
            fields.update(kv.partition("=")[::2] for kv in line.split()[1:] if "=" in kv)
        elif line[0] in "@#%":  # SPMF's other metadata and comment lines
            continue
        else:
            body.append((no, line))
    return names, fields, body


def _spmf_items(tokens: Sequence[str], names: Mapping[int, str], url: str, no: int) -> tuple:
    try:
        ids = [int(t) for t in tokens]
    except ValueError:
        raise DataFormatError(f"{url}, line {no}: items must be integer ids, got {' '.join(tokens)!r}") from None
    if not ids:
        raise DataFormatError(f"{url}, line {no}: no items before '#SUP:'")
    if names:
        unknown = [i for i in ids if i not in names]
        if unknown:
            raise DataFormatError(f"{url}, line {no}: item ids {unknown} have no @ITEM line")
        return tuple(names[i] for i in ids)
    return tuple(ids)


def _spmf_measures(rest: str, url: str, no: int) -> dict[str, str]:
    """``#SUP: 5 #CONF: 0.8`` -> ``{"SUP": "5", "CONF": "0.8"}``."""
    out = {}
    for part in rest.split("#")[1:]:
        name, _, value = part.partition(":")
        out[name.strip().upper()] = value.strip()
    if "SUP" not in out:
        raise DataFormatError(f"{url}, line {no}: no '#SUP:' count")
    return out


def _spmf_int(value: str, url: str, no: int, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise DataFormatError(f"{url}, line {no}: {what} must be an integer, got {value!r}") from None


def _spmf_float(value: str, url: str, no: int, what: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise DataFormatError(f"{url}, line {no}: {what} must be a number, got {value!r}") from None


def _read_spmf_itemsets(url: str, text: str, n_transactions: int | None) -> FrequentItemsets:
    names, fields, body = _spmf_lines(url, text)
    n = _n_of(n_transactions, {"n_transactions": int(fields["n_transactions"])} if "n_transactions" in fields else {}, url)
    sets, counts = [], []
    for no, line in body:
        items, sep, rest = line.partition("#")
        if not sep or "==>" in items:
            raise DataFormatError(f"{url}, line {no}: expected '<items> #SUP: <count>', got {line!r}")
        sets.append(_spmf_items(items.split(), names, url, no))
        counts.append(_spmf_int(_spmf_measures("#" + rest, url, no)["SUP"], url, no, "#SUP"))
    min_count = int(fields["min_count"]) if "min_count" in fields else None
    return _itemsets(_as_label_rows(sets, url), np.asarray(counts, np.int64), n, min_count)


def read_rules(
    url: str,
    *,
    format: str | None = None,
    n_transactions: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> AssociationRules:
    """Association rules from a file in any layout :func:`write_rules` writes (parameters as
    :func:`read_itemsets`). The support counts of antecedent and consequent, which SPMF and
    Spark do not carry, come back from confidence and lift (exactly, for integer counts);
    confidence, lift, leverage and conviction are recomputed from the counts."""
    fmt = _read_format(url, format)
    if fmt == "spmf":
        return _read_spmf_rules(url, _read_text(url, storage_options), n_transactions)
    if fmt == "mlxtend" and _extension(url) == ".csv":
        import io

        import pandas as pd

        df = pd.read_csv(
            io.StringIO(_read_text(url, storage_options)),
            dtype={"antecedents": str, "consequents": str},
            keep_default_na=False,  # labels are text (see read_itemsets)
        )
        return rules_from_mlxtend(df, _check_n(n_transactions, url))
    table, meta = _read_parquet(url, storage_options)
    cols = set(table.column_names)
    n = _n_of(n_transactions, meta, url)
    min_conf = meta.get("min_confidence")
    if fmt in ("ppdm", "spark", "parquet") and {"antecedent", "consequent", "confidence", "lift"} <= cols:
        ante = _as_label_rows(table.column("antecedent").to_pylist(), url)
        cons = _as_label_rows(table.column("consequent").to_pylist(), url)
        conf = table.column("confidence").to_numpy().astype(np.float64)
        lift = table.column("lift").to_numpy().astype(np.float64)
        if "count" in cols:
            counts = table.column("count").to_numpy()
        elif "support" not in cols:
            raise DataFormatError(f"{url}: Spark rules need their 'support' column (Spark >= 3.0 writes it)")
        else:  # Spark: support = count / n
            counts = np.rint(table.column("support").to_numpy().astype(np.float64) * n).astype(np.int64)
        c_a, c_c = _derived_side_counts(counts.astype(np.float64), conf, lift, n, integer=counts.dtype.kind in "iu")
        return _rules(ante, cons, counts, c_a, c_c, n, min_conf)
    if fmt in ("mlxtend", "parquet") and {"antecedents", "consequents"} <= cols:
        return rules_from_mlxtend(table.to_pandas(), n, min_confidence=min_conf)
    raise _layout_error(url, table.column_names, "rules" if fmt == "parquet" else f"{fmt} rules")


def _read_spmf_rules(url: str, text: str, n_transactions: int | None) -> AssociationRules:
    names, fields, body = _spmf_lines(url, text)
    n = _n_of(n_transactions, {"n_transactions": int(fields["n_transactions"])} if "n_transactions" in fields else {}, url)
    ante, cons, counts, conf, lift = [], [], [], [], []
    for no, line in body:
        left, arrow, right = line.partition("==>")
        items, sep, rest = right.partition("#")
        if not arrow or not sep:
            raise DataFormatError(f"{url}, line {no}: expected '<items> ==> <items> #SUP: <count> #CONF: <c>', got {line!r}")
        m = _spmf_measures("#" + rest, url, no)
        if "CONF" not in m or "LIFT" not in m:
            raise DataFormatError(
                f"{url}, line {no}: the rule needs #CONF: and #LIFT: (the support counts of its antecedent "
                "and consequent are derived from them)"
            )
        ante.append(_spmf_items(left.split(), names, url, no))
        cons.append(_spmf_items(items.split(), names, url, no))
        counts.append(_spmf_int(m["SUP"], url, no, "#SUP"))
        conf.append(_spmf_float(m["CONF"], url, no, "#CONF"))
        lift.append(_spmf_float(m["LIFT"], url, no, "#LIFT"))
    c = np.asarray(counts, np.int64)
    c_a, c_c = _derived_side_counts(c.astype(np.float64), np.asarray(conf), np.asarray(lift), n, integer=True)
    min_conf = float(fields["min_confidence"]) if "min_confidence" in fields else None
    return _rules(_as_label_rows(ante, url), _as_label_rows(cons, url), c, c_a, c_c, n, min_conf)
