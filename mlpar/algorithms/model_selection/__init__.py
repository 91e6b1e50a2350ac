"""Parallel cross-validation and hyperparameter search (lesson 03)."""
