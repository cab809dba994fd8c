"""How long the command line takes before any work: each row is a fresh Python process, timed
whole (interpreter start included), against ``python -c "import click"`` — the least a click
command line can take.

* ``import ppdm_dask``: the package's public names load on first use, so this loads no Dask
  collection, pandas, numba or scipy;
* ``ppdm --help``, ``ppdm --version``: the commands are listed from one table, none imported;
* a usage error (``ppdm mine x.dat --min-support`` with its value missing): only ``mine``'s module
  is imported;
* a missing input (``ppdm mine /no/such/file.dat --min-support 0.1`` on the default scheduler): the
  input is checked before any LocalCluster starts.

Best of 5 runs each (3 with ``--quick``); the ratios to the anchor are what to compare on a
shared machine. The rows run the ``ppdm`` console script of the environment (else ``python -m
ppdm_dask.cli``) on the package of this checkout (``PYTHONPATH``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the checkout whose package is timed


def _ppdm() -> list[str]:
    exe = Path(sys.executable).with_name("ppdm")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "ppdm_dask.cli"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PPDM_SCHEDULER"}  # the default scheduler: a LocalCluster
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def best_runs(cmds: list[tuple[list[str], int]], repeat: int) -> list[float]:
    """Best wall time of each command (run in a fresh process; exit status as given) over
    ``repeat`` rounds; the commands take turns within a round, so a burst of load on the shared
    machine falls on all of them."""
    best = [float("inf")] * len(cmds)
    for _ in range(repeat):
        for i, (cmd, expect) in enumerate(cmds):
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=600)
            elapsed = time.perf_counter() - t0
            if proc.returncode != expect:
                raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}, expected {expect}: {proc.stderr.strip()[-300:]}")
            best[i] = min(best[i], elapsed)
    return best


def run(quick: bool = False) -> list[dict]:
    repeat = 3 if quick else 5
    ppdm = _ppdm()
    anchor = [sys.executable, "-c", "import click"]
    cases = [
        ("python -c 'import ppdm_dask'", [sys.executable, "-c", "import ppdm_dask"], 0),
        ("ppdm --help", [*ppdm, "--help"], 0),
        ("ppdm --version", [*ppdm, "--version"], 0),
        ("ppdm mine x.dat --min-support (usage error)", [*ppdm, "mine", "x.dat", "--min-support"], 2),
        ("ppdm mine <missing input> (default scheduler)", [*ppdm, "mine", "/no/such/file.dat", "--min-support", "0.1"], 2),
    ]
    rows = []
    for name, cmd, code in cases:  # each row timed beside its own anchor runs
        load = os.getloadavg()[0]  # the machine is shared: the 1-minute load as the row starts, with the row
        ours, anchor_s = best_runs([(cmd, code), (anchor, 0)], repeat)
        rows.append(
            {
                "name": name,
                "ours_s": round(ours, 3),
                "anchor": "python -c 'import click'",
                "anchor_s": round(anchor_s, 3),
                "note": f"best of {repeat}, exit {code}; load {load:.1f}",
            }
        )
    return rows
