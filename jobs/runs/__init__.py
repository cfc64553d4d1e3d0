"""Runs: the lifecycle of a replay, its strategies (single, continuation, follow), and what is done
with runs (listing, validation, quality, gc)."""
