"""How ``ppdm`` ends on bad input: one ``ppdm: error:`` line naming the file and the flag, exit
code 2, never an abort at interpreter exit, never a Dask worker's log on the user's stderr.

* A read that Arrow was still closing on its own threads when the interpreter finalized made
  the process abort ("terminate called without an active exception", status 134): the exit now
  waits for Arrow's thread pools (:func:`ppdm_dask.arrow_threads.settle_arrow_threads`).
* On the default LocalCluster the workers logged every failed task (7 to 9 lines) before the
  error line; some exceptions lost their message on the way to the client.
* A ``--key-file`` of random bytes, empty, a folder, unreadable or in a missing folder; an
  empty input file ("no file at" although it exists).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ppdm_dask.cli import main
from ppdm_dask.data.datasets import sample_path

IRIS = str(sample_path("iris"))
DISTORT = ["emask", "distort", IRIS, "{out}", "--p", "0.5", "--q", "0.97", "--allow-weak"]


def _ppdm_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "ppdm"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "ppdm_dask.cli"]


def _one_error_line(code: int, out: str, err: str, *needles: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("ppdm: error: "), err
    assert out == "", out
    assert "terminate called" not in err and "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(argv)
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


@pytest.fixture(scope="module")
def truncated_dataset(tmp_path_factory) -> Path:
    """A 4-part Parquet dataset whose part 2 is cut to 3,000 bytes, its manifest entry saying so
    (the listing check passes; only reading the part finds it)."""
    root = tmp_path_factory.mktemp("truncated")
    good = root / "good.parquet"
    with pytest.raises(SystemExit) as e:
        main(
            [
                "--scheduler",
                "sync",
                "--no-progress",
                "convert",
                str(sample_path("bms-webview-1-5k")),
                str(good),
                "--partitions",
                "4",
            ]
        )
    assert e.value.code in (0, None)
    bad = root / "bad.parquet"
    shutil.copytree(good, bad)
    part = bad / "part-00002.parquet"
    part.write_bytes(part.read_bytes()[:3000])
    manifest = json.loads((bad / "_SUCCESS").read_text())
    for entry in manifest["partitions"]:
        if entry["file"] == part.name:
            entry["bytes"] = 3000
    (bad / "_SUCCESS").write_text(json.dumps(manifest))
    return bad


# --------------------------------------------------------------------------- abort at exit


def test_exit_waits_for_a_read_arrow_is_still_running():
    """settle_arrow_threads returns only once Arrow's pools run no task: here a read whose
    Python file answers slowly, so its task is still on Arrow's I/O pool when the wait starts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ppdm_dask.arrow_threads import _arrow_task_counters, settle_arrow_threads

    counters = _arrow_task_counters()
    assert len(counters) == 2  # the CPU and the I/O pool, through libarrow's exported API

    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({"x": list(range(1000))}), buf)
    data = buf.getvalue().to_pybytes()

    class Slow:
        """A file object whose reads take 0.3 s each (Arrow calls it from its I/O threads)."""

        def __init__(self) -> None:
            self.pos, self.closed, self.mode = 0, False, "rb"

        def read(self, n=-1):
            time.sleep(0.3)
            out = data[self.pos :] if n is None or n < 0 else data[self.pos : self.pos + n]
            self.pos += len(out)
            return out

        def seek(self, pos, whence=0):
            self.pos = {0: pos, 1: self.pos + pos, 2: len(data) + pos}[whence]
            return self.pos

        def tell(self):
            return self.pos

        def seekable(self):
            return True

        def readable(self):
            return True

        def writable(self):
            return False

        def close(self):
            self.closed = True

    # Arrow's read of the dataset runs ReadAsync on its I/O pool: start it from another thread
    reader = threading.Thread(target=lambda: pq.read_table(Slow()))
    reader.start()
    deadline = time.monotonic() + 10
    while sum(c() for c in counters) == 0 and reader.is_alive() and time.monotonic() < deadline:
        time.sleep(0.001)
    busy = sum(c() for c in counters)
    start = time.monotonic()
    assert settle_arrow_threads(timeout=30)
    waited = time.monotonic() - start
    reader.join()
    assert sum(c() for c in counters) == 0
    if busy:  # the wait started while Arrow still ran the read
        assert waited > 0.05


def test_main_waits_for_arrow_at_exit(monkeypatch):
    """``main`` registers the wait for Arrow's threads as an exit handler, once per process."""
    import atexit

    from ppdm_dask import arrow_threads
    from ppdm_dask.arrow_threads import settle_arrow_threads

    called = []
    monkeypatch.setattr(arrow_threads, "register_exit_wait", lambda: called.append(True))
    with pytest.raises(SystemExit):
        main(["--scheduler", "sync", "--no-progress", "info", "/no/such/input.dat"])
    assert called == [True]
    monkeypatch.undo()

    registered = []
    monkeypatch.setattr(atexit, "register", lambda f, *a, **k: registered.append(f) or f)
    monkeypatch.setattr(arrow_threads, "_REGISTERED", [])
    arrow_threads.register_exit_wait()
    arrow_threads.register_exit_wait()
    assert registered == [settle_arrow_threads]


def test_importing_the_package_registers_the_wait_at_exit():
    """A script that only imports the library (no ``main``) waits for Arrow's threads at exit too."""
    code = "import ppdm_dask, ppdm_dask.arrow_threads as a; print(a._REGISTERED == [a.settle_arrow_threads])"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "True", r.stdout + r.stderr


def _ppdm(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(_ppdm_cmd() + list(args), capture_output=True, text=True, timeout=timeout)


def test_truncated_part_exits_2_never_aborts(truncated_dataset):
    """The reproduction of the abort: ``info`` of a dataset with a truncated part on the
    threads scheduler, in a few concurrent processes (it aborted in about 1 run of 10)."""
    argv = ["--scheduler", "threads", "--no-progress", "info", str(truncated_dataset)]
    with ThreadPoolExecutor(3) as pool:
        runs = list(pool.map(lambda _: _ppdm(*argv), range(9)))
    for r in runs:
        _one_error_line(r.returncode, r.stdout, r.stderr, "part-00002.parquet", "truncated")


# --------------------------------------------------------------------------- the LocalCluster


@pytest.mark.cluster
@pytest.mark.parametrize("case", ["truncated", "binary csv"])
def test_default_local_cluster_error_is_one_line(case, capfd, tmp_path, truncated_dataset):
    """On the default LocalCluster (no --scheduler) a task failing on a worker still gives one
    line: no "Compute Failed" report of the workers, no shutdown warnings, the message kept."""
    if case == "truncated":
        src, needles = str(truncated_dataset), ("part-00002.parquet", "truncated")
    else:
        src = str(tmp_path / "binary.csv")
        Path(src).write_bytes(b"a,b\n" + bytes(range(128, 256)) * 20 + b"\n")
        needles = ("binary.csv", "line 2", "UTF-8")
    with pytest.raises(SystemExit) as e:
        main(["--workers", "2", "--no-progress", "info", src])
    out, err = capfd.readouterr()
    _one_error_line(int(e.value.code or 0), out, err, *needles)


def test_quiet_task_errors_filter():
    """The worker plugin's filter drops only the workers' "Compute Failed" reports."""
    import logging

    from ppdm_dask.cluster import QuietTaskErrors, _not_a_task_failure

    def record(msg: str, level: int = logging.ERROR) -> logging.LogRecord:
        return logging.LogRecord("distributed.worker", level, __file__, 1, msg, (), None)

    assert not _not_a_task_failure(record("Compute Failed\nKey:       %s\n"))
    assert _not_a_task_failure(record("Unmanaged memory use is high", logging.WARNING))
    assert _not_a_task_failure(record("Worker is at 85% memory usage. Pausing worker.", logging.WARNING))
    plugin = pickle.loads(pickle.dumps(QuietTaskErrors()))  # travels to the workers
    logger = logging.getLogger("distributed.worker")
    plugin.setup(None)
    try:
        assert _not_a_task_failure in logger.filters
    finally:
        plugin.teardown(None)
    assert _not_a_task_failure not in logger.filters


def test_exception_message_survives_the_trip_from_a_worker(cluster_client):
    """A UnicodeDecodeError raised on a worker process keeps its message at the client."""
    import dask

    from ppdm_dask import progress

    def decode(data: bytes) -> str:
        return data.decode("utf-8")

    with pytest.raises(UnicodeDecodeError) as e:
        progress.compute(dask.delayed(decode)(b"ok \xc0 bad"), client=cluster_client)
    assert "can't decode byte 0xc0" in str(e.value)


def test_with_message_rebuilds_an_exception_tblib_emptied():
    import tblib.pickling_support

    from ppdm_dask.errors import with_message

    try:
        b"\xff".decode("utf-8")
    except UnicodeDecodeError as exc:
        original = exc
    tblib.pickling_support.install(original)  # what distributed does with a task's exception
    arrived = pickle.loads(pickle.dumps(original))
    assert type(arrived) is UnicodeDecodeError and str(arrived) == ""  # the loss
    fixed = with_message(arrived)
    assert type(fixed) is UnicodeDecodeError and str(fixed) == str(original)
    ok = ValueError("fine")
    assert with_message(ok) is ok


# --------------------------------------------------------------------------- --key-file


def _key_error(capsys, tmp_path, key: Path) -> str:
    argv = [
        "--scheduler",
        "sync",
        "--no-progress",
        "--key-file",
        str(key),
        *[a.format(out=str(tmp_path / "out")) for a in DISTORT],
    ]
    line = _one_error_line(*_run(capsys, argv), str(key), "--key-file")
    assert not (tmp_path / "out").exists()
    return line


def test_key_file_of_random_bytes(capsys, tmp_path):
    key = tmp_path / "random.key"
    key.write_bytes(os.urandom(40) + b"\xff\xfe")
    assert "binary data" in _key_error(capsys, tmp_path, key)


def test_key_file_empty(capsys, tmp_path):
    key = tmp_path / "empty.key"
    key.write_bytes(b"")
    assert "is empty" in _key_error(capsys, tmp_path, key)


def test_key_file_not_an_integer_or_too_large(capsys, tmp_path):
    key = tmp_path / "text.key"
    key.write_text("my secret\n")
    assert "does not hold an integer key" in _key_error(capsys, tmp_path, key)
    key.write_text(f"0x{2**130:x}\n")
    assert "128-bit" in _key_error(capsys, tmp_path, key)


def test_key_file_unreadable(capsys, tmp_path, monkeypatch):
    key = tmp_path / "locked.key"
    key.write_text("0x1234\n")
    import ppdm_dask.random as random_mod

    class Locked(type(Path())):
        def read_bytes(self):
            raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(random_mod, "Path", Locked)  # root reads any file: fake the refusal
    assert "cannot read key file" in _key_error(capsys, tmp_path, key)


def test_key_file_is_a_folder(capsys, tmp_path):
    folder = tmp_path / "keys"
    folder.mkdir()
    argv = [
        "--scheduler",
        "sync",
        "--no-progress",
        "--key-file",
        str(folder),
        *[a.format(out=str(tmp_path / "o")) for a in DISTORT],
    ]
    _one_error_line(*_run(capsys, argv), "--key-file", "keys")


def test_key_file_in_a_missing_folder(capsys, tmp_path):
    key = tmp_path / "no" / "such" / "dir" / "k"
    line = _key_error(capsys, tmp_path, key)
    assert "cannot create key file" in line


def test_key_file_from_library_names_the_file(tmp_path):
    from ppdm_dask.errors import InvalidParameter
    from ppdm_dask.random import Key

    key = tmp_path / "k"
    key.write_bytes(b"\x00\x9f\x92\x96")
    with pytest.raises(InvalidParameter, match="k holds binary data"):
        Key.from_file(key)
    with pytest.raises(InvalidParameter, match="no key file at"):
        Key.from_file(tmp_path / "missing")
    Key(7).to_file(key)
    assert Key.from_file(key) == Key(7)


def test_bad_key_file_is_refused_before_any_work(capsys, tmp_path):
    """The key file is read before the job's scheduler starts (no cluster for nothing)."""
    key = tmp_path / "random.key"
    key.write_bytes(b"\x80" * 16)
    _one_error_line(
        *_run(
            capsys,
            ["--workers", "1", "--no-progress", "--key-file", str(key), *[a.format(out=str(tmp_path / "out")) for a in DISTORT]],
        ),
        "--key-file",
    )
    from ppdm_dask.cluster import current_client

    assert current_client() is None


# --------------------------------------------------------------------------- empty input


@pytest.mark.parametrize("name", ["empty.dat", "empty.csv"])
def test_empty_input_file_is_said_to_be_empty(capsys, tmp_path, name):
    src = tmp_path / name
    src.write_bytes(b"")
    line = _one_error_line(*_run(capsys, ["--scheduler", "sync", "--no-progress", "info", str(src)]), str(src), "empty")
    assert "no file at" not in line


def test_binary_csv_names_the_file_and_line(capsys, tmp_path):
    src = tmp_path / "baskets.csv"
    src.write_bytes(b"milk,bread\n\xc0\xc1,eggs\n")
    _one_error_line(*_run(capsys, ["--scheduler", "threads", "--no-progress", "info", str(src)]), str(src), "line 2", "not UTF-8")


@pytest.mark.parametrize("name", ["folder.dat", "folder.csv"])
def test_folder_named_like_a_text_file(capsys, tmp_path, name):
    src = tmp_path / name
    src.mkdir()
    _one_error_line(*_run(capsys, ["--scheduler", "threads", "--no-progress", "info", str(src)]), str(src), "is a folder")
