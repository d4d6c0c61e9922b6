"""Predicted-vs-measured heat map (like Figure 7 of the PMEvo paper)."""

from __future__ import annotations

import numpy as np

from pmpredict.errors import InputError


def heatmap(predicted, measured, path: str, title: str = "", bins: int = 60) -> None:
    try:
        # deferred: matplotlib (~0.2 s, optional): only `evaluate --plot` draws
        import matplotlib
        matplotlib.use("Agg")
        # deferred: pyplot (most of matplotlib's 0.2 s), imported once the Agg backend is set
        import matplotlib.pyplot as plt
        from matplotlib.colors import LogNorm
    except ImportError:
        raise InputError(path, "--plot needs matplotlib: pip install 'pmpredict[plot]'") from None
    predicted = np.asarray(predicted, float)
    measured = np.asarray(measured, float)
    top = float(max(predicted.max(initial=1.0), measured.max(initial=1.0))) * 1.05
    fig, ax = plt.subplots(figsize=(5.5, 5))
    h = ax.hist2d(measured, predicted, bins=bins, range=[[0, top], [0, top]], cmin=1,
                  norm=LogNorm(), cmap="viridis")
    fig.colorbar(h[3], ax=ax, label="experiments")
    ax.plot([0, top], [0, top], color="red", lw=0.8, label="predicted = measured")
    ax.set_xlabel("measured cycles")
    ax.set_ylabel("predicted cycles")
    ax.set_title(title, fontsize=9)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except OSError as exc:
        raise InputError(path, f"cannot write the plot: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
