"""Adult replicated for the scale rows of the benchmark suites (Parquet files in a folder)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def write_copies(df: pd.DataFrame, reps: int, files: int, folder: Path) -> int:
    """Write ``reps`` copies of ``df`` as ``files`` Parquet files into ``folder`` (created);
    returns the number of rows written."""
    folder.mkdir(parents=True)
    part = pd.concat([df] * (reps // files), ignore_index=True)
    for i in range(files):
        part.to_parquet(folder / f"part-{i:03d}.parquet", index=False)
    return len(part) * files


def adult_path(shared: Path | None = None) -> Path | None:
    """``adult.csv`` of the shared data (``$PPDM_SHARED_DATA`` or ../shared/data beside the
    checkout), or None when it is not on this machine."""
    import os

    env = os.environ.get("PPDM_SHARED_DATA")
    candidates = (
        ([shared] if shared else []) + ([Path(env)] if env else []) + [Path(__file__).resolve().parents[2] / "shared" / "data"]
    )
    for c in candidates:
        if (c / "adult" / "adult.csv").is_file():
            return c / "adult" / "adult.csv"
    return None
