"""Basket CSV is RFC 4180 with a chosen separator: quoting, escaping, errors, round trips."""

from __future__ import annotations

import csv
import io
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdm_dask import read
from ppdm_dask.cli import cli
from ppdm_dask.data import _kernels as K
from ppdm_dask.data.formats import read_csv, write_csv
from ppdm_dask.data.transactions import TransactionArray
from ppdm_dask.errors import DataFormatError

pytestmark = pytest.mark.oldest  # also run on the oldest supported versions (.ci/run)

ISSUE_TEXT = b'x,"a,b",c\n"say ""hi""",d\n'
TRICKY = [
    "a,b",
    'say "hi"',
    " lead",
    "trail ",
    " both ",
    "\ttab",
    "semi;colon",
    "ünï cödé",
    "日本語",
    '"',
    '""',
    ",",
    'x"y',
    "a\rb",
    "plain",
    "5\" disk, 3'5",
]


def rows_of(data: bytes, **kw) -> list[list]:
    indptr, labels = K.parse_csv_bytes(data, **kw)
    return [labels[indptr[i] : indptr[i + 1]].tolist() for i in range(indptr.size - 1)]


def csv_text(rows: list[list[str]], labels: list[str], sep: str = ",") -> bytes:
    """Our writer's text of ``rows`` (lists of labels) over the vocabulary ``labels``."""
    vocab = np.array(sorted(set(labels)), dtype=str)
    pos = {s: i for i, s in enumerate(vocab.tolist())}
    ids = [sorted({pos[s] for s in r}) for r in rows]
    indptr = np.r_[0, np.cumsum([len(r) for r in ids])].astype(np.int32)
    indices = np.array([i for r in ids for i in r], dtype=np.int32)
    block = sp.csr_array((np.ones(indices.size, np.int32), indices, indptr), shape=(len(rows), vocab.size))
    return K.format_csv_block(block, vocab, sep=sep)


def run(*args, ok=True):
    result = CliRunner().invoke(cli, ["--scheduler", "sync", "--no-progress", *args])
    if ok:
        assert result.exit_code == 0, (result.output, result.exception)
    return result


# -- the reported defect -----------------------------------------------------------------------


def test_issue_example_parses_quoted_separators_and_doubled_quotes(tmp_path):
    assert rows_of(ISSUE_TEXT) == [["x", "a,b", "c"], ['say "hi"', "d"]]
    (tmp_path / "b.csv").write_bytes(ISSUE_TEXT)
    run("convert", str(tmp_path / "b.csv"), str(tmp_path / "b.parquet"))
    tx = read(str(tmp_path / "b.parquet"))
    assert tx.vocabulary.labels.tolist() == ["a,b", "c", "d", 'say "hi"', "x"]
    assert [set(r) for r in tx.to_lists()] == [{"x", "a,b", "c"}, {'say "hi"', "d"}]


# -- dialect details ---------------------------------------------------------------------------


def test_whitespace_quoted_verbatim_unquoted_stripped_empty_fields_ignored():
    text = b' a , " b " ,,c\r\n\n"",  ""  ,x\n  "q"  \t,  r \n'
    assert rows_of(text) == [["a", " b ", "c"], [], ["x"], ["q", "r"]]
    # a quote inside an unquoted field (not first) is literal, as in Python's csv module
    assert rows_of(b'12" pizza,5\'6"\n') == [['12" pizza', "5'6\""]]
    # other separators, including whitespace and multi-character ones
    assert rows_of(b'a\t"b\tc"\t d \n', sep="\t") == [["a", "b\tc", "d"]]
    assert rows_of(b'a;"b;c"; "d, e" \n', sep=";") == [["a", "b;c", "d, e"]]
    assert rows_of(b'a::"b::c"::d\n', sep="::") == [["a", "b::c", "d"]]


def test_quoted_integers_and_crlf_keep_an_integer_vocabulary_non_ascii_digits_are_strings():
    assert rows_of(b'1,2, 3\r\n"4",05\n\n6') == [[1, 2, 3], [4, 5], [], [6]]
    assert K.parse_csv_bytes(b"7,8\n")[1].dtype == np.int64
    # '\u00b2' is a digit to str.isdigit but no integer: strings, not a crash
    assert rows_of("1,\u00b2\n".encode()) == [["1", "\u00b2"]]


@given(
    st.lists(st.lists(st.integers(0, 10**15), max_size=8), max_size=25),
    st.sampled_from([",", ";", "\t", " "]),
    st.booleans(),
    st.booleans(),
)
@settings(max_examples=150, deadline=None)
def test_integer_fast_path_equals_the_generic_parser(rows, sep, crlf, last_newline):
    end = "\r\n" if crlf else "\n"
    last_newline = last_newline or bool(rows and not rows[-1])  # else a final empty row is no line
    text = end.join(sep.join(map(str, r)) for r in rows) + (end if last_newline and rows else "")
    data = text.encode()
    assert K._csv_int_block(data, sep) is not None or not data
    fast = K.parse_csv_bytes(data, sep=sep)
    generic = K.parse_csv_bytes(data, sep=sep, as_int=False)  # strings: the line-by-line split
    items = [x for r in rows for x in r]
    assert fast[0].tolist() == generic[0].tolist() == np.r_[0, np.cumsum([len(r) for r in rows])].tolist()
    assert generic[1].tolist() == [str(x) for x in items]
    assert fast[1].tolist() == items and (fast[1].dtype == np.int64 or not items)


# -- malformed quotes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,line,what",
    [
        (b'a,b\nc,"d\ne",f\n', 2, "unterminated quoted field"),  # a quoted line break
        (b'a,"b""\n', 1, "unterminated quoted field"),  # the last quote is an escaped one
        (b'a\nb\nc,"d"e,f\n', 3, "text after the closing quote"),
        (b'x\n"a" "b",c\n', 2, "text after the closing quote"),
    ],
)
def test_malformed_quotes_raise_with_the_line(text, line, what):
    with pytest.raises(DataFormatError, match=f"line {line}.*{what}") as info:
        K.parse_csv_bytes(text)
    assert info.value.line == line
    again = pickle.loads(pickle.dumps(info.value))  # it may be raised on a Dask worker
    assert (type(again), str(again), again.line) == (type(info.value), str(info.value), line)
    with pytest.raises(DataFormatError, match=f"^f.csv line {line + 10}: {what}"):
        K.parse_csv_bytes(text, source="f.csv", first_line=11)


def test_malformed_quote_error_names_the_file_and_line_across_blocks(tmp_path):
    good = "".join(f"item{i},other{i}\n" for i in range(40))
    path = tmp_path / "bad.csv"
    path.write_text(good + 'z,"two\nlines"\n' + good)  # a quoted line break on line 41
    # however the file is split into blocks (one boundary falls inside the quoted field)
    for blocksize in (64, 200, len(good) + 2, None):
        with pytest.raises(DataFormatError) as info:
            read_csv(str(path), blocksize=blocksize)
        msg = str(info.value)
        assert msg.startswith(f"{path} line 41: unterminated quoted field") and "\n" not in msg, msg
    r = run("convert", str(path), str(tmp_path / "out.parquet"), ok=False)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith(f"ppdm: error: {path} line 41: unterminated quoted field"), r.stderr
    assert not (tmp_path / "out.parquet").exists()


def test_writer_refuses_labels_it_cannot_store():
    block = sp.csr_array(np.ones((1, 1), np.int32))
    with pytest.raises(DataFormatError, match="line break"):
        K.format_csv_block(block, np.array(["a\nb"]))
    with pytest.raises(DataFormatError, match="empty item label"):
        K.format_csv_block(block, np.array([""]))


# -- round trips and the csv module as oracle --------------------------------------------------


@pytest.mark.parametrize("sep", [",", ";", "\t", "|"])
def test_round_trip_of_tricky_labels(sep):
    rows = [TRICKY[: 1 + i % len(TRICKY)] for i in range(len(TRICKY))] + [[], [sep + "x" + sep]]
    labels = [s for r in rows for s in r]
    text = csv_text(rows, labels, sep=sep)
    got = rows_of(text, sep=sep)
    assert [sorted(r) for r in got] == [sorted(set(r)) for r in rows]


ALPHABET = st.sampled_from(list('ab,"; \tüé|') + ["日", "\r"])


@given(
    st.lists(st.lists(st.text(ALPHABET, min_size=1, max_size=6), min_size=1, max_size=6), min_size=1, max_size=12),
    st.sampled_from([",", ";", "\t", "|"]),
)
@settings(max_examples=200, deadline=None)
def test_random_labels_match_the_csv_module(rows, sep):
    rows = [list(dict.fromkeys(r)) for r in rows]  # a row is a set
    # our writer: Python's csv module reads back exactly the labels, and so do we
    text = csv_text(rows, [s for r in rows for s in r], sep=sep)
    ours = rows_of(text, sep=sep, as_int=False)
    oracle = list(csv.reader(io.StringIO(text.decode(), newline=""), delimiter=sep))
    assert ours == oracle
    assert [sorted(r) for r in ours] == [sorted(r) for r in rows]
    # Python's writer (all fields quoted, or minimal quoting): we read what its reader reads,
    # except that unquoted fields are stripped of whitespace and empty ones are no item
    for quoting in (csv.QUOTE_ALL, csv.QUOTE_MINIMAL):
        buf = io.StringIO(newline="")
        csv.writer(buf, delimiter=sep, quoting=quoting, lineterminator="\r\n").writerows(rows)
        data = buf.getvalue()
        oracle = list(csv.reader(io.StringIO(data, newline=""), delimiter=sep))
        assert oracle == rows
        if quoting == csv.QUOTE_MINIMAL:
            oracle = [[f if _csv_quotes(f, sep) else f.strip() for f in r] for r in oracle]
            oracle = [[f for f in r if f] for r in oracle]
        assert rows_of(data.encode(), sep=sep, as_int=False) == oracle


def _csv_quotes(field: str, sep: str) -> bool:
    """Whether Python's csv writer quotes ``field`` under QUOTE_MINIMAL."""
    buf = io.StringIO(newline="")
    csv.writer(buf, delimiter=sep, lineterminator="\r\n").writerow([field])
    return buf.getvalue().startswith('"')


def test_transaction_array_round_trip_through_files(tmp_path):
    rows = [TRICKY[i::3] for i in range(3)] + [["plain"]]
    tx = TransactionArray.from_lists(rows)
    for sep in (",", ";"):
        path = str(tmp_path / f"t{sep == ';'}.csv")
        write_csv(tx, path, sep=sep)
        back = read_csv(path, sep=sep, blocksize=40)
        assert back.vocabulary.labels.tolist() == tx.vocabulary.labels.tolist()
        assert [sorted(r) for r in back.to_lists()] == [sorted(r) for r in tx.to_lists()]


def test_cli_convert_csv_parquet_csv_parquet_keeps_labels_and_rows(tmp_path):
    src = tmp_path / "src.csv"
    src.write_text(
        'x,"a,b",c\n"say ""hi""",d,  " padded "  \n\nünï,"semi;colon", tab\there ,"5"" disk"\n12" pizza,"",x\n',
        encoding="utf-8",
    )
    expected = [
        {"x", "a,b", "c"},
        {'say "hi"', "d", " padded "},
        set(),
        {"ünï", "semi;colon", "tab\there", '5" disk'},
        {'12" pizza', "x"},
    ]
    run("convert", str(src), str(tmp_path / "one"))
    run("convert", str(tmp_path / "one"), str(tmp_path / "mid.csv"))
    run("convert", str(tmp_path / "mid.csv"), str(tmp_path / "two"))
    one, two = read(str(tmp_path / "one")), read(str(tmp_path / "two"))
    assert [set(r) for r in one.to_lists()] == expected
    assert two.vocabulary.labels.tolist() == one.vocabulary.labels.tolist() == sorted(set().union(*expected))
    assert [set(r) for r in two.to_lists()] == expected
    # the middle file is RFC 4180: Python's csv module reads the same rows
    with open(tmp_path / "mid.csv", newline="", encoding="utf-8") as fh:
        assert [set(r) for r in csv.reader(fh)] == expected
