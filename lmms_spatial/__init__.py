"""lmms-spatial: spatial-reasoning benchmarks for lmms-eval.

Kept import-free on purpose: the startup hook imports this package in every Python process.
"""

__version__ = "0.2.0"
