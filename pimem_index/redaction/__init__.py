"""Redaction: one function that masks secrets, on the way into the index and on every text returned.

Imports nothing else of the package, so any layer may use it."""

from pimem_index.redaction.engine import MASK, Context, context_of, redact, redact_part

__all__ = ["MASK", "Context", "context_of", "redact", "redact_part"]
