"""One small release per family from the bundled samples, each with the internal report its job
writes beside it: the pages of ``docs/reports/`` (``docs/reports/make_pages.py`` screenshots
them) and of the rendering test (``test_render.py``).

Each page is made by the command line, as a user makes it: the job writes the release and its
report (with the job's input as the original).
"""

from __future__ import annotations

from pathlib import Path

from ppdm_dask.data.datasets import sample_path

_ADULT_QI = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass", "occupation"]


def _samples() -> Path:
    return sample_path("adult").parent


def _adult_hierarchies() -> list[str]:
    return [a for q in _ADULT_QI for a in ("--hierarchy", f"{q}={_samples() / f'adult_hierarchy_{q}.csv'}")]


def pages() -> dict[str, list[str]]:
    """``{page name: ppdm argv with {out} for the release}``: one release per family (two for
    the tables: generalisation and access control)."""
    tx, bms = str(sample_path("iris")), str(sample_path("bms-webview-1-5k"))
    adult, ecoli = str(sample_path("adult")), str(sample_path("ecoli"))
    return {
        # the example: Adult, Mondrian k = 5 with distinct l = 2 on a binary salary class
        "relational": [
            "anonymize",
            adult,
            "{out}",
            "--qi",
            ",".join(_ADULT_QI),
            "--sensitive",
            "salary-class",
            "--k",
            "5",
            "--l",
            "2",
            "--method",
            "mondrian",
            "--dtype",
            "age=int",
            *_adult_hierarchies(),
        ],
        "access-control": [
            "access-control",
            adult,
            "--permissions",
            str(_samples() / "adult_permissions.json"),
            "--qi",
            ",".join(_ADULT_QI),
            "--sensitive",
            "salary-class",
            "--k",
            "10",
            "--dtype",
            "age=int",
            "--out",
            "{out}",
        ],
        "km": ["km-anonymize", bms, "{out}", "--k", "5", "--fan-out", "5"],
        # a weak distortion accepted with --allow-weak: the page shows the amber override
        "emask": ["emask", "distort", tx, "{out}", "--p", "0.5", "--q", "0.97", "--allow-weak"],
        "sketch": ["sketch", tx, "{out}", "--delta", "0.5"],
        "condensation": ["condense", ecoli, "{out}", "--columns", "mcg,gvh,lip,chg,aac,alm1,alm2", "--privacy-level", "5"],
        "krimp": ["krimp", "generate", tx, "{out}", "--min-count", "2"],
    }


def make_page(name: str, folder: Path) -> tuple[Path, Path]:
    """Make the release of page ``name`` in ``folder`` with ``ppdm``; ``(report.json,
    report.html)`` its job wrote beside it."""
    from click.testing import CliRunner

    from ppdm_dask.cli import cli

    out = folder / name
    argv = [a.replace("{out}", str(out)) for a in pages()[name]]
    r = CliRunner().invoke(cli, ["--scheduler", "sync", "--no-progress", *argv], catch_exceptions=False)
    if r.exit_code != 0:
        raise RuntimeError(f"ppdm {' '.join(argv)} failed ({r.exit_code}): {r.output[-2000:]}")
    return folder / f"{name}.report.json", folder / f"{name}.report.html"
