"""Batch, domain, model and pipeline parallelism (lesson 08).

* ``schedules``: per-device op orders for GPipe, 1F1B, interleaved 1F1B, ZB-H1 and PipeDream;
  weight versions under asynchronous updates (PipeDream's stashing, 2BW).
* ``simulator``: the dependency-driven simulator: start times, makespan, both bubble
  definitions, peak activations, Gantt chart.
* ``staged_mlp``: a numpy MLP split into stages on real processes that pass activations and
  gradients to each other; measured timeline and gradients checked against the unsplit model.
* ``domain``: one image split into row tiles over workers, halo exchange, byte counts.
"""
