"""Small helpers that make the CPU lessons' figures readable."""

from __future__ import annotations


def plain_log_ticks(axis) -> None:
    """Label a log axis 0.1, 1, 10 instead of 10⁻¹, 10⁰, 10¹ (students read the former faster)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())
