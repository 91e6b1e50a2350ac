"""Benchmark families, one module each; run them with ``python -m mlpar.bench``."""
