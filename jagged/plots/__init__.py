"""Plots: figures after the views; each takes data and keywords, draws on ``ax`` (or a new one), returns the Axes."""
