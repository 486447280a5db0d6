"""Redaction: one function that masks secrets, on the way into the index and on every text returned.

Imports nothing else of the package, so any layer may use it.  Importing it compiles nothing: the rules
are compiled on the first text redacted (``driver.compiled``).  The modules, from the bottom:
``rule`` (the rule type), ``values`` (what a value looks like), the families of rules (``assignments``,
``tokens``, ``structured``, ``commands``, ``cookies``, ``urls``), ``table`` (all rules, ``KINDS``),
``needles`` and ``compiler`` (regexes and the Hyperscan prefilter), ``driver`` (``redact``)."""

from pimem_index.redaction.driver import MASK, Context, context_of, redact, redact_part

__all__ = ["MASK", "Context", "context_of", "redact", "redact_part"]
