"""The command line's core: one error line, exit codes, outputs refused before any work."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from ppdm_dask.data.datasets import sample_path


def ppdm(*args: str, cwd=None) -> subprocess.CompletedProcess:
    exe = os.path.join(os.path.dirname(sys.executable), "ppdm")
    cmd = [exe] if os.path.exists(exe) else [sys.executable, "-m", "ppdm_dask.cli"]
    return subprocess.run(
        cmd + ["--scheduler", "sync", "--no-progress", *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )


@pytest.mark.parametrize(
    "args,needle,code",
    [
        (["--nonsense"], "No such option:? '?--nonsense", 2),  # click 8.2.0 writes "No such option: --nonsense"
        (["info"], "Missing argument 'URL'", 2),
        (["mine", "x.dat"], "Missing option '--min-support'", 2),
        (["samples", "--copy", "nope"], "unknown sample 'nope'", 2),
        (["info", "/no/such/file.dat"], "/no/such/file.dat", 2),
    ],
)
def test_errors_are_one_line_with_an_exit_code(args, needle, code):
    r = ppdm(*args)
    assert r.returncode == code, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("ppdm: error: ") and re.search(needle, lines[0]), r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_success_exit_code_and_sample_copy(tmp_path):
    r = ppdm("samples", "--copy", "iris", "--to", str(tmp_path))
    assert r.returncode == 0 and (tmp_path / sample_path("iris").name).exists()


def test_existing_output_refused_before_any_work(tmp_path):
    out = tmp_path / "q"
    out.mkdir()
    r = ppdm("generate", "quest", "T10.I4.D2M.N1K", str(out))  # minutes of work if it started
    assert r.returncode == 2 and "already exists (--overwrite)" in r.stderr
    assert not any(out.iterdir())  # nothing written: the refusal came first


def test_a_refused_parameter_is_refused_before_the_scheduler_starts(monkeypatch):
    """``job(..., estimators=...)`` checks the declared parameters before ``Context.runtime``:
    the spy on the runtime sees nothing, and the error names the parameter."""
    from ppdm_dask.cli._core import Context, job
    from ppdm_dask.errors import InvalidParameter
    from ppdm_dask.sketch import DeltaAnonymizer

    started = []
    monkeypatch.setattr(Context, "runtime", lambda self: started.append(1))
    with pytest.raises(InvalidParameter) as e:
        with job(Context(), estimators=[DeltaAnonymizer(delta=-1.0)]):
            pass
    assert e.value.parameter == "delta" and started == []
    # control: valid parameters reach the runtime (the spy returns no context manager)
    with pytest.raises(TypeError):
        with job(Context(), estimators=[DeltaAnonymizer(delta=1.0)]):
            pass
    assert started == [1]
