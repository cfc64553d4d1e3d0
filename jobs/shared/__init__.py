"""Shared replays: several queries on one recording in one pass."""
