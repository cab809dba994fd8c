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
