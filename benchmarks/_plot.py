"""One line-plot helper for the benchmark suites (matplotlib is a dependency of the package: its reports draw with it)."""

from __future__ import annotations

from pathlib import Path


def have_matplotlib() -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        return True
    except ImportError:
        print("  (matplotlib not installed: no PNG plots)")
        return False


def line_figure(path: Path, series, xlabel: str, ylabel: str, baseline: float | None = None, logx: bool = False) -> str:
    """Save ``series`` = [(label, xs, ys), ...] as a small PNG at ``path``; returns the path."""
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    plt.figure(figsize=(4.5, 3.2))
    for lab, xs, ys in series:
        plt.plot(xs, ys, marker="o", label=lab)
    if baseline is not None:
        plt.axhline(baseline, color="grey", ls="--", label="original data")
    if logx:
        plt.xscale("log")
    plt.xlabel(xlabel)
    plt.ylabel(ylabel)
    plt.legend(fontsize=7)
    plt.tight_layout()
    plt.savefig(path, dpi=110)
    plt.close()
    return str(path)
