"""Per-block kernels against hand-made examples and brute force."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdm_dask.data import _kernels as K
from ppdm_dask.errors import DataFormatError, ItemIdError


def test_parse_fimi_trailing_spaces_empty_lines_and_crlf():
    indptr, labels = K.parse_fimi_bytes(b"1 2 3 \n\n10  200\r\n7")
    assert indptr.tolist() == [0, 3, 3, 5, 6]
    assert labels.tolist() == [1, 2, 3, 10, 200, 7]
    assert K.parse_fimi_bytes(b"")[0].tolist() == [0]
    assert K.parse_fimi_bytes(b"\n\n")[0].tolist() == [0, 0, 0]


@pytest.mark.parametrize("text,msg", [(b"1 -2\n", "negative"), (b"1 2.5\n", "non-integer"), (b"a b\n", "non-integer")])
def test_parse_fimi_rejects_bad_items(text, msg):
    with pytest.raises(DataFormatError, match=msg):
        K.parse_fimi_bytes(text)


@given(st.lists(st.lists(st.integers(0, 10**12), max_size=8), max_size=30))
@settings(max_examples=150, deadline=None)
def test_parse_fimi_matches_python_split(rows):
    text = "".join(" ".join(map(str, r)) + " \n" for r in rows).encode()
    indptr, labels = K.parse_fimi_bytes(text)
    got = [labels[indptr[i] : indptr[i + 1]].tolist() for i in range(len(indptr) - 1)]
    assert got == rows


@given(st.lists(st.lists(st.integers(0, 20), max_size=10), max_size=30))
@settings(max_examples=150, deadline=None)
def test_canonicalize_rows_equals_sorted_sets(rows):
    indptr = np.r_[0, np.cumsum([len(r) for r in rows])].astype(np.int64)
    ids = np.array([x for r in rows for x in r], dtype=np.int64)
    ip, out, removed = K.canonicalize_rows(indptr, ids)
    got = [out[ip[i] : ip[i + 1]].tolist() for i in range(len(rows))]
    assert got == [sorted(set(r)) for r in rows]
    assert removed == sum(len(r) - len(set(r)) for r in rows)


def test_normalize_labels_errors():
    with pytest.raises(DataFormatError, match="NaN"):
        K.normalize_labels(np.array([1.0, np.nan]))
    with pytest.raises(DataFormatError, match="non-integer"):
        K.normalize_labels(np.array([1.5]))
    with pytest.raises(ItemIdError, match="negative"):
        K.normalize_labels(np.array([3, -1]))
    with pytest.raises(DataFormatError, match="all integers or all strings"):
        K.normalize_labels(np.array([1, "a"], dtype=object))
    with pytest.raises(DataFormatError, match="NaN"):
        K.normalize_labels(np.array([1, float("nan")], dtype=object))
    assert K.normalize_labels(np.array([2.0, 3.0])).tolist() == [2, 3]


def test_item_counts_and_summary():
    block = K.csr_block(np.array([0, 2, 2, 5]), np.array([0, 3, 1, 2, 3]), 5)
    assert K.item_counts(block, 5).tolist() == [1, 1, 1, 2, 0]
    s = K.block_summary(block)
    assert (s["rows"], s["nnz"], s["empty"], s["max_len"], s["min_len"]) == (3, 5, 1, 3, 0)
    assert s["hist"].tolist() == [1, 0, 1, 1]
    m = K.merge_summaries([s, K.block_summary(K.csr_block(np.array([0]), np.array([], np.int64), 5))])
    assert m["rows"] == 3 and m["min_len"] == 0


def test_format_fimi_block_roundtrip():
    block = K.csr_block(np.array([0, 2, 2, 3]), np.array([0, 2, 1]), 3)
    text = K.format_fimi_block(block, np.array([10, 20, 30]))
    assert text == b"10 30\n\n20\n"
    ip, lab = K.parse_fimi_bytes(text)
    assert ip.tolist() == [0, 2, 2, 3] and lab.tolist() == [10, 30, 20]
