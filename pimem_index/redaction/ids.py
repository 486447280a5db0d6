"""Ids from a journal as the index stores and the pages show them: an id redaction would mask stands
in as a digest of itself.

Entry ids, parent ids, tool call ids and session ids are keys (a line's pointer is checked against
its id, the tree links by them, results pair with calls by them), so an id holding a secret cannot be
masked like text: every such id becomes `redacted-` and 16 hex digits of its BLAKE2b digest, the same
wherever it is read (the indexer, a reread, the tree of a session page), so links still hold. Pi's own
ids (8 hex digits, UUIDs, `L<n>`) and the usual tool call ids are kept without asking redaction.
"""

from __future__ import annotations

import functools
import hashlib
import re

from pimem_index.redaction.driver import redact

__all__ = ["PI_ID", "shown_id"]

# What Pi writes for entry and session ids (and the indexer for a version-1 line), and the tool call ids
# of the common providers (Anthropic's toolu_, OpenAI's call_ and fc_): never masked, so never asked.
PI_ID = re.compile(
    r"[0-9a-f]{8}(?:-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})?|L[0-9]{1,12}|(?:toolu|call|fc)_[A-Za-z0-9]{8,64}"
)
PREFIX = "redacted-"


def shown_id(value: str | None) -> str | None:
    """The id as stored and shown: itself, or a stand-in when redaction would mask part of it."""
    if value is None or PI_ID.fullmatch(value):
        return value
    return _checked(value)


@functools.lru_cache(maxsize=8192)
def _checked(value: str) -> str:
    if redact(value) == value:
        return value
    digest = hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return PREFIX + digest
