"""Small figure helpers shared by the lessons (no global style changes)."""

from __future__ import annotations


def draw_parallelism_kinds():
    """One picture of the four kinds of parallelism, from inside a core to across machines."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    fig, axes = plt.subplots(1, 4, figsize=(10, 2.8), constrained_layout=True)

    def box(ax, x, y, w, h, text, color):
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02", fc=color, ec="black", lw=0.8))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=7)

    # ILP: independent instructions overlap in one core's pipeline.
    ax = axes[0]
    for i, name in enumerate(["add s0", "add s1", "add s2", "add s3"]):
        box(ax, 0.05 + 0.12 * i, 0.75 - 0.18 * i, 0.5, 0.13, name, "#cfe2f3")
    ax.set_title("ILP\none core, overlapping\nindependent instructions", fontsize=8)
    ax.annotate("time →", (0.55, 0.05), fontsize=7)

    # SIMD: one instruction, several lanes.
    ax = axes[1]
    box(ax, 0.1, 0.72, 0.8, 0.16, "vmulpd (one instruction)", "#f9cb9c")
    for i in range(4):
        box(ax, 0.1 + 0.2 * i, 0.35, 0.18, 0.2, f"x{i}·y{i}", "#fce5cd")
    ax.set_title("SIMD\none instruction,\na vector of numbers", fontsize=8)

    # Multithreading: cores share one memory.
    ax = axes[2]
    for i in range(3):
        box(ax, 0.05 + 0.32 * i, 0.62, 0.26, 0.22, f"core {i}", "#d9ead3")
        ax.plot([0.18 + 0.32 * i, 0.5], [0.62, 0.38], color="black", lw=0.8)
    box(ax, 0.15, 0.12, 0.7, 0.24, "shared memory", "#b6d7a8")
    ax.set_title("multithreading\ncores share memory", fontsize=8)

    # Distributed: machines exchange messages.
    ax = axes[3]
    spots = [(0.05, 0.65), (0.6, 0.65), (0.32, 0.1)]
    for i, (x, y) in enumerate(spots):
        box(ax, x, y, 0.33, 0.22, f"machine {i}\n(own memory)", "#d9d2e9")
    for (x1, y1), (x2, y2) in [(spots[0], spots[1]), (spots[1], spots[2]), (spots[2], spots[0])]:
        ax.annotate("", (x2 + 0.16, y2 + 0.11), (x1 + 0.16, y1 + 0.11),
                    arrowprops={"arrowstyle": "<->", "lw": 0.8, "shrinkA": 18, "shrinkB": 18})
    ax.set_title("distributed\nmessages over a network", fontsize=8)

    for ax in axes:
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.axis("off")
    return fig
