"""Layer 0, core: what every lesson uses and that knows nothing of machine learning.

Argument validation, honest timing, numba's threads, the machine's facts, worker seeds, the
course's data files, splitting rows into shards and folds, and small figure helpers.
Imports nothing else from mlpar.
"""
