"""Plots: each takes the data and keyword arguments, draws on ``ax`` (or a new one) and
returns the Axes, like seaborn. Plots never compute a metric themselves."""
