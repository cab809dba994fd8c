"""The README runs as written: every fenced ``python`` and ``bash`` block is run, top to bottom,
in one fresh temporary folder, as a user pastes them — shell blocks with bash, Python blocks with
the interpreter of this environment. A Python block marked ``<!--pytest-codeblocks:cont-->``
continues the previous Python block (they run as one script); a block marked
``<!--pytest.mark.skip(reason=...)-->`` is not run (only the install and test commands, which CI
itself runs). Blocks are extracted with pytest-codeblocks."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pytest_codeblocks import extract_from_file

pytestmark = pytest.mark.oldest  # also run on the oldest supported versions (.ci/run)

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks() -> list:
    return [b for b in extract_from_file(README) if b.syntax in ("bash", "sh", "python")]


def _skipped(block) -> bool:
    return any("skip" in str(m) for m in block.marks)


def _continues(block) -> bool:
    return any("cont" in str(m) for m in block.marks)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    bindir = os.path.dirname(sys.executable)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["PPDM_SCHEDULER"] = "threads"  # the same commands, without a process cluster per command
    env.pop("PPDM_SHARED_DATA", None)  # only bundled or generated data
    return env


def _groups() -> list[tuple[int, str, str]]:
    """``(line, syntax, code)`` to run: Python blocks merged with the blocks that continue them."""
    out: list[tuple[int, str, str]] = []
    for b in _blocks():
        if _skipped(b):
            continue
        if b.syntax == "python" and _continues(b):
            assert out and out[-1][1] == "python", f"README line {b.lineno}: a continued block follows no Python block"
            line, syntax, code = out.pop()
            out.append((line, syntax, code + "\n" + b.code))
        else:
            out.append((b.lineno, b.syntax, b.code))
    return out


def test_every_block_is_run_or_says_why_not():
    blocks = _blocks()
    skipped = [b for b in blocks if _skipped(b)]
    assert len(blocks) >= 25
    # only installing the package and running this test suite are not run here
    assert len(skipped) <= 3 and all(re.search(r"pip install|pytest", b.code) for b in skipped), [b.code for b in skipped]
    assert all("reason=" in str(m) for b in skipped for m in b.marks if "skip" in str(m))


@pytest.mark.slow  # five minutes on one worker: CI runs it in its slow pass and in the oldest-versions job
def test_readme_runs_as_pasted(tmp_path):
    outputs = []
    for line, syntax, code in _groups():
        cmd = [sys.executable, "-c", code] if syntax == "python" else ["bash", "-e", "-o", "pipefail", "-c", code]
        r = subprocess.run(cmd, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, (
            f"README line {line} failed:\n{code}\n--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-3000:]}"
        )
        outputs.append(r.stdout + r.stderr)
    text = "\n".join(outputs)
    # the releases section shows what it says
    assert "have no role: name, zip, age, sex, diagnosis" in text and "refused: no roles given" in text
    assert "verification failed, as it should" in text and "FAILED file matches the manifest in part-00000.parquet" in text
    names = {line.split(",")[0] for line in (tmp_path / "people.csv").read_text().splitlines()[1:]}
    values = {
        str(v)
        for part in (tmp_path / "people_release").glob("part-*.parquet")
        for col in pq.read_table(part).to_pydict().values()
        for v in col
    }
    assert values and not (names & values)
    # the event-log example: no user id in the baskets or in what the commands printed; the
    # itemsets in mlxtend's layout, the rules in SPMF's
    users = set(pq.read_table(tmp_path / "events_small.parquet").column("user").to_pylist())
    published = b"".join(p.read_bytes() for p in (tmp_path / "sessions").iterdir()) + text.encode()
    assert users and not [u for u in users if u.encode() in published]
    assert (tmp_path / "itemsets.csv").read_text().splitlines()[0] == "support,itemsets"
    assert "==>" in (tmp_path / "rules.txt").read_text() and (tmp_path / "sessions_for_partners.html").exists()
