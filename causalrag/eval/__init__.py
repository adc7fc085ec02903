"""Evaluation: datasets, metrics, runner and report (every registered method is evaluable)."""
