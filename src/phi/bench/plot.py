"""A chart of phi's LoCoMo recall by category beside the peers' figures.

matplotlib is a development dependency only: it is imported when a chart is asked for.
"""

from __future__ import annotations

from pathlib import Path

from phi.bench.locomo import CATEGORIES, LocomoResult
from phi.bench.peers import PEERS
from phi.errors import InvalidInput

__all__ = ["plot_locomo"]


def plot_locomo(result: LocomoResult, path: Path, *, k: int = 10) -> None:
    """Write a bar chart of R@`k` per category (and overall) with the peers' overall R@`k`."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display: files only
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise InvalidInput(
            "--plot needs matplotlib, a development dependency: run `uv sync --dev`"
        ) from exc
    index = (1, 5, 10, 20).index(k)
    labels = [name for name in CATEGORIES.values()] + ["all"]
    ours = [result.recall(k, c) for c in CATEGORIES] + [result.recall(k)]
    peers = [(f"{p.method} ({p.split})", p.recall[index]) for p in PEERS]
    shown = [(name, value) for name, value in peers if value is not None]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.bar(range(len(labels)), ours, color="#3b6ea8", label="phi")
    for i, value in enumerate(ours):
        ax.text(i, value + 0.01, f"{value:.3f}", ha="center", fontsize=8)
    start = len(labels) + 0.5
    for j, (_, value) in enumerate(shown):
        ax.bar(start + j, value, color="#b0b0b0")
        ax.text(start + j, value + 0.01, f"{value:.3f}", ha="center", fontsize=8)
    ax.set_xticks(
        [*range(len(labels)), *(start + j for j in range(len(shown)))],
        [*labels, *(name for name, _ in shown)],
        rotation=30,
        ha="right",
        fontsize=8,
    )
    ax.set_ylim(0, 1)
    ax.set_ylabel(f"recall@{k} (evidence turns)")
    ax.set_title(f"LoCoMo turn recall@{k}: phi by category, peers overall")
    fig.tight_layout()
    try:
        fig.savefig(path)
    except OSError as exc:
        raise InvalidInput(f"cannot write the chart to {str(path)!r}: {exc}") from exc
    finally:
        plt.close(fig)
