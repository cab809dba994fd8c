"""Side files (schema, hierarchy, permissions): every way a file can be wrong gives one error
naming the file and the flag, never a raw IsADirectoryError or UnicodeDecodeError."""

from __future__ import annotations

import pytest

from ppdm_dask.cli.flags import cli_message
from ppdm_dask.data.hierarchy import Hierarchy
from ppdm_dask.data.sidefiles import read_json_file, read_text_file
from ppdm_dask.data.tables import load_schema
from ppdm_dask.errors import DataFormatError, DatasetNotFoundError


@pytest.fixture
def bad_files(tmp_path):
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"a;b\n\x92\x00\xff;*\n")
    empty = tmp_path / "empty.csv"
    empty.write_text("  \n")
    return {
        "folder": (folder, "is a folder, not a file"),
        "binary": (binary, r"is not UTF-8 text \(byte 0x92 on line 2\)"),
        "empty": (empty, "is empty"),
        "missing": (tmp_path / "nope.csv", "no hierarchy file at"),
    }


@pytest.mark.parametrize("case", ["folder", "binary", "empty", "missing"])
def test_text_file_errors_name_file_and_flag(bad_files, case):
    path, message = bad_files[case]
    kind = DatasetNotFoundError if case == "missing" else DataFormatError
    with pytest.raises(kind, match=message) as e:
        read_text_file(str(path), what="hierarchy", parameter="hierarchy")
    assert path.name in str(e.value) and cli_message(e.value).endswith("(--hierarchy FILE)")
    with pytest.raises(kind, match=path.name):
        Hierarchy.from_csv(str(path))


def test_json_errors_and_byte_order_mark(tmp_path):
    bad = tmp_path / "schema.json"
    bad.write_text('{"age": "int",}')
    with pytest.raises(DataFormatError, match=r"schema file .*schema\.json is not valid JSON: .*line 1") as e:
        load_schema(str(bad))
    assert cli_message(e.value).endswith("(--schema FILE)")
    folder = tmp_path / "schema_dir.json"
    folder.mkdir()
    with pytest.raises(DataFormatError, match=r"schema_dir\.json is a folder"):
        load_schema(str(folder))
    bom = tmp_path / "bom.json"
    bom.write_bytes('\ufeff{"a": 1}'.encode())
    assert read_json_file(str(bom), what="permissions") == {"a": 1}


def test_values_missing_from_a_hierarchy_file_name_the_file(tmp_path):
    path = tmp_path / "short.csv"
    path.write_text("a;*\nb;*\n")
    h = Hierarchy.from_csv(str(path), name="items")
    with pytest.raises(
        DataFormatError, match=r"2 value\(s\) have no path to the root of hierarchy 'items' \(.*short\.csv\): 'c', 'd'"
    ):
        h.generalize(["a", "c", "d"], 1)
