"""Training across workers (lessons 05, 06, 07).

* ``least_squares``: the one loss and gradient every distributed lesson trains.
* ``house_prices``: the lessons' regression data (synthetic, seeded, known weights).
* ``mapreduce``: data-parallel gradient descent, one ``mapreduce_round`` per step.
* ``parameter_server``: ``Server`` (the update rule), sync, async and stale-synchronous runs.
* ``topologies``: graphs, mixing matrices, Metropolis–Hastings weights, spectral gap.
* ``gossip``: consensus, pairwise gossip, D-PSGD, ring all-reduce on the simulated network.
* ``gossip_dask``: the same on Dask actors that send their models to each other.
"""
