"""Small figure helpers shared by the lessons (no global style changes)."""

from __future__ import annotations


def new_figure(ncols: int = 1, *, width: float = 9.0, height: float = 3.2):
    """A figure with ``ncols`` axes side by side, sized to stay small in the notebook."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, ncols, figsize=(width, height), constrained_layout=True)
    return fig, axes
