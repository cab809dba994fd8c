"""The notebooks in notebooks/ run top to bottom on data that ships with the package, show at
least one figure, and hold no machine path and no progress bar in their outputs — both as
stored in the repository and when executed afresh."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
IDS = [p.name for p in NOTEBOOKS]

FIGURE_TYPES = ("image/png", "image/svg+xml")
PROGRESS_TEXT = ("[####", "% Completed")
# reads of the full benchmark files outside the package: the notebooks must not need them
SHARED_DATA_READS = ("shared_data_dir", "load_uci", "full=True", "PPDM_SHARED_DATA")


def _machine_paths() -> list[str]:
    """Folder prefixes that say on which machine (and where on it) a notebook ran."""
    paths = {"/work/", "/tmp/", "/root/", "/home/", "/Users/", "/private/var/", "/var/folders/"}
    for p in (Path.home(), REPO, Path(sys.prefix), Path(tempfile.gettempdir())):
        if len(str(p)) > 1:  # never "/" alone (it would match any URL)
            paths.add(str(p).rstrip("/") + "/")
    return sorted(paths)


MACHINE_PATHS = _machine_paths()


def _output_texts(output) -> list[str]:
    """The text of one output (images are base64 and not text: a '/' in them means nothing)."""
    if output.get("output_type") == "stream":
        return [output.get("text", "")]
    if output.get("output_type") == "error":
        return [output.get("evalue", ""), *output.get("traceback", [])]
    data = output.get("data", {})
    return [v if isinstance(v, str) else "".join(v) for k, v in data.items() if k.startswith("text/")]


def _outputs(nb):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def problems(nb) -> list[str]:
    """Every reason why the outputs of ``nb`` are not fit to be published."""
    found = []
    for output in _outputs(nb):
        if output.get("output_type") == "error":
            found.append(f"error output: {output.get('ename')}: {output.get('evalue')}")
        for text in _output_texts(output):
            for needle in (*MACHINE_PATHS, *PROGRESS_TEXT):
                if needle in text:
                    at = text.index(needle)
                    found.append(f"{needle!r} in an output: ...{text[max(0, at - 60) : at + 80]!r}...")
    if not any(k in o.get("data", {}) for o in _outputs(nb) for k in FIGURE_TYPES):
        found.append("no figure output (image/png or image/svg+xml)")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_stored_notebook_is_executed_and_clean(path):
    """The stored file: every code cell executed, a figure, no error, no machine path or bar."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.get("execution_count") for c in code), f"{path.name} is not stored executed"
    assert not nb.metadata.get("ppdm", {}).get("needs_shared_data"), f"{path.name} is marked as needing the shared data"
    for cell in code:
        for needle in SHARED_DATA_READS:
            assert needle not in cell.source, f"{path.name} reads the shared data folder ({needle}): use the bundled samples"
    assert not problems(nb), f"{path.name}:\n" + "\n".join(problems(nb))


# slow (about six minutes for the seven on two cores): not in the default suite, which stays under
# fifteen minutes; CI runs them as a step of its own (`python -m pytest -m slow`, .ci/run)
@pytest.mark.slow
@pytest.mark.cluster
@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_executes(path, tmp_path, monkeypatch):
    """Executed afresh in an empty folder, without the shared data: no error, a figure, clean outputs."""
    monkeypatch.delenv("PPDM_SHARED_DATA", raising=False)  # the kernel inherits the environment
    monkeypatch.chdir(tmp_path)
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert not problems(nb), f"{path.name}:\n" + "\n".join(problems(nb))


def test_there_are_notebooks():
    names = {p.name for p in NOTEBOOKS}
    assert {"01-quickstart.ipynb", "03-emask.ipynb", "06-anonymity.ipynb", "07-krimp.ipynb"} <= names
