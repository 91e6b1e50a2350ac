"""mlpar: helpers for an open course on parallel and distributed machine learning.

Modules are named after the concept they teach (``timing``, ``roofline``, ``elementwise``,
``parameter_server``, ...). Importing ``mlpar`` changes no global state; the one deliberate
setting, numba's threading layer, lives in ``mlpar.core.threads`` and is documented there.
"""

__version__ = "0.1.0"
