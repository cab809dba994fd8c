"""Every notebook in notebooks/ runs top to bottom without error."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.cluster
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path, tmp_path, monkeypatch):
    import os

    from tests.conftest import _shared_data

    shared = _shared_data()
    nb = nbformat.read(path, as_version=4)
    if nb.metadata.get("ppdm", {}).get("needs_shared_data") and shared is None:
        # a notebook on the full benchmark files: run under CI, say why not elsewhere
        if os.environ.get("CI"):
            pytest.fail(f"{path.name} needs the shared data folder (../shared/data or PPDM_SHARED_DATA)")
        pytest.skip(f"{path.name} reads the full benchmark files: ../shared/data not found (set PPDM_SHARED_DATA)")
    if shared is not None:  # the kernel inherits it: notebooks on the shared data sets find them
        monkeypatch.setenv("PPDM_SHARED_DATA", str(shared))
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors


def test_there_are_notebooks():
    assert any(p.name == "01-quickstart.ipynb" for p in NOTEBOOKS)
