"""Domain parallelism: one image cut into row tiles over workers, with halo exchange.

A stack of L convolution layers with k×k kernels ("same" size, zero padding at the image
border; cross-correlation, as CNN libraries compute it) on one image of H×W pixels. Worker w
holds rows [r_w, r_{w+1}) (``mlpar.core.splits.shards``). An output row needs the input rows
within h = ⌊k/2⌋ of it, so a tile needs h rows from each neighbour — its *halo* — per layer:

* ``exchange="per_layer"``: before each layer every tile sends its first and last h rows to
  its neighbours; L rounds of messages;
* ``exchange="up_front"``: the tiles exchange L·h rows once and then compute all L layers
  alone; each layer's result is h rows shorter on every halo side, so the edge rows are
  computed twice (by both neighbours): fewer messages, more arithmetic.

Both move the same halo bytes, 2·(n-1)·L·h·W·8 for n tiles of float64 (``halo_bytes``), and
give exactly the full convolution. Per layer a tile of b rows receives 2h rows: the ratio of
communication to computation, its surface to its volume, is 2h/b, growing as tiles shrink.
Halos travel through the process that coordinates (an engine's tasks); each is counted once,
where it is received.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlpar.cluster.engines import engine_scope, payload_bytes
from mlpar.core import limits, splits, validation
from mlpar.cpu.convolution import conv2d_reference

EXCHANGES = ("per_layer", "up_front")


def halo_width(k: int) -> int:
    """⌊k/2⌋: rows a k×k kernel reaches beyond an output row on each side (k odd)."""
    k = validation.positive_int("k", k)
    if k % 2 == 0:
        raise ValueError(f"k: expected an odd kernel size, got {k}")
    return k // 2


def synthetic_image(height: int = 96, width: int = 128, *, seed: int = 0) -> np.ndarray:
    """A documented test picture: smooth waves, two bright rectangles and a little noise."""
    height, width = validation.positive_int("height", height), validation.positive_int("width", width)
    limits.elements("height, width", height * width)
    rng = np.random.default_rng(validation.seed("seed", seed))
    r, c = np.mgrid[0:height, 0:width] / max(height, width)
    image = np.sin(6 * np.pi * r) * np.cos(4 * np.pi * c)
    image[height // 5: height // 2, width // 6: width // 3] += 1.5
    image[height // 2: 4 * height // 5, width // 2: 5 * width // 6] -= 1.0
    return image + 0.1 * rng.standard_normal((height, width))


def random_kernels(layers: int = 3, k: int = 3, *, seed: int = 0) -> np.ndarray:
    """L kernels of k×k, shape (L, k, k), each summing to 1 in absolute value."""
    layers = validation.positive_int("layers", layers)
    halo_width(k)
    limits.elements("layers, k", layers * k * k)
    w = np.random.default_rng(validation.seed("seed", seed)).standard_normal((layers, k, k))
    return w / np.abs(w).sum(axis=(1, 2), keepdims=True)


def check_kernels(kernels) -> np.ndarray:
    kernels = validation.array("kernels", kernels, ndim=3, dtype=np.float64, min_size=1)
    if kernels.shape[1] != kernels.shape[2]:
        raise ValueError(f"kernels: expected square k×k kernels, got shape {kernels.shape}")
    halo_width(kernels.shape[1])
    return kernels


def layer(block: np.ndarray, kernel: np.ndarray, *, pad_top: bool, pad_bottom: bool) -> np.ndarray:
    """One layer on a block of rows: zeros beyond the image (columns, and rows where flagged).

    A side without padding is a halo side: the block carries h extra rows there and the output
    is h rows shorter on that side.
    """
    h = kernel.shape[0] // 2
    padded = np.pad(block, ((h if pad_top else 0, h if pad_bottom else 0), (h, h)))
    # numpy's reference (one shifted window per kernel tap), no compilation in each worker
    return conv2d_reference(padded[None, None], kernel[None, None])[0, 0]


def convolve_same(image: np.ndarray, kernels) -> np.ndarray:
    """The reference: all L layers on the whole image (one worker)."""
    image = validation.array("image", image, ndim=2, dtype=np.float64, min_size=1)
    for kernel in check_kernels(kernels):
        image = layer(image, kernel, pad_top=True, pad_bottom=True)
    return image


def halo_bytes(width: int, n_tiles: int, k: int, layers: int = 1, itemsize: int = 8) -> int:
    """2·(n-1)·L·⌊k/2⌋·W·itemsize: each inner border, both ways, h rows per layer."""
    width = validation.positive_int("width", width)
    n_tiles = validation.positive_int("n_tiles", n_tiles)
    layers = validation.positive_int("layers", layers)
    return 2 * (n_tiles - 1) * layers * halo_width(k) * width * validation.positive_int("itemsize", itemsize)


# -- tasks that run on the workers; a tile lives in a ``Tile`` placed on its worker ----------


class Tile:
    """A worker's rows; tasks replace ``rows`` in place, so the tile stays on its worker.

    (A plain object, not a dict: Dask's ``scatter`` would split a dict into its values.)
    """

    def __init__(self, rows: np.ndarray):
        self.rows = rows


def edges(state: Tile, rows: int):
    """The first and last ``rows`` rows of this worker's tile (its neighbours' halos)."""
    tile = state.rows
    return tile[:rows].copy(), tile[tile.shape[0] - rows:].copy()


def layer_step(state: Tile, above, below, kernel, send_rows: int):
    """One layer with the halos received; keeps the new tile here, returns its new edges."""
    block = np.vstack([x for x in (above, state.rows, below) if x is not None])
    state.rows = layer(block, kernel, pad_top=above is None, pad_bottom=below is None)
    return None if send_rows is None else edges(state, send_rows)


def layers_alone(state: Tile, above, below, kernels):
    """All layers on the tile widened by L·h rows each side; returns the finished tile."""
    block = np.vstack([x for x in (above, state.rows, below) if x is not None])
    for kernel in kernels:
        block = layer(block, kernel, pad_top=above is None, pad_bottom=below is None)
    return block


def tile(state: Tile):
    return state.rows


@dataclass(frozen=True, repr=False, eq=False)
class DomainResult:
    """The assembled output and what the halo exchange cost."""

    out: np.ndarray
    exchange: str
    n_workers: int
    halo_bytes: int  # bytes of halo rows received, all workers, all layers
    messages: int  # halo messages received
    rows_computed: int  # output rows computed over all layers and workers (redundancy)

    def __repr__(self) -> str:
        return (f"DomainResult({self.exchange}, {self.n_workers} workers: {self.messages} halo "
                f"messages, {self.halo_bytes} bytes, {self.rows_computed} rows computed)")


def convolve_tiles(image: np.ndarray, kernels, n_workers: int = 2, *, engine="processes",
                   exchange: str = "per_layer") -> DomainResult:
    """The L layers on row tiles, one per worker of ``engine`` (a name or an ``Engine``)."""
    image = validation.array("image", image, ndim=2, dtype=np.float64, min_size=1)
    kernels = check_kernels(kernels)
    n = validation.positive_int("n_workers", n_workers)
    validation.choice("exchange", exchange, EXCHANGES)
    h, L = kernels.shape[1] // 2, len(kernels)
    reach = L * h if exchange == "up_front" else h
    parts = splits.shards(image.shape[0], n)
    if n > 1 and min(s.stop - s.start for s in parts) < max(reach, 1):
        raise ValueError(f"n_workers: expected tiles of at least {max(reach, 1)} rows (the halo), "
                         f"got {n} tiles of {image.shape[0]} rows")
    received = messages = 0

    def halos(w, found):
        nonlocal received, messages
        if reach == 0:  # 1×1 kernels: no neighbour's row is needed
            return None, None
        above = found[w - 1][1] if w > 0 else None
        below = found[w + 1][0] if w < n - 1 else None
        for x in (above, below):
            if x is not None:
                received += payload_bytes(x)
                messages += 1
        return above, below

    with engine_scope(engine, n) as eng:
        refs = [eng.put(w, Tile(image[s].copy())) for w, s in enumerate(parts)]
        found = eng.gather([eng.submit(w, edges, refs[w], reach) for w in range(n)])
        if exchange == "per_layer":
            rows = 0
            for i, kernel in enumerate(kernels):
                send = h if i < L - 1 else None
                found = eng.gather([eng.submit(w, layer_step, refs[w], *halos(w, found), kernel, send)
                                    for w in range(n)])
                rows += image.shape[0]
            out = np.vstack(eng.gather([eng.submit(w, tile, refs[w]) for w in range(n)]))
        else:
            out = np.vstack(eng.gather([eng.submit(w, layers_alone, refs[w], *halos(w, found), kernels)
                                        for w in range(n)]))
            inner = 2 * (n - 1)  # halo sides: each computes L-1-l extra h-row strips at layer l
            rows = L * image.shape[0] + inner * h * L * (L - 1) // 2
    return DomainResult(out, exchange, n, received, messages, rows)
