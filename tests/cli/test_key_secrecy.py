"""The secret key never leaves the key file: not in any output file, manifest, Parquet metadata
or value, nor in stdout / stderr / ``--json``, for every keyed job of the command line."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from ppdm_dask.cli import cli
from ppdm_dask.data.datasets import sample_path
from ppdm_dask.random import Key

# a key whose every spelling is long and distinctive
VALUE = 0x5EC2E7_0B5C_4D1E_9A7F_3C2B_1D0E_F00D
KEY = Key(VALUE)


def spellings(value: int) -> list[bytes]:
    raw_be, raw_le = value.to_bytes(16, "big"), value.to_bytes(16, "little")
    out = [f"{value:032x}", f"{value:032X}", f"{value:x}", str(value)]
    for raw in (raw_be, raw_le):
        for enc in (base64.b64encode, base64.urlsafe_b64encode, base64.b32encode):
            out.append(enc(raw).decode().rstrip("="))
        out.append(raw.hex())
    return sorted({s.encode() for s in out})


def _texts(path: Path) -> list[bytes]:
    """The raw bytes of a file, and for Parquet its metadata and every value as text."""
    out = [path.read_bytes()]
    if path.suffix == ".parquet":
        f = pq.ParquetFile(path)
        meta = f.schema_arrow.metadata or {}
        out += [k + b"=" + v for k, v in meta.items()]
        out.append(str(f.read().to_pylist()).encode())
    return out


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(0)
    pd.DataFrame({"x": rng.normal(size=400), "y": rng.normal(size=400), "level": rng.integers(2, 6, size=400)}).to_csv(
        d / "num.csv", index=False
    )
    return {
        "people": str(sample_path("people")),
        "mushroom": str(sample_path("mushroom")),
        "iris": str(sample_path("iris")),
        "bms": str(sample_path("bms-webview-1-5k")),
        "num": str(d / "num.csv"),
    }


JOBS = {
    "generate quest": ["generate", "quest", "T5.I2.D2K.N100", "{out}/q"],
    "emask distort": ["emask", "distort", "{mushroom}", "{out}/d", "--p", "0.5", "--q", "0.97", "--allow-weak"],
    "sketch delta": ["sketch", "{mushroom}", "{out}/s", "--delta", "0.5"],
    "sketch k-variance": ["sketch", "{iris}", "{out}/s", "--k", "3"],
    "condense": [
        "condense",
        "{num}",
        "{out}/c",
        "--columns",
        "x,y",
        "--privacy-column",
        "level",
        "--dtype",
        "x=float",
        "--dtype",
        "y=float",
        "--dtype",
        "level=int",
    ],
    "anonymize": [
        "anonymize",
        "{people}",
        "{out}/a",
        "--identifier",
        "name",
        "--qi",
        "age,sex,zip",
        "--sensitive",
        "diagnosis",
        "--k",
        "5",
        "--method",
        "mondrian",
        "--dtype",
        "age=int",
    ],
    "anonymize csv": [
        "anonymize",
        "{people}",
        "{out}/a.csv",
        "--identifier",
        "name",
        "--qi",
        "age,sex,zip",
        "--sensitive",
        "diagnosis",
        "--k",
        "5",
        "--method",
        "mondrian",
        "--dtype",
        "age=int",
    ],
    "km-anonymize": ["km-anonymize", "{bms}", "{out}/km", "--k", "5", "--m", "2", "--fan-out", "5"],
    "krimp generate": ["krimp", "generate", "{iris}", "{out}/g", "--min-count", "2"],
}


@pytest.mark.parametrize("job", sorted(JOBS))
def test_key_never_in_outputs(job, inputs, tmp_path):
    key_file = tmp_path / "secret.key"
    KEY.to_file(key_file)
    out = tmp_path / "out"
    out.mkdir()
    args = [a.format(out=out, **inputs) for a in JOBS[job]]
    runner = CliRunner()
    res = runner.invoke(cli, ["--scheduler", "sync", "--key-file", str(key_file), "--json", *args])
    assert res.exit_code == 0, (res.output, res.exception)
    summary = json.loads(res.stdout)  # --json output is one JSON document
    assert summary
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files, "the job wrote nothing"
    needles = spellings(VALUE)
    haystacks = [("stdout/--json", res.stdout.encode()), ("stderr", res.stderr.encode())]
    haystacks += [(str(p.relative_to(out)), t) for p in files for t in _texts(p)]
    for where, text in haystacks:
        for n in needles:
            assert n not in text, f"{job}: the key ({n!r}) appears in {where}"
    # the manifest carries the key's fingerprint salted by the release id: the key holder
    # recognises it, and it is not the fingerprint of any other release made with the key
    manifests = [p for p in files if p.name == "_SUCCESS" or p.name.endswith(".manifest.json")]
    if job != "generate quest":
        rel = json.loads(manifests[0].read_text())["release"]
        assert rel["key_fingerprint"] == KEY.fingerprint(bytes.fromhex(rel["id"])) != KEY.fingerprint()
        assert KEY.fingerprint().encode() not in manifests[0].read_bytes()
