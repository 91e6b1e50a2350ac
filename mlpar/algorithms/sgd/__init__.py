"""Parallel stochastic gradient descent on one shared model: locked, lock-free (lesson 04)."""
