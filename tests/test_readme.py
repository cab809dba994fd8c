"""The README's examples run as pasted: the code blocks of the sections listed here are run in
order, in one fresh folder, as a user would paste them (shell blocks with bash, Python blocks
with the interpreter of this environment). Blocks are extracted with pytest-codeblocks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_codeblocks import extract_from_file

README = Path(__file__).resolve().parents[1] / "README.md"
#: sections whose every example is run
SECTIONS = ["## Releases: safe by default, checkable from the files"]


def _section_blocks(title: str) -> list:
    lines = README.read_text().splitlines()
    start = lines.index(title) + 1
    end = next((i + 1 for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines) + 1)
    return [b for b in extract_from_file(README) if start < b.lineno < end and b.syntax in ("bash", "sh", "python")]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    bindir = os.path.dirname(sys.executable)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["PPDM_SCHEDULER"] = "threads"  # the same commands, without a process cluster per command
    return env


def _run_section(title: str, folder: Path) -> str:
    """Run every block of the section in order in ``folder``; the output of them all."""
    blocks = _section_blocks(title)
    assert blocks, f"no code blocks under {title!r}"
    outputs = []
    for block in blocks:
        if block.syntax == "python":
            cmd = [sys.executable, "-c", block.code]
        else:
            cmd = ["bash", "-e", "-o", "pipefail", "-c", block.code]
        r = subprocess.run(cmd, cwd=folder, env=_env(), capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"README line {block.lineno} failed:\n{block.code}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
        outputs.append(r.stdout + r.stderr)
    return "\n".join(outputs)


def test_release_section_runs_as_pasted_and_shows_what_it_claims(tmp_path):
    text = _run_section(SECTIONS[0], tmp_path)
    assert "have no role: name, zip, age, sex, diagnosis" in text and "refused: no roles given" in text
    assert "Verdict(ok=True" in text and "\nTrue\n" in text
    assert "verification failed, as it should" in text and "FAILED file matches the manifest in part-00000.parquet" in text
    # no name of the input in the Python release (values read back, not just bytes: Parquet compresses)
    import pyarrow.parquet as pq

    names = {line.split(",")[0] for line in (tmp_path / "people.csv").read_text().splitlines()[1:]}
    values = {str(v) for part in (tmp_path / "people_release").glob("part-*.parquet")
              for col in pq.read_table(part).to_pydict().values() for v in col}
    assert values and not (names & values)
