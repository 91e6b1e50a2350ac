"""The one result type every trainer returns: loss against time, with a label and a plot.

MapReduce gradient descent, the parameter server, Hogwild, gossip and pipeline runs all answer
the same question (how fast does the loss fall?), so they return the same shape of result and a
lesson can overlay any of them on one axis. A trainer that records more (who pushed which
update, staleness, bytes sent) subclasses ``TrainingResult`` and adds fields; the common part
stays here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CLOCKS = ("real", "virtual")  # virtual: the simulated cluster's clock, not seconds that passed


@dataclass(frozen=True, kw_only=True, repr=False, eq=False)
class TrainingResult:
    """``losses[t]`` is the loss when ``times[t]`` seconds had passed; ``weights`` the final model.

    Shapes: ``times`` and ``losses`` (T + 1,), index 0 is before the first update.
    """

    label: str
    weights: np.ndarray
    times: np.ndarray
    losses: np.ndarray
    clock: str = "real"

    def __post_init__(self):
        if self.clock not in CLOCKS:
            raise ValueError(f"clock: expected one of {CLOCKS}, got {self.clock!r}")
        if len(self.times) != len(self.losses):
            raise ValueError(
                f"times and losses: expected the same length, got {len(self.times)} and {len(self.losses)}"
            )

    @property
    def final_loss(self) -> float:
        return float(self.losses[-1])

    @property
    def n_updates(self) -> int:
        return len(self.losses) - 1

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.label}: {self.n_updates} updates, "
                f"final loss {self.final_loss:.6g})")

    def plot(self, ax=None, **style):
        """Loss (log scale) against elapsed time; ``style`` goes to ``ax.semilogy``."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3))
        times = np.asarray(self.times, dtype=float)
        style.setdefault("label", self.label)
        ax.semilogy(times - times[0], self.losses, **style)
        ax.set_xlabel("seconds" + (" (virtual)" if self.clock == "virtual" else ""))
        ax.set_ylabel("loss")
        return ax
