"""Dispatch counting with the real iree-compile: finding it, flag profiles and translation,
flow/stream counts, the what-if count with fixes applied, cache, and CI budgets."""
