"""Bad-input and fault corpus over every ``ppdm`` subcommand, with totals.

Builds a corpus of cases (subcommands x inputs x faults), runs each one as a subprocess
``ppdm --scheduler threads --no-progress ...`` (every 10th case on the default LocalCluster with
``--workers 2`` instead), and classifies it from its exit code, stderr and what exists afterwards:

* ``clear error``     exit 2, one ``ppdm: error: ...`` line naming the file/option at fault, no
                      Python exception name, nothing written at the output, no foreign file lost;
* ``worked``          exit 0 where success is right (checked with ``ppdm verify`` / ``ppdm info``
                      when a release / dataset is written);
* ``wrongly refused`` a clean one-line exit 2 on a case that should succeed (a valid control);
* ``silent wrong``    exit 0 where an error was expected, a foreign file deleted or altered, a
                      partial output or temporary folder left behind, or a written release that
                      fails ``ppdm verify``;
* ``raw message``     any other non-zero exit: exit 1, several lines, an exception class name,
                      or a message that lacks the expected needle (path basename / flag);
* ``abort``           exit 134, killed by a signal, or "terminate called";
* ``timeout``         the case ran past ``--timeout`` seconds (default 120);
* ``checkout broken`` ppdm itself did not import (ImportError / SyntaxError while others edit the
                      checkout): such cases are re-run once at the end, after a health check;
* ``skipped``         a fixture or setup step the case needs could not be built.

Expectations are ``error``, ``ok`` or ``either`` (a judgment call: exit 0 counts as worked, a
clean exit 2 as clear error).

Usage (from the repository root, venv active)::

    python benchmarks/bad_input_corpus.py --jobs 2 --json /tmp/corpus/baseline.json
    python benchmarks/bad_input_corpus.py --only "anonymize |" --limit 40
    python benchmarks/bad_input_corpus.py --list            # print the case names only

``--limit N`` takes N cases spread evenly over the (filtered) corpus, so a small run still
touches every subcommand. Work files go to ``--out DIR`` (default: a new temporary folder);
the folders of ``clear error`` / ``worked`` cases are removed unless ``--keep``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

E, OK, EITHER = "error", "ok", "either"
CATEGORIES = [
    "clear error",
    "worked",
    "wrongly refused",
    "silent wrong",
    "raw message",
    "abort",
    "timeout",
    "checkout broken",
    "skipped",
]
#: the package itself does not import (others editing the checkout): not a verdict on the case; re-run once at the end
BROKEN_RE = re.compile(r"\b(ImportError|ModuleNotFoundError|SyntaxError|IndentationError)\b")
GOOD = {"clear error", "worked"}
HUGE_INT = "1000000000000"
HUGE_FLOAT = "1e12"
VALUES = [("0", "0"), ("-1", "-1"), ("huge", None), ("nan", "nan"), ("text", "abc")]
RAW_RE = re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception)\b:|Traceback")
MEM_LIMIT_KB = 4 * 1024 * 1024  # address-space cap per ppdm process (a runaway "huge" case fails fast)
CLUSTER_EVERY = 10
TMP_MARK = ".__ppdm_tmp-"
ADULT_QI = "sex,age,race,marital-status,education,native-country,workclass,occupation"
PEOPLE_ROLES = ["--identifier", "name", "--qi", "age,sex,zip", "--sensitive", "diagnosis"]
BAD_COL = "nosuch_col"


class SkipCase(Exception):
    """A fixture or setup step the case needs is missing."""


# ============================================================================ cases
Setup = Callable[[Path, Path], None]  # setup(W: case folder, FX: fixtures folder)


@dataclass
class Case:
    name: str
    command: str
    argv: list[str]  # after the global options; "{W}" = case folder, "{FX}" = fixtures
    expect: str
    needles: tuple = ()  # each a str or a tuple of alternatives, searched in the stderr line
    setups: list = field(default_factory=list)
    globals: list = field(default_factory=list)
    out: str | None = None  # output path: nothing may be written there on error
    check: str | None = None  # "verify" | "info" | "exists": run on the output after exit 0
    guard: list = field(default_factory=list)  # paths whose files must survive unchanged
    readonly: str | None = None  # folder mounted read-only for the run
    group: str = ""
    cluster: bool = True  # may run on the default LocalCluster
    multi_line_ok: bool = False  # verify prints one "ppdm: error:" line per failed check (documented)
    output_on_error_ok: bool = False  # report writes its report even when the release fails its check (documented)
    index: int = 0


def _sub(text: str, W: Path, FX: Path) -> str:
    return text.replace("{W}", str(W)).replace("{FX}", str(FX))


# ------------------------------------------------------------------ setup helpers
def fx(FX: Path, name: str) -> Path:
    p = FX / name
    if not p.exists():
        raise SkipCase(f"fixture {name} was not built")
    return p


def copy_fx(name: str, rel: str | None = None) -> Setup:
    def setup(W: Path, FX: Path) -> None:
        src, dst = fx(FX, name), W / (rel or name)
        if dst.exists():
            return
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src, dst) if src.is_dir() else shutil.copy2(src, dst)

    return setup


def write_file(rel: str, data: bytes | str | Callable[[Path], bytes]) -> Setup:
    def setup(W: Path, FX: Path) -> None:
        p = W / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        d = data(FX) if callable(data) else data
        p.write_bytes(d.encode() if isinstance(d, str) else d)

    return setup


def make_dir(rel: str, files: dict[str, str] | None = None) -> Setup:
    def setup(W: Path, FX: Path) -> None:
        (W / rel).mkdir(parents=True, exist_ok=True)
        for n, t in (files or {}).items():
            (W / rel / n).write_text(t)

    return setup


def garbage(n: int = 4096, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(n)


def derived(name: str, fn: Callable[[bytes], bytes]) -> Callable[[Path], bytes]:
    return lambda FX: fn(fx(FX, name).read_bytes())


def folder_fault(name: str, rel: str, mutate: Callable[[Path, Path], None]) -> Setup:
    """Copy the ppdm folder fixture ``name`` to ``rel`` and damage it with ``mutate(folder, FX)``."""

    def setup(W: Path, FX: Path) -> None:
        dst = W / rel
        shutil.copytree(fx(FX, name), dst)
        mutate(dst, FX)

    return setup


def _parts(d: Path) -> list[Path]:
    parts = sorted(d.glob("part-*.parquet"))
    if not parts:
        raise SkipCase(f"{d.name} has no part files")
    return parts


def m_truncate(d: Path, FX: Path) -> None:
    p = _parts(d)[0]
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])


def m_flip(d: Path, FX: Path) -> None:
    p = _parts(d)[0]
    data = bytearray(p.read_bytes())
    mid = len(data) // 2
    for i in range(mid, min(mid + 16, len(data))):
        data[i] ^= 0x5A
    p.write_bytes(bytes(data))


def m_swap(other: str) -> Callable[[Path, Path], None]:
    def mutate(d: Path, FX: Path) -> None:
        mine = _parts(d)[-1]
        theirs = fx(FX, other) / mine.name
        if not theirs.exists():
            theirs = _parts(fx(FX, other))[-1]
        shutil.copy2(theirs, mine)

    return mutate


def m_manifest(edit: Callable[[dict], None]) -> Callable[[Path, Path], None]:
    def mutate(d: Path, FX: Path) -> None:
        m = json.loads((d / "_SUCCESS").read_text())
        edit(m)
        (d / "_SUCCESS").write_text(json.dumps(m, indent=1))

    return mutate


def _rows_part(m: dict) -> None:
    m["partitions"][0]["rows"] = int(m["partitions"][0]["rows"]) + 1


def _rows_total(m: dict) -> None:
    for k in ("n_transactions", "n_records", "n_rows"):
        if k in m:
            m[k] = int(m[k]) + 1
            return
    raise SkipCase("manifest has no total row count")


def m_success_dir(d: Path, FX: Path) -> None:
    (d / "_SUCCESS").unlink()
    (d / "_SUCCESS").mkdir()
    (d / "_SUCCESS" / "x").write_text("{}")


def m_success_text(text: str) -> Callable[[Path, Path], None]:
    return lambda d, FX: (d / "_SUCCESS").write_text(text)


def m_delete(which: str) -> Callable[[Path, Path], None]:
    def mutate(d: Path, FX: Path) -> None:
        target = _parts(d)[-1] if which == "last part" else d / which
        if not target.exists():
            raise SkipCase(f"{target.name} not in {d.name}")
        target.unlink()

    return mutate


def m_stray(d: Path, FX: Path) -> None:
    (d / "notes.txt").write_text("a stray file a user left here\n")


def m_tamper_k(m: dict) -> None:
    for sec in ("release", "summary"):
        if isinstance(m.get(sec), dict) and "k" in m[sec].get("parameters", {}):
            m[sec]["parameters"]["k"] = 50
    if "k" not in m.get("release", {}).get("parameters", {}):
        raise SkipCase("no k in the manifest")


def m_tamper_p(m: dict) -> None:
    for sec in ("release", "summary"):
        if isinstance(m.get(sec), dict) and "p" in m[sec].get("parameters", {}):
            m[sec]["parameters"]["p"] = 0.9
    if "p" not in m.get("release", {}).get("parameters", {}):
        raise SkipCase("no p in the manifest")


def run_ppdm_setup(argv: list[str]) -> Callable[[Path, Path], None]:
    def setup(W: Path, FX: Path) -> None:
        r = subprocess.run(
            [PPDM, "--scheduler", "threads", "--no-progress", *[_sub(a, W, FX) for a in argv]],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=W,
        )
        if r.returncode != 0:
            raise SkipCase(f"setup ppdm {' '.join(argv[:2])} failed: {(r.stderr.strip().splitlines() or [''])[-1]}")

    return setup


def convert_then_delete(rel: str) -> Setup:
    def setup(W: Path, FX: Path) -> None:
        run_ppdm_setup(["convert", str(fx(FX, "tx.dat")), str(W / rel), "--partitions", "3"])(W, FX)
        _parts(W / rel)[1].unlink()

    return setup


def text_lines(name: str, fn: Callable[[list[bytes]], list[bytes]]) -> Callable[[Path], bytes]:
    def make(FX: Path) -> bytes:
        lines = fx(FX, name).read_bytes().split(b"\n")
        return b"\n".join(fn(lines))

    return make


def set_line(i: int, new: bytes) -> Callable[[list[bytes]], list[bytes]]:
    def fn(lines: list[bytes]) -> list[bytes]:
        lines = list(lines)
        lines[i] = new
        return lines

    return fn


def csv_edit(
    sep: bytes,
    row: int,
    col: int | None = None,
    value: bytes | None = None,
    *,
    extra: bytes | None = None,
    drop_last: bool = False,
) -> Callable[[list[bytes]], list[bytes]]:
    def fn(lines: list[bytes]) -> list[bytes]:
        lines = list(lines)
        f = lines[row].split(sep)
        if col is not None:
            f[col] = value
        if extra is not None:
            f.append(extra)
        if drop_last:
            f = f[:-1]
        lines[row] = sep.join(f)
        return lines

    return fn


# ============================================================================ commands
@dataclass
class Cmd:
    argv: list[str]  # "{IN}", "{IN2}", "{PERM}" input slots, "{OUT}" output
    slots: dict[str, str]  # slot -> fixture name (copied into the case folder)
    out: str | None = None  # output name inside the case folder
    check: str | None = None
    key: bool = False  # takes the random key (--key-file faults apply)
    key_global: bool = False  # runs with --key-file {W}/key.txt


CMDS: dict[str, Cmd] = {
    "info": Cmd(["info", "{IN}"], {"IN": "tx_pq"}),
    "convert": Cmd(["convert", "{IN}", "{OUT}"], {"IN": "tx_pq"}, out="out_pq", check="info"),
    "mine": Cmd(
        ["mine", "{IN}", "--min-support", "0.2", "--out", "{OUT}"], {"IN": "tx_pq"}, out="itemsets.parquet", check="exists"
    ),
    "emask choose": Cmd(["emask", "choose", "--data", "{IN}"], {"IN": "tx_pq"}),
    "emask distort": Cmd(
        ["emask", "distort", "{IN}", "{OUT}", "--p", "0.5", "--q", "0.97", "--allow-weak"],
        {"IN": "tx_pq"},
        out="rel",
        check="verify",
        key=True,
    ),
    "emask mine": Cmd(
        ["emask", "mine", "{IN}", "--p", "0.5", "--q", "0.97", "--min-support", "0.2", "--out", "{OUT}"],
        {"IN": "emask_rel"},
        out="emined.parquet",
        check="exists",
    ),
    "emask audit": Cmd(
        ["emask", "audit", "{IN}", "{IN2}", "--min-support", "0.2"],
        {"IN": "tx_pq", "IN2": "emask_rel"},
        key=True,
        key_global=True,
    ),
    "sketch": Cmd(["sketch", "{IN}", "{OUT}", "--delta", "0.5"], {"IN": "tx_pq"}, out="rel", check="verify", key=True),
    "sketch evaluate": Cmd(["sketch", "evaluate", "{IN}", "--delta", "0.5", "--task", "cluster"], {"IN": "tx_pq"}),
    "condense": Cmd(
        ["condense", "{IN}", "{OUT}", "--columns", "mcg,gvh", "--privacy-level", "3"],
        {"IN": "ecoli.csv"},
        out="rel",
        check="verify",
        key=True,
    ),
    "anonymize": Cmd(
        ["anonymize", "{IN}", "{OUT}", *PEOPLE_ROLES, "--k", "5", "--method", "mondrian"],
        {"IN": "people.csv"},
        out="rel",
        check="verify",
        key=True,
    ),
    "access-control": Cmd(
        [
            "access-control",
            "{IN}",
            "--permissions",
            "{PERM}",
            "--qi",
            ADULT_QI,
            "--sensitive",
            "salary-class",
            "--dtype",
            "age=int",
            "--k",
            "10",
            "--out",
            "{OUT}",
        ],
        {"IN": "adult.csv", "PERM": "perms.json"},
        out="rel",
        check="verify",
        key=True,
    ),
    "km-anonymize": Cmd(
        ["km-anonymize", "{IN}", "{OUT}", "--k", "5", "--fan-out", "5"], {"IN": "tx_pq"}, out="rel", check="verify", key=True
    ),
    "krimp compress": Cmd(
        ["krimp", "compress", "{IN}", "--min-support", "0.02", "--out", "{OUT}"], {"IN": "tx_pq"}, out="ct.json", check="exists"
    ),
    "krimp generate": Cmd(
        ["krimp", "generate", "{IN}", "{OUT}", "--min-support", "0.02"], {"IN": "tx_pq"}, out="rel", check="verify", key=True
    ),
    "krimp ds": Cmd(["krimp", "ds", "{IN}", "{IN2}", "--min-support", "0.02"], {"IN": "tx_pq", "IN2": "tx.dat"}),
    "verify": Cmd(["verify", "{IN}"], {"IN": "emask_rel"}),
    "report": Cmd(["report", "{IN}", "--out", "{OUT}"], {"IN": "people_rel"}, out="rep", check="exists"),
    "generate quest": Cmd(["generate", "quest", "T5.I2.D500.N50", "{OUT}"], {}, out="quest", check="info", key=True),
}
#: click command paths of the subcommands (for option introspection)
CLICK_PATH = {"sketch": "sketch anonymize"}


def set_opt(argv: list[str], flag: str, value: str | None) -> list[str]:
    """Replace ``flag``'s value (or append ``flag value``); ``value=None`` appends a bare flag."""
    argv = list(argv)
    if flag in argv and value is not None:
        argv[argv.index(flag) + 1] = value
        return argv
    return argv + ([flag] if value is None else [flag, value])


def drop_opt(argv: list[str], flag: str, has_value: bool = True) -> list[str]:
    argv = list(argv)
    if flag in argv:
        i = argv.index(flag)
        del argv[i : i + (2 if has_value else 1)]
    return argv


class Builder:
    def __init__(self) -> None:
        self.cases: list[Case] = []
        self.names: set[str] = set()

    def add(
        self,
        command: str,
        group: str,
        detail: str,
        *,
        slot_over: dict[str, tuple[str, list]] | None = None,
        argv: list[str] | None = None,
        edit: Callable[[list[str]], list[str]] | None = None,
        expect: str,
        needles: tuple = (),
        setups: list | None = None,
        globals: list | None = None,
        out: str | None = "default",
        check: str | None = "default",
        guard: list | None = None,
        readonly: str | None = None,
        cluster: bool = True,
        key_global: bool | None = None,
    ) -> None:
        """One case of ``command``: its template argv with input slots filled by fixtures copied
        into the case folder, or by ``slot_over[slot] = (relpath, setups)`` (a fault)."""
        cmd = CMDS[command]
        name = f"{command} | {group} | {detail}"
        if name in self.names:
            raise ValueError(f"duplicate case name {name}")
        self.names.add(name)
        base = list(argv if argv is not None else cmd.argv)
        all_setups: list = []
        slot_over = slot_over or {}
        for slot, fixture in cmd.slots.items():
            token = "{" + slot + "}"
            if token not in base:
                continue
            if slot in slot_over:
                rel, s = slot_over[slot]
                all_setups.extend(s)
            else:
                rel = fixture
                all_setups.append(copy_fx(fixture))
            base = [a.replace(token, "{W}/" + rel) for a in base]
        out_rel = cmd.out if out == "default" else out
        if out_rel is not None:
            base = [a.replace("{OUT}", "{W}/" + out_rel) for a in base]
        if edit is not None:
            base = edit(base)
        g = list(globals or [])
        if (cmd.key_global if key_global is None else key_global) and not any(a == "--key-file" for a in g):
            g = ["--key-file", "{W}/key.txt"] + g
            all_setups.append(copy_fx("key.txt"))
        all_setups.extend(setups or [])
        out_path = ("{W}/" + out_rel) if out_rel is not None and any("{W}/" + out_rel in a for a in base) else None
        self.cases.append(
            Case(
                name=name,
                command=command,
                argv=base,
                expect=expect,
                needles=tuple(needles),
                setups=all_setups,
                globals=g,
                out=out_path,
                check=(cmd.check if check == "default" else check) if out_path else None,
                guard=list(guard or []),
                readonly=readonly,
                group=group,
                cluster=cluster,
                multi_line_ok=(command == "verify"),
                output_on_error_ok=(command == "report"),
            )
        )


# ============================================================================ the corpus
def tx_faults() -> list[tuple[str, str, list, str, tuple, list]]:
    """(detail, relpath, setups, expect, needles, extra globals) of faulty transaction inputs."""
    F: list = []

    def add(detail, rel, setups, expect=E, needles=None, g=None):
        F.append((detail, rel, setups, expect, needles if needles is not None else (Path(rel).name,), g or []))

    add("missing file", "nope_tx.dat", [])
    add("missing folder", "nope_tx_pq", [])
    add("empty file", "empty_tx.dat", [write_file("empty_tx.dat", b"")], EITHER)
    add("empty basket csv", "empty_tx.csv", [write_file("empty_tx.csv", b"")], EITHER)
    add("directory where a file is expected", "adir_tx.dat", [make_dir("adir_tx.dat")])
    add("empty folder", "adir_tx", [make_dir("adir_tx")])
    add("binary garbage .dat", "garbage_tx.dat", [write_file("garbage_tx.dat", garbage())])
    add("binary garbage, no extension", "garbage_tx", [write_file("garbage_tx", garbage(seed=8))])
    add("table folder (wrong format)", "people_tbl", [copy_fx("people_tbl")])
    add("table csv read as basket csv", "people_as_tx.csv", [copy_fx("people.csv", "people_as_tx.csv")], EITHER)
    add("fimi non-integer token", "badtok_tx.dat", [write_file("badtok_tx.dat", text_lines("tx.dat", set_line(4, b"1 2 x7 12")))])
    add("fimi negative item id", "neg_tx.dat", [write_file("neg_tx.dat", text_lines("tx.dat", set_line(4, b"1 -3 12")))])
    add("fimi float item id", "float_tx.dat", [write_file("float_tx.dat", text_lines("tx.dat", set_line(4, b"1 2.5 12")))])
    add(
        "fimi crlf line ends",
        "crlf_tx.dat",
        [write_file("crlf_tx.dat", derived("tx.dat", lambda b: b.replace(b"\n", b"\r\n")))],
        EITHER,
    )
    add(
        "fimi blank lines",
        "blank_tx.dat",
        [write_file("blank_tx.dat", derived("tx.dat", lambda b: b.replace(b"\n", b"\n\n", 5)))],
        EITHER,
    )
    add(
        "truncated gzip",
        "trunc_tx.dat.gz",
        [write_file("trunc_tx.dat.gz", derived("tx.dat", lambda b: gzip.compress(b)[: len(gzip.compress(b)) // 2]))],
    )
    add(
        "non-utf8 basket csv",
        "latin_tx.csv",
        [write_file("latin_tx.csv", derived("tx_str.csv", lambda b: b.replace(b"item7", b"caf\xe9", 3)))],
        EITHER,
    )
    add("truncated parquet part", "trunc_tx_pq", [folder_fault("tx_pq", "trunc_tx_pq", m_truncate)])
    add("bit-flipped part, same size", "flip_tx_pq", [folder_fault("tx_pq", "flip_tx_pq", m_flip)], EITHER)
    add(
        "bit-flipped part, --verify-input",
        "flipv_tx_pq",
        [folder_fault("tx_pq", "flipv_tx_pq", m_flip)],
        E,
        None,
        ["--verify-input"],
    )
    add("part swapped from another dataset", "swap_tx_pq", [folder_fault("tx_pq", "swap_tx_pq", m_swap("tx2_pq"))])
    add(
        "part swapped, --verify-input",
        "swapv_tx_pq",
        [folder_fault("tx_pq", "swapv_tx_pq", m_swap("tx2_pq"))],
        E,
        None,
        ["--verify-input"],
    )
    add("_SUCCESS part row count wrong", "rows_tx_pq", [folder_fault("tx_pq", "rows_tx_pq", m_manifest(_rows_part))])
    add("_SUCCESS total row count wrong", "total_tx_pq", [folder_fault("tx_pq", "total_tx_pq", m_manifest(_rows_total))])
    add("_SUCCESS is a directory", "sdir_tx_pq", [folder_fault("tx_pq", "sdir_tx_pq", m_success_dir)])
    add(
        "_SUCCESS invalid JSON",
        "sjson_tx_pq",
        [folder_fault("tx_pq", "sjson_tx_pq", m_success_text('{"format": "ppdm-transactions", "partitions": ['))],
    )
    add(
        "_SUCCESS unknown format",
        "sfmt_tx_pq",
        [folder_fault("tx_pq", "sfmt_tx_pq", m_manifest(lambda m: m.update(format="ppdm-nonsense")))],
    )
    add("_SUCCESS newer version", "sver_tx_pq", [folder_fault("tx_pq", "sver_tx_pq", m_manifest(lambda m: m.update(version=99)))])
    add("missing part", "mpart_tx_pq", [folder_fault("tx_pq", "mpart_tx_pq", m_delete("last part"))])
    add("missing vocabulary file", "mvoc_tx_pq", [folder_fault("tx_pq", "mvoc_tx_pq", m_delete("_vocabulary.parquet"))])
    add("no _SUCCESS (uncommitted)", "nosucc_tx_pq", [folder_fault("tx_pq", "nosucc_tx_pq", m_delete("_SUCCESS"))])
    add("stray extra file in the folder", "stray_tx_pq", [folder_fault("tx_pq", "stray_tx_pq", m_stray)], OK, ())
    add("ppdm convert then a part deleted", "conv_del_pq", [convert_then_delete("conv_del_pq")])
    return F


REDUCED_TX = {
    "missing file",
    "empty file",
    "directory where a file is expected",
    "binary garbage .dat",
    "table folder (wrong format)",
    "fimi non-integer token",
    "truncated parquet part",
    "part swapped from another dataset",
    "_SUCCESS part row count wrong",
    "_SUCCESS is a directory",
    "_SUCCESS invalid JSON",
    "missing part",
    "stray extra file in the folder",
    "ppdm convert then a part deleted",
}
MINIMAL_TX = {
    "missing file",
    "empty file",
    "binary garbage .dat",
    "table folder (wrong format)",
    "truncated parquet part",
    "missing part",
    "_SUCCESS invalid JSON",
    "stray extra file in the folder",
}


def table_faults(name: str, csv_fx: str, tbl_fx: str, sep: bytes, numeric_col: str, last_col: str, cmd_edit=None) -> list:
    """Faulty table inputs for a table command whose good input is ``csv_fx`` / ``tbl_fx``."""
    F: list = []

    def add(detail, rel, setups, expect=E, needles=None, g=None, edit=None):
        F.append((detail, rel, setups, expect, needles if needles is not None else (Path(rel).name,), g or [], edit))

    # the column index of numeric_col and of the first column, from the fixture's header (read at setup)
    def col_edit(value: bytes, col_name: str | None):
        def fn(lines):
            hdr = lines[0].split(sep)
            idx = hdr.index(col_name.encode()) if col_name else 0
            return csv_edit(sep, 5, idx, value)(lines)

        return fn

    add("missing csv", f"nope_{name}.csv", [])
    add("missing folder", f"nope_{name}_tbl", [])
    add("empty csv", f"empty_{name}.csv", [write_file(f"empty_{name}.csv", b"")])
    add(
        "header-only csv",
        f"hdr_{name}.csv",
        [write_file(f"hdr_{name}.csv", text_lines(csv_fx, lambda ls: ls[:1]))],
        EITHER,
        ((f"hdr_{name}.csv", "record", "rows", "empty"),),
    )
    add("directory where a file is expected", f"adir_{name}.csv", [make_dir(f"adir_{name}.csv")])
    add("binary garbage csv", f"garbage_{name}.csv", [write_file(f"garbage_{name}.csv", garbage(seed=11))])
    add("binary garbage parquet", f"garbage_{name}.parquet", [write_file(f"garbage_{name}.parquet", garbage(seed=12))])
    add("transaction folder (wrong format)", "tx_pq", [copy_fx("tx_pq")])
    add("fimi file (wrong format)", "tx.dat", [copy_fx("tx.dat")])
    add(
        "ragged csv: a row with an extra field",
        f"ragx_{name}.csv",
        [write_file(f"ragx_{name}.csv", text_lines(csv_fx, csv_edit(sep, 5, extra=b"surplus")))],
    )
    add(
        "ragged csv: a row with a field missing",
        f"ragm_{name}.csv",
        [write_file(f"ragm_{name}.csv", text_lines(csv_fx, csv_edit(sep, 5, drop_last=True)))],
        E,
        ((f"ragm_{name}.csv", last_col),),
    )
    add(
        "non-utf8 bytes in the csv",
        f"latin_{name}.csv",
        [write_file(f"latin_{name}.csv", text_lines(csv_fx, col_edit(b"Jos\xe9", None)))],
    )
    add(
        "duplicate column names",
        f"dup_{name}.csv",
        [
            write_file(
                f"dup_{name}.csv",
                text_lines(csv_fx, lambda ls: [sep.join([ls[0].split(sep)[1]] + ls[0].split(sep)[1:])] + ls[1:]),
            )
        ],
    )
    add(
        f"non-numeric value in {numeric_col}",
        f"badnum_{name}.csv",
        [write_file(f"badnum_{name}.csv", text_lines(csv_fx, col_edit(b"abc", numeric_col)))],
        E,
        (numeric_col,),
        edit=cmd_edit,
    )
    add("truncated parquet part", f"trunc_{name}_tbl", [folder_fault(tbl_fx, f"trunc_{name}_tbl", m_truncate)])
    add(
        "bit-flipped part, --verify-input",
        f"flipv_{name}_tbl",
        [folder_fault(tbl_fx, f"flipv_{name}_tbl", m_flip)],
        E,
        None,
        ["--verify-input"],
    )
    add("part swapped from another table", f"swap_{name}_tbl", [folder_fault(tbl_fx, f"swap_{name}_tbl", m_swap(tbl_fx + "_b"))])
    add("_SUCCESS part row count wrong", f"rows_{name}_tbl", [folder_fault(tbl_fx, f"rows_{name}_tbl", m_manifest(_rows_part))])
    add("_SUCCESS is a directory", f"sdir_{name}_tbl", [folder_fault(tbl_fx, f"sdir_{name}_tbl", m_success_dir)])
    add("_SUCCESS invalid JSON", f"sjson_{name}_tbl", [folder_fault(tbl_fx, f"sjson_{name}_tbl", m_success_text('{"format": '))])
    add("missing part", f"mpart_{name}_tbl", [folder_fault(tbl_fx, f"mpart_{name}_tbl", m_delete("last part"))])
    add(
        "no _SUCCESS (a plain Parquet folder)",
        f"nosucc_{name}_tbl",
        [folder_fault(tbl_fx, f"nosucc_{name}_tbl", m_delete("_SUCCESS"))],
        EITHER,
    )
    add("stray extra file in the folder", f"stray_{name}_tbl", [folder_fault(tbl_fx, f"stray_{name}_tbl", m_stray)], OK, ())
    return F


def release_faults(rel_fx: str, tag: str, tamper: Callable | None, tamper_expect: str) -> list:
    F: list = []

    def add(detail, rel, setups, expect=E, needles=None, g=None):
        F.append((detail, rel, setups, expect, needles if needles is not None else (Path(rel).name,), g or []))

    add("missing release", f"nope_{tag}", [])
    add("empty file", f"empty_{tag}", [write_file(f"empty_{tag}", b"")])
    add("empty folder", f"adir_{tag}", [make_dir(f"adir_{tag}")])
    add("binary garbage", f"garbage_{tag}", [write_file(f"garbage_{tag}", garbage(seed=21))])
    add("transaction dataset, not a release", "tx_pq", [copy_fx("tx_pq")])
    add("table csv, not a release", "people.csv", [copy_fx("people.csv")])
    add("truncated parquet part", f"trunc_{tag}", [folder_fault(rel_fx, f"trunc_{tag}", m_truncate)])
    add("bit-flipped part, same size", f"flip_{tag}", [folder_fault(rel_fx, f"flip_{tag}", m_flip)])
    add("part swapped from another release", f"swap_{tag}", [folder_fault(rel_fx, f"swap_{tag}", m_swap(rel_fx + "_b"))])
    add("_SUCCESS part row count wrong", f"rows_{tag}", [folder_fault(rel_fx, f"rows_{tag}", m_manifest(_rows_part))])
    add("_SUCCESS total row count wrong", f"total_{tag}", [folder_fault(rel_fx, f"total_{tag}", m_manifest(_rows_total))])
    add("_SUCCESS is a directory", f"sdir_{tag}", [folder_fault(rel_fx, f"sdir_{tag}", m_success_dir)])
    add("_SUCCESS invalid JSON", f"sjson_{tag}", [folder_fault(rel_fx, f"sjson_{tag}", m_success_text('{"format"'))])
    add("missing part", f"mpart_{tag}", [folder_fault(rel_fx, f"mpart_{tag}", m_delete("last part"))])
    add("stray extra file in the release", f"stray_{tag}", [folder_fault(rel_fx, f"stray_{tag}", m_stray)], EITHER, ())
    if tamper is not None:
        add(
            "manifest claims other parameters",
            f"tamper_{tag}",
            [folder_fault(rel_fx, f"tamper_{tag}", m_manifest(tamper))],
            tamper_expect,
            (),
        )
    return F


# ------------------------------------------------------------------ option specs
#: expectations for the values (0, -1, huge, nan, text) of a numeric option: E error, O ok, ? either
OPTION_EXPECT: dict[tuple[str, str], str] = {
    ("mine", "--min-confidence"): "OEEEE",
    ("convert", "--partitions"): "EE?EE",
    ("emask choose", "--s0"): "EEEEE",
    ("emask choose", "--min-support"): "EEEEE",
    ("emask choose", "--privacy-floor"): "O??EE",
    ("emask choose", "--q-min"): "O??EE",
    ("emask distort", "--p"): "?EEEE",
    ("emask distort", "--q"): "?EEEE",
    ("emask distort", "--privacy-floor"): "O??EE",
    ("emask mine", "--p"): "?EEEE",
    ("emask mine", "--q"): "?EEEE",
    ("emask mine", "--prune-margin"): "OEEEE",
    ("emask audit", "--p"): "?EEEE",
    ("emask audit", "--q"): "?EEEE",
    ("sketch", "--delta"): "EE?EE",
    ("sketch", "--k"): "EEEEE",
    ("sketch evaluate", "--delta"): "EE?EE",
    ("sketch evaluate", "--k"): "EEEEE",
    ("sketch evaluate", "--neighbors"): "EE?EE",
    # a cap far above every record's need: ignoring it or refusing it (more than a sketch block holds) are both right
    ("sketch", "--m-max"): "EE?EE",
    ("sketch evaluate", "--m-max"): "EE?EE",
    ("sketch evaluate", "--clusters"): "EE?EE",
    ("condense", "--privacy-level"): "EEEEE",
    ("anonymize", "--k"): "EEEEE",
    ("anonymize", "--l"): "EEEEE",
    ("anonymize", "--c"): "EE?EE",
    ("anonymize", "--max-suppression"): "OEEEE",
    ("access-control", "--k"): "EEEEE",
    ("access-control", "--l"): "EEEEE",
    ("access-control", "--c"): "EE?EE",
    ("km-anonymize", "--k"): "EE?EE",
    ("km-anonymize", "--m"): "EE?EE",
    ("km-anonymize", "--fan-out"): "EE?EE",
    # laplace 0 generates only while every domain has an element with usage > 0: a clean refusal is right too
    ("krimp generate", "--laplace"): "?E?EE",
    ("krimp generate", "--rows"): "EE?EE",
}
#: the argv a numeric option needs to matter: edits applied before the value is set
OPTION_CONTEXT: dict[tuple[str, str], Callable[[list[str]], list[str]]] = {
    ("mine", "--min-confidence"): lambda a: set_opt(a, "--rules", None),
    ("emask choose", "--s0"): lambda a: drop_opt(a, "--data"),
    ("sketch", "--k"): lambda a: drop_opt(a, "--delta"),
    ("sketch evaluate", "--k"): lambda a: drop_opt(a, "--delta"),
    ("sketch evaluate", "--neighbors"): lambda a: [
        x.replace("{W}/tx_pq", "{W}/labeled_pq") for x in set_opt(a, "--task", "both")
    ],
    ("anonymize", "--l"): lambda a: a,
    ("anonymize", "--c"): lambda a: set_opt(set_opt(a, "--l", "2"), "--l-kind", "recursive"),
    ("access-control", "--c"): lambda a: set_opt(set_opt(a, "--l", "2"), "--l-kind", "recursive"),
    ("km-anonymize", "--fan-out"): lambda a: a,
    ("krimp compress", "--min-count"): lambda a: drop_opt(a, "--min-support"),
    ("krimp generate", "--min-count"): lambda a: drop_opt(a, "--min-support"),
    ("krimp ds", "--min-count"): lambda a: drop_opt(a, "--min-support"),
    ("mine", "--min-count"): lambda a: drop_opt(a, "--min-support"),
    ("emask mine", "--min-count"): lambda a: drop_opt(a, "--min-support"),
    ("emask audit", "--min-count"): lambda a: drop_opt(a, "--min-support"),
}
SKIP_OPTIONS = {"--workers"}
#: options shared by many commands are tried on a few of them only (the same parser)
SHARED_ON = {
    "--rows-per-file": {"emask distort", "anonymize", "krimp generate"},
    "--min-count": {"mine", "krimp compress", "emask audit"},
    "--max-candidates": {"mine", "krimp compress"},
}
EXTRA_OUTPUT_CASES_ON = {"convert", "mine", "emask distort", "condense", "anonymize", "krimp compress", "report"}
EXTRA_KEY_CASES_ON = {
    "emask distort",
    "anonymize",
    "generate quest",
}  # global: tested once on info (never "huge": it would start that many processes)
CAP_WORDS = ("--max-", "rows-per", "--m-max", "--target-bytes", "--partition-rows")


def numeric_options() -> dict[str, list[tuple[str, Any]]]:
    """command -> [(flag, click type)] of its numeric options, read from the click command tree
    (so options added or removed by others are followed); ``{}`` if the CLI does not import."""
    try:
        import click

        from ppdm_dask.cli import cli
    except Exception as exc:  # noqa: BLE001 - a checkout being edited: fall back to the static list
        print(f"warning: cannot introspect the CLI ({type(exc).__name__}: {exc}); using the static option list", file=sys.stderr)
        return {}
    out: dict[str, list] = {}
    for name in CMDS:
        node: Any = cli
        for part in CLICK_PATH.get(name, name).split():
            node = node.get_command(click.Context(node), part) if isinstance(node, click.Group) else None
            if node is None:
                break
        if node is None:
            continue
        opts = []
        for p in node.params:
            if not isinstance(p, click.Option) or p.is_flag or not p.opts[0].startswith("--"):
                continue
            t = p.type
            numeric = isinstance(t, (click.types.IntParamType, click.types.FloatParamType)) or type(t).__name__ in (
                "IntRange",
                "FloatRange",
                "IntParamType",
                "FloatParamType",
            )
            if numeric or p.opts[0] in ("--min-support",):
                opts.append((p.opts[0], t))
        out[name] = opts
    return out


STATIC_OPTIONS = {
    "convert": ["--partitions", "--target-bytes"],
    "mine": ["--min-support", "--max-length", "--max-itemsets", "--min-confidence"],
    "emask choose": ["--s0", "--min-support", "--privacy-floor", "--q-min"],
    "emask distort": ["--p", "--q", "--privacy-floor", "--rows-per-file"],
    "emask mine": ["--p", "--q", "--min-support", "--max-length", "--prune-margin"],
    "emask audit": ["--min-support", "--p", "--q"],
    "sketch": ["--delta", "--k", "--m-max", "--rows-per-file"],
    "sketch evaluate": ["--delta", "--k", "--m-max", "--neighbors", "--clusters"],
    "condense": ["--privacy-level", "--rows-per-partition", "--rows-per-file"],
    "anonymize": ["--k", "--l", "--c", "--max-suppression", "--rows-per-file"],
    "access-control": ["--k", "--l", "--c", "--rows-per-file"],
    "km-anonymize": ["--k", "--m", "--fan-out", "--rows-per-file"],
    "krimp compress": ["--min-support", "--max-len", "--max-candidates"],
    "krimp generate": ["--min-support", "--laplace", "--rows", "--max-len", "--max-candidates", "--rows-per-file"],
    "krimp ds": ["--min-support", "--max-candidates"],
    "generate quest": ["--partition-rows"],
}


def default_expect(flag: str, t: Any) -> str:
    """Expectations for (0, -1, huge, nan, text) from the option's click type."""
    tn = type(t).__name__ if t is not None else ""
    if flag in ("--min-support", "--min-count"):
        return "EEEEE"  # a fraction in (0, 1] / a count <= the transactions
    cap = any(w in flag for w in CAP_WORDS)
    if tn == "IntRange":
        lo, hi = getattr(t, "min", None), getattr(t, "max", None)
        zero = "E" if lo is not None and lo > 0 else "?"
        huge = "E" if hi is not None else ("O" if cap else "?")
        return f"{zero}E{huge}EE"
    if tn == "FloatRange":
        lo, hi = getattr(t, "min", None), getattr(t, "max", None)
        zero = "O" if (lo is None or lo < 0 or (lo == 0 and not getattr(t, "min_open", False))) else "E"
        huge = "E" if hi is not None else "?"
        return f"{zero}E{huge}EE"
    if tn in ("IntParamType",):
        return "?E?EE"
    return "?E?EE"


def value_for(label: str, raw: str | None, t: Any) -> str:
    if label != "huge":
        return raw
    tn = type(t).__name__ if t is not None else ""
    return HUGE_INT if tn in ("IntRange", "IntParamType") else HUGE_FLOAT


# ------------------------------------------------------------------ the whole corpus
def build_corpus(has_unshare: bool) -> list[Case]:
    b = Builder()
    code = {"E": E, "O": OK, "?": EITHER}

    # -------------------------------------------------- inputs: transactions
    full = ["info", "convert", "mine", "sketch"]
    reduced = [
        "emask distort",
        "km-anonymize",
        "krimp compress",
        "emask choose",
        "emask mine",
        "sketch evaluate",
        "krimp generate",
        "krimp ds",
        "emask audit",
    ]
    for detail, rel, setups, expect, needles, g in tx_faults():
        for command in full + reduced:
            if command in reduced and detail not in REDUCED_TX:
                continue
            b.add(command, "input", detail, slot_over={"IN": (rel, setups)}, expect=expect, needles=needles, globals=g)
        if detail in MINIMAL_TX:
            b.add("krimp ds", "input B", detail, slot_over={"IN2": (rel, setups)}, expect=expect, needles=needles, globals=g)

    # -------------------------------------------------- inputs: tables
    anon_num = lambda a: set_opt(a, "--dtype", "age=int")  # noqa: E731 - age typed so "abc" is an error
    for command, short, csv_fx, tbl_fx, sep, col, last, edit in [
        ("condense", "ecoli", "ecoli.csv", "ecoli_tbl", b",", "mcg", "class", None),
        ("anonymize", "people", "people.csv", "people_tbl", b",", "age", "diagnosis", anon_num),
        ("access-control", "adult", "adult.csv", "adult_tbl", b";", "age", "salary-class", None),
    ]:
        for detail, rel, setups, expect, needles, g, ed in table_faults(short, csv_fx, tbl_fx, sep, col, last, edit):
            b.add(command, "input", detail, slot_over={"IN": (rel, setups)}, expect=expect, needles=needles, globals=g, edit=ed)

    # -------------------------------------------------- inputs: releases (verify, report, emask mine/audit)
    rel_sets = {"emask_rel": ("emask", m_tamper_p, EITHER), "people_rel": ("anon", m_tamper_k, E)}
    inside = ("truncated", "bit-flipped", "swapped", "_SUCCESS", "missing part", "manifest claims")
    for rel_fx, (tag, tamper, texp) in rel_sets.items():
        for detail, rel, setups, expect, needles, g in release_faults(rel_fx, tag + "_rel", tamper, texp):
            if detail.startswith(inside) or any(w in detail for w in inside):
                # a failed check names the file or manifest field inside the release: that is precise enough
                needles = ((rel, "part-0", "_SUCCESS", "manifest"),) if needles else needles
            b.add(
                "verify",
                f"input {tag} release",
                detail,
                slot_over={"IN": (rel, setups)},
                expect=expect,
                needles=needles,
                globals=g,
            )
            b.add(
                "report",
                f"input {tag} release",
                detail,
                slot_over={"IN": (rel, setups)},
                expect=expect,
                needles=needles,
                globals=g,
            )
    for detail, rel, setups, expect, needles, g in release_faults("emask_rel", "dist_rel", None, E):
        if detail in (
            "missing release",
            "binary garbage",
            "truncated parquet part",
            "missing part",
            "_SUCCESS invalid JSON",
            "part swapped from another release",
            "stray extra file in the release",
        ):
            b.add(
                "emask audit",
                "input DISTORTED",
                detail,
                slot_over={"IN2": (rel, setups)},
                expect=expect,
                needles=needles,
                globals=g,
            )
            b.add(
                "emask mine",
                "input release",
                detail,
                slot_over={"IN": (rel, setups)},
                expect=expect,
                needles=needles,
                globals=g,
                edit=lambda a: drop_opt(drop_opt(a, "--p"), "--q"),
            )
    b.add(
        "verify",
        "input emask release",
        "bit-flipped part with --no-checksums",
        slot_over={"IN": ("flipn_emask_rel", [folder_fault("emask_rel", "flipn_emask_rel", m_flip)])},
        expect=EITHER,
        needles=("flipn_emask_rel",),
        edit=lambda a: a + ["--no-checksums"],
    )
    b.add(
        "report",
        "conflict",
        "no --out on a release that has its report",
        edit=lambda a: drop_opt(a, "--out"),
        expect=E,
        needles=(("--overwrite", "already exists"),),
        out=None,
    )

    # -------------------------------------------------- side files: permissions, schema, hierarchies, --original
    perm_ok = lambda FX: fx(FX, "perms.json").read_bytes()  # noqa: E731

    def perms_with(fn):
        def make(FX):
            d = json.loads(perm_ok(FX))
            fn(d)
            return json.dumps(d).encode()

        return make

    for detail, rel, data, exp, needles in [
        ("missing permissions file", "nope_perms.json", None, E, None),
        ("empty permissions file", "empty_perms.json", b"", E, None),
        ("permissions is a directory", "adir_perms.json", "DIR", E, None),
        ("binary garbage permissions", "garbage_perms.json", garbage(seed=31), E, None),
        ("invalid JSON permissions", "badjson_perms.json", b'{"permissions": [', E, None),
        ("permissions JSON of the wrong shape", "shape_perms.json", b"[1, 2, 3]", E, None),
        (
            "permission on an unknown attribute",
            "col_perms.json",
            perms_with(lambda d: d["permissions"][0].update(where={BAD_COL: [1, 2]})),
            E,
            (BAD_COL,),
        ),
        (
            "permission bound is text",
            "bound_perms.json",
            perms_with(lambda d: d["permissions"][0].update(bound="lots")),
            E,
            (("bound", "bound_perms.json"),),
        ),
        (
            "permission without a role",
            "role_perms.json",
            perms_with(lambda d: d["permissions"][0].pop("role")),
            E,
            (("role", "role_perms.json"),),
        ),
        (
            "permission range reversed",
            "rev_perms.json",
            perms_with(lambda d: d["permissions"][0].update(where={"age": [25, 17]})),
            EITHER,
            (("age", "rev_perms.json"),),
        ),
    ]:
        setups = [] if data is None else [make_dir(rel)] if data == "DIR" else [write_file(rel, data)]
        b.add("access-control", "permissions", detail, slot_over={"PERM": (rel, setups)}, expect=exp, needles=needles or (rel,))
    schema_cases = [
        ("missing schema file", "nope_schema.json", None, (("nope_schema.json",),)),
        ("schema is a directory", "adir_schema.json", "DIR", ("adir_schema.json",)),
        ("invalid JSON schema", "bad_schema.json", b'{"age": ', ("bad_schema.json",)),
        ("schema names an unknown column", "col_schema.json", json.dumps({BAD_COL: "int"}).encode(), (BAD_COL,)),
        ("schema with an unknown type", "type_schema.json", json.dumps({"age": "complex"}).encode(), ("complex",)),
    ]
    for detail, rel, data, needles in schema_cases:
        setups = [] if data is None else [make_dir(rel)] if data == "DIR" else [write_file(rel, data)]
        b.add(
            "anonymize",
            "schema",
            detail,
            setups=setups,
            edit=lambda a, r=rel: a + ["--schema", "{W}/" + r],
            expect=E,
            needles=needles,
        )
    zip_h = lambda FX: b"\n".join(fx(FX, "people_hierarchy_zip.csv").read_bytes().split(b"\n")[:3])  # noqa: E731
    for detail, rel, data in [
        ("missing hierarchy file", "nope_h.csv", None),
        ("empty hierarchy file", "empty_h.csv", b""),
        ("hierarchy is a directory", "adir_h.csv", "DIR"),
        ("binary garbage hierarchy", "garbage_h.csv", garbage(seed=41)),
        ("hierarchy missing most values", "short_h.csv", zip_h),
    ]:
        setups = [] if data is None else [make_dir(rel)] if data == "DIR" else [write_file(rel, data)]
        b.add(
            "anonymize",
            "hierarchy",
            detail,
            setups=setups,
            edit=lambda a, r=rel: a + ["--hierarchy", "zip={W}/" + r],
            expect=E,
            needles=((rel, "zip"),),
        )
    km_h_short = lambda FX: b"\n".join(fx(FX, "km_h.csv").read_bytes().split(b"\n")[:6])  # noqa: E731
    for detail, rel, data in [
        ("missing hierarchy file", "nope_kh.csv", None),
        ("empty hierarchy file", "empty_kh.csv", b""),
        ("hierarchy is a directory", "adir_kh.csv", "DIR"),
        ("binary garbage hierarchy", "garbage_kh.csv", garbage(seed=42)),
        ("hierarchy missing most items", "short_kh.csv", km_h_short),
    ]:
        setups = [] if data is None else [make_dir(rel)] if data == "DIR" else [write_file(rel, data)]
        b.add(
            "km-anonymize",
            "hierarchy",
            detail,
            setups=setups,
            edit=lambda a, r=rel: drop_opt(a, "--fan-out") + ["--hierarchy", "{W}/" + r],
            expect=E,
            needles=(rel,),
        )
    b.add(
        "anonymize",
        "hierarchy",
        "--hierarchies names a missing folder",
        edit=lambda a: a + ["--hierarchies", "{W}/nope_hdir"],
        expect=E,
        needles=("nope_hdir",),
    )
    b.add(
        "anonymize",
        "hierarchy",
        "--hierarchies names a file",
        setups=[write_file("file_hdir", "x")],
        edit=lambda a: a + ["--hierarchies", "{W}/file_hdir"],
        expect=E,
        needles=("file_hdir",),
    )
    b.add(
        "anonymize",
        "hierarchy",
        "interval spec is malformed",
        edit=lambda a: a + ["--hierarchy", "age=interval:0:x:10"],
        expect=E,
        needles=(("--hierarchy", "age"),),
    )
    b.add(
        "anonymize",
        "hierarchy",
        "interval of width 0",
        edit=lambda a: a + ["--dtype", "age=int", "--hierarchy", "age=interval:0:100:0"],
        expect=E,
        needles=(("--hierarchy", "age", "width"),),
    )
    for command, rel_fx, detail, orig, setups, exp, needles in [
        ("verify", "emask_rel", "--original is missing", "{W}/nope_orig.dat", [], E, ("nope_orig.dat",)),
        ("verify", "emask_rel", "--original is another dataset", "{W}/tx2_pq", [copy_fx("tx2_pq")], E, (("original", "tx2_pq"),)),
        (
            "verify",
            "emask_rel",
            "--original is binary garbage",
            "{W}/garbage_orig.dat",
            [write_file("garbage_orig.dat", garbage(seed=51))],
            E,
            ("garbage_orig.dat",),
        ),
        (
            "verify",
            "people_rel",
            "--original is another table",
            "{W}/people_b.csv",
            [copy_fx("people_b.csv")],
            E,
            (("original", "people_b.csv"),),
        ),
        ("report", "people_rel", "--original is missing", "{W}/nope_orig.csv", [], E, ("nope_orig.csv",)),
        ("report", "people_rel", "--original is a transaction dataset", "{W}/tx_pq", [copy_fx("tx_pq")], E, ("tx_pq",)),
    ]:
        b.add(
            command,
            "original",
            detail,
            slot_over={"IN": (rel_fx, [copy_fx(rel_fx)])},
            setups=setups,
            edit=lambda a, o=orig: a + ["--original", o],
            expect=exp,
            needles=needles,
        )

    # -------------------------------------------------- key files
    key_faults = [
        ("random bytes", "key_rand.bin", garbage(32, seed=61)),
        ("empty", "key_empty.txt", b""),
        ("a directory", "key_dir", "DIR"),
        ("text, not a key", "key_text.txt", b"my secret passphrase\n"),
        ("in a missing folder", "nodir/key.txt", None),
    ]
    for command, cmd in CMDS.items():
        if not cmd.key:
            continue
        for detail, rel, data in key_faults:
            if detail in ("text, not a key", "in a missing folder") and command not in EXTRA_KEY_CASES_ON:
                continue
            setups = [] if data is None else [make_dir(rel)] if data == "DIR" else [write_file(rel, data)]
            b.add(
                command,
                "key file",
                f"--key-file {detail}",
                setups=setups,
                globals=["--key-file", "{W}/" + rel],
                expect=E,
                needles=((Path(rel).name, "--key-file"),),
                key_global=False,
            )

    # -------------------------------------------------- numeric options: 0, -1, huge, nan, text
    found = numeric_options()
    for command in CMDS:
        if found:
            opts = found.get(command, [])
        else:
            opts = [(f, None) for f in STATIC_OPTIONS.get(command, [])]
        for flag, t in opts:
            if flag in SKIP_OPTIONS or (flag in SHARED_ON and command not in SHARED_ON[flag]):
                continue
            exp = OPTION_EXPECT.get((command, flag)) or default_expect(flag, t)
            ctx = OPTION_CONTEXT.get((command, flag), lambda a: a)
            extra = [copy_fx("labeled_pq")] if (command, flag) == ("sketch evaluate", "--neighbors") else []
            for (label, raw), e in zip(VALUES, exp):
                value = value_for(label, raw, t)
                b.add(
                    command,
                    "option",
                    f"{flag} {label} ({value})",
                    edit=lambda a, f=flag, v=value, c=ctx: set_opt(c(a), f, v),
                    expect=code[e],
                    needles=(flag,),
                    setups=extra,
                )
    for label, spec, e, field_ in [
        ("T0", "T0.I2.D500.N50", E, "T"),
        ("T-1", "T-1.I2.D500.N50", E, "T"),
        ("D huge", "T5.I2.D1000000000000.N50", EITHER, "D"),
        ("Tnan", "Tnan.I2.D500.N50", E, "T"),
        ("text", "abc", E, "abc"),
        ("I > T", "T2.I9.D500.N50", EITHER, "I"),
        ("N0", "T5.I2.D500.N0", E, "N"),
    ]:
        # the spec itself, or the field at fault ("T (average transaction size) must be ...")
        b.add(
            "generate quest",
            "option",
            f"SPEC {label} ({spec})",
            edit=lambda a, s=spec: [s if x == "T5.I2.D500.N50" else x for x in a],
            expect=e,
            needles=((spec, f"{field_} (", f"{field_}="),),
        )
    for label, spec in [
        ("0:3", "0:3"),
        ("-1:3", "-1:3"),
        ("3:huge", "3:1000000000000"),
        ("nan:3", "nan:3"),
        ("text", "abc"),
        ("reversed 5:2", "5:2"),
        ("empty", ""),
    ]:
        b.add(
            "condense",
            "option",
            f"--privacy-range {label}",
            edit=lambda a, s=spec: set_opt(drop_opt(a, "--privacy-level"), "--privacy-range", s),
            expect=E,
            needles=("--privacy-range",),
        )
    for label, value in [("0", "0"), ("-1", "-1"), ("nan", "nan"), ("text", "abc")]:
        b.add(
            "info",
            "global option",
            f"--workers {label}",
            globals=["--workers", value],
            expect=E,
            needles=("--workers",),
            cluster=False,
        )
    b.add(
        "info",
        "global option",
        "--scheduler unreachable address",
        globals=["--scheduler", "tcp://127.0.0.1:9"],
        expect=E,
        needles=(("127.0.0.1:9", "--scheduler"),),
        cluster=False,
    )
    b.add(
        "info",
        "global option",
        "--scheduler missing scheduler file",
        globals=["--scheduler", "{W}/nope_sched.json"],
        expect=E,
        needles=(("nope_sched.json", "--scheduler"),),
        cluster=False,
    )
    b.add(
        "info",
        "global option",
        "--scheduler garbage scheduler file",
        setups=[write_file("bad_sched.json", garbage(64, 71))],
        globals=["--scheduler", "{W}/bad_sched.json"],
        expect=E,
        needles=(("bad_sched.json", "--scheduler"),),
        cluster=False,
    )
    b.add(
        "info",
        "global option",
        "--storage-option without =",
        globals=["--storage-option", "novalue"],
        expect=E,
        needles=("--storage-option",),
    )
    b.add(
        "info",
        "global option",
        "--storage-option unknown key",
        globals=["--storage-option", "bogus_key=1"],
        expect=EITHER,
        needles=(("bogus_key", "--storage-option"),),
    )

    # -------------------------------------------------- unknown columns and conflicting options
    col = BAD_COL
    for command, detail, edit in [
        ("condense", "--columns names an unknown column", lambda a: set_opt(a, "--columns", f"mcg,{col}")),
        (
            "condense",
            "--privacy-column names an unknown column",
            lambda a: set_opt(drop_opt(a, "--privacy-level"), "--privacy-column", col),
        ),
        ("condense", "--dtype names an unknown column", lambda a: a + ["--dtype", f"{col}=int"]),
        ("anonymize", "--qi names an unknown column", lambda a: set_opt(a, "--qi", f"age,sex,zip,{col}")),
        ("anonymize", "--sensitive names an unknown column", lambda a: set_opt(a, "--sensitive", col)),
        ("anonymize", "--identifier names an unknown column", lambda a: set_opt(a, "--identifier", f"name,{col}")),
        ("anonymize", "--insensitive names an unknown column", lambda a: a + ["--insensitive", col]),
        ("anonymize", "--allow-unique names an unknown column", lambda a: a + ["--allow-unique", col]),
        ("anonymize", "--hierarchy for an unknown column", lambda a: a + ["--hierarchy", f"{col}=interval:0:100:10"]),
        ("anonymize", "--dtype names an unknown column", lambda a: a + ["--dtype", f"{col}=int"]),
        ("access-control", "--qi names an unknown column", lambda a: set_opt(a, "--qi", f"{ADULT_QI},{col}")),
        ("access-control", "--sensitive names an unknown column", lambda a: set_opt(a, "--sensitive", col)),
        ("access-control", "--dtype names an unknown column", lambda a: a + ["--dtype", f"{col}=int"]),
        (
            "sketch evaluate",
            "--label-column names an unknown column",
            lambda a: set_opt(set_opt(a, "--task", "classify"), "--label-column", col),
        ),
    ]:
        b.add(command, "unknown column", detail, edit=edit, expect=E, needles=(col,))
    b.add(
        "verify",
        "unknown column",
        "--dtype names an unknown column of --original",
        slot_over={"IN": ("people_rel", [copy_fx("people_rel")])},
        setups=[copy_fx("people.csv")],
        edit=lambda a: a + ["--original", "{W}/people.csv", "--dtype", f"{col}=int"],
        expect=E,
        needles=(col,),
    )
    b.add(
        "report",
        "unknown column",
        "--dtype names an unknown column of --original",
        setups=[copy_fx("people.csv")],
        edit=lambda a: a + ["--original", "{W}/people.csv", "--dtype", f"{col}=int"],
        expect=E,
        needles=(col,),
    )
    b.add(
        "anonymize",
        "unknown column",
        "a column without a role (diagnosis)",
        edit=lambda a: drop_opt(a, "--sensitive"),
        expect=E,
        needles=("diagnosis",),
    )

    conflicts: list[tuple[str, str, Callable, str, tuple]] = [
        ("sketch", "--delta and --k together", lambda a: a + ["--k", "3"], E, (("--delta", "--k"),)),
        ("sketch", "neither --delta nor --k", lambda a: drop_opt(a, "--delta"), E, (("--delta", "--k"),)),
        ("sketch evaluate", "--sweep with --delta", lambda a: a + ["--sweep", "delta=0.5,1"], E, (("--sweep", "--delta"),)),
        ("sketch evaluate", "--plot without --sweep", lambda a: a + ["--plot", "{W}/front.svg"], E, (("--plot", "--sweep"),)),
        (
            "sketch evaluate",
            "--sweep of an unknown parameter",
            lambda a: drop_opt(a, "--delta") + ["--sweep", "x=1,2"],
            E,
            ("--sweep",),
        ),
        ("sketch evaluate", "--sweep with no values", lambda a: drop_opt(a, "--delta") + ["--sweep", "delta="], E, ("--sweep",)),
        (
            "sketch evaluate",
            "--sweep with text values",
            lambda a: drop_opt(a, "--delta") + ["--sweep", "delta=abc"],
            E,
            ("--sweep",),
        ),
        (
            "sketch evaluate",
            "--sweep with negative values",
            lambda a: drop_opt(a, "--delta") + ["--sweep", "delta=-1,0.5"],
            E,
            (("--sweep", "delta"),),
        ),
        (
            "sketch evaluate",
            "--plot with an unknown extension",
            lambda a: drop_opt(a, "--delta") + ["--sweep", "delta=0.5,1", "--plot", "{W}/front.xyz"],
            E,
            (("front.xyz", "--plot"),),
        ),
        (
            "sketch evaluate",
            "--task classify on data without labels",
            lambda a: set_opt(a, "--task", "classify"),
            E,
            (("label", "--label-column"),),
        ),
        (
            "condense",
            "--privacy-level with --privacy-range",
            lambda a: a + ["--privacy-range", "2:4"],
            E,
            (("--privacy-level", "--privacy-range"),),
        ),
        (
            "condense",
            "none of the privacy options",
            lambda a: drop_opt(a, "--privacy-level"),
            E,
            (("--privacy-level", "--privacy-range", "--privacy-column"),),
        ),
        (
            "condense",
            "--privacy-column with --privacy-level",
            lambda a: a + ["--privacy-column", "gvh"],
            E,
            (("--privacy-column", "--privacy-level"),),
        ),
        ("condense", "--columns on a text column", lambda a: set_opt(a, "--columns", "mcg,class"), E, ("class",)),
        (
            "condense",
            "--privacy-level larger than the data",
            lambda a: set_opt(a, "--privacy-level", "5000"),
            E,
            ("--privacy-level",),
        ),
        ("anonymize", "a column both --qi and --identifier", lambda a: set_opt(a, "--identifier", "name,age"), E, ("age",)),
        ("anonymize", "a column both --qi and --sensitive", lambda a: set_opt(a, "--sensitive", "age"), E, ("age",)),
        (
            "anonymize",
            "--l without --sensitive",
            lambda a: drop_opt(a, "--sensitive") + ["--insensitive", "diagnosis", "--l", "2"],
            E,
            (("--l", "--sensitive"),),
        ),
        ("anonymize", "--c without --l-kind recursive", lambda a: a + ["--l", "2", "--c", "3"], EITHER, (("--c", "--l-kind"),)),
        ("anonymize", "--k larger than the data", lambda a: set_opt(a, "--k", "5000"), E, ("--k",)),
        ("anonymize", "--l larger than the sensitive values", lambda a: a + ["--l", "50"], E, ("--l",)),
        ("anonymize", "--k 1 without --allow-weak", lambda a: set_opt(a, "--k", "1"), E, (("--k", "--allow-weak"),)),
        ("anonymize", "wrong --sep", lambda a: a + ["--sep", ";"], E, (("--sep", "age", "name"),)),
        ("anonymize", "--dtype age=bool on numbers", lambda a: a + ["--dtype", "age=bool"], E, ("age",)),
        ("anonymize", "--dtype with an unknown type", lambda a: a + ["--dtype", "age=complex"], E, (("complex", "--dtype"),)),
        ("anonymize", "--dtype without =", lambda a: a + ["--dtype", "age"], E, ("--dtype",)),
        (
            "anonymize",
            "same --hierarchy twice",
            lambda a: a + ["--hierarchy", "age=interval:0:100:10", "--hierarchy", "age=interval:0:100:5", "--dtype", "age=int"],
            E,
            (("age", "--hierarchy"),),
        ),
        (
            "anonymize",
            "lattice without hierarchies",
            lambda a: set_opt(a, "--method", "lattice"),
            EITHER,
            (("--hierarchy", "age"),),
        ),
        ("anonymize", "--keep-suppressed with mondrian", lambda a: a + ["--keep-suppressed"], EITHER, ("--keep-suppressed",)),
        (
            "access-control",
            "--l without --sensitive",
            lambda a: drop_opt(a, "--sensitive") + ["--insensitive", "salary-class", "--l", "2"],
            E,
            (("--l", "--sensitive"),),
        ),
        ("access-control", "age not typed (range on text)", lambda a: drop_opt(a, "--dtype"), E, (("age", "--dtype"),)),
        ("access-control", "--k larger than the data", lambda a: set_opt(a, "--k", "5000"), E, ("--k",)),
        (
            "km-anonymize",
            "--hierarchy with --fan-out",
            lambda a: a + ["--hierarchy", "{W}/km_h.csv"],
            E,
            (("--hierarchy", "--fan-out"),),
        ),
        (
            "km-anonymize",
            "neither --hierarchy nor --fan-out",
            lambda a: drop_opt(a, "--fan-out"),
            E,
            (("--hierarchy", "--fan-out"),),
        ),
        ("km-anonymize", "--k 1 without --allow-weak", lambda a: set_opt(a, "--k", "1"), E, (("--k", "--allow-weak"),)),
        (
            "mine",
            "--rules-out without --rules",
            lambda a: a + ["--rules-out", "{W}/rules.parquet"],
            EITHER,
            (("--rules-out", "--rules"),),
        ),
        (
            "mine",
            "--out and --rules-out the same file",
            lambda a: a + ["--rules", "--rules-out", "{W}/itemsets.parquet"],
            E,
            (("--rules-out", "--out", "itemsets.parquet"),),
        ),
        (
            "mine",
            "--min-support and --min-count together",
            lambda a: a + ["--min-count", "5"],
            E,
            (("--min-support", "--min-count"),),
        ),
        ("mine", "no --min-support", lambda a: drop_opt(a, "--min-support"), E, ("--min-support",)),
        ("mine", "--format fimi on a parquet folder", lambda a: a + ["--format", "fimi"], E, (("tx_pq", "--format", "fimi"),)),
        (
            "convert",
            "--partitions with --target-bytes",
            lambda a: a + ["--partitions", "2", "--target-bytes", "1000"],
            EITHER,
            (("--partitions", "--target-bytes"),),
        ),
        ("convert", "--from fimi on a parquet folder", lambda a: a + ["--from", "fimi"], E, (("tx_pq", "--from"),)),
        (
            "convert",
            "--to fimi with text item labels",
            lambda a: [x.replace("{W}/tx_pq", "{W}/tx_str.csv") for x in a] + ["--to", "fimi"],
            E,
            (("fimi", "FIMI", "--to"),),
        ),
        ("convert", "--to an unknown format", lambda a: a + ["--to", "xml"], E, ("--to",)),
        ("emask choose", "--s0 with --data", lambda a: a + ["--s0", "0.2"], E, (("--s0", "--data"),)),
        ("emask choose", "neither --s0 nor --data", lambda a: drop_opt(a, "--data"), E, (("--s0", "--data"),)),
        ("emask distort", "p + q = 1", lambda a: set_opt(set_opt(a, "--p", "0.5"), "--q", "0.5"), E, (("--p", "--q"),)),
        (
            "emask distort",
            "no distortion without --allow-weak",
            lambda a: [x for x in set_opt(set_opt(a, "--p", "1"), "--q", "1") if x != "--allow-weak"],
            E,
            (("--allow-weak", "--p", "privacy"),),
        ),
        ("emask distort", "p > 1", lambda a: set_opt(a, "--p", "1.5"), E, ("--p",)),
        (
            "emask mine",
            "plain data without --p/--q",
            lambda a: [x.replace("{W}/emask_rel", "{W}/tx_pq") for x in drop_opt(drop_opt(a, "--p"), "--q")],
            E,
            (("--p", "--q"),),
        ),
        (
            "emask mine",
            "--p without --q on plain data",
            lambda a: [x.replace("{W}/emask_rel", "{W}/tx_pq") for x in drop_opt(a, "--q")],
            E,
            (("--p", "--q"),),
        ),
        (
            "emask audit",
            "plain DISTORTED without --p/--q",
            lambda a: [x.replace("{W}/emask_rel", "{W}/tx_pq") for x in a],
            E,
            (("--p", "--q"),),
        ),
        ("krimp generate", "--exclude with text items", lambda a: a + ["--exclude", "a,b"], E, ("--exclude",)),
        ("krimp generate", "--exclude with unknown items", lambda a: a + ["--exclude", "998,999"], EITHER, ("--exclude",)),
        (
            "krimp generate",
            "support below the floor without --allow-weak",
            lambda a: set_opt(a, "--min-support", "0.005"),
            E,
            (("--allow-weak", "--min-support"),),
        ),
        (
            "krimp compress",
            "support of 1 (every itemset)",
            lambda a: set_opt(a, "--min-support", "1"),
            EITHER,
            ("--min-support",),
        ),
        (
            "generate quest",
            "spec with unknown letters",
            lambda a: [("X10.Y4" if x == "T5.I2.D500.N50" else x) for x in a],
            E,
            ("X10.Y4",),
        ),
        ("report", "--audience unknown", lambda a: a + ["--audience", "everyone"], E, ("--audience",)),
    ]
    extra_files = {
        ("km-anonymize", "--hierarchy with --fan-out"): "km_h.csv",
        ("convert", "--to fimi with text item labels"): "tx_str.csv",
        ("emask mine", "plain data without --p/--q"): "tx_pq",
        ("emask mine", "--p without --q on plain data"): "tx_pq",
    }
    for command, detail, edit, exp, needles in conflicts:
        f = extra_files.get((command, detail))
        b.add(command, "conflict", detail, edit=edit, expect=exp, needles=needles, setups=[copy_fx(f)] if f else [])

    # -------------------------------------------------- outputs
    out_cmds: dict[str, dict] = {c: {} for c, cmd in CMDS.items() if cmd.out}
    out_cmds["sketch evaluate"] = {
        "argv": CMDS["sketch evaluate"].argv[:2] + ["{IN}", "--sweep", "delta=0.5,1", "--plot", "{OUT}", "--task", "cluster"],
        "out": "front.svg",
    }
    file_outputs = {"mine", "emask mine", "krimp compress", "sketch evaluate"}
    same_kind = {
        "convert": "tx_pq",
        "emask distort": "emask_rel",
        "sketch": "sketch_rel",
        "condense": "ecoli_rel",
        "anonymize": "people_rel",
        "access-control": "people_rel",
        "km-anonymize": "km_rel",
        "krimp generate": "krimp_rel",
        "report": None,
        "generate quest": "tx_pq",
    }
    for command, over in out_cmds.items():
        out_rel = over.get("out", CMDS[command].out)
        argv = over.get("argv")
        kw = {"argv": argv, "out": out_rel} if argv else {}
        chk = "exists" if command == "sketch evaluate" else "default"
        ob = Path(out_rel).name
        b.add(
            command,
            "output",
            "exists as a file",
            setups=[write_file(out_rel, "keep me\n")],
            expect=E,
            needles=((ob,),),
            guard=["{W}/" + out_rel],
            **kw,
        )
        into_dir = EITHER if command == "report" else E  # report --out DIR writes report.html/json into a folder
        b.add(
            command,
            "output",
            "exists as a ppdm folder",
            setups=[copy_fx("tx_pq", out_rel)],
            expect=into_dir,
            needles=(ob,),
            guard=["{W}/" + out_rel],
            **kw,
        )
        b.add(
            command,
            "output",
            "exists as a foreign folder with precious.txt",
            setups=[make_dir(out_rel, {"precious.txt": "keep me\n"})],
            expect=into_dir,
            needles=(ob,),
            guard=["{W}/" + out_rel],
            **kw,
        )
        b.add(
            command,
            "output",
            "--overwrite onto a foreign folder with precious.txt",
            setups=[make_dir(out_rel, {"precious.txt": "keep me\n"})],
            expect=EITHER,
            needles=(ob,),
            guard=["{W}/" + out_rel + "/precious.txt"],
            check=chk,
            edit=lambda a: a + ["--overwrite"],
            **kw,
        )
        if command in EXTRA_OUTPUT_CASES_ON:
            b.add(
                command,
                "output",
                "exists as an empty folder",
                setups=[make_dir(out_rel)],
                expect=EITHER,
                needles=(ob,),
                check=chk,
                **kw,
            )
            b.add(
                command,
                "output",
                "stale temporary folder beside it",
                setups=[make_dir(out_rel + TMP_MARK + "0123456789ab", {"junk": "x"})],
                expect=OK,
                check=chk,
                **kw,
            )
        parent_kw = dict(kw)
        parent_kw["out"] = "afile/" + out_rel
        if argv:
            parent_kw["argv"] = argv
        b.add(
            command,
            "output",
            "parent is a file",
            setups=[write_file("afile", "keep me\n")],
            expect=E,
            needles=(("afile", ob),),
            guard=["{W}/afile"],
            **parent_kw,
        )
        ro_kw = dict(kw)
        ro_kw["out"] = "ro_dir/" + out_rel
        if argv:
            ro_kw["argv"] = argv
        if has_unshare or os.geteuid() != 0:
            b.add(
                command,
                "output",
                "under a read-only folder",
                setups=[make_dir("ro_dir")],
                expect=E,
                needles=(("ro_dir", ob),),
                readonly="{W}/ro_dir",
                **ro_kw,
            )
        kind = same_kind.get(command)
        if command in file_outputs:
            b.add(
                command,
                "output",
                "--overwrite an existing output file",
                setups=[write_file(out_rel, "old\n")],
                expect=OK,
                check=chk,
                edit=lambda a: a + ["--overwrite"],
                **kw,
            )
        elif kind:
            b.add(
                command,
                "output",
                "--overwrite an existing ppdm dataset",
                setups=[copy_fx(kind, out_rel)],
                expect=OK,
                check=chk,
                edit=lambda a: a + ["--overwrite"],
                **kw,
            )
    b.add(
        "anonymize",
        "output",
        "csv release: file exists",
        setups=[write_file("rel.csv", "keep\n")],
        out="rel.csv",
        expect=E,
        needles=("rel.csv",),
        guard=["{W}/rel.csv"],
    )
    b.add(
        "anonymize",
        "output",
        "csv release: sidecar manifest exists",
        setups=[write_file("rel.csv.manifest.json", "{}")],
        out="rel.csv",
        expect=E,
        needles=(("rel.csv",),),
        guard=["{W}/rel.csv.manifest.json"],
    )
    for command, check in [("convert", "info"), ("emask distort", "verify"), ("km-anonymize", "verify")]:
        b.add(
            command,
            "output",
            "output is the input (--overwrite)",
            edit=lambda a: [x.replace("{W}/rel", "{W}/tx_pq").replace("{W}/out_pq", "{W}/tx_pq") for x in a] + ["--overwrite"],
            expect=EITHER,
            out="tx_pq",
            check=check,
            needles=("tx_pq",),
        )

    # -------------------------------------------------- valid controls
    V = lambda command, detail, **kw: b.add(command, "valid", detail, expect=OK, **kw)  # noqa: E731
    V("info", "ppdm folder")
    V("info", "fimi file", slot_over={"IN": ("tx.dat", [copy_fx("tx.dat")])})
    V("info", "basket csv of integers", slot_over={"IN": ("tx.csv", [copy_fx("tx.csv")])})
    V("info", "basket csv of names", slot_over={"IN": ("tx_str.csv", [copy_fx("tx_str.csv")])})
    V("info", "gzipped fimi (bundled sample)", slot_over={"IN": ("iris.dat.gz", [copy_fx("iris.dat.gz")])})
    V(
        "info",
        "--format fimi on a file without extension",
        slot_over={"IN": ("tx_noext", [copy_fx("tx.dat", "tx_noext")])},
        edit=lambda a: a + ["--format", "fimi"],
    )
    V("info", "--json", globals=["--json"])
    V("convert", "parquet to fimi", out="out.dat")
    V("convert", "parquet to basket csv", out="out.csv")
    V(
        "convert",
        "fimi to parquet, 3 partitions",
        slot_over={"IN": ("tx.dat", [copy_fx("tx.dat")])},
        edit=lambda a: a + ["--partitions", "3"],
    )
    V("convert", "csv of names to parquet", slot_over={"IN": ("tx_str.csv", [copy_fx("tx_str.csv")])})
    V("mine", "itemsets")
    V("mine", "with rules", edit=lambda a: a + ["--rules", "--rules-out", "{W}/rules.parquet"])
    V("mine", "from a fimi file", slot_over={"IN": ("tx.dat", [copy_fx("tx.dat")])})
    V("emask choose", "--data")
    V("emask choose", "--s0", edit=lambda a: drop_opt(a, "--data") + ["--s0", "0.05"])
    V("emask distort", "release")
    V("emask distort", "from a basket csv", slot_over={"IN": ("tx.csv", [copy_fx("tx.csv")])})
    V("emask distort", "with a new --key-file", globals=["--key-file", "{W}/newkey.txt"], guard=[])
    V("emask mine", "release with recorded p, q", edit=lambda a: drop_opt(drop_opt(a, "--p"), "--q"))
    V("emask mine", "plain data with --p/--q", slot_over={"IN": ("tx_pq", [copy_fx("tx_pq")])})
    V("emask audit", "with the release's key")
    V("emask audit", "without a key", key_global=False)
    V("sketch", "delta")
    V("sketch", "k-variance", edit=lambda a: drop_opt(a, "--delta") + ["--k", "3"])
    V("sketch", "explicit anonymize subcommand", edit=lambda a: ["sketch", "anonymize"] + a[1:])
    V("sketch evaluate", "cluster task")
    V(
        "sketch evaluate",
        "both tasks on labelled data",
        slot_over={"IN": ("labeled_pq", [copy_fx("labeled_pq")])},
        edit=lambda a: set_opt(a, "--task", "both"),
    )
    V(
        "sketch evaluate",
        "sweep with plot",
        edit=lambda a: drop_opt(a, "--delta") + ["--sweep", "delta=0.5,1", "--plot", "{W}/front.svg"],
    )
    V("condense", "privacy level")
    V("condense", "privacy range", edit=lambda a: set_opt(drop_opt(a, "--privacy-level"), "--privacy-range", "2:4"))
    V("condense", "dynamic", edit=lambda a: a + ["--dynamic"])
    V("condense", "ppdm table input", slot_over={"IN": ("ecoli_tbl", [copy_fx("ecoli_tbl")])})
    V("anonymize", "mondrian")
    V("anonymize", "csv release", out="rel.csv")
    V(
        "anonymize",
        "lattice with hierarchies",
        setups=[copy_fx("people_hierarchy_zip.csv"), copy_fx("people_hierarchy_sex.csv")],
        edit=lambda a: (
            set_opt(a, "--method", "lattice")
            + [
                "--dtype",
                "age=int",
                "--hierarchy",
                "age=interval:0:100:10",
                "--hierarchy",
                "zip={W}/people_hierarchy_zip.csv",
                "--hierarchy",
                "sex={W}/people_hierarchy_sex.csv",
            ]
        ),
    )
    V("anonymize", "ppdm table input", slot_over={"IN": ("people_tbl", [copy_fx("people_tbl")])})
    V("anonymize", "l-diversity", edit=lambda a: a + ["--l", "2"])
    V("access-control", "release")
    V("access-control", "ppdm table input", slot_over={"IN": ("adult_tbl", [copy_fx("adult_tbl")])})
    V("access-control", "report only (no --out)", edit=lambda a: drop_opt(a, "--out"), out=None)
    V("km-anonymize", "fan-out")
    V(
        "km-anonymize",
        "hierarchy file",
        setups=[copy_fx("km_h.csv")],
        edit=lambda a: drop_opt(a, "--fan-out") + ["--hierarchy", "{W}/km_h.csv"],
    )
    V("km-anonymize", "direct anonymization (DA)", edit=lambda a: a + ["--method", "DA"])
    V("krimp compress", "code table")
    V("krimp compress", "closed candidates", edit=lambda a: a + ["--closed"])
    V("krimp generate", "release")
    V("krimp generate", "without scores", edit=lambda a: a + ["--no-scores"])
    V("krimp ds", "parquet vs fimi of the same data")
    V("krimp ds", "two different datasets", slot_over={"IN2": ("tx2_pq", [copy_fx("tx2_pq")])})
    for rel in ["emask_rel", "people_rel", "ecoli_rel", "sketch_rel", "km_rel", "krimp_rel"]:
        V("verify", rel, slot_over={"IN": (rel, [copy_fx(rel)])})
    V("verify", "emask_rel --original", setups=[copy_fx("tx_pq")], edit=lambda a: a + ["--original", "{W}/tx_pq"])
    V(
        "verify",
        "people_rel --original",
        slot_over={"IN": ("people_rel", [copy_fx("people_rel")])},
        setups=[copy_fx("people.csv")],
        edit=lambda a: a + ["--original", "{W}/people.csv"],
    )
    V("report", "people_rel")
    V("report", "emask_rel", slot_over={"IN": ("emask_rel", [copy_fx("emask_rel")])})
    V(
        "report",
        "ecoli_rel --original",
        slot_over={"IN": ("ecoli_rel", [copy_fx("ecoli_rel")])},
        setups=[copy_fx("ecoli.csv")],
        edit=lambda a: a + ["--original", "{W}/ecoli.csv"],
    )
    V("report", "external audience", edit=lambda a: a + ["--audience", "external"])
    V("generate quest", "T5.I2.D500.N50")
    V("generate quest", "--partition-rows", edit=lambda a: a + ["--partition-rows", "100"])

    for i, c in enumerate(b.cases):
        c.index = i
    return b.cases


# ============================================================================ fixtures
def build_fixtures(FX: Path, jobs: int) -> dict[str, str]:
    """The good inputs every case copies from. Returns {fixture: error} for those that failed."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from ppdm_dask.data.datasets import sample_path

    FX.mkdir(parents=True, exist_ok=True)
    failed: dict[str, str] = {}
    samples = sample_path("iris").parent
    # ---- plain files
    iris = gzip.decompress(sample_path("iris").read_bytes())
    (FX / "tx.dat").write_bytes(iris)
    shutil.copy2(sample_path("iris"), FX / "iris.dat.gz")
    rows = [ln.split() for ln in iris.decode().splitlines()]
    (FX / "tx.csv").write_text("\n".join(",".join(r) for r in rows) + "\n")
    (FX / "tx_str.csv").write_text("\n".join(",".join(f"item{x}" for x in r) for r in rows) + "\n")
    bms = gzip.decompress(sample_path("bms-webview-1-5k").read_bytes()).decode().splitlines()[:150]
    (FX / "bms150.dat").write_text("\n".join(bms) + "\n")
    people = sample_path("people").read_text().splitlines()
    (FX / "people.csv").write_text("\n".join(people[:301]) + "\n")
    (FX / "people_b.csv").write_text("\n".join([people[0]] + people[301:601]) + "\n")
    shutil.copy2(sample_path("ecoli"), FX / "ecoli.csv")
    adult = sample_path("adult").read_text().splitlines()
    (FX / "adult.csv").write_text("\n".join(adult[:301]) + "\n")
    (FX / "adult_b.csv").write_text("\n".join([adult[0]] + adult[301:601]) + "\n")
    shutil.copy2(samples / "adult_permissions.json", FX / "perms.json")
    for n in ("people_hierarchy_zip.csv", "people_hierarchy_sex.csv"):
        shutil.copy2(samples / n, FX / n)
    (FX / "key.txt").write_text("0x" + "5eed" * 8 + "\n")
    items = sorted({int(x) for r in rows for x in r})
    (FX / "km_h.csv").write_text("\n".join(f"{i};g{(i - 1) // 5};*" for i in items) + "\n")

    # ---- hand-made ppdm-table folders (the folder protocol: parts + a _SUCCESS manifest listing them)
    def table_folder(csv_name: str, dst: str, sep: str) -> None:
        header = (FX / csv_name).read_text().splitlines()[0].split(sep)
        t = pacsv.read_csv(
            FX / csv_name,
            parse_options=pacsv.ParseOptions(delimiter=sep),
            convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in header}),
        )
        d = FX / dst
        d.mkdir()
        parts, half = [], t.num_rows // 2
        for i, (a, n) in enumerate([(0, half), (half, t.num_rows - half)]):
            sink = pa.BufferOutputStream()
            pq.write_table(t.slice(a, n), sink, compression="zstd", row_group_size=max(n, 1))
            data = sink.getvalue().to_pybytes()
            name = f"part-{i:05d}.parquet"
            (d / name).write_bytes(data)
            parts.append({"file": name, "rows": n, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
        (d / "_SUCCESS").write_text(
            json.dumps(
                {
                    "format": "ppdm-table",
                    "version": 2,
                    "n_records": t.num_rows,
                    "columns": t.column_names,
                    "partitions": parts,
                    "files": [],
                },
                indent=1,
            )
        )

    ecoli_lines = sample_path("ecoli").read_text().splitlines()
    (FX / "ecoli_b.csv").write_text("\n".join([ecoli_lines[0]] + ecoli_lines[1:200]) + "\n")
    for csv_name, dst, sep in [
        ("people.csv", "people_tbl", ","),
        ("people_b.csv", "people_tbl_b", ","),
        ("ecoli.csv", "ecoli_tbl", ","),
        ("ecoli_b.csv", "ecoli_tbl_b", ","),
        ("adult.csv", "adult_tbl", ";"),
        ("adult_b.csv", "adult_tbl_b", ";"),
    ]:
        try:
            table_folder(csv_name, dst, sep)
        except Exception as exc:  # noqa: BLE001
            failed[dst] = f"{type(exc).__name__}: {exc}"

    # ---- datasets and releases written by ppdm itself (once ppdm works at all)
    wait_healthy(FX, WAIT_SECONDS)
    P = [PPDM, "--scheduler", "threads", "--no-progress"]
    K = ["--key-file", str(FX / "key.txt")]
    stages = [
        {
            "tx_pq": P + ["convert", str(FX / "tx.dat"), str(FX / "tx_pq"), "--partitions", "2"],
            "tx2_pq": P + ["convert", str(FX / "bms150.dat"), str(FX / "tx2_pq"), "--partitions", "2"],
            "people_rel": P
            + K
            + [
                "anonymize",
                str(FX / "people.csv"),
                str(FX / "people_rel"),
                *PEOPLE_ROLES,
                "--k",
                "5",
                "--method",
                "mondrian",
                "--rows-per-file",
                "100",
            ],
            "people_rel_b": P
            + K
            + [
                "anonymize",
                str(FX / "people_b.csv"),
                str(FX / "people_rel_b"),
                *PEOPLE_ROLES,
                "--k",
                "6",
                "--method",
                "mondrian",
                "--rows-per-file",
                "100",
            ],
            "labeled_pq": P + K + ["generate", "quest", "C5.I2.D300.N50", str(FX / "labeled_pq")],
            "ecoli_rel": P
            + K
            + ["condense", str(FX / "ecoli.csv"), str(FX / "ecoli_rel"), "--columns", "mcg,gvh", "--privacy-level", "3"],
        },
        {
            "emask_rel": P
            + K
            + [
                "emask",
                "distort",
                str(FX / "tx_pq"),
                str(FX / "emask_rel"),
                "--p",
                "0.5",
                "--q",
                "0.97",
                "--allow-weak",
                "--rows-per-file",
                "75",
            ],
            "emask_rel_b": P
            + K
            + [
                "emask",
                "distort",
                str(FX / "tx2_pq"),
                str(FX / "emask_rel_b"),
                "--p",
                "0.6",
                "--q",
                "0.95",
                "--allow-weak",
                "--rows-per-file",
                "75",
            ],
            "sketch_rel": P + K + ["sketch", str(FX / "tx_pq"), str(FX / "sketch_rel"), "--delta", "0.5"],
            "km_rel": P + K + ["km-anonymize", str(FX / "tx_pq"), str(FX / "km_rel"), "--k", "5", "--fan-out", "5"],
            "krimp_rel": P
            + K
            + ["krimp", "generate", str(FX / "tx_pq"), str(FX / "krimp_rel"), "--min-support", "0.02", "--no-scores"],
        },
    ]

    def run(name: str, argv: list[str]) -> tuple[str, str | None]:
        if any(str(FX / f) in argv for f in failed):
            return name, "depends on a failed fixture"
        r = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=FX)
        return name, None if r.returncode == 0 else (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]

    for stage in stages:
        with ThreadPoolExecutor(max(1, jobs)) as ex:
            for name, err in ex.map(lambda kv: run(*kv), stage.items()):
                if err:
                    failed[name] = err
                    shutil.rmtree(FX / name, ignore_errors=True)
    return failed


# ============================================================================ running
def snapshot(path: Path) -> dict[str, tuple[int, str]] | None:
    if not path.exists() and not path.is_symlink():
        return None
    if path.is_file():
        return {"": (path.stat().st_size, hashlib.sha256(path.read_bytes()).hexdigest())}
    out = {}
    for p in sorted(path.rglob("*")):
        if p.is_file():
            out[str(p.relative_to(path))] = (p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest())
        elif p.is_dir():
            out[str(p.relative_to(path)) + "/"] = (0, "")
    return out


def tmp_siblings(path: Path) -> set[str]:
    parent = path.parent
    if not parent.is_dir():
        return set()
    return {p.name for p in parent.iterdir() if TMP_MARK in p.name}


def wrap(argv: list[str], readonly: str | None, has_unshare: bool) -> list[str]:
    script = f'ulimit -v {MEM_LIMIT_KB} 2>/dev/null; exec "$@"'
    if readonly and has_unshare:
        q = shlex.quote(readonly)
        script = f"mount --bind {q} {q} && mount -o remount,ro,bind {q} {q} && " + script
        return ["unshare", "-m", "sh", "-c", script, "sh", *argv]
    return ["sh", "-c", script, "sh", *argv]


RUNNING: set[int] = set()  # process groups of the ppdm runs in flight (killed if the harness is stopped)


def run_proc(argv: list[str], cwd: Path, timeout: float) -> tuple[int | None, str, str, float]:
    t0 = time.perf_counter()
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="200")
    p = subprocess.Popen(
        argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True, env=env
    )
    RUNNING.add(p.pid)
    try:
        out, err = p.communicate(timeout=timeout)
        rc: int | None = p.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, 9)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        rc = None
    finally:
        RUNNING.discard(p.pid)
    return rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), time.perf_counter() - t0


def kill_running(*_: Any) -> None:
    for pid in list(RUNNING):
        try:
            os.killpg(pid, 9)
        except ProcessLookupError:
            pass
    raise SystemExit("interrupted: running ppdm processes killed")


def healthy(FX: Path) -> str | None:
    """None when ``ppdm info`` works on a plain FIMI file, else its error line."""
    rc, _, err, _ = run_proc([PPDM, "--scheduler", "threads", "--no-progress", "info", str(FX / "tx.dat")], FX, 120)
    return None if rc == 0 else (next((ln for ln in err.splitlines() if ln.strip()), f"exit {rc}"))


def wait_healthy(FX: Path, seconds: float, fatal: bool = True) -> bool:
    deadline = time.time() + seconds
    while True:
        err = healthy(FX)
        if err is None:
            return True
        if time.time() > deadline:
            if not fatal:
                return False
            raise SystemExit(f"the checkout looks broken (ppdm info on a plain file fails: {err}); try again later")
        print(f"ppdm does not work right now ({err[:160]}); retrying in 20 s", file=sys.stderr, flush=True)
        time.sleep(20)


def needle_ok(line: str, needles: tuple) -> str | None:
    """The first needle (or group of alternatives) not found in ``line``."""
    for n in needles:
        alts = n if isinstance(n, tuple) else (n,)
        if not any(a in line for a in alts):
            return " | ".join(alts)
    return None


def run_case(case: Case, root: Path, FX: Path, timeout: float, has_unshare: bool, keep: bool) -> dict[str, Any]:
    W = root / "cases" / f"{case.index:04d}"
    shutil.rmtree(W, ignore_errors=True)
    W.mkdir(parents=True)
    use_cluster = (
        case.cluster
        and case.index % CLUSTER_EVERY == CLUSTER_EVERY // 2
        and not any(g in ("--scheduler", "--workers") for g in case.globals)
    )
    if use_cluster:
        head = ["--no-progress", "--workers", "2"]
    elif "--scheduler" in case.globals:
        head = ["--no-progress"]
    else:
        head = ["--scheduler", "threads", "--no-progress"]
    ppdm_argv = [PPDM, *head, *[_sub(g, W, FX) for g in case.globals], *[_sub(a, W, FX) for a in case.argv]]
    rec: dict[str, Any] = {
        "index": case.index,
        "name": case.name,
        "command": case.command,
        "group": case.group,
        "expected": case.expect,
        "needles": [list(n) if isinstance(n, tuple) else n for n in case.needles],
        "scheduler": "LocalCluster --workers 2" if use_cluster else "threads",
        "argv": ppdm_argv[1:],
        "cmdline": shlex.join(["ppdm", *ppdm_argv[1:]]),
        "workdir": str(W),
    }
    try:
        for s in case.setups:
            s(W, FX)
    except SkipCase as exc:
        rec.update(category="skipped", reason=str(exc), exit_code=None, stderr_first="", seconds=0.0)
        return rec
    out_path = Path(_sub(case.out, W, FX)) if case.out else None
    guards = {g: snapshot(Path(_sub(g, W, FX))) for g in case.guard}
    out_before = snapshot(out_path) if out_path else None
    tmp_before = tmp_siblings(out_path) if out_path else set()
    readonly = _sub(case.readonly, W, FX) if case.readonly else None
    if readonly and not has_unshare:
        os.chmod(readonly, 0o555)
    rc, stdout, stderr, secs = run_proc(wrap(ppdm_argv, readonly, has_unshare), W, timeout)
    if readonly and not has_unshare:
        os.chmod(readonly, 0o755)
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    rec.update(exit_code=rc, stderr_first=first[:400], stderr_lines=len(lines), stdout_chars=len(stdout), seconds=round(secs, 2))
    if len(lines) > 1:
        rec["stderr_tail"] = lines[-1][:400]

    # what exists afterwards
    problems = []
    for g, before in guards.items():
        if before is None:
            continue
        after = snapshot(Path(_sub(g, W, FX))) or {}
        lost = [k for k in before if k not in after]
        changed = [k for k in before if k in after and after[k] != before[k]]
        if lost or changed:
            what = "deleted" if lost else "changed"
            problems.append(f"foreign file {what}: {Path(_sub(g, W, FX)).name}/{(lost or changed)[0]}".rstrip("/"))
    if out_path is not None:
        new_tmp = tmp_siblings(out_path) - tmp_before
        if new_tmp:
            problems.append(f"temporary folder left behind: {sorted(new_tmp)[0]}")
    cat, reason = classify(case, rc, stderr, lines, first)
    if rc is not None and rc != 0 and out_path is not None and cat not in ("abort", "timeout"):
        after = snapshot(out_path)
        if out_before is None and after is not None and case.output_on_error_ok:
            reason = (reason + "; " if reason else "") + "report written although the command failed (documented)"
        elif out_before is None and after is not None:
            problems.append(f"partial output left at {out_path.name} after a failure")
        elif out_before is not None and after != out_before and not any("foreign" in p for p in problems):
            problems.append(f"existing output {out_path.name} changed by a failed run")
    if rc == 0 and cat == "worked" and out_path is not None and case.check:
        ok, why = check_output(case.check, out_path, W, timeout)
        if not ok:
            problems.append(why)
    if problems and cat in ("clear error", "worked", "wrongly refused"):
        cat, reason = "silent wrong", "; ".join(problems)
    elif problems:
        reason = (reason + "; " if reason else "") + "; ".join(problems)
    rec.update(category=cat, reason=reason)
    if not keep and cat in GOOD:
        shutil.rmtree(W, ignore_errors=True)
    return rec


def classify(case: Case, rc: int | None, stderr: str, lines: list[str], first: str) -> tuple[str, str]:
    if rc is None:
        return "timeout", "no exit within the timeout"
    if rc in (134, 137, 139) or rc < 0 or "terminate called" in stderr:
        return "abort", f"exit {rc}"
    if rc != 0 and BROKEN_RE.search(stderr) and "ppdm_dask" in stderr:
        return "checkout broken", "ppdm did not import"
    if rc == 0:
        if case.expect == E:
            return "silent wrong", "exit 0 where an error was expected"
        return "worked", ""
    why = []
    if rc != 2:
        why.append(f"exit {rc}")
    if not lines:
        why.append("empty stderr")
    elif len(lines) > 1 and not (case.multi_line_ok and all(ln.startswith("ppdm: error: ") for ln in lines)):
        why.append(f"{len(lines)} stderr lines")
    if lines and not first.startswith("ppdm: error: "):
        why.append("first line is not 'ppdm: error: ...'")
    m = RAW_RE.search(stderr)
    if m:
        why.append(f"raw exception name ({m.group(0).rstrip(':')})")
    if not why:
        text = "\n".join(lines) if case.multi_line_ok else first
        missing = needle_ok(text, case.needles)
        if missing:
            bare = [m.lstrip("-") for m in missing.split(" | ") if m.startswith("--")]
            if bare and any(re.search(rf"\b{re.escape(v)}\b", text.replace("_", "-")) for v in bare):
                why.append(f"names the parameter but not the flag {missing!r}")
            else:
                why.append(f"does not name {missing!r}")
    if why:
        return "raw message", "; ".join(why)
    if case.expect == OK:
        return "wrongly refused", "clean error on a case that should succeed"
    return "clear error", ""


def check_output(kind: str, out: Path, W: Path, timeout: float) -> tuple[bool, str]:
    if not out.exists():
        return False, f"exit 0 but nothing at {out.name}"
    if kind == "exists":
        return True, ""
    argv = [PPDM, "--scheduler", "threads", "--no-progress", "verify" if kind == "verify" else "info", str(out)]
    rc, _, err, _ = run_proc(wrap(argv, None, False), W, timeout)
    if rc == 0:
        return True, ""
    line = next((ln for ln in err.splitlines() if ln.strip()), f"exit {rc}")
    return False, f"ppdm {kind} of the output failed: {line[:200]}"


# ============================================================================ report
def signature(rec: dict[str, Any]) -> str:
    """A cause key: the category, the reason kind and the first stderr line with paths, numbers
    and quoted values blanked."""
    line = rec.get("stderr_first", "") or ""
    line = re.sub(r"(/[^\s:,'\"()]+)+", "<path>", line)
    line = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", line)
    line = re.sub(r"\b\d[\d,.e+-]*\b", "N", line)
    reason = re.sub(r"'[^']*'", "'…'", rec.get("reason", "") or "")
    reason = (
        re.sub(r":\s.*", "", reason)
        if reason.startswith(("foreign", "temporary", "partial", "ppdm verify", "ppdm info"))
        else reason
    )
    return f"{rec['category']} :: {reason} :: {line[:140]}"


def print_report(results: list[dict[str, Any]], total_secs: float, out=sys.stdout) -> None:
    w = lambda s="": print(s, file=out)  # noqa: E731
    cats = Counter(r["category"] for r in results)
    w(f"\n=== totals: {len(results)} cases in {total_secs / 60:.1f} min")
    for c in CATEGORIES:
        if cats.get(c):
            w(f"  {c:<16} {cats[c]:>5}  {100 * cats[c] / len(results):5.1f} %")
    by_exp = Counter((r["expected"], r["category"]) for r in results)
    w("\n=== by expectation")
    for e in (E, OK, EITHER):
        row = {c: by_exp.get((e, c), 0) for c in CATEGORIES}
        w(f"  {e:<7} " + "  ".join(f"{c}={n}" for c, n in row.items() if n))
    w("\n=== per subcommand")
    short = {
        "clear error": "clear",
        "worked": "worked",
        "wrongly refused": "refused",
        "silent wrong": "silent",
        "raw message": "raw",
        "abort": "abort",
        "timeout": "timeout",
        "checkout broken": "broken",
        "skipped": "skip",
    }
    w(f"  {'subcommand':<16}{'cases':>6}" + "".join(f"{short[c]:>9}" for c in CATEGORIES))
    per = defaultdict(Counter)
    for r in results:
        per[r["command"]][r["category"]] += 1
    for cmd in CMDS:
        if cmd in per:
            w(f"  {cmd:<16}{sum(per[cmd].values()):>6}" + "".join(f"{per[cmd].get(c, 0):>9}" for c in CATEGORIES))
    w(f"  {'total':<16}{len(results):>6}" + "".join(f"{cats.get(c, 0):>9}" for c in CATEGORIES))
    w("\n=== per fault group")
    pg = defaultdict(Counter)
    for r in results:
        pg[r["group"]][r["category"]] += 1
    for g in sorted(pg):
        w(f"  {g:<24}{sum(pg[g].values()):>6}" + "".join(f"{pg[g].get(c, 0):>9}" for c in CATEGORIES))
    bad = [r for r in results if r["category"] not in GOOD]
    if not bad:
        return
    groups: dict[str, list] = defaultdict(list)
    for r in bad:
        groups[signature(r)].append(r)
    w(f"\n=== problem causes ({len(groups)} distinct, {len(bad)} cases), most frequent first")
    for _sig, rs in sorted(groups.items(), key=lambda kv: (CATEGORIES.index(kv[1][0]["category"]), -len(kv[1]))):
        cmds = sorted({r["command"] for r in rs})
        ex = rs[0]
        w(f"\n[{len(rs)}x] {ex['category']}: {ex.get('reason') or '-'}")
        w(f"    commands: {', '.join(cmds)}")
        w(f"    example:  {ex['name']}")
        w(f"    $ {ex['cmdline']}")
        w(f"    stderr:   {ex.get('stderr_first') or '(empty)'}")
    w(f"\n=== every problem case ({len(bad)})")
    for r in sorted(bad, key=lambda r: (CATEGORIES.index(r["category"]), r["command"], r["index"])):
        w(f"  [{r['category']}] {r['name']}  (exit {r.get('exit_code')})")
        w(f"      {r.get('stderr_first') or '(no stderr)'}" + (f"   <- {r['reason']}" if r.get("reason") else ""))


# ============================================================================ main
PPDM = ""
WAIT_SECONDS = 600.0


def find_ppdm() -> str:
    cand = Path(sys.executable).with_name("ppdm")
    if cand.exists():
        return str(cand)
    found = shutil.which("ppdm")
    if not found:
        sys.exit("ppdm not found: activate the venv (. /work/venv/bin/activate)")
    return found


def can_unshare() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run(
            ["unshare", "-m", "sh", "-c", f"mount --bind {d} {d} && mount -o remount,ro,bind {d} {d} && ! touch {d}/x"],
            capture_output=True,
        )
        return r.returncode == 0


def main(argv: list[str] | None = None) -> int:
    global PPDM, WAIT_SECONDS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=None, help="work folder (default: a new temporary folder)")
    ap.add_argument("--limit", type=int, default=None, help="run N cases spread evenly over the (filtered) corpus")
    ap.add_argument(
        "--only", action="append", default=[], help="keep cases whose name contains SUBSTR (case-insensitive; repeatable: any)"
    )
    ap.add_argument(
        "--rerun",
        type=Path,
        default=None,
        help="keep only the cases that were not a clear error / worked in an earlier --json FILE",
    )
    ap.add_argument("--jobs", type=int, default=2, help="parallel ppdm subprocesses (default 2)")
    ap.add_argument("--json", type=Path, default=None, help="write per-case results to FILE")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per case (default 120)")
    ap.add_argument("--keep", action="store_true", help="keep the folders of clear error / worked cases too")
    ap.add_argument("--list", action="store_true", help="print the case names and expectations, run nothing")
    ap.add_argument(
        "--wait",
        type=float,
        default=600.0,
        help="seconds to wait for a working checkout before the run and before re-running broken cases (default 600)",
    )
    args = ap.parse_args(argv)

    PPDM = find_ppdm()
    WAIT_SECONDS = args.wait
    import signal

    signal.signal(signal.SIGTERM, kill_running)
    has_unshare = can_unshare()
    cases = build_corpus(has_unshare)
    if args.only:
        subs = [s.lower() for s in args.only]
        cases = [c for c in cases if any(s in c.name.lower() for s in subs)]
    if args.rerun is not None:
        earlier = json.loads(args.rerun.read_text())["cases"]
        bad = {c["name"] for c in earlier if c["category"] not in GOOD}
        cases = [c for c in cases if c.name in bad]
    if args.limit is not None and args.limit < len(cases):
        step = len(cases) / max(args.limit, 1)
        cases = [cases[int(i * step)] for i in range(args.limit)]
    if args.list:
        for c in cases:
            print(f"{c.index:4d}  {c.expect:<6}  {c.name}")
        print(f"{len(cases)} cases", file=sys.stderr)
        return 0
    if not cases:
        print("no case matches", file=sys.stderr)
        return 1
    root = args.out or Path(tempfile.mkdtemp(prefix="ppdm-corpus-"))
    root = root.resolve()
    root.mkdir(parents=True, exist_ok=True)
    FX = root / "fixtures"
    t0 = time.perf_counter()
    try:
        import ppdm_dask

        pkg = str(Path(ppdm_dask.__file__).parent)
    except Exception as exc:  # noqa: BLE001
        pkg = f"(does not import: {type(exc).__name__})"
    print(f"testing ppdm_dask at {pkg} with {PPDM}", file=sys.stderr)
    print(
        f"work folder {root}; {len(cases)} cases, {args.jobs} jobs, timeout {args.timeout:g} s; "
        f"read-only outputs via {'unshare' if has_unshare else 'chmod'}",
        file=sys.stderr,
    )
    if FX.exists():
        shutil.rmtree(FX)
    failed = build_fixtures(FX, args.jobs)
    for name, err in failed.items():
        print(f"warning: fixture {name} failed: {err}", file=sys.stderr)
    print(f"fixtures built in {time.perf_counter() - t0:.0f} s", file=sys.stderr)

    results: list[dict[str, Any]] = []
    lock = threading.Lock()
    with ThreadPoolExecutor(max(1, args.jobs)) as ex:
        futs = {ex.submit(run_case, c, root, FX, args.timeout, has_unshare, args.keep): c for c in cases}
        for fut in as_completed(futs):
            c = futs[fut]
            try:
                r = fut.result()
            except Exception as exc:  # noqa: BLE001 - a harness bug must not lose the other results
                r = {
                    "index": c.index,
                    "name": c.name,
                    "command": c.command,
                    "group": c.group,
                    "expected": c.expect,
                    "category": "skipped",
                    "reason": f"harness error: {type(exc).__name__}: {exc}",
                    "exit_code": None,
                    "stderr_first": "",
                    "argv": c.argv,
                    "cmdline": shlex.join(c.argv),
                }
            with lock:
                results.append(r)
                n = len(results)
            mark = "" if r["category"] in GOOD else "  <--"
            print(
                f"[{n}/{len(cases)}] {r['category']:<15} {r.get('seconds', 0):6.1f}s  {r['name']}{mark}",
                file=sys.stderr,
                flush=True,
            )
    broken = [r for r in results if r["category"] == "checkout broken"]
    if broken:
        print(f"{len(broken)} cases met a checkout that did not import; re-running them once", file=sys.stderr, flush=True)
        again = {r["index"] for r in broken} if wait_healthy(FX, args.wait, fatal=False) else set()
        results = [r for r in results if r["index"] not in again]
        with ThreadPoolExecutor(max(1, args.jobs)) as ex:
            for r in ex.map(
                lambda c: run_case(c, root, FX, args.timeout, has_unshare, args.keep), [c for c in cases if c.index in again]
            ):
                r["rerun"] = True
                results.append(r)
                print(f"[rerun] {r['category']:<15} {r.get('seconds', 0):6.1f}s  {r['name']}", file=sys.stderr, flush=True)
    results.sort(key=lambda r: r["index"])
    total = time.perf_counter() - t0
    print_report(results, total)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        cats = Counter(r["category"] for r in results)
        per = defaultdict(Counter)
        for r in results:
            per[r["command"]][r["category"]] += 1
        doc = {
            "meta": {
                "cases": len(results),
                "seconds": round(total, 1),
                "jobs": args.jobs,
                "timeout": args.timeout,
                "work_folder": str(root),
                "failed_fixtures": failed,
                "ppdm": PPDM,
                "ppdm_dask": pkg,
                "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() - total)),
            },
            "totals": {c: cats.get(c, 0) for c in CATEGORIES},
            "per_subcommand": {k: dict(v) for k, v in per.items()},
            "cases": results,
        }
        args.json.write_text(json.dumps(doc, indent=1))
        print(f"\nper-case results: {args.json}", file=sys.stderr)
    print(f"work folder kept: {root}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
