"""Helpers for the test suite (fixtures, generators, scripted servers)."""
