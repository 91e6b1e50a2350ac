"""Pictures for the GPU lesson: who handles which element, how tiles move, when offloading pays.

They draw the arithmetic of :mod:`mlpar.gpu.backend`, so they look the same on a machine with a GPU
and on one with only the simulator. Importing this module does not import numba, so it may
come before :func:`mlpar.gpu.backend.choose_cuda_backend`; ``plot_offload_roofline`` uses
``mlpar.cpu.roofline``, which does import numba, so call it after the choice.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from mlpar.core import validation
from mlpar.gpu import backend as gpu


def plot_grid_stride(n: int, threads_per_block: int, blocks: int, ax=None):
    """Draw which (block, thread, loop step) handles each of ``n`` elements.

    Row k of the picture is step k of the grid-stride loop and column g is the global thread
    ``g = blockIdx.x · blockDim.x + threadIdx.x``; the cell holds the element index
    ``i = k · gridDim.x · blockDim.x + g`` and its colour is the block. Small sizes only
    (the picture is for reading, not for real launch sizes).
    """
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    n = validation.integer("n", n, minimum=1, maximum=512)
    threads_per_block = validation.integer("threads_per_block", threads_per_block, minimum=1,
                                           maximum=64)
    blocks = validation.integer("blocks", blocks, minimum=1, maximum=10)
    width = threads_per_block * blocks
    steps = math.ceil(n / width)
    block, _, _ = gpu.grid_stride_owners(n, threads_per_block, blocks)
    colour = np.full(steps * width, np.nan)
    colour[:n] = block
    if ax is None:
        _, ax = plt.subplots(figsize=(min(10, 1 + 0.32 * width), 0.9 + 0.4 * steps))
    cmap = ListedColormap(plt.get_cmap("tab10").colors[:blocks])
    ax.imshow(colour.reshape(steps, width), cmap=cmap, vmin=-0.5, vmax=blocks - 0.5,
              aspect="auto")
    if width <= 48:
        for i in range(n):
            ax.text(i % width, i // width, str(i), ha="center", va="center", fontsize=7)
    for b in range(1, blocks):
        ax.axvline(b * threads_per_block - 0.5, color="black", lw=1.5)
    ax.set_xticks([b * threads_per_block + (threads_per_block - 1) / 2 for b in range(blocks)])
    ax.set_xticklabels([f"block {b}" for b in range(blocks)], fontsize=8)
    ax.set_yticks(range(steps))
    ax.set_yticklabels([f"step {k}" for k in range(steps)], fontsize=8)
    ax.set_title(
        f"grid-stride loop: {blocks} blocks × {threads_per_block} threads over {n} elements; "
        "cell = element i, colour = block", fontsize=9)
    return ax


def plot_tiles(m: int, k: int, p: int, tile: int, block=(0, 0), step: int = 0, axes=None):
    """Draw the tiled matmul's decomposition: the output tiles of C and what one block reads.

    Block ``block = (by, bx)`` owns the C tile at rows by·tile…, columns bx·tile…; at loop
    step ``step`` its threads copy tile (by, step) of A and tile (step, bx) of B to shared
    memory. Dashed lines are tile edges; cells outside the matrices (padding threads) are
    what the kernel's bounds checks skip.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    m, k, p = (validation.integer(nm, v, minimum=1, maximum=64)
               for nm, v in (("m", m), ("k", k), ("p", p)))
    tile = validation.integer("tile", tile, minimum=1, maximum=32)
    by, bx = (validation.integer(f"block[{i}]", v, minimum=0) for i, v in enumerate(block))
    if by >= math.ceil(m / tile) or bx >= math.ceil(p / tile):
        raise ValueError(f"block: expected a block of the {math.ceil(m / tile)}×"
                         f"{math.ceil(p / tile)} grid, got {block}")
    step = validation.integer("step", step, minimum=0, maximum=math.ceil(k / tile) - 1)
    if axes is None:
        _, axes = plt.subplots(1, 3, figsize=(9, 3.2), constrained_layout=True)
    panels = (("A", m, k, (by, step)), ("B", k, p, (step, bx)), ("C = A·B", m, p, (by, bx)))
    for ax, (title, rows, cols, (ty, tx)) in zip(axes, panels, strict=True):
        ax.add_patch(Rectangle((0, 0), cols, rows, facecolor="whitesmoke", edgecolor="black"))
        for r in range(0, rows + 1, tile):
            ax.axhline(r, color="grey", ls="--", lw=0.6)
        for c in range(0, cols + 1, tile):
            ax.axvline(c, color="grey", ls="--", lw=0.6)
        colour = "tab:orange" if title == "C = A·B" else "tab:blue"
        ax.add_patch(Rectangle((tx * tile, ty * tile), tile, tile, facecolor=colour, alpha=0.6))
        ax.set_xlim(0, math.ceil(cols / tile) * tile)
        ax.set_ylim(math.ceil(rows / tile) * tile, 0)
        ax.set_aspect("equal")
        ax.set_title(f"{title} ({rows}×{cols})", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    # CUDA names a block (blockIdx.x, blockIdx.y) = (column, row): spelled out, not a tuple
    axes[0].figure.suptitle(f"block with blockIdx.y = {by}, blockIdx.x = {bx}, at step {step}: tile "
                            f"{tile}×{tile} of A and of B in shared memory\nwhite: outside the "
                            "matrices (those threads load 0 and write nothing)", fontsize=9)
    return axes


def plot_offload_roofline(
    cpu_gflops: float,
    cpu_gbps: float,
    link_gbps: float,
    gpu_gflops: float,
    points: Sequence[tuple[str, float, float]] = (),
    marks: Sequence[tuple[str, float]] = (),
    source: str = "",
    ax=None,
    device_gbps: float | None = None,
):
    """The host's roofline, plus the roof that the host–device link puts on any offloaded
    computation: ``min(P_gpu, W_link × I)`` with I in flop per byte *sent*.

    ``device_gbps`` (measured device-memory bandwidth) adds the device's own roofline,
    ``min(P_gpu, W_device × I)`` with I in flop per byte of device memory: a kernel point placed
    at its device-memory intensity belongs under that roof, not under the link's.

    ``points`` are measured (name, flop/byte, GFLOP/s); ``marks`` are (name, flop/byte) drawn
    as vertical lines where nothing was measured. ``source`` says where the GPU's figures come
    from (measured on a device, or a data sheet) and goes into the legend. The dotted red line
    is :func:`mlpar.gpu.backend.break_even_intensity`: to its left, the copy plus the device's
    time take longer than the host computing at its peak.
    """
    from mlpar.cpu import roofline  # imports numba: only after the backend choice

    cpu_gflops = validation.positive("cpu_gflops", cpu_gflops)
    link_gbps = validation.positive("link_gbps", link_gbps)
    gpu_gflops = validation.positive("gpu_gflops", gpu_gflops)
    for name, intensity in marks:
        validation.positive(f"intensity of {name}", intensity)
    even = gpu.break_even_intensity(cpu_gflops, gpu_gflops, link_gbps)
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(9, 4.2))
    ridge = cpu_gflops / cpu_gbps
    spots = [ridge] + [i for _, i in marks] + [i for _, i, _ in points]
    spots += [even] if math.isfinite(even) else []
    x = np.geomspace(min(spots) / 10, max(spots) * 10, 300)
    ax.loglog(x, roofline.attainable(x, cpu_gflops, cpu_gbps), color="black", lw=2,
              label="host roofline (measured)")
    ax.loglog(x, np.minimum(gpu_gflops, link_gbps * x), color="tab:red", ls="--", lw=1.5,
              label="offloaded: link roof, device rate" + (f"\n({source})" if source else ""))
    if device_gbps is not None:
        device_gbps = validation.positive("device_gbps", device_gbps)
        ax.loglog(x, np.minimum(gpu_gflops, device_gbps * x), color="tab:green", ls="-", lw=1.5,
                  label="device roofline (device memory, measured)")
    for name, intensity, gflops in points:
        ax.loglog([intensity], [gflops], "o", label=f"{name} (measured)")
    ax.set_xlim(x[0], x[-1])
    if math.isfinite(even):
        ax.axvline(even, color="tab:red", ls=":", lw=1)
        ax.annotate(f"offload pays beyond {even:.2g} flop/B", (even, cpu_gflops),
                    textcoords="offset points", xytext=(5, -14), fontsize=8, color="tab:red")
    bottom, middle = ax.get_ylim()[0], math.sqrt(x[0] * x[-1])
    for k, (name, intensity) in enumerate(marks):
        ax.axvline(intensity, color="tab:purple", ls="-.", lw=1)
        left = intensity < middle  # write the label on the side with room
        ax.annotate(name, (intensity, bottom), textcoords="offset points",
                    xytext=(4 if left else -4, 6 + 12 * k), ha="left" if left else "right",
                    fontsize=8, color="tab:purple")
    ax.set_xlabel("arithmetic intensity [flop per byte]")
    ax.set_ylabel("GFLOP/s")
    ax.legend(fontsize=7, loc="upper left")
    return ax
