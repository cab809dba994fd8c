"""Crash- and race-safe commits (ppdm_dask.data.commit): exactly one of two racing writers
commits, a process killed between any two commit steps leaves the old or the new dataset
complete, ``--overwrite`` never deletes a folder that is not a ppdm dataset, and temporaries of
dead writers are hidden from readers and removed by the next writer."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow.dataset as pads
import pytest

from ppdm_dask.data import commit
from ppdm_dask.data.atomic import atomic_file
from ppdm_dask.data.parquet import read_parquet, write_parquet
from ppdm_dask.data.transactions import TransactionArray
from ppdm_dask.errors import DatasetExistsError

REPO = Path(__file__).resolve().parents[2]


def _tx(n: int, seed: int) -> TransactionArray:
    rng = np.random.default_rng(seed)
    rows = [sorted(set(rng.integers(0, 30, size=rng.integers(1, 8)).tolist())) for _ in range(n)]
    return TransactionArray.from_lists(rows, npartitions=3)


def _rows(url) -> list[list[int]]:
    tx = read_parquet(str(url))
    m = tx.to_scipy() if hasattr(tx, "to_scipy") else tx.blocks.compute()
    labels = tx.vocabulary.labels
    return [sorted(labels[m.indices[m.indptr[i] : m.indptr[i + 1]]].tolist()) for i in range(m.shape[0])]


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if "__ppdm_" in p.name)


# ---------------------------------------------------------------------- races
def test_a_destination_that_appears_during_the_job_is_not_replaced(tmp_path):
    """Two writers: the other one commits while this one is writing; this one must fail with
    "already exists" and leave the other's dataset intact (on main the later commit deleted it)."""
    dst = tmp_path / "out"
    other = _tx(40, 1)

    import ppdm_dask.data.parquet as P

    real = P.write_part
    calls = {"n": 0}

    def write_part(fs, path, table, **kw):
        if calls["n"] == 0:  # the first part of this job: the other job commits now
            calls["n"] += 1
            write_parquet(other, str(dst))
        return real(fs, path, table, **kw)

    P.write_part = write_part
    try:
        with pytest.raises(DatasetExistsError, match="already exists"):
            write_parquet(_tx(50, 2), str(dst))
    finally:
        P.write_part = real
    assert _rows(dst) == _rows_of(other)
    assert _leftovers(tmp_path) == []


def _rows_of(tx) -> list[list[int]]:
    m = tx.blocks.compute()
    labels = tx.vocabulary.labels
    return [sorted(labels[m.indices[m.indptr[i] : m.indptr[i + 1]]].tolist()) for i in range(m.shape[0])]


def test_two_concurrent_cli_writers_exactly_one_succeeds(tmp_path):
    """``ppdm generate quest`` twice at once into one path with different keys: one exits 0, the
    other exits 2 with "exists", and the dataset is the winner's, complete (3 trials)."""
    from ppdm_dask.random import Key

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for trial in range(3):
        dst = tmp_path / f"race{trial}"
        for i in range(2):
            Key.generate().to_file(tmp_path / f"k{trial}-{i}")
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "ppdm_dask.cli",
                    "--scheduler",
                    "threads",
                    "--no-progress",
                    "--json",
                    "--key-file",
                    str(tmp_path / f"k{trial}-{i}"),
                    "generate",
                    "quest",
                    "T10.I4.D20K.N1K",
                    str(dst),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for i in range(2)
        ]
        outs = [(p.wait(120), *p.communicate()) for p in procs]
        codes = sorted(o[0] for o in outs)
        assert codes == [0, 2], outs
        loser = next(o for o in outs if o[0] == 2)
        assert "exists" in loser[2] and loser[2].count("\n") == 1, loser[2]
        assert len(_rows(dst)) == 20_000
        assert _leftovers(tmp_path) == []
        assert json.loads(next(o for o in outs if o[0] == 0)[1])["n_transactions"] == 20_000


# ---------------------------------------------------------------------- crashes
CHILD = textwrap.dedent("""
    import os, sys
    import numpy as np
    from ppdm_dask.data import commit
    from ppdm_dask.data.parquet import write_parquet
    from ppdm_dask.data.transactions import TransactionArray
    step, mode, dst = sys.argv[1:4]
    if mode == "rename-aside":  # a system without an atomic exchange
        commit._renameat2 = lambda src, d, flags: False
    def die(name):
        if name == step:
            os._exit(9)
    commit._step = die
    rows = [[i % 7, 10 + i % 5] for i in range(90)]
    import dask
    with dask.config.set(scheduler="sync"):
        write_parquet(TransactionArray.from_lists(rows, npartitions=3), dst, overwrite=True)
""")


@pytest.mark.parametrize(
    "mode,step",
    [
        ("swap", "written"),
        ("swap", "swapped"),
        ("swap", "done"),
        ("rename-aside", "written"),
        ("rename-aside", "old-aside"),
        ("rename-aside", "committed"),
        ("rename-aside", "done"),
    ],
)
def test_killed_between_commit_steps_leaves_old_or_new_complete(tmp_path, mode, step):
    dst = tmp_path / "ds"
    old = _tx(60, 3)
    write_parquet(old, str(dst))
    new_rows = sorted(sorted([i % 7, 10 + i % 5]) for i in range(90))
    r = subprocess.run(
        [sys.executable, "-c", CHILD, step, mode, str(dst)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert r.returncode == 9, r.stderr  # killed at the step
    got = sorted(_rows(dst))  # readable: old or new, complete
    assert got in (sorted(_rows_of(old)), new_rows), (mode, step)
    if step in ("swapped", "committed", "done"):
        assert got == new_rows
    else:
        assert got == sorted(_rows_of(old))
    # the next writer removes the dead writer's temporaries
    write_parquet(_tx(10, 4), str(dst), overwrite=True)
    assert _leftovers(tmp_path) == []


# ---------------------------------------------------------------------- foreign folders
def test_overwrite_never_deletes_a_folder_that_is_not_a_ppdm_dataset(tmp_path):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("do not delete")
    with pytest.raises(DatasetExistsError, match="not a ppdm dataset"):
        write_parquet(_tx(10, 1), str(foreign), overwrite=True)
    assert (foreign / "precious.txt").read_text() == "do not delete"
    # a ppdm dataset holding a file of the user's is not replaced either
    ds = tmp_path / "ds"
    write_parquet(_tx(10, 1), str(ds))
    (ds / "notes.txt").write_text("mine")
    with pytest.raises(DatasetExistsError, match="notes.txt"):
        write_parquet(_tx(10, 2), str(ds), overwrite=True)
    assert (ds / "notes.txt").exists()
    # a plain ppdm dataset is replaced; a file in the way of a folder is refused
    (ds / "notes.txt").unlink()
    write_parquet(_tx(12, 2), str(ds), overwrite=True)
    assert len(_rows(ds)) == 12
    f = tmp_path / "afile"
    f.write_text("x")
    with pytest.raises(DatasetExistsError, match="is a file"):
        write_parquet(_tx(10, 1), str(f), overwrite=True)
    assert f.read_text() == "x"


def test_cli_overwrite_refuses_a_foreign_folder_before_any_work(tmp_path):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("do not delete")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ppdm_dask.cli",
            "--scheduler",
            "threads",
            "--no-progress",
            "generate",
            "quest",
            "T10.I4.D2K.N100",
            str(foreign),
            "--overwrite",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert r.returncode == 2 and "precious.txt" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert (foreign / "precious.txt").read_text() == "do not delete"
    assert _leftovers(tmp_path) == []


def test_a_file_write_never_replaces_a_folder(tmp_path):
    d = tmp_path / "rules.csv"
    d.mkdir()
    (d / "x").write_text("keep")
    with pytest.raises(DatasetExistsError, match="folder"):
        with atomic_file(str(d), overwrite=True, mode="w") as fh:
            fh.write("new")
    assert (d / "x").read_text() == "keep"


def test_single_file_commit_is_no_replace(tmp_path):
    """A file that appears while the write is under way is kept, the write fails."""
    dst = tmp_path / "out.txt"
    with pytest.raises(DatasetExistsError, match="already exists"):
        with atomic_file(str(dst), mode="w") as fh:
            fh.write("mine")
            dst.write_text("theirs")
    assert dst.read_text() == "theirs"
    assert _leftovers(tmp_path) == []


# ---------------------------------------------------------------------- stale temporaries
def test_temporaries_are_hidden_and_dead_writers_cleaned(tmp_path):
    dst = tmp_path / "ds"
    pid = _dead_pid()
    stale = tmp_path / f".ds.__ppdm_tmp-{commit._host_tag()}-{pid}-abcd1234"
    write_parquet(_tx(30, 1), str(stale))  # a dead writer's half-written output (here even complete)
    alive = tmp_path / f".ds.__ppdm_tmp-{commit._host_tag()}-{os.getppid()}-abcd1234"
    alive.mkdir()
    other_host = tmp_path / f".ds.__ppdm_tmp-00000000-{pid}-abcd1234"
    other_host.mkdir()
    # hidden: a glob of the destination and a dataset scan of the parent do not see them
    assert glob.glob(str(tmp_path / "ds*")) == []
    assert pads.dataset(str(tmp_path), format="parquet").files == []
    write_parquet(_tx(20, 2), str(dst))
    assert not stale.exists()  # dead writer on this host: removed
    assert alive.exists() and other_host.exists()  # a live writer, a writer elsewhere: kept
    assert len(_rows(dst)) == 20


def test_tmp_names_carry_the_owner(tmp_path):
    name = os.path.basename(commit.temp_sibling(str(tmp_path / "x")))
    assert name.startswith(".x.__ppdm_tmp-") and f"-{os.getpid()}-" in name
    assert not commit._owner_dead(name)
    assert commit._owner_dead(name.replace(f"-{os.getpid()}-", f"-{_dead_pid()}-"))


def test_manifest_is_inside_the_temporary_before_the_commit(tmp_path, monkeypatch):
    """The commit moves a folder that already holds its manifest: the destination never exists
    without ``_SUCCESS``."""
    seen = {}

    def spy(name):
        if name == "written":
            tmps = glob.glob(str(tmp_path / ".ds.__ppdm_tmp-*"))
            seen["tmp"] = json.loads(Path(tmps[0], "_SUCCESS").read_text())["format"]
            seen["dst"] = (tmp_path / "ds").exists()

    monkeypatch.setattr(commit, "_step", spy)
    write_parquet(_tx(10, 1), str(tmp_path / "ds"))
    assert seen == {"tmp": "ppdm-transactions", "dst": False}


def test_a_read_only_destination_is_one_clear_error(tmp_path, monkeypatch):
    """On main a read-only location surfaced as a raw ``OSError: Read-only file system``."""
    import errno

    import fsspec.implementations.local as local

    from ppdm_dask.errors import OutputNotWritableError

    def read_only(self, path, exist_ok=False):
        raise OSError(errno.EROFS, "Read-only file system", path)

    monkeypatch.setattr(local.LocalFileSystem, "makedirs", read_only)
    with pytest.raises(OutputNotWritableError, match="cannot write .*ds: Read-only file system"):
        write_parquet(_tx(10, 1), str(tmp_path / "ro" / "ds"))
    with pytest.raises(OutputNotWritableError, match="Read-only file system"):
        with atomic_file(str(tmp_path / "ro" / "x.txt"), mode="w") as fh:
            fh.write("x")
