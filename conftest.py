"""Project-wide pytest set-up.

nbval opens ``--nbval-sanitize-with`` relative to the working directory; anchoring it to the
repository root lets an instructor run ``pytest notebooks/01_loops_to_threads.ipynb`` from any
folder of the repository and get the same strict comparison as CI.
"""

from pathlib import Path


def pytest_configure(config):
    path = getattr(config.option, "nbval_sanitize_with", None)
    if path and not Path(path).is_absolute():
        config.option.nbval_sanitize_with = str(Path(config.rootpath) / path)
